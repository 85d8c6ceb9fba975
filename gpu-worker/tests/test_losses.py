"""Policy loss, value loss, loss aggregation and rollout IS correction on hand-worked inputs."""

import functools
import math

import pytest
import torch

from toolrl_learner.algos.aggregation import aggregate_loss
from toolrl_learner.algos.kl import kl_k3
from toolrl_learner.algos.policy_loss import policy_loss
from toolrl_learner.algos.rollout_is import rollout_is_weights
from toolrl_learner.algos.value_loss import value_loss

T = torch.tensor


def _agg(seq_ids, num_seqs, mode="token-mean", **kw):
    return functools.partial(aggregate_loss, seq_ids=seq_ids, num_seqs=num_seqs, mode=mode, **kw)


def _loss(logprobs, old, adv, mask=None, seq_ids=None, mode="token-mean", **kw):
    n = logprobs.shape[0]
    mask = torch.ones(n) if mask is None else mask
    seq_ids = torch.arange(n) if seq_ids is None else seq_ids
    num_seqs = int(seq_ids.max()) + 1
    return policy_loss(logprobs, old, adv, mask, seq_ids, num_seqs, _agg(seq_ids, num_seqs, mode), **kw)


def test_clipped_surrogate_with_clip_higher_on_cpu():
    # ratios r = [1.5, 0.5, 1.1, 0.7], A = [1, 1, -1, -1], eps_low 0.2, eps_high 0.28
    # t0: max(-1.5, -1.28) = -1.28 (clipped)   t1: max(-0.5, -0.8) = -0.5
    # t2: max(1.1, 1.1) = 1.1                  t3: max(0.7, 0.8) = 0.8 (clipped)
    # token-mean = (-1.28 - 0.5 + 1.1 + 0.8) / 4 = 0.03 ; clip_frac = 2/4
    # d loss / d logp = -A r / 4 where unclipped, 0 where clipped: [0, -0.125, 0.275, 0]
    old = torch.zeros(4)
    logp = T([1.5, 0.5, 1.1, 0.7]).log().requires_grad_()
    loss, m = _loss(logp, old, T([1.0, 1.0, -1.0, -1.0]), clip_ratio_low=0.2, clip_ratio_high=0.28)
    assert loss.item() == pytest.approx(0.03, abs=1e-6)
    assert m["clip_frac"].item() == pytest.approx(0.5)
    assert m["clip_frac_high"].item() == pytest.approx(0.25)
    assert m["clip_frac_low"].item() == pytest.approx(0.25)
    loss.backward()
    assert logp.grad.tolist() == pytest.approx([0.0, -0.125, 0.275, 0.0], abs=1e-6)


def test_on_policy_loss_is_minus_mean_advantage_on_cpu():
    # ratio 1 everywhere: loss = -mean(A) = -(2 - 1 + 0.5) / 3 = -0.5 ; gradient = -A / 3
    logp = T([-1.0, -2.0, -0.5]).requires_grad_()
    loss, _ = _loss(logp, logp.detach(), T([2.0, -1.0, 0.5]))
    loss.backward()
    assert loss.item() == pytest.approx(-0.5)
    assert logp.grad.tolist() == pytest.approx([-2 / 3, 1 / 3, -0.5 / 3])


def test_dual_clip_bounds_negative_advantages_on_cpu():
    # r = 5, A = -1: max(5, -1 * 1.28 * -1 = 1.28) = 5 ; dual clip c = 3: min(5, 3) = 3
    # r = 5, A = +1: clipped at -1.28 ; dual clip does not apply to positive advantages
    logp = T([5.0, 5.0]).log()
    loss_neg, m = _loss(logp[:1], torch.zeros(1), T([-1.0]), clip_ratio_c=3.0)
    assert loss_neg.item() == pytest.approx(3.0)
    assert m["dual_clip_frac"].item() == 1.0
    loss_pos, _ = _loss(logp[1:], torch.zeros(1), T([1.0]), clip_ratio_c=3.0)
    assert loss_pos.item() == pytest.approx(-1.28)
    loss_nodual, _ = _loss(logp[:1], torch.zeros(1), T([-1.0]))
    assert loss_nodual.item() == pytest.approx(5.0)


