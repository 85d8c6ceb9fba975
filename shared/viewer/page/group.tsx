// A group's G samples side by side (reward, advantage, calls and results, the last turn), and the validation
// view: every validation prompt's result per version, and one prompt's answers across versions.
import type { GroupDetail, GroupSample, RunInfo, ValidationCompare, ValidationOverview } from '../api.ts';
import { href, useApi } from './hooks.ts';
import { fmtReward, versionText } from './table.tsx';
import { Components } from './trajectory.tsx';

export function GroupView({ info, groupId }: { info: RunInfo; groupId: string }) {
  const r = useApi<GroupDetail>(`/api/groups/${encodeURIComponent(groupId)}`, info.revision);
  if (r.error) return <p class="error">{r.error}</p>;
  const g = r.data;
  if (!g) return <p>Loading…</p>;
  return (
    <div class="group">
      <h2>
        group {g.groupId} <small>{g.split}</small>
      </h2>
      <p class="question">{g.prompt}</p>
      <p class="note">
        {g.promptId ? `prompt ${g.promptId} · ` : ''}
        {g.dataSource ? `${g.dataSource} · ` : ''}
        {g.stage ? `stage ${g.stage} · ` : ''}
        {g.step !== null ? `trained at step ${g.step} · ` : ''}
        {g.source === 'manifest'
          ? 'complete group'
          : g.source === 'trajectories'
            ? 'no group manifest: the samples scored so far'
            : 'no scored sample'}{' '}
        · advantages: {g.advantageNote}
      </p>
      <Problems problems={g.problems} />
      {g.deadLetters.length ? (
        <ul class="bad">
          {g.deadLetters.map((d) => (
            <li key={d.messageId}>
              dead-lettered at {d.stage}
              {d.sampleIndex !== null ? ` (sample ${d.sampleIndex})` : ''} after {d.receiveCount} receives:{' '}
              {d.reason}
            </li>
          ))}
        </ul>
      ) : null}
      <Samples groupId={g.groupId} samples={g.samples} />
    </div>
  );
}

function Samples({ groupId, samples }: { groupId: string; samples: readonly GroupSample[] }) {
  return (
    <div class="samples">
      {samples.map((s) => (
        <article key={s.sampleIndex} class="sample" data-sample={s.sampleIndex}>
          <h4>
            <a href={href(['t', groupId, s.sampleIndex])}>sample {s.sampleIndex}</a>
          </h4>
          <dl class="facts">
            <dt>reward</dt>
            <dd class="reward">{fmtReward(s.reward)}</dd>
            <dt>advantage</dt>
            <dd class="advantage">{s.advantage === null ? '–' : fmtReward(s.advantage)}</dd>
            <dt>finish</dt>
            <dd>{s.finishReason}</dd>
            <dt>sampled by</dt>
            <dd>{versionText(s.versions)}</dd>
          </dl>
          {s.toolCalls.length ? (
            <ul class="calls">
              {s.toolCalls.map((c, i) => (
                <li key={i} class={c.ok ? 'call ok' : 'call failed'}>
                  <code class="call-name">{c.name}</code>{' '}
                  <code class="call-args">{JSON.stringify(c.arguments)}</code> →{' '}
                  {c.ok ? (
                    <code class="call-output">{c.output}</code>
                  ) : (
                    <span class="call-error">{c.error}</span>
                  )}
                </li>
              ))}
            </ul>
          ) : (
            <p class="note">no tool call</p>
          )}
          <pre class="answer">{s.answer}</pre>
          <Components components={s.rewardComponents} />
        </article>
      ))}
    </div>
  );
}

export function Problems({ problems }: { problems: readonly { key: string; message: string }[] }) {
  if (!problems.length) return null;
  return (
    <ul class="problems">
      {problems.map((p, i) => (
        <li key={i}>
          <code>{p.key}</code>: {p.message}
        </li>
      ))}
    </ul>
  );
}

export function ValidationView({ info }: { info: RunInfo }) {
  const r = useApi<ValidationOverview>('/api/validation', info.revision);
  if (r.error) return <p class="error">{r.error}</p>;
  const v = r.data;
  if (!v) return <p>Loading…</p>;
  if (!v.prompts.length)
    return (
      <p class="note">
        No validation group yet (the run validates every trainer.eval_every versions when it has data.val).
      </p>
    );
  return (
    <div class="validation">
      <p class="note">
        Each validation prompt under every version that was evaluated:{' '}
        {v.accuracyComponent ? `accuracy (${v.accuracyComponent})` : 'reward'} per version. Open a prompt to
        compare its answers across versions.
      </p>
      <table class="rows">
        <thead>
          <tr>
            <th>prompt</th>
            <th>question</th>
            {v.versions.map((x) => (
              <th key={x}>v{x}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {v.prompts.map((p) => (
            <tr
              key={p.promptId}
              class="row"
              data-prompt={p.promptId}
              onClick={() => (location.hash = href(['validation', p.promptId]))}
            >
              <td>
                <a href={href(['validation', p.promptId])}>{p.promptId}</a>
              </td>
              <td class="prompt">{p.question}</td>
              {v.versions.map((x) => {
                const c = p.byVersion[x];
                const value = c ? (c.accuracy ?? c.reward) : null;
                return (
                  <td
                    key={x}
                    class="num"
                    style={
                      c?.accuracy != null ? `background: rgba(44,160,44,${c.accuracy * 0.5})` : undefined
                    }
                  >
                    {value === null ? '' : fmtReward(value)}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function CompareView({ info, promptId }: { info: RunInfo; promptId: string }) {
  const r = useApi<ValidationCompare>(`/api/validation/${encodeURIComponent(promptId)}`, info.revision);
  if (r.error) return <p class="error">{r.error}</p>;
  const c = r.data;
  if (!c) return <p>Loading…</p>;
  return (
    <div class="compare">
      <h2>
        {c.promptId} across versions <small>{c.versions.map((v) => `v${v.version}`).join(', ')}</small>
      </h2>
      <p class="question">{c.question}</p>
      <div class="versions">
        {c.versions.map((v) => (
          <section key={v.version} class="version" data-version={v.version}>
            <h3>
              v{v.version}{' '}
              <small>
                <a href={href(['g', v.group.groupId])}>{v.group.groupId}</a>
              </small>
            </h3>
            {v.group.samples.map((s) => (
              <div key={s.sampleIndex} class="sample">
                <p>
                  <a href={href(['t', v.group.groupId, s.sampleIndex])}>sample {s.sampleIndex}</a> · reward{' '}
                  <b>{fmtReward(s.reward)}</b>
                  {c.accuracyComponent
                    ? ` · ${c.accuracyComponent} ${fmtReward(s.rewardComponents[c.accuracyComponent])}`
                    : ''}{' '}
                  · {s.finishReason}
                </p>
                {s.toolCalls.map((t, i) => (
                  <p key={i} class={t.ok ? 'call ok' : 'call failed'}>
                    <code>{t.name}</code> <code>{JSON.stringify(t.arguments)}</code> →{' '}
                    {t.ok ? <code>{t.output}</code> : t.error}
                  </p>
                ))}
                <pre class="answer">{s.answer}</pre>
              </div>
            ))}
          </section>
        ))}
      </div>
    </div>
  );
}
