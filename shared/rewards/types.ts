// The contract of a reward: a deterministic score of a finished episode, with named components for logging.
import type { z } from 'zod';
import type { RewardInput } from './input.ts';

export interface RewardOutput {
  score: number;
  /** Named parts of the score (unweighted values), logged next to it. */
  components: Record<string, number>;
  /**
   * Rewards that could not score this trajectory (a Python function that raised or ran out of time): each counts
   * 0 in the score, its `<name>/error` component is 1, and the message is kept on the trajectory.
   */
  errors?: RewardError[];
}

export interface RewardError {
  reward: string;
  message: string;
}

/** One configured reward. Built-in rewards are synchronous; user rewards may return a promise. */
export type ScoreFn = (input: RewardInput) => RewardOutput | Promise<RewardOutput>;

/** What the pipeline calls: always asynchronous, since user rewards may be. `close` stops a Python host. */
export type RewardFn = ((input: RewardInput) => Promise<RewardOutput>) & { close?: () => Promise<void> };

/** A reward kind: its name in `reward.functions[].name`, its config schema and how to build it. */
export interface RewardDefinition<C = unknown> {
  name: string;
  description: string;
  /**
   * The component that says the task was solved, read as `val/accuracy` (shared/pipeline/eval.ts): `correct`,
   * `success`, … Left out by rewards that score form rather than outcome (`format`).
   */
  accuracy?: string;
  /** Parses the `config:` mapping; strict schemas make a misspelled key an error that names it. */
  config: z.ZodType<C>;
  create(config: C): ScoreFn;
  /** The `reward.modules` file a user reward came from (its calls are bounded in time); absent for built-ins. */
  module?: string;
}

/** Erases the config type so definitions of different rewards fit in one registry. */
export const defineReward = <C>(def: RewardDefinition<C>): RewardDefinition<unknown> =>
  def as unknown as RewardDefinition<unknown>;
