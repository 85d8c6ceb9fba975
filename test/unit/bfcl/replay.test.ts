// The done-when tests of BFCL multi-turn: ground-truth call sequences played through the whole path (episode logic
// with its user turns, the registry view, the bfcl tools running BFCL's environments in the Python process) score
// perfectly under the `bfcl` reward; one corrupted call fails its turn; a state rebuilt by replay equals the live one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BfclEnv, closeSharedBfclEnvs } from '#shared/bfcl/client';
import { bfclEntryOf, groundTruthOf } from '#shared/bfcl/entry';
import { ensureBfclEnv } from '#shared/bfcl/env';
import { executedCalls } from '#shared/bfcl/trajectory';
import { episodeOutcome } from '#shared/episode/episode';
import type { EpisodeState } from '#shared/episode/state';
import { buildReward } from '#shared/rewards/build';
import { rewardInputFromTrajectory } from '#shared/rewards/input';
import type { RewardFn } from '#shared/rewards/types';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import type { ToolCall } from '#shared/schemas/tool-result';
import { buildToolRegistry, type ToolRegistry } from '#shared/tools/registry';
import { fixtureRow, fixtureRows, playEpisode, scriptFor } from './helpers.ts';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

let registry: ToolRegistry;
let env: BfclEnv;
let reward: RewardFn;

beforeAll(async () => {
  await ensureBfclEnv();
  registry = await buildToolRegistry({ tools: [{ kind: 'bfcl', config: {} }] });
  env = new BfclEnv();
  reward = await buildReward({ functions: [{ name: 'bfcl' }] }, { baseDir: '.' });
});

afterAll(async () => {
  await registry?.close();
  await env?.close();
  await closeSharedBfclEnvs();
});

/** The row's ground truth as JSON calls (positional arguments named by BFCL's method signatures). */
async function groundTruthCalls(row: DatasetRow): Promise<ToolCall[][]> {
  const entry = bfclEntryOf(row.extra_info);
  return Promise.all(groundTruthOf(row.reward_model.ground_truth).map((turn) => env.parse(entry, turn)));
}

const score = (row: DatasetRow, state: EpisodeState) => {
  const out = episodeOutcome(state);
  return reward(
    rewardInputFromTrajectory(out, {
      groundTruth: row.reward_model.ground_truth,
      extraInfo: row.extra_info,
      dataSource: row.data_source,
    }),
  );
};

