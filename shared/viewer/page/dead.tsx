// The Dead letters tab: the run's dead-lettered messages by stage with their reasons, each linked to its group.
import type { DeadLetterView, RunInfo } from '../api.ts';
import { Problems } from './group.tsx';
import { href, useApi } from './hooks.ts';

export function DeadLetters({ info }: { info: RunInfo }) {
  const r = useApi<DeadLetterView>('/api/dead-letters', info.revision);
  if (r.error) return <p class="error">{r.error}</p>;
  const d = r.data;
  if (!d) return <p>Loading…</p>;
  const stages = Object.entries(d.byStage);
  return (
    <div class="dead">
      <Problems problems={d.problems} />
      {stages.length === 0 ? <p class="note">No dead-lettered message in this run.</p> : null}
      {stages.map(([stage, s]) => (
        <section key={stage} class="stage" data-stage={stage}>
          <h3>
            {stage}: {s.messages} message{s.messages === 1 ? '' : 's'} of {s.groups} group
            {s.groups === 1 ? '' : 's'}
          </h3>
          <ul>
            {s.reasons.map((x) => (
              <li key={x.reason}>
                {x.count} × <code>{x.reason}</code>
              </li>
            ))}
          </ul>
        </section>
      ))}
      {d.records.length ? (
        <table class="rows">
          <thead>
            <tr>
              <th>group</th>
              <th>split</th>
              <th>stage</th>
              <th>sample</th>
              <th>receives</th>
              <th>when</th>
              <th>reason</th>
            </tr>
          </thead>
          <tbody>
            {d.records.map((x) => (
              <tr key={`${x.groupId}/${x.stage}/${x.messageId}`} class="dead-letter">
                <td>
                  <a href={href(['g', x.groupId])}>{x.groupId}</a>
                  {x.groupScored ? '' : ' (no manifest)'}
                </td>
                <td>{x.split}</td>
                <td>{x.stage}</td>
                <td>{x.sampleIndex ?? 'group'}</td>
                <td class="num">{x.receiveCount}</td>
                <td>{x.deadLetteredAt}</td>
                <td class="reason">{x.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}
