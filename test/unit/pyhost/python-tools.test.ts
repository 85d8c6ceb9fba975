// Python tools through the tool registry, with real host processes: each lifecycle step (create with the row's
// create_kwargs, execute, calc_reward, release), exceptions, timeouts of plain and async methods, a host that dies
// or hangs (restarted, in-flight calls failed with a clear error, the trajectory's instance rebuilt by replay), idle
// instances released, and load errors that name the tool.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ToolSpec } from '#shared/schemas/config/tools';
import type { ToolCallRecord, ToolResult } from '#shared/schemas/tool-result';
import { buildToolRegistry, type ToolRegistry } from '#shared/tools/registry';
import { REPO_ROOT } from '../../../bench/support/tiny-model.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'pytools');
const dir = mkdtempSync(join(tmpdir(), 'toolrl-pytools-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let registry: ToolRegistry | undefined;
afterEach(async () => {
  await registry?.close();
  registry = undefined;
});

const schema = (name: string) => ({
  type: 'function' as const,
  function: {
    name,
    description: `${name} probe`,
    parameters: {
      type: 'object',
      properties: { op: { type: 'string' }, value: {} },
    },
  },
});

let logs = 0;
/** A probe tool writing its lifecycle to a fresh log; `events()` reads it back. */
function probe(cls: 'SyncProbe' | 'AsyncProbe', name: string, config: Record<string, unknown> = {}) {
  const log = join(dir, `probe-${++logs}.jsonl`);
  const spec: ToolSpec = {
    path: 'probe_tool.py',
    name: cls,
    config: { log, ...config },
    tool_schema: schema(name),
  };
  const events = (): Record<string, unknown>[] => {
    try {
      return readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    } catch {
      return [];
    }
  };
  return { spec, events };
}

const build = async (tools: ToolSpec[], python?: Record<string, unknown>) => {
  registry = await buildToolRegistry({ tools, ...(python ? { python } : {}) } as never, {
    baseDir: FIXTURES,
  });
  return registry;
};

/** A trajectory's view: its id, the row's extra_info and the calls it made so far. */
const trajectory = (
  r: ToolRegistry,
  id: string,
  extraInfo: Record<string, unknown> = {},
  history: ToolCallRecord[] = [],
) => r.forRow({ trajectoryId: id, extraInfo, history });

const record = (name: string, args: unknown, result: ToolResult): ToolCallRecord => ({
  name,
  arguments: args,
  result,
  durationMs: 0,
});

describe('a verl-style tool class (class_name by dotted path)', () => {
  it('is built with its config and schema, and runs create / execute / calc_reward / release per trajectory', async () => {
    const r = await buildToolRegistry({ config_file: 'tools.yaml' }, { baseDir: FIXTURES });
    registry = r;
    // GIVEN the tool config verl users write, and a row carrying the ground truth in tools_kwargs
    expect(r.names()).toEqual(['calculator']);
    expect(r.schemas()[0]?.function.description).toBe('Evaluate an arithmetic expression.');
    expect(r.stateful).toBe(true);
    const extraInfo = { tools_kwargs: { calculator: { create_kwargs: { ground_truth: '391' } } } };

    // WHEN the model calls it twice in one trajectory
    const first = await trajectory(r, 'run/g0/0', extraInfo).call({
      name: 'calculator',
      arguments: { expression: '17*20' },
    });
    const history = [record('calculator', { expression: '17*20' }, first)];
    const second = await trajectory(r, 'run/g0/0', extraInfo, history).call({
      name: 'calculator',
      arguments: { expression: '17*23' },
    });

    // THEN each call returns its text, verl's step reward and metrics, and the instance keeps its state
    expect(first).toEqual({
      ok: true,
      output: '340',
      error: null,
      truncated: false,
      reward: -0.05,
      metrics: { calls: 1 },
    });
    expect(second).toMatchObject({ ok: true, output: '391', reward: 0, metrics: { calls: 2 } });
    // AND calc_reward at the trajectory's end sees both calls; a second finish finds it released (rebuilt: 1)
    history.push(record('calculator', { expression: '17*23' }, second));
    expect(await r.finishTrajectory({ trajectoryId: 'run/g0/0', extraInfo, history })).toEqual({
      rewards: { calculator: 1 },
      errors: [],
    });
    // Another trajectory of the same row without the right answer scores 0.
    const other = await trajectory(r, 'run/g0/1', extraInfo).call({
      name: 'calculator',
      arguments: { expression: '1+1' },
    });
    expect(
      await r.finishTrajectory({
        trajectoryId: 'run/g0/1',
        extraInfo,
        history: [record('calculator', { expression: '1+1' }, other)],
      }),
    ).toEqual({ rewards: { calculator: 0 }, errors: [] });
  });

  it('turns an exception into an execution error the model reads', async () => {
    const r = await buildToolRegistry({ config_file: 'tools.yaml' }, { baseDir: FIXTURES });
    registry = r;
    const out = await trajectory(r, 't1').call({
      name: 'calculator',
      arguments: { expression: '__import__("os")' },
    });
    expect(out.ok).toBe(false);
    expect(out.error?.type).toBe('execution_error');
    expect(out.error?.message).toMatch(
      /CalcTool\.execute raised ValueError: unsupported expression element Call/,
    );
  });
});

describe('the lifecycle of a class from a file (path + name)', () => {
  it.each(['SyncProbe', 'AsyncProbe'] as const)(
    '%s: create(instance_id, **create_kwargs), then execute, calc_reward, release',
    async (cls) => {
      const p = probe(cls, 'probe');
      const r = await build([p.spec]);
      const extraInfo = { tools_kwargs: { probe: { create_kwargs: { start: 10 } } } };
      const a = await trajectory(r, 'tA', extraInfo).call({
        name: 'probe',
        arguments: { op: 'add', value: 5 },
      });
      expect(a).toMatchObject({ ok: true, output: 'total 15', reward: 5 });
      const history = [record('probe', { op: 'add', value: 5 }, a)];
      const b = await trajectory(r, 'tA', extraInfo, history).call({
        name: 'probe',
        arguments: { op: 'add', value: 2 },
      });
      expect(b.output).toBe('total 17');
      history.push(record('probe', { op: 'add', value: 2 }, b));
      expect(await r.finishTrajectory({ trajectoryId: 'tA', extraInfo, history })).toEqual({
        rewards: { probe: 17 },
        errors: [],
      });
      expect(p.events().map((e) => [e.event, e.id ?? null])).toEqual([
        ['init', null],
        ['create', 'tA'],
        ['execute', 'tA'],
        ['execute', 'tA'],
        ['calc_reward', 'tA'],
        ['release', 'tA'],
      ]);
      // The class got its whole config; create got the row's create_kwargs both as verl's older rollout passes them
      // (spread) and as its agent loop does (one `create_kwargs` keyword), for a create that takes **kwargs.
      expect(p.events()[0]?.keys).toEqual(['log']);
      expect(p.events()[1]?.kwargs).toEqual({ start: 10, create_kwargs: { start: 10 } });
    },
  );

  it('runs a call outside any trajectory as a trajectory of its own (create, execute, release)', async () => {
    const p = probe('SyncProbe', 'probe');
    const r = await build([p.spec]);
    expect(await r.call({ name: 'probe', arguments: { op: 'add', value: 3 } })).toMatchObject({
      output: 'total 3',
    });
    expect(p.events().map((e) => e.event)).toEqual(['init', 'create', 'execute', 'release']);
  });
});

describe('failures', () => {
  it('an exception is an execution error naming the class, method and exception', async () => {
    const p = probe('SyncProbe', 'probe');
    const r = await build([p.spec]);
    const out = await trajectory(r, 't').call({ name: 'probe', arguments: { op: 'raise', value: 7 } });
    expect(out.ok).toBe(false);
    expect(out.error).toMatchObject({ type: 'execution_error' });
    expect(out.error?.message).toMatch(
      /SyncProbe from probe_tool\.py\.execute raised ValueError: bad value 7/,
    );
  });

  it('a plain method past its timeout is stopped inside its thread and reported; the host serves on', async () => {
    const p = probe('SyncProbe', 'probe', { timeout: 0.5 });
    const r = await build([p.spec]);
    const out = await trajectory(r, 't').call({ name: 'probe', arguments: { op: 'spin' } });
    expect(out.error).toEqual({
      type: 'timeout',
      message: expect.stringMatching(
        /SyncProbe from probe_tool\.py\.execute did not finish within 0\.5s and was cancelled/,
      ),
    });
    // The busy loop received the cancellation (its finally ran) and the same process answers the next call.
    await until(() => p.events().some((e) => e.event === 'spin stopped'));
    const next = await trajectory(r, 't2').call({ name: 'probe', arguments: { op: 'add', value: 1 } });
    expect(next.output).toBe('total 1');
    expect(new Set(p.events().map((e) => e.pid)).size).toBe(1);
  });

  it('an async method past its timeout is cancelled', async () => {
    const p = probe('AsyncProbe', 'probe', { timeout: 0.5 });
    const r = await build([p.spec]);
    const out = await trajectory(r, 't').call({ name: 'probe', arguments: { op: 'sleep', value: 30 } });
    expect(out.error?.type).toBe('timeout');
    await until(() => p.events().some((e) => e.event === 'cancelled'));
  });

  it('a host that dies fails the calls in flight with a clear error, restarts, and rebuilds the trajectory by replay', async () => {
    const p = probe('SyncProbe', 'probe');
    const r = await build([p.spec]);
    const extraInfo = { tools_kwargs: { probe: { create_kwargs: { start: 100 } } } };
    const a = await trajectory(r, 'tA', extraInfo).call({
      name: 'probe',
      arguments: { op: 'add', value: 1 },
    });
    const history = [record('probe', { op: 'add', value: 1 }, a)];
    // WHEN one trajectory's call ends the process while another's is still running
    const [killed, bystander] = await Promise.all([
      trajectory(r, 'tB').call({ name: 'probe', arguments: { op: 'exit' } }),
      trajectory(r, 'tC').call({ name: 'probe', arguments: { op: 'sleep', value: 5 } }),
    ]);
    // THEN both are failed with an error that says what happened; neither is lost
    for (const out of [killed, bystander]) {
      expect(out.ok).toBe(false);
      expect(out.error?.type).toBe('internal_error');
      expect(out.error?.message).toMatch(
        /the Python tool host \(.+\) exited \(code 3\).*while execute was in flight/s,
      );
    }
    // AND the next call of trajectory A starts a new host, which rebuilds A's instance (create + its earlier call)
    const b = await trajectory(r, 'tA', extraInfo, history).call({
      name: 'probe',
      arguments: { op: 'add', value: 1 },
    });
    expect(b).toMatchObject({ ok: true, output: 'total 102' });
    const pids = [...new Set(p.events().map((e) => e.pid))];
    expect(pids).toHaveLength(2);
    const second = p.events().filter((e) => e.pid === pids[1]);
    expect(second.map((e) => [e.event, e.value ?? null])).toEqual([
      ['init', null],
      ['create', null],
      ['execute', 1],
      ['execute', 1],
    ]);
  });

  it('a host whose event loop is blocked past the timeout is killed and restarted', async () => {
    const p = probe('AsyncProbe', 'probe', { timeout: 0.3 });
    const r = await build([p.spec]);
    const t0 = performance.now();
    const out = await trajectory(r, 't').call({ name: 'probe', arguments: { op: 'block', value: 60 } });
    expect(out.error?.type).toBe('internal_error');
    expect(out.error?.message).toMatch(/did not answer execute within .*s and was restarted/);
    expect(performance.now() - t0).toBeLessThan(50_000);
    const next = await trajectory(r, 't2').call({ name: 'probe', arguments: { op: 'add', value: 1 } });
    expect(next.output).toBe('total 1');
  });

  it('releases instances left idle past tools.python.instance_ttl (an abandoned trajectory)', async () => {
    const p = probe('SyncProbe', 'probe');
    const r = await build([p.spec], { instance_ttl: 0.3 });
    await trajectory(r, 'abandoned').call({ name: 'probe', arguments: { op: 'add', value: 1 } });
    await until(() => p.events().some((e) => e.event === 'release' && e.id === 'abandoned'));
  });
});

describe('load errors name the tool', () => {
  it.each([
    [{ path: 'missing.py', name: 'X' }, /tool X from missing\.py: .*no such file/],
    [{ path: 'probe_tool.py', name: 'Nope' }, /probe_tool\.py defines no 'Nope' \(it defines: .*SyncProbe/],
    [
      { class_name: 'no_such_module.Tool' },
      /tool no_such_module\.Tool: .*cannot import no_such_module.*ModuleNotFoundError/,
    ],
    // verl's BaseTool itself fails without a schema; the error says where.
    [
      { class_name: 'calc_tool.CalcTool' },
      /constructing calc_tool\.CalcTool failed: .*AttributeError: .*tool_schema/s,
    ],
  ])('%o', async (spec, message) => {
    await expect(build([{ config: { log: join(dir, 'x.jsonl') }, ...spec } as ToolSpec])).rejects.toThrow(
      message,
    );
  });

  it('a class name that is neither built in nor dotted is an unknown kind', async () => {
    await expect(build([{ class_name: 'MyTool', config: {} }])).rejects.toThrow(
      /unknown tool kind "MyTool".*class_name: my_pkg\.module\.MyTool/,
    );
  });
});

async function until(cond: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

void writeFileSync;
