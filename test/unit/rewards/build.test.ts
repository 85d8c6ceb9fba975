// Weighted combinations, user reward modules and configuration errors.
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildReward, rewardRegistry } from '#shared/rewards/index';
import { fixture, fixturePath } from './helpers.ts';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

const baseDir = dirname(fixturePath('custom-rewards.ts'));

describe('buildReward: weighted combinations', () => {
  it('sums weight * score and logs every part under its name', async () => {
    // calc-messy: format 0.875 (well_formed 0.75, final_answer 1); retool with answer auto 0.8
    // score = 0.5 * 0.875 + 1 * 0.8 = 1.2375
    const reward = await buildReward(
      {
        functions: [
          { name: 'format', weight: 0.5 },
          { name: 'retool', weight: 1, config: { answer: 'auto' } },
        ],
      },
      { baseDir },
    );
    const out = await reward(fixture('calc-messy.json'));
    expect(out.score).toBeCloseTo(1.2375, 12);
    expect(out.components).toEqual({
      format: 0.875,
      'format/well_formed': 0.75,
      'format/final_answer': 1,
      retool: expect.closeTo(0.8, 12),
      'retool/correct': 1,
      'retool/answer_found': 1,
      'retool/malformed_calls': 2,
      'retool/penalty': 0.2,
    });
  });

  it('defaults to the format reward', async () => {
    const reward = await buildReward({}, { baseDir });
    expect((await reward(fixture('calc-correct.json'))).score).toBe(1);
  });

  it('rejects an unknown reward, a bad config key and a reward listed twice, naming them', async () => {
    await expect(buildReward({ functions: [{ name: 'acuracy' }] }, { baseDir })).rejects.toThrow(
      /unknown reward "acuracy"; known: bfcl, exact_match, format, retool, tool_reward, toolbench, toolcall/,
    );
    await expect(
      buildReward({ functions: [{ name: 'toolcall', config: { weights: { corectness: 1 } } }] }, { baseDir }),
    ).rejects.toThrow(/reward toolcall: bad config: weights: Unrecognized key: "corectness"/);
    await expect(
      buildReward({ functions: [{ name: 'retool', config: { malformed_penalty: -1 } }] }, { baseDir }),
    ).rejects.toThrow(/reward retool: bad config: malformed_penalty/);
    await expect(
      buildReward({ functions: [{ name: 'format' }, { name: 'format' }] }, { baseDir }),
    ).rejects.toThrow(/format is listed twice/);
  });

  it('a reward that throws while scoring rejects with its name', async () => {
    const reward = await buildReward({ functions: [{ name: 'exact_match' }] }, { baseDir });
    await expect(reward(fixture('calc-correct.json', { ground_truth: null }))).rejects.toThrow(
      /reward exact_match failed: exact_match needs a ground truth/,
    );
  });
});

describe('custom rewards from user modules', () => {
  it('loads a module relative to the config directory and combines its rewards with built-ins', async () => {
    // calc-correct's last turn "17 * 23 = \boxed{391}" has 21 characters.
    // brevity with max_chars 10: 21 > 10 -> max(0, 2 - 21/10) = 0 ; with max_chars 20: 2 - 21/20 = 0.95
    // turns_used: 2 turns (async, bare number) ; format 1
    // score = 2 * 0.95 + 0.25 * 2 + 1 * 1 = 1.9 + 0.5 + 1 = 3.4
    const reward = await buildReward(
      {
        modules: ['custom-rewards.ts'],
        functions: [
          { name: 'brevity', weight: 2, config: { max_chars: 20 } },
          { name: 'turns_used', weight: 0.25 },
          { name: 'format', weight: 1 },
        ],
      },
      { baseDir },
    );
    const out = await reward(fixture('calc-correct.json'));
    expect(out.score).toBeCloseTo(3.4, 12);
    expect(out.components).toMatchObject({ brevity: 0.95, 'brevity/chars': 21, turns_used: 2, format: 1 });
    expect(Object.keys(out.components)).not.toContain('turns_used/turns_used');
  });

  it('lists module rewards with their descriptions next to the built-ins', async () => {
    const registry = await rewardRegistry(['custom-rewards.ts'], { baseDir });
    expect(registry.names()).toEqual([
      'bfcl',
      'brevity',
      'exact_match',
      'format',
      'not_a_number',
      'retool',
      'throws',
      'tool_reward',
      'toolbench',
      'toolcall',
      'turns_used',
    ]);
    expect(registry.get('turns_used').description).toBe('how many assistant turns the episode took');
  });

  it('a reward that returns a non-number or throws is reported by name', async () => {
    const build = (name: string) =>
      buildReward({ modules: ['custom-rewards.ts'], functions: [{ name }] }, { baseDir });
    await expect((await build('not_a_number'))(fixture('calc-correct.json'))).rejects.toThrow(
      /reward not_a_number failed: reward not_a_number returned NaN, not a finite number/,
    );
    await expect((await build('throws'))(fixture('calc-correct.json'))).rejects.toThrow(
      /reward throws failed: the judge is unreachable/,
    );
  });

  it('refuses a module that is missing, exports no rewards, or replaces a built-in', async () => {
    const build = (module: string) =>
      buildReward({ modules: [module], functions: [{ name: 'format' }] }, { baseDir });
    await expect(build('nope.ts')).rejects.toThrow(
      /reward module nope.ts not found \(looked at .*fixtures\/rewards\/nope.ts\)/,
    );
    await expect(build('no-rewards.ts')).rejects.toThrow(
      /reward module no-rewards.ts exports no `rewards` object/,
    );
    await expect(build('colliding-rewards.ts')).rejects.toThrow(
      /reward "format" from module colliding-rewards.ts is already registered/,
    );
  });
});
