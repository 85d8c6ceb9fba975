// The Curves tab: every column of metrics.jsonl in a chart of its kind (reward and its components, tool calls
// and finish reasons, losses, KL, entropy, clipping, gradient norm, the learner's timing phases), validation
// per version from the summaries, queue depths sampled by the server, and a picker for any other column.
import { useMemo, useState } from 'preact/hooks';
import type { EvalPoint, MetricsData, QueueSamples, RunInfo } from '../api.ts';
import { Chart, type Line } from './chart.tsx';
import { useApi } from './hooks.ts';

interface Group {
  readonly id: string;
  readonly title: string;
  readonly pick: (name: string) => boolean;
}

/** Step charts, in page order; a column goes to the first group that picks it. */
const GROUPS: readonly Group[] = [
  { id: 'components', title: 'Reward components (mean per step)', pick: (n) => n.startsWith('reward/') },
  { id: 'tool-calls', title: 'Tool calls per trajectory', pick: (n) => n === 'tool_calls_per_trajectory' },
  { id: 'finish', title: 'Finish reasons (share of trajectories)', pick: (n) => n.startsWith('finish/') },
  { id: 'loss', title: 'Loss', pick: (n) => n === 'loss' || n.endsWith('_loss') },
  { id: 'kl', title: 'KL', pick: (n) => /(^|_)kl(_|$)/.test(n) },
  { id: 'entropy', title: 'Entropy', pick: (n) => n === 'entropy' },
  { id: 'clip', title: 'Clip fraction', pick: (n) => n.includes('clip_frac') || n.includes('clipped_frac') },
  { id: 'grad-norm', title: 'Gradient norm', pick: (n) => n.includes('grad_norm') },
  { id: 'advantages', title: 'Advantages', pick: (n) => n.startsWith('adv_') },
  {
    id: 'timing',
    title: 'Learner timing phases (s per step)',
    pick: (n) => n.startsWith('timing_s/') || n === 'step_time_s',
  },
  { id: 'lengths', title: 'Lengths (tokens)', pick: (n) => n.endsWith('length_mean') },
  {
    id: 'groups',
    title: 'Groups per step and staleness',
    pick: (n) =>
      ['groups', 'dropped_groups', 'no_signal_groups', 'duplicate_groups'].includes(n) ||
      n.startsWith('staleness_'),
  },
];

const REWARD = ['reward_mean', 'reward_std', 'reward_max', 'reward_min'];

export function Curves({ info }: { info: RunInfo }) {
  const metrics = useApi<MetricsData>('/api/metrics', info.revision);
  const evals = useApi<EvalPoint[]>('/api/evals', info.revision);
  const queues = useApi<QueueSamples>('/api/queues', info.revision);
  const [extra, setExtra] = useState<string[]>([]);
  const m = metrics.data;

  const placed = useMemo(() => {
    const out = new Map<string, string[]>();
    if (!m) return out;
    for (const name of Object.keys(m.values).sort()) {
      if (REWARD.includes(name)) continue;
      const g = GROUPS.find((x) => x.pick(name));
      if (g) out.set(g.id, [...(out.get(g.id) ?? []), name]);
    }
    return out;
  }, [m]);

  if (metrics.error) return <p class="error">Could not read the metrics: {metrics.error}</p>;
  if (!m) return <p>Loading…</p>;
  const marks = m.stageMarks.map((s) => ({ x: s.step, label: s.stage }));
  const line = (name: string, dash = false): Line => ({ label: name, values: m.values[name] ?? [], dash });
  const shown = new Set([...REWARD, ...[...placed.values()].flat()]);
  const others = Object.keys(m.values)
    .filter((n) => !shown.has(n))
    .sort();

  return (
    <div class="curves">
      {m.steps.length === 0 ? (
        <p class="note">
          No learner step yet: metrics.jsonl has no row. The charts fill in as the run trains.
        </p>
      ) : null}
      {!m.hasBatches && m.steps.length > 0 ? (
        <p class="note">
          This run does not record which groups each step trained (metrics/batches.jsonl, written by learners
          since the viewer came): no stage marks and no step filter.
        </p>
      ) : null}
      <div class="grid">
        {m.values.reward_mean ? (
          <Chart
            id="reward"
            title="Reward: mean ± std per step, min and max"
            x={m.steps}
            xLabel="step"
            syncKey="step"
            marks={marks}
            lines={[
              line('reward_mean'),
              {
                label: 'mean + std',
                edge: true,
                values: m.values.reward_mean.map((v, i) =>
                  v === null ? null : v + (m.values.reward_std?.[i] ?? 0),
                ),
              },
              {
                label: 'mean − std',
                edge: true,
                values: m.values.reward_mean.map((v, i) =>
                  v === null ? null : v - (m.values.reward_std?.[i] ?? 0),
                ),
              },
              line('reward_max', true),
              line('reward_min', true),
            ]}
            band={[1, 2]}
          />
        ) : null}
        <Validation evals={evals.data ?? []} publishEvery={info.config?.publishEvery ?? 1} />
        {GROUPS.map((g) => {
          const names = placed.get(g.id);
          if (!names?.length) return null;
          return (
            <Chart
              key={g.id}
              id={g.id}
              title={g.title}
              x={m.steps}
              xLabel="step"
              syncKey="step"
              marks={marks}
              lines={names.map((n) => line(n))}
            />
          );
        })}
        <Queues q={queues.data} />
        {extra.map((name) => (
          <Chart
            key={name}
            id={`extra-${name}`}
            title={name}
            x={m.steps}
            xLabel="step"
            syncKey="step"
            marks={marks}
            lines={[line(name)]}
          />
        ))}
      </div>
      {others.length ? (
        <label class="picker">
          Plot another column:{' '}
          <select
            onChange={(e) => {
              const v = (e.target as HTMLSelectElement).value;
              if (v && !extra.includes(v)) setExtra([...extra, v]);
              (e.target as HTMLSelectElement).value = '';
            }}
          >
            <option value="">choose…</option>
            {others
              .filter((n) => !extra.includes(n))
              .map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
          </select>
        </label>
      ) : null}
    </div>
  );
}

/** Validation per policy version: accuracy (mean@k), pass@k, reward and tool-call validity. */
function Validation({ evals, publishEvery }: { evals: readonly EvalPoint[]; publishEvery: number }) {
  if (evals.length === 0) return null;
  const k = evals.at(-1)?.samplesPerPrompt ?? 1;
  const versions = evals.map((e) => e.policyVersion);
  const col = (f: (e: EvalPoint) => number | null | undefined) => evals.map((e) => f(e) ?? null);
  const lines: Line[] = [
    { label: k > 1 ? `accuracy (mean@${k})` : 'accuracy', values: col((e) => e.accuracy) },
    { label: `pass@${k}`, values: col((e) => e.passAtK) },
    { label: 'reward mean', values: col((e) => e.rewardMean) },
    { label: 'tool-call validity', values: col((e) => e.toolCallValidity), dash: true },
  ];
  return (
    <Chart
      id="validation"
      title={`Validation per policy version (version v is published after step v × ${publishEvery})`}
      x={versions}
      xLabel="policy version"
      lines={lines}
    />
  );
}

function Queues({ q }: { q: QueueSamples | undefined }) {
  if (!q || q.t.length === 0) return null;
  const names = Object.keys(q.depths).sort();
  return (
    <Chart
      id="queues"
      title={`Queue depths, sampled by the viewer while it runs (${q.note})`}
      x={q.t}
      time
      xLabel="time"
      lines={names.map((n) => ({ label: n, values: q.depths[n]!, dash: n.endsWith('-dlq') }))}
    />
  );
}