def test_gspo_sequence_ratio_on_cpu():
    # One sequence, token log-ratios [log 1.2, log 0.8]: s = exp((0.18232 - 0.22314) / 2) = 0.97980,
    # on both tokens. A = 1, no clipping: token-mean loss = -0.97980 and d loss / d logp_t = -s / 2 = -0.48990
    # (the token-level ratio would give -0.6 and -0.4).
    logp = T([1.2, 0.8]).log().requires_grad_()
    loss, _ = _loss(
        logp, torch.zeros(2), T([1.0, 1.0]), seq_ids=T([0, 0]), importance_sampling_level="sequence"
    )
    loss.backward()
    assert loss.item() == pytest.approx(-0.97980, abs=1e-5)
    assert logp.grad.tolist() == pytest.approx([-0.48990, -0.48990], abs=1e-5)
    logp_tok = T([1.2, 0.8]).log().requires_grad_()
    loss, _ = _loss(logp_tok, torch.zeros(2), T([1.0, 1.0]), seq_ids=T([0, 0]))
    loss.backward()
    assert logp_tok.grad.tolist() == pytest.approx([-0.6, -0.4], abs=1e-6)


def test_kl_and_entropy_terms_combine_on_cpu():
    # on-policy, A = 0: loss = kl_coef * mean(k3) - entropy_coeff * mean(H)
    # k3(-1 vs -1.5) = e^-0.5 - 0.5 = 0.106531, k3(-2 vs -2) = 0 -> mean 0.0532653 ; mean(H) = 1.5
    # 0.1 * 0.0532653 - 0.01 * 1.5 = -0.00967347
    logp, ref = T([-1.0, -2.0]), T([-1.5, -2.0])
    kl = kl_k3(logp, ref)
    loss, m = _loss(logp, logp, torch.zeros(2), kl=kl, kl_coef=0.1, entropy=T([1.0, 2.0]), entropy_coeff=0.01)
    assert loss.item() == pytest.approx(-0.00967347, abs=1e-7)
    assert m["kl_loss"].item() == pytest.approx(0.0532653, abs=1e-6)
    assert m["entropy"].item() == pytest.approx(1.5)


def test_masked_tool_tokens_change_nothing_on_cpu():
    # The same 3 sampled tokens, then with two masked tokens (tool output) carrying absurd values inserted:
    # loss, metrics and the sampled tokens' gradients are identical; the masked tokens get zero gradient.
    kw = dict(clip_ratio_c=3.0, kl_coef=0.1, entropy_coeff=0.01)
    logp = T([-1.0, -0.3, -2.0]).requires_grad_()
    old, adv, ref, ent = T([-1.2, -0.3, -1.0]), T([1.0, -2.0, 0.5]), T([-1.1, -0.2, -2.5]), T([0.5, 1.0, 2.0])
    seq = T([0, 0, 1])
    base, m0 = _loss(
        logp, old, adv, seq_ids=seq, kl=kl_k3(logp, ref), entropy=ent, mode="seq-mean-token-mean", **kw
    )
    base.backward()

    keep = [0, 3, 4]  # positions of the sampled tokens in the padded layout
    logp2 = T([-1.0, -50.0, 3.0, -0.3, -2.0]).requires_grad_()
    old2 = T([-1.2, 0.0, -40.0, -0.3, -1.0])
    adv2, ref2 = T([1.0, 1e6, -1e6, -2.0, 0.5]), T([-1.1, 9.0, -9.0, -0.2, -2.5])
    ent2, mask2, seq2 = T([0.5, 77.0, 77.0, 1.0, 2.0]), T([1, 0, 0, 1, 1]), T([0, 0, 0, 0, 1])
    loss2, m2 = _loss(
        logp2, old2, adv2, mask=mask2, seq_ids=seq2, kl=kl_k3(logp2, ref2), entropy=ent2,
        mode="seq-mean-token-mean", **kw,
    )  # fmt: skip
    loss2.backward()
    assert loss2.item() == pytest.approx(base.item(), abs=1e-6)
    for k in m0:
        assert m2[k].item() == pytest.approx(m0[k].item(), abs=1e-6), k
    assert logp2.grad[keep].tolist() == pytest.approx(logp.grad.tolist(), abs=1e-6)
    assert logp2.grad[[1, 2]].tolist() == [0.0, 0.0]


def test_aggregation_modes_on_cpu():
    # losses [1, 2, 3 | 4, 5]: token-mean 15/5 = 3 ; seq-mean-token-mean (2 + 4.5)/2 = 3.25
    # seq-mean-token-sum (6 + 9)/2 = 7.5 ; seq-mean-token-sum-norm with L = 10: (0.6 + 0.9)/2 = 0.75
    loss, mask, seq = T([1.0, 2.0, 3.0, 4.0, 5.0]), torch.ones(5), T([0, 0, 0, 1, 1])
    assert aggregate_loss(loss, mask, seq, 2, "token-mean").item() == pytest.approx(3.0)
    assert aggregate_loss(loss, mask, seq, 2, "seq-mean-token-mean").item() == pytest.approx(3.25)
    assert aggregate_loss(loss, mask, seq, 2, "seq-mean-token-sum").item() == pytest.approx(7.5)
    assert aggregate_loss(
        loss, mask, seq, 2, "seq-mean-token-sum-norm", norm_constant=10
    ).item() == pytest.approx(0.75)
    # token 1 masked: token-mean (1 + 3 + 4 + 5)/4 = 3.25 ; seq-mean-token-mean (2 + 4.5)/2 = 3.25
    mask = T([1.0, 0.0, 1.0, 1.0, 1.0])
    assert aggregate_loss(loss, mask, seq, 2, "token-mean").item() == pytest.approx(3.25)
    assert aggregate_loss(loss, mask, seq, 2, "seq-mean-token-sum").item() == pytest.approx((4 + 9) / 2)
    with pytest.raises(ValueError, match="needs norm_constant"):
        aggregate_loss(loss, mask, seq, 2, "seq-mean-token-sum-norm")
    with pytest.raises(ValueError, match="unknown loss_agg_mode 'mean'"):
        aggregate_loss(loss, mask, seq, 2, "mean")


