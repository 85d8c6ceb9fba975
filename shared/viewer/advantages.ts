// A group's per-sample advantages, from its rewards, as the learner's outcome estimators compute them
// (gpu-worker/toolrl_learner/algos/advantages.py): the run does not store them, and for these estimators they are
// a function of the group's rewards alone. Token-level estimators (reinforce_pp, gae) need the whole batch or a
// critic's values, so the viewer shows none for them.
import type { AlgorithmConfig } from '#shared/schemas/config/algorithm';

/** eps of grpo_advantages. */
const EPS = 1e-6;

export type AdvantageConfig = Pick<
  AlgorithmConfig,
  'adv_estimator' | 'norm_adv_by_std_in_grpo' | 'use_kl_in_reward'
>;

/**
 * Per-sample advantages of one group, or null (with the reason) when the estimator is not outcome-level.
 *   grpo     A_i = (r_i - mean(r)) / (std(r) + eps)   (std unbiased, 0 for a group of one; arXiv:2402.03300)
 *            A_i = r_i - mean(r)                       (norm_adv_by_std_in_grpo: false)
 *   dr_grpo  A_i = r_i - mean(r)                       (arXiv:2503.20783)
 *   rloo     A_i = G / (G - 1) * (r_i - mean(r))       (0 for a group of one; arXiv:2402.14740)
 */
export function groupAdvantages(
  rewards: readonly number[],
  cfg: AdvantageConfig,
): { advantages: number[] | null; note: string } {
  const n = rewards.length;
  const mean = rewards.reduce((a, b) => a + b, 0) / Math.max(1, n);
  const centred = rewards.map((r) => r - mean);
  const kl = cfg.use_kl_in_reward
    ? '; the learner subtracted its KL penalty from the rewards first, which these leave out'
    : '';
  switch (cfg.adv_estimator) {
    case 'grpo': {
      if (!cfg.norm_adv_by_std_in_grpo)
        return { advantages: centred, note: `grpo without the std: r - mean(r) over the group${kl}` };
      const std = n > 1 ? Math.sqrt(centred.reduce((a, c) => a + c * c, 0) / (n - 1)) : 0;
      return {
        advantages: centred.map((c) => c / (std + EPS)),
        note: `grpo: (r - mean(r)) / (std(r) + 1e-6) over the group${kl}`,
      };
    }
    case 'dr_grpo':
      return { advantages: centred, note: `dr_grpo: r - mean(r) over the group${kl}` };
    case 'rloo':
      return {
        advantages: centred.map((c) => (n > 1 ? (n / (n - 1)) * c : 0)),
        note: `rloo: G/(G-1) (r - mean(r)), the leave-one-out baseline${kl}`,
      };
    default:
      return {
        advantages: null,
        note: `${cfg.adv_estimator} gives token-level advantages from the whole batch${
          cfg.adv_estimator === 'gae' ? " and the critic's values" : ''
        }: not stored, so not shown`,
      };
  }
}
