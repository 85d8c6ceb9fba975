// The Trajectories tab: one page of the run's trajectories at a time, filtered and sorted by the server. The
// filters live in the address (#/trajectories?minReward=0.5…), so a filtered view can be linked and reloaded.
import { useEffect, useState } from 'preact/hooks';
import type { RunInfo, TrajectoryPage, TrajectoryRow } from '../api.ts';
import { queryString } from './fetch.ts';
import { href, type Route, useApi } from './hooks.ts';

const PAGE = 50;
const FILTERS = [
  'split',
  'step',
  'version',
  'prompt',
  'minReward',
  'maxReward',
  'finish',
  'failed',
  'sort',
  'desc',
] as const;

function setParam(route: Route, name: string, value: string) {
  const p = new URLSearchParams(route.params);
  if (value === '') p.delete(name);
  else p.set(name, value);
  if (name !== 'offset') p.delete('offset');
  location.hash = href(['trajectories'], p);
}

export const fmtReward = (v: number | null | undefined): string =>
  v === null || v === undefined ? '–' : String(Number(v.toFixed(4)));

export const versionText = (v: readonly [number, number] | null): string =>
  v === null ? '–' : v[0] === v[1] ? `v${v[0]}` : `v${v[0]}–v${v[1]}`;

export function Trajectories({ info, route }: { info: RunInfo; route: Route }) {
  const params: Record<string, string> = {};
  for (const f of FILTERS) {
    const v = route.params.get(f);
    if (v) params[f] = v;
  }
  const offset = Number(route.params.get('offset') ?? 0);
  const page = useApi<TrajectoryPage>(
    `/api/trajectories${queryString({ ...params, offset, limit: PAGE })}`,
    info.revision,
  );
  const d = page.data;
  const text = (name: string, label: string, width = 7, placeholder = '') => (
    <TextFilter
      name={name}
      label={label}
      width={width}
      placeholder={placeholder}
      value={params[name] ?? ''}
      onCommit={(v) => setParam(route, name, v)}
    />
  );
  const select = (name: string, label: string, options: readonly (readonly [string, string])[]) => (
    <label>
      {label}{' '}
      <select
        name={name}
        value={params[name] ?? ''}
        onChange={(e) => setParam(route, name, (e.target as HTMLSelectElement).value)}
      >
        {options.map(([v, t]) => (
          <option key={v} value={v}>
            {t}
          </option>
        ))}
      </select>
    </label>
  );

  return (
    <div class="trajectories">
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        {select('split', 'split', [
          ['', 'all'],
          ['train', 'train'],
          ['val', 'validation'],
        ])}
        {text('step', 'step', 6, d?.facets.steps ? `${d.facets.steps[0]}-${d.facets.steps[1]}` : '')}
        {text('version', 'version', 5, d?.facets.versions.length ? `0-${d.facets.versions.at(-1)}` : '')}
        {text('prompt', 'prompt', 16, 'text or id')}
        {text('minReward', 'reward ≥', 5)}
        {text('maxReward', '≤', 5)}
        {select('finish', 'finish', [
          ['', 'any'],
          ...(d?.facets.finishReasons ?? []).map((f) => [f, f] as const),
        ])}
        {select('failed', 'tool call failed', [
          ['', 'either'],
          ['1', 'yes'],
          ['0', 'no'],
        ])}
        {select('sort', 'sort by', [
          ['', 'step'],
          ['reward', 'reward'],
          ['version', 'version'],
          ['toolCalls', 'tool calls'],
          ['group', 'group'],
        ])}
        <label>
          <input
            type="checkbox"
            name="desc"
            checked={params.desc === '1'}
            onChange={(e) => setParam(route, 'desc', (e.target as HTMLInputElement).checked ? '1' : '')}
          />{' '}
          descending
        </label>
        {Object.keys(params).length ? <a href="#/trajectories">clear</a> : null}
      </form>
      {page.error ? <p class="error">{page.error}</p> : null}
      {d ? (
        <>
          <Pager
            total={d.total}
            offset={d.offset}
            shown={d.rows.length}
            route={route}
            indexing={info.indexing}
          />
          <table class="rows">
            <thead>
              <tr>
                <th>group</th>
                <th>#</th>
                <th>step</th>
                <th>version</th>
                <th>prompt</th>
                <th>reward</th>
                <th>finish</th>
                <th>calls</th>
                <th>failed</th>
                <th>turns</th>
                <th title="tokens the policy sampled (loss mask 1)">sampled tokens</th>
              </tr>
            </thead>
            <tbody>
              {d.rows.map((r) => (
                <Row key={`${r.groupId}/${r.sampleIndex}`} r={r} />
              ))}
            </tbody>
          </table>
          {d.total === 0 ? <p class="note">No trajectory matches these filters.</p> : null}
        </>
      ) : (
        <p>Loading…</p>
      )}
    </div>
  );
}

/** A text filter: edited freely (a refresh of the page leaves what is being typed), applied on Enter or blur. */
function TextFilter(p: {
  name: string;
  label: string;
  width: number;
  placeholder: string;
  value: string;
  onCommit: (value: string) => void;
}) {
  const [text, setText] = useState(p.value);
  useEffect(() => setText(p.value), [p.value]);
  return (
    <label>
      {p.label}{' '}
      <input
        name={p.name}
        size={p.width}
        placeholder={p.placeholder}
        value={text}
        onInput={(e) => setText((e.target as HTMLInputElement).value)}
        onChange={(e) => p.onCommit((e.target as HTMLInputElement).value.trim())}
      />
    </label>
  );
}

function Row({ r }: { r: TrajectoryRow }) {
  const open = href(['t', r.groupId, r.sampleIndex]);
  return (
    <tr
      class="row"
      data-group={r.groupId}
      data-sample={r.sampleIndex}
      data-reward={r.reward}
      onClick={() => (location.hash = open)}
    >
      <td>
        <a href={href(['g', r.groupId])} onClick={(e) => e.stopPropagation()}>
          {r.groupId}
        </a>
      </td>
      <td>
        <a href={open}>{r.sampleIndex}</a>
      </td>
      <td>{r.step ?? '–'}</td>
      <td>{versionText(r.versions)}</td>
      <td class="prompt" title={r.prompt}>
        {r.prompt}
      </td>
      <td class="num">{fmtReward(r.reward)}</td>
      <td>{r.finishReason}</td>
      <td class="num">{r.toolCalls}</td>
      <td class={r.failedToolCalls ? 'bad num' : 'num'}>{r.failedToolCalls}</td>
      <td class="num">{r.turns}</td>
      <td class="num">{r.responseTokens}</td>
    </tr>
  );
}

function Pager(p: {
  total: number;
  offset: number;
  shown: number;
  route: Route;
  indexing: RunInfo['indexing'];
}) {
  const go = (offset: number) => setParam(p.route, 'offset', offset > 0 ? String(offset) : '');
  const reading = p.indexing.read < p.indexing.listed;
  return (
    <div class="pager">
      <button type="button" disabled={p.offset === 0} onClick={() => go(Math.max(0, p.offset - PAGE))}>
        ← previous
      </button>
      <span class="count">
        {p.total === 0 ? 0 : p.offset + 1}–{p.offset + p.shown} of {p.total}
      </span>
      <button type="button" disabled={p.offset + p.shown >= p.total} onClick={() => go(p.offset + PAGE)}>
        next →
      </button>
      {reading ? (
        <span class="note">
          {' '}
          reading group files: {p.indexing.read} of {p.indexing.listed}
        </span>
      ) : null}
    </div>
  );
}