@pytest.mark.parametrize(
    "mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"]
)
def test_micro_batches_with_global_normalisers_sum_to_the_full_batch_on_cpu(mode):
    # Gradient accumulation: two micro-batches, each normalised by the whole batch's counts, add up to
    # the loss over the whole batch in one call.
    loss, mask, seq = (
        T([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        T([1.0, 1.0, 0.0, 1.0, 1.0, 1.0]),
        T([0, 0, 1, 1, 2, 2]),
    )
    kw = dict(norm_constant=8.0)
    whole = aggregate_loss(loss, mask, seq, 3, mode, **kw)
    glob = dict(num_tokens=5.0, num_loss_seqs=3.0, **kw)
    a = aggregate_loss(loss[:2], mask[:2], T([0, 0]), 1, mode, **glob)
    b = aggregate_loss(loss[2:], mask[2:], T([0, 0, 1, 1]), 2, mode, **glob)
    assert (a + b).item() == pytest.approx(whole.item())


def test_rollout_is_token_truncate_and_mask_on_cpu():
    # log w = old - behaviour = [0.5, -0.8] -> w = [1.64872, 0.44933]
    # truncate at 1.5: [1.5, 0.44933] ; mask at 2 (keep w in [0.5, 2]): [1.64872, 0]
    old, beh, mask, seq = T([-1.0, -1.0]), T([-1.5, -0.2]), torch.ones(2), T([0, 0])
    w, m = rollout_is_weights(old, beh, mask, seq, 1, level="token", mode="truncate", threshold=1.5)
    assert w.tolist() == pytest.approx([1.5, 0.44933], abs=1e-5)
    assert m["rollout_is_clipped_frac"].item() == pytest.approx(0.5)
    assert m["rollout_kl_k1"].item() == pytest.approx((0.5 - 0.8) / 2)
    w, m = rollout_is_weights(old, beh, mask, seq, 1, level="token", mode="mask", threshold=2.0)
    assert w.tolist() == pytest.approx([math.exp(0.5), 0.0], abs=1e-5)
    assert m["rollout_is_masked_frac"].item() == pytest.approx(0.5)


def test_rollout_is_sequence_level_on_cpu():
    # sum of log w over the sequence = 0.5 - 0.8 = -0.3 -> w = e^-0.3 = 0.74082 on both tokens;
    # the masked tool token (log w would be 9) is ignored and gets weight 0
    w, _ = rollout_is_weights(
        T([-1.0, 0.0, -1.0]),
        T([-1.5, -9.0, -0.2]),
        T([1, 0, 1]),
        T([0, 0, 0]),
        1,
        level="sequence",
        threshold=2.0,
    )
    assert w.tolist() == pytest.approx([0.74082, 0.0, 0.74082], abs=1e-5)
    w, _ = rollout_is_weights(T([-1.0]), T([-1.5]), torch.ones(1), T([0]), 1, level="none")
    assert w.tolist() == [1.0]


def test_value_loss_clips_around_old_values_on_cpu():
    # V = [1.0, 0.0], V_old = [0.5, 0.0], R = [2.0, 1.0], c = 0.2
    # t0: (1 - 2)^2 = 1 ; clipped V = 0.5 + 0.2 = 0.7 -> (0.7 - 2)^2 = 1.69 ; max 1.69
    # t1: (0 - 1)^2 = 1 ; clipped V = 0 -> 1 ; max 1
    # 0.5 * token-mean = 0.5 * 2.69 / 2 = 0.6725
    seq = T([0, 1])
    loss, m = value_loss(
        T([1.0, 0.0]), T([0.5, 0.0]), T([2.0, 1.0]), torch.ones(2), _agg(seq, 2), cliprange_value=0.2
    )
    assert loss.item() == pytest.approx(0.6725)
    assert m["vf_clip_frac"].item() == pytest.approx(0.5)
