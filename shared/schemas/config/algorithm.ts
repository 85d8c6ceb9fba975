// `algorithm:` of the run config: advantage estimator, policy loss, KL, entropy and IS correction.
// Option names follow verl / TRL where they exist.
import { z } from 'zod';

export const AlgorithmConfigSchema = z
  .object({
    adv_estimator: z.enum(['grpo', 'dr_grpo', 'rloo', 'reinforce_pp', 'gae']).default('grpo'),
    /** Normalise GRPO advantages by the group std (Dr. GRPO sets false). */
    norm_adv_by_std_in_grpo: z.boolean().default(true),
    clip_ratio_low: z.number().nonnegative().default(0.2),
    /** Clip-higher (DAPO, arXiv:2503.14476). */
    clip_ratio_high: z.number().nonnegative().default(0.28),
    /** Dual-clip constant c > 1 for negative advantages (arXiv:1912.09729); null disables. */
    clip_ratio_c: z.number().gt(1).nullable().default(null),
    /** `token` (PPO/GRPO) or `sequence` (GSPO, arXiv:2507.18071). */
    importance_sampling_level: z.enum(['token', 'sequence']).default('token'),
    /**
     * How per-token losses become one number. Unset: `seq-mean-token-sum-norm` for dr_grpo (its constant
     * normaliser), `token-mean` otherwise (DAPO).
     */
    loss_agg_mode: z
      .enum(['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'])
      .optional(),
    /** The constant L of `seq-mean-token-sum-norm` (Dr. GRPO); unset: rollout.multi_turn.max_total_response_length. */
    loss_scale_factor: z.number().positive().optional(),
    use_kl_loss: z.boolean().default(false),
    kl_loss_coef: z.number().nonnegative().default(0.001),
    kl_loss_type: z.enum(['k1', 'k2', 'k3']).default('k3'),
    use_kl_in_reward: z.boolean().default(false),
    kl_penalty: z.enum(['k1', 'k2', 'k3']).default('k1'),
    kl_coef: z.number().nonnegative().default(0.001),
    entropy_coeff: z.number().default(0),
    /** Rollout/learner mismatch correction (truncated importance sampling). */
    rollout_is: z.enum(['none', 'token', 'sequence']).default('token'),
    rollout_is_mode: z.enum(['truncate', 'mask']).default('truncate'),
    rollout_is_threshold: z.number().positive().default(2.0),
    /** Drop groups whose rewards are all equal (no signal); refill the batch from the queue (DAPO). */
    filter_groups: z.boolean().default(true),
    refill_filtered_groups: z.boolean().default(false),
    /**
     * Batches (batch_prompts groups each) in a row that may train nothing, every group dropped (no signal, or
     * stale), before the learner fails the run naming the cause; 0 or less: no bound (verl's max_num_gen_batches;
     * MindSpeed-RL's filter_groups_max_batches, whose -1 is its "no bound").
     */
    max_num_gen_batches: z.number().int().default(10),
    /** PPO/GAE only. */
    gamma: z.number().min(0).max(1).default(1.0),
    lam: z.number().min(0).max(1).default(1.0),
    vf_coef: z.number().nonnegative().default(0.5),
    cliprange_value: z.number().nonnegative().default(0.2),
  })
  .strict();
export type AlgorithmConfig = z.infer<typeof AlgorithmConfigSchema>;
