"""Advantage estimators on inputs worked out by hand."""

import math

import pytest
import torch

from toolrl_learner.algos.advantages import (
    dr_grpo_advantages,
    gae_advantages,
    grpo_advantages,
    has_signal,
    outcome_token_rewards,
    reinforce_pp_advantages,
    rloo_advantages,
)
from toolrl_learner.algos.segments import masked_whiten

T = torch.tensor


def test_grpo_normalises_by_group_std_on_cpu():
    # group 0: r = [1, 0, 0, 1]: mean 0.5, unbiased std = sqrt(4 * 0.25 / 3) = 0.57735 -> A = +-0.5 / 0.57735 = +-0.86603
    # group 1: r = [2, 4]: mean 3, std = sqrt((1 + 1) / 1) = 1.41421 -> A = -+0.70711
    rewards = T([1.0, 0.0, 0.0, 1.0, 2.0, 4.0])
    groups = T([0, 0, 0, 0, 1, 1])
    adv = grpo_advantages(rewards, groups)
    assert adv.tolist() == pytest.approx([0.86603, -0.86603, -0.86603, 0.86603, -0.70711, 0.70711], abs=1e-4)


def test_grpo_without_std_is_mean_centred_on_cpu():
    adv = grpo_advantages(T([1.0, 0.0, 0.0, 1.0]), T([0, 0, 0, 0]), norm_by_std=False)
    assert adv.tolist() == pytest.approx([0.5, -0.5, -0.5, 0.5])


def test_grpo_group_of_one_and_equal_rewards_give_zero_on_cpu():
    # group 0 has one sample (std undefined -> 0, centred reward 0); group 1 rewards all equal.
    adv = grpo_advantages(T([5.0, 1.0, 1.0, 1.0]), T([0, 1, 1, 1]))
    assert adv.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert torch.isfinite(adv).all()


def test_dr_grpo_has_no_std_on_cpu():
    # [1, 0, 0, 1] - 0.5 ; [2, 4] - 3
    adv = dr_grpo_advantages(T([1.0, 0.0, 0.0, 1.0, 2.0, 4.0]), T([0, 0, 0, 0, 1, 1]))
    assert adv.tolist() == pytest.approx([0.5, -0.5, -0.5, 0.5, -1.0, 1.0])


def test_rloo_leaves_one_out_on_cpu():
    # r_0 = 1, others [0, 0, 1]: 1 - 1/3 = 2/3 ; r_1 = 0, others [1, 0, 1]: 0 - 2/3 = -2/3
    # [2, 4]: 2 - 4 = -2, 4 - 2 = 2 ; a group of one gets 0
    adv = rloo_advantages(T([1.0, 0.0, 0.0, 1.0, 2.0, 4.0, 7.0]), T([0, 0, 0, 0, 1, 1, 2]))
    assert adv.tolist() == pytest.approx([2 / 3, -2 / 3, -2 / 3, 2 / 3, -2.0, 2.0, 0.0])


def test_outcome_reward_lands_on_last_sampled_token_on_cpu():
    # seq 0: tokens [s, s, tool] -> reward on token 1 ; seq 1: [tool, s, s] -> token 5 ; seq 2 has no sampled token
    mask = T([1, 1, 0, 0, 1, 1, 0])
    seq_ids = T([0, 0, 0, 1, 1, 1, 2])
    out = outcome_token_rewards(T([3.0, -1.0, 9.0]), mask, seq_ids)
    assert out.tolist() == [0.0, 3.0, 0.0, 0.0, 0.0, -1.0, 0.0]


def test_reinforce_pp_whitens_returns_over_the_batch_on_cpu():
    # seq 0 (3 tokens) reward 1, seq 1 (2 tokens) reward 0, gamma 1 -> returns [1, 1, 1, 0, 0]
    # mean 0.6, unbiased var = (3 * 0.16 + 2 * 0.36) / 4 = 0.3, std 0.54772
    # A = 0.4 / 0.54772 = 0.73030 ; -0.6 / 0.54772 = -1.09545
    mask = T([1, 1, 1, 1, 1])
    seq_ids = T([0, 0, 0, 1, 1])
    rewards = outcome_token_rewards(T([1.0, 0.0]), mask, seq_ids)
    adv = reinforce_pp_advantages(rewards, mask, seq_ids, 2)
    assert adv.tolist() == pytest.approx([0.73030, 0.73030, 0.73030, -1.09545, -1.09545], abs=1e-4)


def test_reinforce_pp_discounts_over_sampled_tokens_only_on_cpu():
    # gamma 0.5, reward 1 on the last sampled token; the tool token (mask 0) is skipped:
    # returns over sampled tokens = [0.25, 0.5, 1]; compare the returns through whitening with a
    # sequence without the tool token: the unmasked advantages must be identical.
    with_tool = reinforce_pp_advantages(
        T([0.0, 0.0, 5.0, 1.0]), T([1, 1, 0, 1]), T([0, 0, 0, 0]), 1, gamma=0.5
    )
    plain = reinforce_pp_advantages(T([0.0, 0.0, 1.0]), T([1, 1, 1]), T([0, 0, 0]), 1, gamma=0.5)
    assert with_tool[[0, 1, 3]].tolist() == pytest.approx(plain.tolist())
    assert with_tool[2].item() == 0.0
    # whitened [0.25, 0.5, 1]: mean 0.58333, std sqrt((0.11111 + 0.00694 + 0.17361) / 2) = 0.38188
    assert plain.tolist() == pytest.approx([-0.87287, -0.21822, 1.09109], abs=1e-4)


