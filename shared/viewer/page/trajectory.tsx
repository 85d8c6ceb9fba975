// One trajectory: the conversation the model saw (prompt, each assistant turn with the version that sampled it,
// each tool call with its arguments and its result or typed error, the tool messages it read), the reward and its
// components, and the tokens with the loss mask, shaded by log-prob, advantage or policy version.
import { useState } from 'preact/hooks';
import type { RunInfo, TrajectoryDetail } from '../api.ts';
import { promptLength } from '../conversation.ts';
import { href, useApi } from './hooks.ts';
import { fmtReward } from './table.tsx';

type Trajectory = TrajectoryDetail['trajectory'];
type Turn = Trajectory['turns'][number];
type Shade = 'logprob' | 'advantage' | 'version' | 'none';

export function TrajectoryView({
  info,
  groupId,
  sample,
}: {
  info: RunInfo;
  groupId: string;
  sample: number;
}) {
  const r = useApi<TrajectoryDetail>(
    `/api/trajectories/${encodeURIComponent(groupId)}/${sample}`,
    info.revision,
  );
  if (r.error) return <p class="error">{r.error}</p>;
  const d = r.data;
  if (!d) return <p>Loading…</p>;
  const t = d.trajectory;
  const prev = sample > 0 ? href(['t', groupId, sample - 1]) : null;
  const next = sample + 1 < d.groupSize ? href(['t', groupId, sample + 1]) : null;
  return (
    <div class="trajectory">
      <h2>
        {groupId} · sample {t.sampleIndex}{' '}
        <small>
          <a href={href(['g', groupId])}>the group's {d.groupSize} samples side by side</a>
          {prev ? <a href={prev}> ← sample {sample - 1}</a> : null}
          {next ? <a href={next}> sample {sample + 1} →</a> : null}
        </small>
      </h2>
      <dl class="facts">
        <dt>split</dt>
        <dd>{d.split}</dd>
        <dt>prompt</dt>
        <dd>{d.promptId}</dd>
        <dt>data source</dt>
        <dd>{d.dataSource}</dd>
        {d.stage ? (
          <>
            <dt>stage</dt>
            <dd>{d.stage}</dd>
          </>
        ) : null}
        <dt>trained at step</dt>
        <dd>{d.step ?? '–'}</dd>
        <dt>reward</dt>
        <dd class="reward">{fmtReward(t.reward)}</dd>
        <dt>advantage</dt>
        <dd>{d.advantage === null ? '–' : fmtReward(d.advantage)}</dd>
        <dt>finish</dt>
        <dd>{t.finishReason}</dd>
      </dl>
      <Components components={t.rewardComponents} errors={t.rewardErrors} />
      <h3>Conversation</h3>
      <Conversation t={t} />
      <h3>Tokens</h3>
      <Tokens d={d} />
    </div>
  );
}

