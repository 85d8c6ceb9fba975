// Python reward functions with verl's signature, run in a real host process: a number or a dict return, reward
// kwargs, async functions, the batched form, and failures (an exception, a timeout, a return of the wrong shape)
// recorded as reward errors that score 0 rather than failing the batch.
import { dirname } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildReward, type RewardFn } from '#shared/rewards/index';
import { responseOf } from '#shared/rewards/python';
import { fixture, fixturePath } from './helpers.ts';

const baseDir = dirname(fixturePath('verl_reward.py'));
let reward: RewardFn | undefined;
afterEach(async () => {
  await reward?.close?.();
  reward = undefined;
});

const build = async (functions: Record<string, unknown>[]) => {
  reward = await buildReward({ functions } as never, { baseDir });
  return reward;
};

describe('a verl compute_score in a Python file', () => {
  it('scores with a dict return: its numbers become components under <file stem>.<name>', async () => {
    const r = await build([{ path: 'verl_reward.py', name: 'compute_score', reward_kwargs: { bonus: 0.5 } }]);
    const out = await r({ ...fixture('calc-correct.json'), toolRewards: { calculator: 1 } });
    expect(out).toEqual({
      score: 1.5,
      components: {
        'verl_reward.compute_score': 1.5,
        'verl_reward.compute_score/acc': 1,
        'verl_reward.compute_score/tool_reward': 1, // extra_info.rollout_reward_scores, as verl passes it
        'verl_reward.compute_score/num_turns': 4, // verl's __num_turns__: 2 assistant + 1 tool response + 1
        'verl_reward.compute_score/error': 0,
        'tool/calculator': 1,
      },
    });
  });

  it('weighs it with the built-in rewards, and takes a float return and an async function', async () => {
    const r = await build([
      { name: 'format', weight: 0.5 },
      { path: 'verl_reward.py', name: 'async_score', weight: 2 },
      { path: 'verl_reward.py', name: 'length_score', weight: 1 },
    ]);
    const out = await r(fixture('calc-correct.json'));
    const length = Math.min(1, responseOf(fixture('calc-correct.json')).text.length / 100);
    expect(out.score).toBeCloseTo(0.5 * 1 + 2 * 0.25 + length, 9);
    expect(out.components['verl_reward.async_score']).toBe(0.25);
  });

  it('calls the batched form with lists (verl BatchRewardManager)', async () => {
    const r = await build([{ path: 'verl_reward.py', name: 'compute_score_batched', batched: true }]);
    const inputs = [fixture('calc-correct.json'), fixture('calc-correct.json', { ground_truth: '7' })];
    const outs = await Promise.all(inputs.map((i) => r(i)));
    expect(outs.map((o) => o.score)).toEqual([1, 0]);
    // Both scores requested in the same turn went in one call.
    expect(outs.map((o) => o.components['verl_reward.compute_score_batched/batch_size'])).toEqual([2, 2]);
  });
});

describe('a Python reward that fails', () => {
  it.each([
    [
      'broken_score',
      {},
      /^user_error: broken_score from verl_reward\.py raised ZeroDivisionError: division by zero/,
    ],
    ['slow_score', { timeout: 0.5 }, /^timeout: slow_score from verl_reward\.py did not finish within 0\.5s/],
    ['not_a_number', {}, /^user_error: .*the reward must be a finite number, got 'high'/],
  ])(
    '%s: scores 0 with error 1, and the reason is kept, the other parts still count',
    async (name, extra, message) => {
      const r = await build([
        { name: 'format', weight: 1 },
        { path: 'verl_reward.py', name, weight: 1, ...extra },
      ]);
      const out = await r(fixture('calc-correct.json'));
      expect(out.score).toBe(1); // format's 1 + 0
      expect(out.components[`verl_reward.${name}/error`]).toBe(1);
      expect(out.errors).toEqual([
        { reward: `verl_reward.${name}`, message: expect.stringMatching(message) },
      ]);
    },
  );

  it('a missing file or function is a configuration error naming it', async () => {
    await expect(build([{ path: 'nope.py', name: 'compute_score' }])).rejects.toThrow(
      /reward compute_score from nope\.py: .*no such file/,
    );
    await expect(build([{ path: 'verl_reward.py', name: 'nope' }])).rejects.toThrow(
      /verl_reward\.py defines no 'nope' \(it defines: .*compute_score/,
    );
  });

  it('refuses Python-only keys on a registered reward, and a name listed twice', async () => {
    await expect(build([{ name: 'format', batched: true }])).rejects.toThrow(/apply to a Python function/);
    await expect(
      build([
        { path: 'verl_reward.py', name: 'compute_score' },
        { path: 'verl_reward.py', name: 'compute_score' },
      ]),
    ).rejects.toThrow(/verl_reward\.compute_score is listed twice/);
  });
});

describe('what the function reads', () => {
  it('solution_str: each assistant turn as written, then the tool results appended after it', () => {
    const t = fixture('pipeline-trajectory.json');
    expect(responseOf(t).text).toBe(`${t.turns[0]!.text}\n391\n17 * 23 = \\boxed{391}`);
  });
});