def test_gae_by_hand_on_cpu():
    # rewards [0, 1], values [0.5, 0.8], gamma 1:
    # delta_1 = 1 + 0 - 0.8 = 0.2 ; delta_0 = 0 + 0.8 - 0.5 = 0.3
    # lam 1:   A = [0.3 + 0.2, 0.2] = [0.5, 0.2], R = A + V = [1.0, 1.0]
    # lam 0.5: A = [0.3 + 0.1, 0.2] = [0.4, 0.2], R = [0.9, 1.0]
    # whitened [0.5, 0.2] (and [0.4, 0.2]): +-1/sqrt(2)
    mask, seq_ids = T([1, 1]), T([0, 0])
    adv, ret = gae_advantages(T([0.0, 1.0]), T([0.5, 0.8]), mask, seq_ids, 1, gamma=1.0, lam=1.0)
    assert ret.tolist() == pytest.approx([1.0, 1.0])
    assert adv.tolist() == pytest.approx([1 / math.sqrt(2), -1 / math.sqrt(2)], abs=1e-5)
    _, ret = gae_advantages(T([0.0, 1.0]), T([0.5, 0.8]), mask, seq_ids, 1, gamma=1.0, lam=0.5)
    assert ret.tolist() == pytest.approx([0.9, 1.0])


def test_gae_skips_tool_tokens_and_keeps_sequences_apart_on_cpu():
    # The same two-token sequence twice, once with a tool token (value 100, reward 7) in the middle and
    # followed by another sequence: the tool token must change nothing and V of the next sequence must
    # not leak into the last token of the first.
    adv, ret = gae_advantages(
        T([0.0, 7.0, 1.0, 0.0, 1.0]),
        T([0.5, 100.0, 0.8, 0.5, 0.8]),
        T([1, 0, 1, 1, 1]),
        T([0, 0, 0, 1, 1]),
        2,
        gamma=1.0,
        lam=1.0,
    )
    assert ret.tolist() == pytest.approx([1.0, 0.0, 1.0, 1.0, 1.0])
    assert adv[1].item() == 0.0
    assert adv[0].item() == pytest.approx(adv[3].item())


def _verl_masked_whiten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    # verl's formula (verl/utils/torch_functional.py, masked_whiten with unbiased masked_var), restated in
    # float32 as a reference: (x - mean) * rsqrt(var + 1e-8).
    n = mask.sum()
    mean = (values * mask).sum() / (n + 1e-8)
    var = (((values - mean) ** 2) * mask).sum() / (n + 1e-8) * (n / (n - 1))
    return (values - mean) * torch.rsqrt(var + 1e-8)


@pytest.mark.parametrize("reward", [0.1, 0.3, 0.7, 0.9, 0.55])
def test_equal_rewards_that_float32_cannot_represent_get_no_advantage_on_cpu(reward):
    # Eight single-sample groups (and every batch size up to 64) all at the same reward: the batch carries no
    # signal. float32 sums of 0.7 leave a std of ~6e-8; divided by (std + 1e-8) that noise became A = -0.85.
    for num_seqs in range(2, 65):
        lengths = [3 + (i % 5) for i in range(num_seqs)]
        seq_ids = torch.cat([torch.full((length,), i) for i, length in enumerate(lengths)])
        mask = torch.ones(seq_ids.shape[0])
        token_rewards = outcome_token_rewards(torch.full((num_seqs,), reward), mask, seq_ids)
        adv = reinforce_pp_advantages(token_rewards, mask, seq_ids, num_seqs)
        assert adv.abs().max().item() < 1e-6, (num_seqs, adv[:4].tolist())
        gae_adv, _ = gae_advantages(token_rewards, torch.zeros_like(token_rewards), mask, seq_ids, num_seqs)
        assert gae_adv.abs().max().item() < 1e-6
        # the same noise through a GRPO group of num_seqs equal rewards (its std + 1e-6 gave A ~ 0.06-0.58)
        grpo = grpo_advantages(torch.full((num_seqs,), reward), torch.zeros(num_seqs, dtype=torch.long))
        assert grpo.abs().max().item() < 1e-6
        rloo = rloo_advantages(torch.full((num_seqs,), reward), torch.zeros(num_seqs, dtype=torch.long))
        assert rloo.abs().max().item() < 1e-6


def test_whitening_matches_verl_masked_whiten_on_cpu():
    # Rewards that are not exactly representable, tool tokens masked out: the same as verl's formula to float32
    # precision, and masked tokens carry 0 (verl multiplies by the response mask after whitening).
    gen = torch.Generator().manual_seed(0)
    values = torch.round(torch.rand(200, generator=gen) * 10) / 10  # 0.0, 0.1, ..., 1.0
    mask = (torch.rand(200, generator=gen) > 0.3).float()
    ours = masked_whiten(values, mask)
    ref = _verl_masked_whiten(values, mask) * mask
    assert ours.dtype == torch.float32
    assert ours.tolist() == pytest.approx(ref.tolist(), abs=1e-5)
    assert (ours[mask == 0] == 0).all()


def test_has_signal_needs_unequal_rewards_or_a_baseline_outside_the_group_on_cpu():
    # equal rewards (within 1e-9) give every estimator A = 0; a group of one has no group baseline (grpo,
    # dr_grpo, rloo) but reinforce_pp and gae still learn from it
    assert has_signal([0.0, 1.0], group_relative=True)
    assert not has_signal([0.7, 0.7, 0.7], group_relative=True)
    assert not has_signal([0.5, 0.5 + 1e-12], group_relative=False)
    assert has_signal([0.5, 0.5 + 1e-6], group_relative=True)
    assert not has_signal([1.0], group_relative=True)
    assert has_signal([1.0], group_relative=False)
