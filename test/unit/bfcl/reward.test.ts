// The `bfcl` reward on reward inputs written by hand (as `toolrl reward score` reads them): per-turn progress, the
// all-turns success, early ends, the weighted combination with `format`, and clear errors on rows it cannot score.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BfclEnv, closeSharedBfclEnvs } from '#shared/bfcl/client';
import { bfclEntryOf, groundTruthOf } from '#shared/bfcl/entry';
import { ensureBfclEnv } from '#shared/bfcl/env';
import { buildReward } from '#shared/rewards/build';
import { normaliseRewardInput } from '#shared/rewards/input';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import type { ToolCall } from '#shared/schemas/tool-result';
import { callsText, fixtureRow, scriptFor } from './helpers.ts';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

let env: BfclEnv;
let row: DatasetRow;
let truth: ToolCall[][];

beforeAll(async () => {
  await ensureBfclEnv();
  env = new BfclEnv();
  row = await fixtureRow('multi_turn_base_0'); // 4 user turns
  truth = await Promise.all(
    groundTruthOf(row.reward_model.ground_truth).map((t) => env.parse(bfclEntryOf(row.extra_info), t)),
  );
});

afterAll(async () => {
  await env?.close();
  await closeSharedBfclEnvs();
});

/** A hand-written input: per user turn a turn with its calls (parsed from text, results unknown), then an answer. */
const input = (turns: ToolCall[][], finishReason = 'eos') =>
  normaliseRewardInput({
    turns: scriptFor(turns).map((text) => ({ text })),
    finish_reason: finishReason,
    row: { reward_model: row.reward_model, extra_info: row.extra_info, data_source: row.data_source },
  });

describe('bfcl reward', () => {
  it('scores progress by turn and success over all turns', async () => {
    const reward = await buildReward({ functions: [{ name: 'bfcl' }] }, { baseDir: '.' });
    expect((await reward(input(truth))).components).toMatchObject({ 'bfcl/progress': 1, 'bfcl/success': 1 });
    // Turn 2 (sort) left out: that turn fails its response check; the others pass. progress = 3/4.
    const skipped = truth.map((t, i) => (i === 2 ? [] : t));
    const out = await reward(input(skipped));
    expect(out).toEqual({
      score: 0.75,
      components: {
        bfcl: 0.75,
        'bfcl/progress': 0.75,
        'bfcl/success': 0,
        'bfcl/turns_passed': 3,
        'bfcl/turns_checked': 4,
      },
    });
  });

  it('counts unreached turns as failed and an early end as BFCL’s force termination', async () => {
    const reward = await buildReward(
      { functions: [{ name: 'bfcl', config: { score: 'success' } }] },
      { baseDir: '.' },
    );
    // The episode stopped at max_turns after two user turns, both right: progress 2/4, success 0.
    const early = normaliseRewardInput({
      turns: [{ text: callsText(truth[0]!) }, { text: 'ok' }, { text: callsText(truth[1]!) }],
      finish_reason: 'max_turns',
      row: { reward_model: row.reward_model, extra_info: row.extra_info },
    });
    expect((await reward(early)).components).toMatchObject({
      bfcl: 0,
      'bfcl/progress': 0.5,
      'bfcl/success': 0,
    });
    // All turns right but cut short at the very end (the last answer never came): still not a success.
    const cut = await reward(input(truth, 'length'));
    expect(cut.components).toMatchObject({ 'bfcl/progress': 1, 'bfcl/success': 0 });
  });

  it('combines with the format reward by weight', async () => {
    const reward = await buildReward(
      {
        functions: [
          { name: 'bfcl', weight: 1 },
          { name: 'format', weight: 0.5 },
        ],
      },
      { baseDir: '.' },
    );
    // bfcl = 1; format = (well_formed 1 + final_answer 1) / 2 = 1; score = 1 * 1 + 0.5 * 1 = 1.5.
    expect((await reward(input(truth))).score).toBe(1.5);
  });

  it('names what is missing when the row is not a BFCL entry', async () => {
    const reward = await buildReward({ functions: [{ name: 'bfcl' }] }, { baseDir: '.' });
    const bare = normaliseRewardInput({ turns: [{ text: 'hi' }], ground_truth: [['ls()']] });
    await expect(reward(bare)).rejects.toThrow(/reward bfcl failed: not a BFCL row: extra_info needs id/);
    const badTruth = normaliseRewardInput({
      turns: [{ text: 'hi' }],
      ground_truth: 'ls()',
      extra_info: row.extra_info,
    });
    await expect(reward(badTruth)).rejects.toThrow(/one list of call strings per user turn/);
    // Ground truth from data is checked before BFCL's checker evaluates it.
    const evil = normaliseRewardInput({
      turns: [{ text: 'hi' }],
      ground_truth: [["__import__('os').system('true')"], [], [], []],
      extra_info: row.extra_info,
    });
    await expect(reward(evil)).rejects.toThrow(/not a plain function call|not a function of this entry/);
    await expect(
      buildReward({ functions: [{ name: 'bfcl', config: { scor: 'x' } }] }, { baseDir: '.' }),
    ).rejects.toThrow(/reward bfcl: bad config/);
  });
});