describe('ground truth replayed through the bfcl tools', () => {
  it('scores every fixture entry perfectly (base, miss_func, miss_param, long_context)', async () => {
    const rows = await fixtureRows();
    expect(rows.map((r) => r.extra_info.category).sort()).toEqual([
      'multi_turn_base',
      'multi_turn_base',
      'multi_turn_base',
      'multi_turn_base',
      'multi_turn_base',
      'multi_turn_base',
      'multi_turn_long_context',
      'multi_turn_miss_func',
      'multi_turn_miss_param',
    ]);
    for (const row of rows) {
      const truth = await groundTruthCalls(row);
      const state = await playEpisode(registry, row, scriptFor(truth));
      // The last user turn's answer ends the episode normally, after every user turn was fed.
      expect(state.finishReason, String(row.extra_info.id)).toBe('eos');
      expect(state.userTurn).toBe(truth.length - 1);
      const calls = state.turns.flatMap((t) => t.toolCalls);
      expect(calls.map((c) => c.result.error?.type ?? 'ok').filter((t) => t !== 'ok')).toEqual([]);
      expect(calls.length).toBe(truth.flat().length);
      const n = truth.filter((t) => t.length > 0).length; // turns BFCL checks (miss_* have one without calls)
      expect(await score(row, state), String(row.extra_info.id)).toEqual({
        score: 1,
        components: {
          bfcl: 1,
          'bfcl/progress': 1,
          'bfcl/success': 1,
          'bfcl/turns_passed': n,
          'bfcl/turns_checked': n,
        },
      });
    }
  });

  it('fails the turn with a corrupted call and keeps the turns before it', async () => {
    // multi_turn_base_0, turn 1: cd(folder='temp'); grep(file_name='final_report.pdf', pattern='budget analysis').
    // Grepping for another pattern leaves the state equal but misses turn 1's ground-truth result, so turn 1 fails
    // BFCL's response check; turns 2 and 3 still pass (their state and results do not depend on the grep).
    const row = await fixtureRow('multi_turn_base_0');
    const truth = await groundTruthCalls(row);
    expect(truth[1]![1]).toEqual({
      name: 'grep',
      arguments: { file_name: 'final_report.pdf', pattern: 'budget analysis' },
    });
    const corrupted = truth.map((turn, t) =>
      turn.map((c, i) =>
        t === 1 && i === 1 ? { ...c, arguments: { ...(c.arguments as object), pattern: 'revenue' } } : c,
      ),
    );
    const state = await playEpisode(registry, row, scriptFor(corrupted));
    const out = await score(row, state);
    // 3 of 4 turns pass: progress = 3/4; BFCL's all-turns success is 0.
    expect(out.components).toMatchObject({
      'bfcl/progress': 0.75,
      'bfcl/success': 0,
      'bfcl/turns_passed': 3,
      'bfcl/turns_checked': 4,
    });
    const entry = bfclEntryOf(row.extra_info);
    const checks = await env.score(
      entry,
      groundTruthOf(row.reward_model.ground_truth),
      corrupted.map((turn) => [turn]),
      false,
    );
    expect(checks.turns.map((t) => t.check)).toEqual(['ok', 'execution_response_mismatch', 'ok', 'ok']);
    expect(checks.success).toMatchObject({
      valid: false,
      errorType: 'multi_turn:execution_response_mismatch',
    });
  });

  it('fails a turn whose state differs, and every later turn built on it', async () => {
    // Turn 0 of multi_turn_base_0 makes directory `temp`; making `tmp` instead changes the file system's state, so
    // BFCL's state check fails from turn 0 on (every later turn compares against a tree with `temp`).
    const row = await fixtureRow('multi_turn_base_0');
    const truth = await groundTruthCalls(row);
    expect(truth[0]![1]).toEqual({ name: 'mkdir', arguments: { dir_name: 'temp' } });
    const corrupted = truth.map((turn, t) =>
      turn.map((c, i) => (t === 0 && i === 1 ? { ...c, arguments: { dir_name: 'tmp' } } : c)),
    );
    const checks = await env.score(
      bfclEntryOf(row.extra_info),
      groundTruthOf(row.reward_model.ground_truth),
      corrupted.map((turn) => [turn]),
      false,
    );
    expect(checks.turns[0]).toMatchObject({ passed: false, check: 'instance_state_mismatch' });
    expect(checks.success.valid).toBe(false);
  });
});

describe('state rebuilt by replay', () => {
  it('equals the live state, and every call sees the same output with or without kept states', async () => {
    // TravelAPI draws booking ids from its seeded random generator: replay must reproduce the draws exactly.
    for (const id of ['multi_turn_base_153', 'multi_turn_base_102', 'multi_turn_long_context_0']) {
      const row = await fixtureRow(id);
      const truth = await groundTruthCalls(row);
      const before = await env.stats();
      const live = await playEpisode(registry, row, scriptFor(truth)); // keeps live states between calls
      const replayOnly = await buildToolRegistry({ tools: [{ kind: 'bfcl', config: { cache_states: 0 } }] });
      const replayed = await playEpisode(replayOnly, row, scriptFor(truth)); // rebuilds the state for every call
      await replayOnly.close();
      const outputs = (s: EpisodeState) => s.turns.flatMap((t) => t.toolCalls.map((c) => c.result));
      expect(outputs(replayed)).toEqual(outputs(live));

      const entry = bfclEntryOf(row.extra_info);
      const history = executedCalls(
        live.turns.flatMap((t) => t.toolCalls),
        new Set(truth.flat().map((c) => c.name)),
      );
      const fromScratch = await env.state(entry, history, { useCache: false });
      expect(Object.keys(fromScratch).sort()).toEqual(
        [...(row.extra_info.involved_classes as string[])].sort(),
      );
      // Run the same calls one at a time on live instances (as BFCL's own inference loop does), then compare.
      for (let i = 0; i < history.length; i++) await env.execute(entry, history.slice(0, i), [history[i]!]);
      const liveState = await env.state(entry, history, { useCache: true });
      expect(liveState).toEqual(fromScratch);
      const after = await env.stats();
      expect(after.continued - before.continued).toBeGreaterThanOrEqual(history.length);
    }
  });
});
