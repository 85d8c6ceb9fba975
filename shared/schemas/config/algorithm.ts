// `algorithm:` of the run config: advantage estimator, policy loss, KL, entropy and IS correction.
// Option names follow verl / TRL where they exist. The descriptions are the learner's docstrings too
// (gpu-worker/toolrl_learner/run_config.py is generated from this schema).
import { z } from 'zod';

export const AlgorithmConfigSchema = z
  .object({
    adv_estimator: z
      .enum(['grpo', 'dr_grpo', 'rloo', 'reinforce_pp', 'gae'])
      .default('grpo')
      .describe(
        'grpo (group mean/std, arXiv:2402.03300), dr_grpo (no std, arXiv:2503.20783), rloo (leave-one-out ' +
          'baseline, arXiv:2402.14740), reinforce_pp (batch-normalised returns, arXiv:2501.03262), gae (PPO with a ' +
          "value head on the policy's trunk, or the separate `critic:`, arXiv:1506.02438).",
      ),
    norm_adv_by_std_in_grpo: z
      .boolean()
      .default(true)
      .describe('Divide GRPO advantages by the group std (Dr. GRPO sets false).'),
    clip_ratio_low: z
      .number()
      .nonnegative()
      .default(0.2)
      .describe("PPO's epsilon below 1 (arXiv:1707.06347)."),
    clip_ratio_high: z
      .number()
      .nonnegative()
      .default(0.28)
      .describe(
        "PPO's epsilon above 1; larger than clip_ratio_low is DAPO's clip-higher (arXiv:2503.14476).",
      ),
    clip_ratio_c: z
      .number()
      .gt(1)
      .nullable()
      .default(null)
      .describe(
        'Dual-clip constant c > 1 bounding the loss of negative advantages at -A c (arXiv:1912.09729); null disables.',
      ),
    importance_sampling_level: z
      .enum(['token', 'sequence'])
      .default('token')
      .describe(
        '`token` ratios (PPO/GRPO) or one ratio per sequence, the geometric mean of its token ratios (GSPO, ' +
          'arXiv:2507.18071; use clip ratios around 3e-4/4e-4 with it).',
      ),
    loss_agg_mode: z
      .enum(['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'])
      .optional()
      .describe(
        'How per-token losses become one number: token-mean (DAPO), seq-mean-token-mean (GRPO as published), ' +
          'seq-mean-token-sum, seq-mean-token-sum-norm (Dr. GRPO). Unset: seq-mean-token-sum-norm for dr_grpo, ' +
          'token-mean otherwise.',
      ),
    loss_scale_factor: z
      .number()
      .positive()
      .optional()
      .describe(
        "Dr. GRPO's constant normaliser L of seq-mean-token-sum-norm; unset: the stage's " +
          'rollout.multi_turn.max_total_response_length.',
      ),
    use_kl_loss: z
      .boolean()
      .default(false)
      .describe(
        'KL to the reference policy as a loss term (GRPO, arXiv:2402.03300). The reference is the policy the ' +
          'RL stage starts from: model.path, or the trainer.sft warm start when there is one.',
      ),
    kl_loss_coef: z.number().nonnegative().default(0.001).describe('Weight of the KL loss term.'),
    kl_loss_type: z
      .enum(['k1', 'k2', 'k3'])
      .default('k3')
      .describe("Estimator of the KL loss term (Schulman's approximations k1, k2, k3)."),
    use_kl_in_reward: z
      .boolean()
      .default(false)
      .describe('KL as a per-token reward penalty instead (InstructGPT / PPO-RLHF, arXiv:2203.02155).'),
    kl_penalty: z.enum(['k1', 'k2', 'k3']).default('k1').describe('Estimator of the in-reward KL penalty.'),
    kl_coef: z.number().nonnegative().default(0.001).describe('Weight of the in-reward KL penalty.'),
    entropy_coeff: z.number().default(0).describe('Entropy bonus weight (subtracted from the loss).'),
    rollout_is: z
      .enum(['none', 'token', 'sequence'])
      .default('token')
      .describe(
        'Importance weights pi_old / pi_rollout per token or sequence, correcting the rollout/learner mismatch ' +
          '(the ONNX rollout and the bf16 learner never agree exactly; TIS, Yao et al. 2025); none disables.',
      ),
    rollout_is_mode: z
      .enum(['truncate', 'mask'])
      .default('truncate')
      .describe('Weights above the threshold are truncated at it, or masked out.'),
    rollout_is_threshold: z.number().positive().default(2.0).describe('The importance weights’ threshold.'),
    filter_groups: z
      .boolean()
      .default(true)
      .describe(
        'Drop groups that carry no signal (all rewards equal; for group-relative estimators also groups of one): ' +
          "DAPO's dynamic sampling filter (arXiv:2503.14476).",
      ),
    refill_filtered_groups: z
      .boolean()
      .default(false)
      .describe(
        'Keep reading groups until the batch has batch_prompts groups with signal (DAPO); false trains on what ' +
          'is left of the batch_prompts groups received.',
      ),
    filter_groups_norm: z
      .enum(['kept', 'batch'])
      .default('kept')
      .describe(
        "What a step's loss is averaged over when it trains fewer than batch_prompts groups (filter_groups dropped " +
          'some, or they were stale): kept, the groups it trains (a step moves the policy as far, however few it ' +
          'kept); batch, batch_prompts groups, the missing ones counted with zero advantage as in an unfiltered ' +
          "batch but never computed (a step that kept 3 of 16 groups takes about 3/16 of a full batch's gradient).",
      ),
    max_num_gen_batches: z
      .number()
      .int()
      .default(10)
      .describe(
        'Batches (batch_prompts groups each) in a row that may train nothing, every group dropped (no signal, or ' +
          "stale), before the learner fails the run naming the cause; 0 or less: no bound (verl's " +
          'max_num_gen_batches; MindSpeed-RL\'s filter_groups_max_batches, whose -1 is its "no bound").',
      ),
    gamma: z.number().min(0).max(1).default(1.0).describe('Discount (gae, reinforce_pp).'),
    lam: z.number().min(0).max(1).default(1.0).describe('GAE lambda.'),
    vf_coef: z.number().nonnegative().default(0.5).describe('Value loss weight (PPO).'),
    cliprange_value: z
      .number()
      .nonnegative()
      .default(0.2)
      .describe('Value clipping around the old values (PPO).'),
  })
  .strict()
  .meta({
    id: 'AlgorithmConfig',
    description:
      '`algorithm:` of the run config: advantage estimator, policy loss, KL, entropy, IS correction.',
  });
export type AlgorithmConfig = z.infer<typeof AlgorithmConfigSchema>;
