"""The clipped-surrogate policy loss with its optional terms, as one function that reads like the papers.

PPO clipped surrogate      arXiv:1707.06347
clip-higher (eps_low != eps_high)  DAPO, arXiv:2503.14476
dual clip (constant c)     arXiv:1912.09729
sequence-level ratio       GSPO, arXiv:2507.18071 (the GSPO-token form: every token of sequence i gets
                           ratio s_i = exp(mean_t log(pi/pi_old)) with gradient s_i * grad log pi(y_t))
KL to the reference        GRPO, arXiv:2402.03300 (estimators in kl.py)
rollout IS correction      per-token weights from rollout_is.py, applied to the surrogate only
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .segments import masked_mean, segment_mean

# exp() of a log-ratio above this overflows in fp32 long before clipping could matter.
LOG_RATIO_CLAMP = 20.0

Aggregate = Callable[[Tensor, Tensor], Tensor]  # (per-token loss [N], mask [N]) -> scalar


def importance_ratio(
    logprobs: Tensor, old_logprobs: Tensor, mask: Tensor, seq_ids: Tensor, num_seqs: int, level: str
) -> Tensor:
    """r_t = pi(y_t) / pi_old(y_t) (token level) or GSPO's s_i broadcast to the tokens of sequence i."""
    log_ratio = logprobs - old_logprobs  # [N]
    if level == "sequence":
        seq_log_ratio = segment_mean(log_ratio, mask, seq_ids, num_seqs)  # [S]
        log_ratio = logprobs - logprobs.detach() + seq_log_ratio[seq_ids].detach()  # [N]
    elif level != "token":
        raise ValueError(f"importance_sampling_level must be token or sequence, got {level!r}")
    return torch.exp(log_ratio.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))  # [N]


def policy_loss(
    logprobs: Tensor,
    old_logprobs: Tensor,
    advantages: Tensor,
    mask: Tensor,
    seq_ids: Tensor,
    num_seqs: int,
    aggregate: Aggregate,
    *,
    clip_ratio_low: float = 0.2,
    clip_ratio_high: float = 0.28,
    clip_ratio_c: float | None = None,
    importance_sampling_level: str = "token",
    is_weights: Tensor | None = None,
    kl: Tensor | None = None,
    kl_coef: float = 0.0,
    entropy: Tensor | None = None,
    entropy_coeff: float = 0.0,
) -> tuple[Tensor, dict[str, Tensor]]:
    """Return (loss, detached per-micro-batch metrics). All tensors are packed per-token [N].

    loss = agg(w * max(-A r, -A clip(r, 1-eps_low, 1+eps_high)) [dual-clipped at -A c for A < 0])
           + kl_coef * agg(kl) - entropy_coeff * agg(entropy)
    """
    mask = mask.to(logprobs.dtype)
    ratio = importance_ratio(
        logprobs, old_logprobs, mask, seq_ids, num_seqs, importance_sampling_level
    )  # [N]
    clipped_ratio = ratio.clamp(1 - clip_ratio_low, 1 + clip_ratio_high)  # [N]
    surrogate = -advantages * ratio  # [N]
    clipped_surrogate = -advantages * clipped_ratio  # [N]
    pg_losses = torch.maximum(surrogate, clipped_surrogate)  # [N]
    dual_clipped: Tensor | None = None
    if clip_ratio_c is not None:
        dual = torch.minimum(pg_losses, -advantages * clip_ratio_c)  # [N]
        dual_clipped = (advantages < 0) & (dual < pg_losses)  # [N]
        pg_losses = torch.where(advantages < 0, dual, pg_losses)  # [N]
    if is_weights is not None:
        pg_losses = pg_losses * is_weights.detach()  # [N]
    pg_loss = aggregate(pg_losses, mask)
    loss = pg_loss
    metrics = {
        "pg_loss": pg_loss.detach(),
        "clip_frac": masked_mean((clipped_surrogate > surrogate).to(mask.dtype), mask).detach(),
        "clip_frac_low": masked_mean(
            ((ratio < 1 - clip_ratio_low) & (advantages < 0)).to(mask.dtype), mask
        ).detach(),
        "clip_frac_high": masked_mean(
            ((ratio > 1 + clip_ratio_high) & (advantages > 0)).to(mask.dtype), mask
        ).detach(),
        "ppo_kl": masked_mean(old_logprobs - logprobs, mask).detach(),
        "ratio_mean": masked_mean(ratio, mask).detach(),
    }
    if dual_clipped is not None:
        metrics["dual_clip_frac"] = masked_mean(dual_clipped.to(mask.dtype), mask).detach()
    if kl is not None:
        kl_loss = aggregate(kl, mask)
        loss = loss + kl_coef * kl_loss
        metrics["kl_loss"] = kl_loss.detach()
        metrics["kl"] = masked_mean(kl, mask).detach()
    if entropy is not None:
        entropy_loss = aggregate(entropy, mask)
        if entropy_coeff:
            loss = loss - entropy_coeff * entropy_loss
        metrics["entropy_loss"] = entropy_loss.detach()
        metrics["entropy"] = masked_mean(entropy, mask).detach()
    return loss, metrics
