// `trainer:` of the run config: batch, optimiser, schedule, staleness, publishing and checkpoints.
import { z } from 'zod';

export const SftConfigSchema = z
  .object({
    /** Parquet or JSONL of demonstrations (chat messages), relative to the config file. */
    data: z.string(),
    steps: z.number().int().nonnegative().default(100),
    lr: z.number().positive().default(1e-4),
    batch_size: z.number().int().positive().default(16),
  })
  .strict();

export const TrainerConfigSchema = z
  .object({
    /** Groups (prompts) per learner step. */
    batch_prompts: z.number().int().positive().default(8),
    lr: z.number().positive().default(1e-6),
    /** `cosine` decays to `min_lr_ratio * lr` over max_steps (or the planned groups / batch_prompts). */
    lr_scheduler: z.enum(['constant', 'cosine']).default('constant'),
    /** Linear warmup from 0, in learner steps. */
    warmup_steps: z.number().int().nonnegative().default(0),
    min_lr_ratio: z.number().min(0).max(1).default(0),
    weight_decay: z.number().nonnegative().default(0),
    grad_clip: z.number().positive().default(1.0),
    /** Optimiser steps per batch of groups (PPO epochs). */
    ppo_epochs: z.number().int().positive().default(1),
    /** Token budget of one packed micro-batch. */
    micro_batch_tokens: z.number().int().positive().default(8192),
    /** Rows of the [tokens x vocabulary] logits computed at once for log-probs (never the full matrix). */
    logprob_chunk_size: z.number().int().positive().default(2048),
    epochs: z.number().int().positive().default(1),
    max_steps: z.number().int().positive().optional(),
    /** A group whose oldest sampled token is more than this many versions behind is dropped. */
    max_staleness: z.number().int().nonnegative().default(1),
    publish_every: z.number().int().positive().default(1),
    save_every: z.number().int().positive().default(10),
    /** Complete checkpoints kept (older ones are deleted once a newer one is complete). */
    keep_checkpoints: z.number().int().positive().default(2),
    /** Validation rollouts every this many policy versions; 0 disables. */
    eval_every: z.number().int().nonnegative().default(0),
    seed: z.number().int().nonnegative().default(0),
    /** Optional SFT warm start before RL. */
    sft: SftConfigSchema.optional(),
  })
  .strict();
export type TrainerConfig = z.infer<typeof TrainerConfigSchema>;
