// A missing-parameter entry where the model guesses instead of asking, scored by BFCL's checker (the `bfcl`
// reward). multi_turn_miss_param_0, turn 3: "Move one of the files in document to temp as well ... compare it with
// previous_report.pdf" (which file is left out: its ground truth is empty, the model should ask); turn 4: "The
// specific file is previous_report.pdf." (ground truth: cd .., mv it to temp, cd temp, diff). BFCL does not check
// the empty turn itself; calls made there still run, so a guess is judged by the state it leaves for turn 4.
// bfcl-eval's runner (2026.3.23) never calls its multi_turn_irrelevance_checker, so a guess is not failed for
// being a guess: only a wrong one (or a right one the model does not follow up at turn 4) fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTrajectory } from '#shared/bfcl/check';
import { BfclEnv, closeSharedBfclEnvs } from '#shared/bfcl/client';
import { bfclEntryOf, groundTruthOf } from '#shared/bfcl/entry';
import { ensureBfclEnv } from '#shared/bfcl/env';
import { buildReward } from '#shared/rewards/build';
import { normaliseRewardInput } from '#shared/rewards/input';
import type { RewardFn } from '#shared/rewards/types';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import type { ToolCall } from '#shared/schemas/tool-result';
import { callsText, fixtureRow } from './helpers.ts';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

let env: BfclEnv;
let row: DatasetRow;
let reward: RewardFn;
let truth: ToolCall[][];
const parse = (calls: string[]) => env.parse(bfclEntryOf(row.extra_info), calls);

beforeAll(async () => {
  await ensureBfclEnv();
  env = new BfclEnv();
  row = await fixtureRow('multi_turn_miss_param_0'); // 5 user turns; turn 3's ground truth is []
  truth = await Promise.all(groundTruthOf(row.reward_model.ground_truth).map(parse));
  reward = await buildReward({ functions: [{ name: 'bfcl' }] }, { baseDir: '.' });
});

afterAll(async () => {
  await env?.close();
  await closeSharedBfclEnvs();
});

/** Per user turn, the assistant turns' texts (calls or an answer); the last one of each turn answers. */
const input = (userTurns: string[][]) =>
  normaliseRewardInput({
    turns: userTurns.flat().map((text) => ({ text })),
    finish_reason: 'eos',
    row: { reward_model: row.reward_model, extra_info: row.extra_info, data_source: row.data_source },
  });

/** Turns 0-2 done right, as the ground truth does them. */
const firstThree = () => truth.slice(0, 3).map((calls) => [callsText(calls), 'Done.']);

const score = async (userTurns: string[][]) => {
  const i = input(userTurns);
  const check = await checkTrajectory(env, i);
  return { components: (await reward(i)).components, check };
};

describe('miss_param: the model guesses the missing file instead of asking', () => {
  it('asking, then doing what the user says at turn 4: every checked turn passes', async () => {
    const asked = await score([
      ...firstThree(),
      ['Which file in the document directory should I move to temp?'],
      [callsText(truth[4]!), 'Done.'],
    ]);
    // 4 checked turns (0, 1, 2, 4) of 4 pass; turn 3 is not checked
    expect(asked.components).toMatchObject({
      'bfcl/progress': 1,
      'bfcl/success': 1,
      'bfcl/turns_checked': 4,
    });
    expect(asked.check.turns[3]).toMatchObject({ passed: true, check: 'no_ground_truth' });
  });

  it('a wrong guess moves report_final.pdf too: turn 4 fails on the state, 3 of 4 checked turns pass', async () => {
    const guess = await parse([
      "cd(folder='..')",
      "mv(source='report_final.pdf',destination='temp')",
      "cd(folder='temp')",
      "diff(file_name1='final_report.pdf',file_name2='report_final.pdf')",
    ]);
    const wrong = await score([
      ...firstThree(),
      [callsText(guess), 'I moved report_final.pdf and compared it.'],
      [callsText(truth[4]!), 'Done.'],
    ]);
    // Turn 4 does exactly the ground truth's calls, yet temp now also holds report_final.pdf:
    // progress = 3 / 4 = 0.75, and BFCL's verdict fails the entry at turn 4's state check.
    expect(wrong.components).toMatchObject({ bfcl: 0.75, 'bfcl/progress': 0.75, 'bfcl/success': 0 });
    expect(wrong.check.turns.map((t) => t.check)).toEqual([
      'ok',
      'ok',
      'ok',
      'no_ground_truth', // the guess itself is not checked
      'instance_state_mismatch',
    ]);
    expect(wrong.check.failure).toBe('multi_turn:instance_state_mismatch');
  });

  it('a right guess not followed up: turn 4 has no call, which BFCL fails as an empty turn', async () => {
    const lucky = await score([
      ...firstThree(),
      [callsText(truth[4]!), 'I guessed previous_report.pdf and compared them.'],
      ['I already did that.'],
    ]);
    expect(lucky.components).toMatchObject({ 'bfcl/progress': 0.75, 'bfcl/success': 0 });
    expect(lucky.check.turns[4]).toMatchObject({ passed: false, check: 'empty_turn_model_response' });
    expect(lucky.check.failure).toBe('multi_turn:empty_turn_model_response');
  });

  it('a right guess repeated at turn 4 gets full marks: BFCL judges the state and results, not the asking', async () => {
    const diff = truth[4]!.at(-1)!; // diff(final_report.pdf, previous_report.pdf), already in temp
    const repeated = await score([
      ...firstThree(),
      [callsText(truth[4]!), 'I guessed previous_report.pdf and compared them.'],
      [callsText([diff]), 'Done.'],
    ]);
    // Same end state as the ground truth, and every ground-truth result of turn 4 is among the model's results
    // (the response check reads all turns so far): 4 / 4 and success, though the model never asked.
    expect(repeated.components).toMatchObject({ 'bfcl/progress': 1, 'bfcl/success': 1 });
  });
});
