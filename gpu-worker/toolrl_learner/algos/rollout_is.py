"""Rollout importance-sampling correction (`algorithm.rollout_is*`).

The ONNX rollout engine and the bf16 learner never give exactly the same probabilities, so the
samples come from pi_rollout, not from pi_old. The surrogate is reweighted by
w = pi_old(y) / pi_rollout(y), per token or per sequence (the product over its sampled tokens), and
either truncated at a cap (TIS: min(w, C), Yao et al. 2025, "Your efficient RL framework secretly
brings you off-policy RL training") or masked outside [1/C, C] (w set to 0, the token or sequence
then contributes nothing but still counts in the normaliser). The weights carry no gradient.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .segments import masked_mean, segment_sum

LOG_W_CLAMP = 20.0


def rollout_is_weights(
    old_logprobs: Tensor,
    behavior_logprobs: Tensor,
    mask: Tensor,
    seq_ids: Tensor,
    num_seqs: int,
    *,
    level: str = "token",
    mode: str = "truncate",
    threshold: float = 2.0,
) -> tuple[Tensor, dict[str, Tensor]]:
    """Return (weights [N], metrics). level: none | token | sequence; mode: truncate | mask."""
    mask = mask.to(old_logprobs.dtype)
    log_w = (old_logprobs - behavior_logprobs).detach() * mask  # [N]
    metrics = {
        "rollout_kl_k1": masked_mean(log_w, mask),
        "rollout_kl_k3": masked_mean(torch.expm1(-log_w) + log_w, mask),  # k3 with r = pi_rollout / pi_old
    }
    if level == "none":
        return torch.ones_like(old_logprobs), metrics
    if level == "sequence":
        log_w = segment_sum(log_w, seq_ids, num_seqs)[seq_ids]  # [N], log prod_t w_t
    elif level != "token":
        raise ValueError(f"rollout_is must be none, token or sequence, got {level!r}")
    w = torch.exp(log_w.clamp(-LOG_W_CLAMP, LOG_W_CLAMP))  # [N]
    if mode == "truncate":
        out = w.clamp(max=threshold)  # [N]
        metrics["rollout_is_clipped_frac"] = masked_mean((w > threshold).to(w.dtype), mask)
    elif mode == "mask":
        log_c = math.log(threshold)
        keep = (log_w <= log_c) & (log_w >= -log_c)  # [N]
        out = torch.where(keep, w, torch.zeros_like(w))  # [N]
        metrics["rollout_is_masked_frac"] = masked_mean((~keep).to(w.dtype), mask)
    else:
        raise ValueError(f"rollout_is_mode must be truncate or mask, got {mode!r}")
    metrics["rollout_is_weight_mean"] = masked_mean(out, mask)
    return out * mask, metrics
