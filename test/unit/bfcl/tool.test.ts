// The `bfcl` tool kind through the registry: schemas from the row, calls of a turn in the model's order, held-out
// functions refused until revealed, bad arguments and raising calls as tool errors the model reads (and that the
// replay then leaves out or keeps, by the shared rule).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSharedBfclEnvs } from '#shared/bfcl/client';
import { ensureBfclEnv } from '#shared/bfcl/env';
import { startEpisode } from '#shared/episode/episode';
import { episodeRowTools, userTurnsOf } from '#shared/episode/user-turns';
import { buildToolRegistry, type ToolRegistry } from '#shared/tools/registry';
import { fixtureRow } from './helpers.ts';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

let registry: ToolRegistry;

beforeAll(async () => {
  await ensureBfclEnv();
  registry = await buildToolRegistry({ tools: [{ kind: 'bfcl', config: { cache_states: 0 } }] });
});

afterAll(async () => {
  await registry?.close();
  await closeSharedBfclEnvs();
});

const ok = (output: string) => ({ ok: true, output, error: null, truncated: false });

describe('bfcl tools', () => {
  it('offers the functions of the entry’s classes and none without a row', async () => {
    const row = await fixtureRow('multi_turn_base_0'); // TwitterAPI + GorillaFileSystem
    expect(registry.schemas()).toEqual([]);
    const names = registry.forRow(episodeRowTools(row)).names();
    expect(names).toEqual(expect.arrayContaining(['cd', 'ls', 'mv', 'post_tweet', 'authenticate_twitter']));
    expect(names).not.toContain('fillFuelTank');
  });

  it('runs the calls of one turn in the model’s order, each seeing the ones before', async () => {
    const row = await fixtureRow('multi_turn_base_0');
    const view = registry.forRow(episodeRowTools(row));
    // Started together, as the tool-call stage does; `ls` must run after `cd`.
    const [cd, ls, pwd] = await Promise.all([
      view.call({ name: 'cd', arguments: { folder: 'document' } }),
      view.call({ name: 'ls', arguments: {} }),
      view.call({ name: 'pwd', arguments: {} }),
    ]);
    expect(cd).toEqual(ok('{"current_working_directory": "document"}'));
    expect(ls).toEqual(ok('{"current_directory_content": ["final_report.pdf", "previous_report.pdf"]}'));
    expect(pwd).toEqual(ok('{"current_working_directory": "/workspace/document"}'));
  });

  it('rebuilds the state from the history the next request carries', async () => {
    const row = await fixtureRow('multi_turn_base_0');
    const history = [
      // Arguments written as a JSON string, as a model may: replayed as the registry ran them.
      { name: 'cd', arguments: '{"folder": "document"}', result: ok('{}'), durationMs: 1 },
      // Refused before it ran: not replayed.
      {
        name: 'cd',
        arguments: { folder: 1 },
        result: {
          ok: false,
          output: '',
          error: { type: 'invalid_arguments' as const, message: 'x' },
          truncated: false,
        },
        durationMs: 0,
      },
    ];
    const view = registry.forRow({ ...episodeRowTools(row), history });
    expect(await view.call({ name: 'pwd', arguments: {} })).toEqual(
      ok('{"current_working_directory": "/workspace/document"}'),
    );
  });

  it('refuses a held-out function until its turn', async () => {
    const row = await fixtureRow('multi_turn_miss_func_0'); // `sort` arrives at user turn 3
    const early = registry.forRow(episodeRowTools(row));
    const r = await early.call({ name: 'sort', arguments: { file_name: 'final_report.pdf' } });
    expect(r.error?.type).toBe('unknown_tool');
    const state = startEpisode({}, row.prompt, { userTurns: userTurnsOf(row) });
    const cd = { name: 'cd', arguments: { folder: 'document' }, result: ok('{}'), durationMs: 1 };
    const revealed = registry.forRow({ ...episodeRowTools(row, { ...state, userTurn: 3 }), history: [cd] });
    const sorted = await revealed.call({ name: 'sort', arguments: { file_name: 'final_report.pdf' } });
    expect(sorted).toMatchObject({ ok: true, output: expect.stringMatching(/sorted_content/) });
  });

  it('reports bad arguments and calls that raise inside BFCL as tool errors', async () => {
    const row = await fixtureRow('multi_turn_base_0');
    const view = registry.forRow(episodeRowTools(row));
    const missing = await view.call({ name: 'cd', arguments: {} });
    expect(missing).toMatchObject({
      ok: false,
      error: { type: 'invalid_arguments', message: expect.stringMatching(/folder/) },
    });
    const typed = await view.call({ name: 'cd', arguments: { folder: 3 } });
    expect(typed.error?.type).toBe('invalid_arguments');
    // Not a Python keyword name: the environment refuses to build the call.
    const odd = await view.call({ name: 'ls', arguments: { 'a-b': true } });
    expect(odd).toMatchObject({
      ok: false,
      error: { type: 'invalid_arguments', message: expect.stringMatching(/a-b/) },
    });
    // An unexpected keyword passes the schema (BFCL's schemas allow extra keys) and raises in Python.
    const raised = await view.call({ name: 'ls', arguments: { a: true, colour: 'red' } });
    expect(raised).toMatchObject({
      ok: false,
      error: {
        type: 'execution_error',
        message: expect.stringMatching(/unexpected keyword argument 'colour'/),
      },
    });
    // A failure the function itself reports is its normal output, as BFCL shows it to the model.
    expect(await view.call({ name: 'cat', arguments: { file_name: 'nope.txt' } })).toEqual(
      ok(`{"error": "cat: 'nope.txt': No such file or directory"}`),
    );
  });

  it('needs no Python to render schemas; a call reports an environment that does not start', async () => {
    // The rollout stage builds the registry only for the row's schemas: no process may be needed for that.
    const noPython = await buildToolRegistry({
      tools: [{ kind: 'bfcl', config: { python: '/nonexistent/python' } }],
    });
    const row = await fixtureRow('multi_turn_base_0');
    const view = noPython.forRow(episodeRowTools(row));
    expect(view.names()).toContain('mkdir');
    const r = await view.call({ name: 'pwd', arguments: {} });
    expect(r).toMatchObject({
      ok: false,
      error: {
        type: 'internal_error',
        message: expect.stringMatching(/BFCL environment did not start.*could not start/),
      },
    });
    await noPython.close();
  });

  it('tells the model when the row is not a BFCL entry', async () => {
    const view = registry.forRow({
      tools: [
        { type: 'function', function: { name: 'ls', description: '', parameters: { type: 'object' } } },
      ],
      extraInfo: { index: 0 },
    });
    const r = await view.call({ name: 'ls', arguments: {} });
    expect(r).toMatchObject({
      ok: false,
      error: { type: 'internal_error', message: expect.stringMatching(/not a BFCL row.*initial_config/) },
    });
  });
});
