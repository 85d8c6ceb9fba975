"""KL estimators against their formulas and against the exact KL of two categorical distributions."""

import math

import pytest
import torch

from toolrl_learner.algos.kl import kl_k1, kl_k2, kl_k3, kl_penalty


def test_estimators_match_their_formulas_on_cpu():
    # log pi = -1.0, log pi_ref = -1.5 -> log r = log(pi_ref / pi) = -0.5
    # k1 = -log r = 0.5 ; k2 = 0.5 * 0.25 = 0.125 ; k3 = e^-0.5 - 1 + 0.5 = 0.106531
    logp, ref = torch.tensor([-1.0]), torch.tensor([-1.5])
    assert kl_k1(logp, ref).item() == pytest.approx(0.5)
    assert kl_k2(logp, ref).item() == pytest.approx(0.125)
    assert kl_k3(logp, ref).item() == pytest.approx(math.exp(-0.5) - 0.5, abs=1e-6)
    assert kl_penalty(logp, ref, "k3").item() == pytest.approx(0.106531, abs=1e-6)


def test_k3_is_nonnegative_and_zero_at_equality_on_cpu():
    logp = torch.linspace(-5, 0, 50)
    ref = torch.linspace(0, -5, 50)
    assert (kl_k3(logp, ref) >= 0).all()
    assert kl_k3(logp, logp).abs().max().item() == 0.0


def test_k1_and_k3_are_unbiased_estimates_of_kl_on_cpu():
    # Exact KL(p || q) of two categoricals vs the mean estimate over 200k samples of p.
    p = torch.tensor([0.5, 0.3, 0.15, 0.05])
    q = torch.tensor([0.25, 0.25, 0.25, 0.25])
    exact = float((p * (p / q).log()).sum())  # 0.2101
    gen = torch.Generator().manual_seed(0)
    y = torch.multinomial(p, 200_000, replacement=True, generator=gen)
    logp, logq = p.log()[y], q.log()[y]
    assert kl_k1(logp, logq).mean().item() == pytest.approx(exact, abs=0.01)
    assert kl_k3(logp, logq).mean().item() == pytest.approx(exact, abs=0.01)
    # k3 has the lower variance of the two unbiased estimators
    assert kl_k3(logp, logq).var() < kl_k1(logp, logq).var()


def test_unknown_estimator_is_named_on_cpu():
    with pytest.raises(ValueError, match="unknown KL estimator 'k4'"):
        kl_penalty(torch.zeros(1), torch.zeros(1), "k4")


def test_k3_clamps_as_verl_log_ratio_20_estimate_10_on_cpu():
    # verl's kl_penalty("low_var_kl"): log r clamped to [-20, 20], then k3 = e^log r - 1 - log r clamped to <= 10.
    # log r = -10.5 is inside both clamps' reach only for verl's: k3 = e^-10.5 + 9.5 = 9.500028 (a clamp of log r
    # at 10 gave 9.000045 with no gradient); log r = -30 gives e^-20 + 19 and log r = 25 gives e^20 - 21, both clamped to 10.
    logp = torch.tensor([0.0, 0.0, 0.0], requires_grad=True)
    ref = torch.tensor([-10.5, -30.0, 25.0])
    k3 = kl_k3(logp, ref)
    assert k3.tolist() == pytest.approx([math.exp(-10.5) + 9.5, 10.0, 10.0], abs=1e-5)
    k3.sum().backward()
    # d k3 / d logp = 1 - e^log r inside the clamps; 0 where a clamp binds
    assert logp.grad.tolist() == pytest.approx([1 - math.exp(-10.5), 0.0, 0.0], abs=1e-6)
