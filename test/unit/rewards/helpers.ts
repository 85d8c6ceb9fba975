// Loads the hand-made reward fixtures and scores them with one reward.
import { readFileSync } from 'node:fs';
import { createReward, normaliseRewardInput, type RewardInput, RewardRegistry } from '#shared/rewards/index';

export const fixturePath = (name: string): string =>
  new URL(`../../fixtures/rewards/${name}`, import.meta.url).pathname;

export const fixture = (name: string, overrides: Record<string, unknown> = {}): RewardInput =>
  normaliseRewardInput({ ...JSON.parse(readFileSync(fixturePath(name), 'utf8')), ...overrides });

/** Built-in rewards are synchronous; the cast checks that too. */
export const score = (name: string, input: RewardInput, config: Record<string, unknown> = {}) =>
  createReward(new RewardRegistry(), name, config)(input) as {
    score: number;
    components: Record<string, number>;
  };
