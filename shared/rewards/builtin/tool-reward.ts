// `tool_reward`: the rewards the stateful tools computed themselves, as verl's Gsm8kTool does.
//   final = sum over the tools the episode called of their calc_reward at its end
//   step  = sum over the episode's calls of the step reward execute returned (with `step_rewards: true`)
//   score = final + step
// Each tool's final reward is a component under its name. An episode that called no such tool scores 0.
import { z } from 'zod';
import { allCalls } from '../trajectory-stats.ts';
import { defineReward } from '../types.ts';
import { weightedSum } from '../weighted.ts';

const ToolRewardConfigSchema = z
  .object({
    /** Add the step rewards execute returned (verl's tool_reward_score) to the tools' final rewards. */
    step_rewards: z.boolean().default(false),
  })
  .strict();

export const toolRewardReward = defineReward({
  name: 'tool_reward',
  description: "the stateful tools' own rewards: sum of their calc_reward at the end (+ step rewards)",
  config: ToolRewardConfigSchema,
  create: (config) => (input) => {
    const finals = input.toolRewards ?? {};
    const steps = config.step_rewards
      ? allCalls(input).flatMap((c) => (typeof c.result?.reward === 'number' ? [c.result.reward] : []))
      : [];
    const final = weightedSum(Object.values(finals).map((v) => [1, v] as const));
    const step = weightedSum(steps.map((v) => [1, v] as const));
    return {
      score: weightedSum([
        [1, final],
        [1, step],
      ]),
      components: { ...finals, ...(config.step_rewards ? { step } : {}) },
    };
  },
});
