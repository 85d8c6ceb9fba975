// `toolrl view`'s page: a header with the run's state and anything that could not be read, and tabs for the
// curves, the trajectories, validation across versions and the dead letters. It polls the server while the run
// goes on; every view refetches when the run's revision changes.
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { RunInfo } from '../api.ts';
import { Curves } from './curves.tsx';
import { DeadLetters } from './dead.tsx';
import { getJson } from './fetch.ts';
import { CompareView, GroupView, Problems, ValidationView } from './group.tsx';
import { href, useRoute } from './hooks.ts';
import { Trajectories } from './table.tsx';
import { TrajectoryView } from './trajectory.tsx';

/** Polling period while the run is live, and after it ended (the index may still be reading). */
const LIVE_MS = 3000;
const IDLE_MS = 15000;

function App() {
  const route = useRoute();
  const [info, setInfo] = useState<RunInfo | undefined>();
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let live = true;
    const poll = async () => {
      let next = LIVE_MS;
      try {
        const i = await getJson<RunInfo>('/api/run');
        if (!live) return;
        // A new object only when something changed: every view re-renders on it.
        setInfo((prev) => (prev && JSON.stringify(prev) === JSON.stringify(i) ? prev : i));
        setError(undefined);
        const ended = i.status === 'completed' || i.status === 'failed';
        if (ended && i.indexing.read >= i.indexing.listed) next = IDLE_MS;
      } catch (err) {
        setError((err as Error).message);
      }
      if (live) timer = setTimeout(poll, next);
    };
    void poll();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, []);

  if (!info) return <p class={error ? 'error' : ''}>{error ?? 'Loading…'}</p>;
  const [tab = 'curves', a, b] = route.parts;
  return (
    <>
      <Header info={info} error={error} tab={tab} />
      <main>
        {!info.found ? (
          <NotFound info={info} />
        ) : tab === 'trajectories' ? (
          <Trajectories info={info} route={route} />
        ) : tab === 't' && a !== undefined && b !== undefined ? (
          <TrajectoryView info={info} groupId={a} sample={Number(b)} />
        ) : tab === 'g' && a !== undefined ? (
          <GroupView info={info} groupId={a} />
        ) : tab === 'validation' && a !== undefined ? (
          <CompareView info={info} promptId={a} />
        ) : tab === 'validation' ? (
          <ValidationView info={info} />
        ) : tab === 'dead-letters' ? (
          <DeadLetters info={info} />
        ) : (
          <Curves info={info} />
        )}
      </main>
    </>
  );
}

function Header({ info, error, tab }: { info: RunInfo; error: string | undefined; tab: string }) {
  const tabs: [string, string][] = [
    ['curves', 'Curves'],
    ['trajectories', `Trajectories (${info.counts.trajectories})`],
    ['validation', `Validation (${info.counts.evals} versions)`],
    ['dead-letters', `Dead letters (${info.counts.deadLetters})`],
  ];
  const l = info.learner;
  useEffect(() => {
    document.title = `${info.runId} · toolrl view`;
  }, [info.runId]);
  const current = tab === 't' || tab === 'g' ? 'trajectories' : tab;
  return (
    <header>
      <h1>
        {info.runId} <span class={`status ${info.status ?? 'missing'}`}>{info.status ?? 'not found'}</span>
      </h1>
      <p class="where">
        {info.where}
        {info.name ? ` · ${info.name}` : ''}
        {l ? ` · step ${l.step} · policy v${l.policyVersion}` : ''}
        {` · ${info.counts.trainGroups}${info.groupsPlanned !== null ? ` of ${info.groupsPlanned}` : ''} train groups scored`}
        {info.counts.groups > info.counts.trainGroups
          ? `, ${info.counts.groups - info.counts.trainGroups} validation groups`
          : ''}
        {info.status === 'running' || info.status === 'starting' ? ' · refreshing every 3 s' : ''}
      </p>
      {info.reason ? <p class="error">{info.reason}</p> : null}
      {error ? <p class="error">the viewer's server did not answer: {error}</p> : null}
      {info.problems.length ? (
        <details class="problems-box" open={info.problems.length <= 3}>
          <summary>
            {info.problems.length} thing{info.problems.length === 1 ? '' : 's'} could not be read (the rest is
            shown)
          </summary>
          <Problems problems={info.problems} />
        </details>
      ) : null}
      <nav>
        {tabs.map(([id, label]) => (
          <a key={id} href={href([id])} class={current === id ? 'active' : ''}>
            {label}
          </a>
        ))}
      </nav>
    </header>
  );
}

function NotFound({ info }: { info: RunInfo }) {
  return (
    <div class="error-box">
      <p>
        There is no run <b>{info.runId}</b> at {info.where} (nothing under its prefix). The page keeps
        looking: it shows the run once its files appear.
      </p>
      {info.otherRuns.length ? (
        <p>
          Runs there:{' '}
          {info.otherRuns.map((r) => (
            <code key={r}>{r} </code>
          ))}
        </p>
      ) : (
        <p>No run is there at all: check --workdir (or --env).</p>
      )}
    </div>
  );
}

render(<App />, document.getElementById('app')!);
