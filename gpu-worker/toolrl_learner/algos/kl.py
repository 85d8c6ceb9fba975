"""KL estimators between the policy and the reference policy from samples of the policy
(Schulman, "Approximating KL divergence", http://joschu.net/blog/kl-approx.html). With
log r = log pi_ref(y) - log pi(y) on tokens y ~ pi:

k1 = -log r                 unbiased, high variance, can be negative
k2 = (log r)^2 / 2          biased, low variance, its gradient is the true KL's gradient
k3 = (r - 1) - log r        unbiased, low variance, always >= 0  (GRPO's choice, arXiv:2402.03300)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

# exp(log r) overflows quickly when the policy drifts. As verl's `kl_penalty` ("low_var_kl"/"k3"): log r is
# clamped to +-20 before the exp, and the estimate itself to at most 10 (k3 >= 0, so only the top bound acts).
K3_LOG_RATIO_CLAMP = 20.0
K3_CLAMP = 10.0


def kl_k1(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    return logprobs - ref_logprobs  # [N]


def kl_k2(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    return 0.5 * (logprobs - ref_logprobs) ** 2  # [N]


def kl_k3(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    log_r = (ref_logprobs - logprobs).clamp(-K3_LOG_RATIO_CLAMP, K3_LOG_RATIO_CLAMP)  # [N]
    return (torch.exp(log_r) - 1 - log_r).clamp(max=K3_CLAMP)  # [N]


KL_ESTIMATORS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}


def kl_penalty(logprobs: Tensor, ref_logprobs: Tensor, estimator: str) -> Tensor:
    """Per-token KL estimate by name (`algorithm.kl_loss_type` / `algorithm.kl_penalty`)."""
    if estimator not in KL_ESTIMATORS:
        raise ValueError(f"unknown KL estimator {estimator!r}; one of {', '.join(KL_ESTIMATORS)}")
    return KL_ESTIMATORS[estimator](logprobs, ref_logprobs)
