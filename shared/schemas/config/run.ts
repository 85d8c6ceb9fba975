// The run configuration: one YAML file, validated here with errors that name the field.
import { z } from 'zod';
import { AlgorithmConfigSchema } from './algorithm.ts';
import { CriticConfigSchema } from './critic.ts';
import { DataConfigSchema } from './data.ts';
import { ModelConfigSchema } from './model.ts';
import { RewardConfigSchema } from './reward.ts';
import { RolloutConfigSchema } from './rollout.ts';
import { ToolsConfigSchema } from './tools.ts';
import { TrainerConfigSchema } from './trainer.ts';

const PER_RUN_PROMPT_LIMIT =
  'the prompt limit is one per run (datasets are checked against it when the run starts): set data.max_prompt_length at the top level';

/**
 * A stage's data: its train files, and the top-level `data` settings it may change (unset ones are the top
 * level's). Validation files listed here join the run's validation set, which is evaluated as one.
 */
export const StageDataConfigSchema = z
  .object({
    train: DataConfigSchema.shape.train,
    val: DataConfigSchema.shape.val,
    prompt_type: DataConfigSchema.shape.prompt_type,
    shuffle: z.boolean().optional(),
    max_prompt_length: z.never({ error: PER_RUN_PROMPT_LIMIT }).optional(),
  })
  .strict()
  .meta({
    id: 'StageDataConfig',
    description:
      "A stage's data: its train files, and the top-level `data` settings it may change (unset ones are the top level's). Validation files listed here join the run's validation set, which is evaluated as one.",
  });

/** A curriculum stage (EnvTuning's format -> base -> full): its data, epochs and overrides. */
export const StageConfigSchema = z
  .object({
    name: z.string().min(1),
    data: StageDataConfigSchema,
    epochs: z.number().int().positive().default(1),
    overrides: z
      .record(z.string(), z.unknown())
      .default({})
      .refine((o) => !('data' in o), {
        path: ['data'],
        message:
          "a stage's data settings go in its own `data:` block (train, val, prompt_type, shuffle), not in overrides",
      })
      .describe(
        'Deep-merged over the run config for this stage (rollout, reward, algorithm, trainer keys; not data).',
      ),
  })
  .strict()
  .meta({
    id: 'StageConfig',
    description: "A curriculum stage (EnvTuning's format -> base -> full): its data, epochs and overrides.",
  });
export type StageConfig = z.infer<typeof StageConfigSchema>;

export const LoggingConfigSchema = z
  .object({
    tensorboard: z
      .boolean()
      .default(true)
      .describe("Write TensorBoard event files of the learner's metrics."),
    wandb: z
      .object({
        project: z.string().describe('The Weights & Biases project.'),
        entity: z
          .string()
          .optional()
          .describe('The Weights & Biases entity (user or team); unset: the default.'),
      })
      .strict()
      .optional()
      .describe("Log the learner's metrics to Weights & Biases."),
    progress_interval_s: z.number().positive().default(2).describe('Print progress every this many seconds.'),
  })
  .strict()
  .meta({
    id: 'LoggingConfig',
    description: '`logging:` of the run config: TensorBoard, Weights & Biases, progress lines.',
  });

export const RunConfigSchema = z
  .object({
    name: z.string().default('run'),
    model: ModelConfigSchema,
    data: DataConfigSchema,
    rollout: RolloutConfigSchema.default(RolloutConfigSchema.parse({})),
    tools: ToolsConfigSchema.default({}),
    reward: RewardConfigSchema.default(RewardConfigSchema.parse({})),
    algorithm: AlgorithmConfigSchema.default(AlgorithmConfigSchema.parse({})),
    critic: CriticConfigSchema.optional().describe(
      "PPO's separate critic model (with `adv_estimator: gae`); without it GAE uses a value head on the policy.",
    ),
    trainer: TrainerConfigSchema.default(TrainerConfigSchema.parse({})),
    stages: z.array(StageConfigSchema).optional(),
    logging: LoggingConfigSchema.default(LoggingConfigSchema.parse({})),
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.critic && config.algorithm.adv_estimator !== 'gae')
      ctx.addIssue({
        code: 'custom',
        path: ['critic'],
        message: `a critic estimates values for GAE: set algorithm.adv_estimator: gae (it is ${config.algorithm.adv_estimator})`,
      });
    if (config.critic && config.trainer.num_gpus > 1)
      ctx.addIssue({
        code: 'custom',
        path: ['critic'],
        message: `the sharded learner (trainer.num_gpus: ${config.trainer.num_gpus}) does not train a separate critic: set trainer.num_gpus: 1, or drop critic: to use the value head on the policy's trunk`,
      });
    if (config.trainer.critic_warmup > 0 && !config.critic)
      ctx.addIssue({
        code: 'custom',
        path: ['trainer', 'critic_warmup'],
        message: 'critic_warmup trains a separate critic alone first: add a `critic:` block',
      });
    if (!config.trainer.deterministic) return;
    // A deterministic run's batch t is positions [t b, (t+1) b) of the feeder's walk, sampled by a version fixed
    // by t - max_staleness: both numbers must be the run's, and a batch may not be refilled by later groups.
    if (config.algorithm.refill_filtered_groups)
      ctx.addIssue({
        code: 'custom',
        path: ['algorithm', 'refill_filtered_groups'],
        message:
          'trainer.deterministic trains exactly the groups of each batch; refilling a batch is not deterministic',
      });
    config.stages?.forEach((stage, i) => {
      const o = stage.overrides as { trainer?: Record<string, unknown>; algorithm?: Record<string, unknown> };
      for (const key of ['batch_prompts', 'max_staleness', 'deterministic'])
        if (o.trainer && key in o.trainer)
          ctx.addIssue({
            code: 'custom',
            path: ['stages', i, 'overrides', 'trainer', key],
            message: `with trainer.deterministic every stage uses the run's trainer.${key}`,
          });
      if (o.algorithm?.['refill_filtered_groups'])
        ctx.addIssue({
          code: 'custom',
          path: ['stages', i, 'overrides', 'algorithm', 'refill_filtered_groups'],
          message:
            'trainer.deterministic trains exactly the groups of each batch; refilling a batch is not deterministic',
        });
    });
  })
  .meta({
    id: 'RunConfig',
    description:
      "The run configuration: one YAML file, resolved at the edge (shared/config) into toolrl's names.",
  });
export type RunConfig = z.infer<typeof RunConfigSchema>;