export function Components({
  components,
  errors,
}: {
  components: Record<string, number>;
  errors?: Trajectory['rewardErrors'];
}) {
  const names = Object.keys(components).sort();
  return (
    <>
      {names.length ? (
        <table class="components">
          <tbody>
            {names.map((n) => (
              <tr key={n}>
                <th>{n}</th>
                <td class="num">{fmtReward(components[n])}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {errors?.length ? (
        <ul class="bad">
          {errors.map((e) => (
            <li key={e.reward}>
              reward {e.reward} could not score (counted 0): {e.message}
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}

/** The messages in order; each assistant message carries its turn record (version, stop, calls and results). */
function Conversation({ t }: { t: Trajectory }) {
  const prompt = promptLength(t);
  let turn = 0;
  return (
    <ol class="conversation">
      {t.messages.map((m, i) => {
        const record = m.role === 'assistant' && i >= prompt ? t.turns[turn++] : undefined;
        return (
          <li key={i} class={`msg ${m.role}`}>
            <div class="who">
              {m.role}
              {m.name ? ` (${m.name})` : ''}
              {record ? (
                <span class="turn-meta">
                  {' '}
                  turn {record.turn} · sampled by v{record.policyVersion} · stopped: {record.stop}
                </span>
              ) : null}
            </div>
            <pre class="text">{record ? record.text : m.content}</pre>
            {record ? <Calls turn={record} /> : null}
          </li>
        );
      })}
    </ol>
  );
}

function Calls({ turn }: { turn: Turn }) {
  if (!turn.toolCalls.length && !turn.parseErrors.length) return null;
  return (
    <ul class="calls">
      {turn.toolCalls.map((c, i) => (
        <li key={i} class={c.result.ok ? 'call ok' : 'call failed'}>
          <code class="call-name">{c.name}</code>
          <code class="call-args">{JSON.stringify(c.arguments)}</code>
          <span class="arrow"> → </span>
          {c.result.ok ? (
            <pre class="call-output">{c.result.output}</pre>
          ) : (
            <span class="call-error">
              <b>{c.result.error?.type ?? 'error'}</b>: {c.result.error?.message ?? c.result.output}
            </span>
          )}
          {c.result.truncated ? <span class="note"> (truncated)</span> : null}
          {c.durationMs ? <span class="note"> {Math.round(c.durationMs)} ms</span> : null}
        </li>
      ))}
      {turn.parseErrors.map((e, i) => (
        <li key={`p${i}`} class="call failed">
          <b>parse_error</b>: {e.message}
        </li>
      ))}
    </ul>
  );
}

function Tokens({ d }: { d: TrajectoryDetail }) {
  const [shade, setShade] = useState<Shade>('logprob');
  const t = d.trajectory;
  if (!d.pieces) return <p class="note">{d.tokenProblem}</p>;
  const maxVersion = Math.max(1, ...t.policyVersions);
  const style = (i: number): string | undefined => {
    if (t.lossMask[i] !== 1) return undefined;
    if (shade === 'logprob') {
      // exp(logprob) is the probability the token had when it was sampled: likely tokens pale, unlikely ones red.
      const p = Math.exp(t.behaviorLogprobs[i] ?? 0);
      return `background: rgba(214, 39, 40, ${(1 - p) * 0.85})`;
    }
    if (shade === 'advantage' && d.advantage !== null) {
      const a = Math.max(-1, Math.min(1, d.advantage / 2));
      return a >= 0
        ? `background: rgba(44, 160, 44, ${a * 0.8})`
        : `background: rgba(214, 39, 40, ${-a * 0.8})`;
    }
    if (shade === 'version')
      return `background: hsla(${(240 * (t.policyVersions[i] ?? 0)) / maxVersion}, 70%, 60%, 0.45)`;
    return undefined;
  };
  return (
    <div class="tokens-panel">
      <div class="legend">
        shade{' '}
        <select
          name="shade"
          value={shade}
          onChange={(e) => setShade((e.target as HTMLSelectElement).value as Shade)}
        >
          <option value="logprob">log-prob (red: unlikely when sampled)</option>
          <option value="advantage">advantage (green +, red −)</option>
          <option value="version">policy version</option>
          <option value="none">none</option>
        </select>{' '}
        <span class="tok mask1">sampled (loss mask 1)</span>{' '}
        <span class="tok mask0">prompt and tool results (mask 0)</span>{' '}
        {shade === 'advantage' && d.advantage === null ? (
          <span class="note">no advantage for this sample</span>
        ) : null}
      </div>
      <div class="tokens">
        {d.pieces.map((piece, i) => (
          <span
            key={i}
            class={t.lossMask[i] === 1 ? 'tok mask1' : 'tok mask0'}
            style={style(i)}
            title={`#${i} id ${t.tokenIds[i]}${t.lossMask[i] === 1 ? ` · log-prob ${(t.behaviorLogprobs[i] ?? 0).toFixed(3)} · v${t.policyVersions[i]}` : ' · mask 0'}`}
          >
            {piece}
          </span>
        ))}
      </div>
    </div>
  );
}
