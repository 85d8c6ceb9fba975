// The run configuration: one YAML file, validated here with errors that name the field.
import { z } from 'zod';
import { AlgorithmConfigSchema } from './algorithm.ts';
import { DataConfigSchema } from './data.ts';
import { ModelConfigSchema } from './model.ts';
import { RewardConfigSchema } from './reward.ts';
import { RolloutConfigSchema } from './rollout.ts';
import { ToolsConfigSchema } from './tools.ts';
import { TrainerConfigSchema } from './trainer.ts';

/** A curriculum stage (EnvTuning's format -> base -> full): its data, epochs and overrides. */
export const StageConfigSchema = z
  .object({
    name: z.string().min(1),
    data: DataConfigSchema.partial().extend({ train: DataConfigSchema.shape.train }),
    epochs: z.number().int().positive().default(1),
    /** Deep-merged over the run config for this stage (rollout, reward, algorithm, trainer keys). */
    overrides: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();
export type StageConfig = z.infer<typeof StageConfigSchema>;

export const LoggingConfigSchema = z
  .object({
    tensorboard: z.boolean().default(true),
    wandb: z.object({ project: z.string(), entity: z.string().optional() }).strict().optional(),
    /** Print progress every this many seconds. */
    progress_interval_s: z.number().positive().default(2),
  })
  .strict();

export const RunConfigSchema = z
  .object({
    name: z.string().default('run'),
    model: ModelConfigSchema,
    data: DataConfigSchema,
    rollout: RolloutConfigSchema.default(RolloutConfigSchema.parse({})),
    tools: ToolsConfigSchema.default({}),
    reward: RewardConfigSchema.default(RewardConfigSchema.parse({})),
    algorithm: AlgorithmConfigSchema.default(AlgorithmConfigSchema.parse({})),
    trainer: TrainerConfigSchema.default(TrainerConfigSchema.parse({})),
    stages: z.array(StageConfigSchema).optional(),
    logging: LoggingConfigSchema.default(LoggingConfigSchema.parse({})),
  })
  .strict();
export type RunConfig = z.infer<typeof RunConfigSchema>;
