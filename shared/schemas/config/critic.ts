// `critic:` of the run config: PPO's separate value model, as verl's `critic:` block configures it. Without it,
// `adv_estimator: gae` trains a value head on the policy's own trunk.
import { z } from 'zod';
import { LoraConfigSchema } from './model.ts';

export const CriticConfigSchema = z
  .object({
    /** The critic's own decoder (a Hub id, a local folder or `tiny`); it must share the policy's tokenizer. */
    model: z
      .object({
        path: z.string().min(1),
        lora: LoraConfigSchema.optional(),
        gradient_checkpointing: z.boolean().default(false),
      })
      .strict(),
    /** Its own AdamW (verl's critic.optim.lr default). */
    lr: z.number().positive().default(1e-5),
    weight_decay: z.number().nonnegative().default(0),
    grad_clip: z.number().positive().default(1.0),
    /** Linear learning-rate warm-up of the critic's optimiser, in learner steps. */
    lr_warmup_steps: z.number().int().nonnegative().default(0),
    /** Groups (prompts) per critic optimiser step; unset: trainer.ppo_mini_batch_size. */
    ppo_mini_batch_size: z.number().int().positive().optional(),
    /** Passes over each batch; unset: trainer.ppo_epochs. */
    ppo_epochs: z.number().int().positive().optional(),
    /** Value clipping around the old values; unset: algorithm.cliprange_value. */
    cliprange_value: z.number().nonnegative().optional(),
  })
  .strict();
export type CriticConfig = z.infer<typeof CriticConfigSchema>;
