// `critic:` of the run config: PPO's separate value model, as verl's `critic:` block configures it. Without it,
// `adv_estimator: gae` trains a value head on the policy's own trunk.
import { z } from 'zod';
import { LoraConfigSchema } from './model.ts';

export const CriticConfigSchema = z
  .object({
    model: z
      .object({
        path: z.string().min(1).describe('A Hub id, a local folder or `tiny`.'),
        lora: LoraConfigSchema.optional(),
        gradient_checkpointing: z
          .boolean()
          .default(false)
          .describe('Recompute layer activations in backward.'),
      })
      .strict()
      .describe(
        "The critic's own decoder (a Hub id, a local folder or `tiny`); it must share the policy's tokenizer.",
      ),
    lr: z.number().positive().default(1e-5).describe("Its own AdamW (verl's critic.optim.lr default)."),
    weight_decay: z.number().nonnegative().default(0).describe("The critic's AdamW weight decay."),
    grad_clip: z.number().positive().default(1.0).describe('Max global gradient norm of the critic.'),
    lr_warmup_steps: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe("Linear learning-rate warm-up of the critic's optimiser, in learner steps."),
    ppo_mini_batch_size: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Groups (prompts) per critic optimiser step; unset: trainer.ppo_mini_batch_size.'),
    ppo_epochs: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Passes over each batch; unset: trainer.ppo_epochs.'),
    cliprange_value: z
      .number()
      .nonnegative()
      .optional()
      .describe('Value clipping around the old values; unset: algorithm.cliprange_value.'),
  })
  .strict()
  .meta({
    id: 'CriticConfig',
    description:
      "`critic:` of the run config: PPO's separate value model (verl's `critic:` block); without it, `adv_estimator: gae` trains a value head on the policy's own trunk.",
  });
export type CriticConfig = z.infer<typeof CriticConfigSchema>;
