// `reward:` of the run config: registered reward functions with weights, and user modules.
import { z } from 'zod';

export const RewardFunctionSpecSchema = z
  .object({
    name: z.string().min(1),
    weight: z.number().default(1),
    config: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();
export type RewardFunctionSpec = z.infer<typeof RewardFunctionSpecSchema>;

export const RewardConfigSchema = z
  .object({
    functions: z
      .array(RewardFunctionSpecSchema)
      .min(1)
      .default([{ name: 'format', weight: 1, config: {} }]),
    /** Modules (paths relative to the config file) that register custom rewards. */
    modules: z.array(z.string()).default([]),
  })
  .strict();
export type RewardConfig = z.infer<typeof RewardConfigSchema>;
