"""KL in the reward (`algorithm.use_kl_in_reward`): the shaped rewards and the advantages they give,
worked out by hand, for an outcome estimator (grpo: the sequence's KL total comes off its reward) and
for the token-level ones (reinforce_pp, gae: kl_coef * kl_t comes off every token's reward)."""

import pytest
import torch

from toolrl_learner.config import LearnerConfig
from toolrl_learner.train.batch import LearnerBatch
from toolrl_learner.train.outcomes import compute_advantages
from toolrl_learner.train.synthetic import group, trajectory

T = torch.tensor


def _batch(rewards: list[float]) -> LearnerBatch:
    """One group; each trajectory is 1 prompt token + 2 sampled tokens -> 2 loss tokens per sequence."""
    trajs = [trajectory([5], [[10 + i, 20 + i]], r) for i, r in enumerate(rewards)]
    return LearnerBatch.from_groups([group("r", "e0-p0", trajs)], 0)


def _cfg(**kw) -> LearnerConfig:
    return LearnerConfig(**{"use_kl_in_reward": True, "kl_penalty": "k1", "kl_coef": 0.5, **kw})


def test_grpo_subtracts_the_sequence_kl_from_the_reward_on_cpu():
    # r = [1, 0, 0]; k1 per token = old - ref:  seq 0 [0.2, 0.2], seq 1 [0, 0], seq 2 [0.3, 0.1]
    # shaped r' = r - 0.5 * sum_t kl_t = [1 - 0.2, 0 - 0, 0 - 0.2] = [0.8, 0.0, -0.2]
    # group mean 0.2 -> centred [0.6, -0.2, -0.4]; unbiased std = sqrt((0.36 + 0.04 + 0.16) / 2)
    #   = sqrt(0.28) = 0.529150 -> A = [1.133893, -0.377964, -0.755929], the same on both tokens of a sequence
    # (without the KL: r = [1, 0, 0] -> A = [1.154701, -0.577350, -0.577350])
    batch = _batch([1.0, 0.0, 0.0])
    old = T([-1.0, -1.0, -2.0, -2.0, -1.5, -0.5])
    ref = T([-1.2, -1.2, -2.0, -2.0, -1.8, -0.6])
    adv, returns, m = compute_advantages(_cfg(adv_estimator="grpo"), batch, old, None, ref)
    want = [1.133893, 1.133893, -0.377964, -0.377964, -0.755929, -0.755929]
    assert adv.tolist() == pytest.approx(want, abs=1e-5)
    assert returns is None
    assert m["kl_in_reward"] == pytest.approx(0.8 / 6)  # mean k1 over the 6 tokens
    plain, _, _ = compute_advantages(LearnerConfig(adv_estimator="grpo"), batch)
    assert plain.tolist() == pytest.approx([1.154701] * 2 + [-0.577350] * 4, abs=1e-5)


def test_grpo_without_std_keeps_the_shaped_differences_on_cpu():
    # norm_adv_by_std_in_grpo off: A = r' - mean(r') = [0.6, -0.2, -0.4] (r' as above)
    batch = _batch([1.0, 0.0, 0.0])
    old = T([-1.0, -1.0, -2.0, -2.0, -1.5, -0.5])
    ref = T([-1.2, -1.2, -2.0, -2.0, -1.8, -0.6])
    cfg = _cfg(adv_estimator="grpo", norm_adv_by_std_in_grpo=False)
    adv, _, _ = compute_advantages(cfg, batch, old, None, ref)
    assert adv.tolist() == pytest.approx([0.6, 0.6, -0.2, -0.2, -0.4, -0.4], abs=1e-6)


def test_reinforce_pp_and_gae_subtract_the_kl_on_every_token_on_cpu():
    # r = [1, 0]; k1 per token: seq 0 [0.2, 0.4], seq 1 [0.0, -0.2] (k1 can be negative)
    # token rewards r_t - 0.5 kl_t, the outcome reward on the last token:
    #   seq 0 [0 - 0.1, 1 - 0.2] = [-0.1, 0.8]      seq 1 [0 - 0, 0 + 0.1] = [0.0, 0.1]
    # returns to go (gamma 1): seq 0 [0.7, 0.8], seq 1 [0.1, 0.1]
    # reinforce_pp whitens them over the batch: mean 1.7 / 4 = 0.425, deviations [0.275, 0.375, -0.325, -0.325],
    #   unbiased var = (0.075625 + 0.140625 + 0.105625 + 0.105625) / 3 = 0.1425, std = 0.377492
    #   -> A = [0.728492, 0.993399, -0.860945, -0.860945]
    batch = _batch([1.0, 0.0])
    old = T([-1.0, -1.0, -2.0, -2.0])
    ref = T([-1.2, -1.4, -2.0, -1.8])
    want = [0.728492, 0.993399, -0.860945, -0.860945]
    adv, _, m = compute_advantages(_cfg(adv_estimator="reinforce_pp"), batch, old, None, ref)
    assert adv.tolist() == pytest.approx(want, abs=1e-5)
    assert m["kl_in_reward"] == pytest.approx(0.1)  # (0.2 + 0.4 + 0 - 0.2) / 4
    # gae with V = 0 and lambda = 1: delta_t = r_t, A_t = the same returns to go, whitened the same way;
    # the value targets R_t = A_t + V_t are the unwhitened shaped returns [0.7, 0.8, 0.1, 0.1]
    values = torch.zeros(4)
    adv, returns, _ = compute_advantages(_cfg(adv_estimator="gae"), batch, old, values, ref)
    assert adv.tolist() == pytest.approx(want, abs=1e-5)
    assert returns.tolist() == pytest.approx([0.7, 0.8, 0.1, 0.1], abs=1e-6)


def test_gae_with_values_and_a_k3_penalty_on_cpu():
    # One sequence, r = 1, 2 tokens, V = [0.5, 0.25], gamma = 1, lambda = 0.5, kl_coef = 0.5, k3:
    # log ratio = ref - old = [0, ln 2]: k3 = (e^x - 1) - x = [0, 1 - 0.693147] = [0, 0.306853]
    # token rewards = [0 - 0, 1 - 0.153426] = [0, 0.846574]
    # delta_1 = 0.846574 + 0 - 0.25 = 0.596574 -> A_1 = 0.596574
    # delta_0 = 0 + 0.25 - 0.5 = -0.25      -> A_0 = -0.25 + 0.5 * 0.596574 = 0.048287
    # value targets R = A + V = [0.548287, 0.846574]
    batch = _batch([1.0])
    old = T([-1.0, -1.0])
    ref = T([-1.0, -1.0 + 0.693147])
    cfg = _cfg(adv_estimator="gae", kl_penalty="k3", lam=0.5)
    _, returns, m = compute_advantages(cfg, batch, old, T([0.5, 0.25]), ref)
    assert returns.tolist() == pytest.approx([0.548287, 0.846574], abs=1e-5)
    assert m["kl_in_reward"] == pytest.approx(0.306853 / 2, abs=1e-6)


def test_kl_in_reward_without_log_probs_is_a_clear_error_on_cpu():
    with pytest.raises(ValueError, match="use_kl_in_reward needs the old and the reference log-probs"):
        compute_advantages(_cfg(), _batch([1.0, 0.0]))
