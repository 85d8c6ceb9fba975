"""The clipped value loss of PPO's critic (arXiv:1707.06347; clipping as in OpenAI baselines and verl)."""

from __future__ import annotations

import torch
from torch import Tensor

from .policy_loss import Aggregate
from .segments import masked_mean


def value_loss(
    values: Tensor,
    old_values: Tensor,
    returns: Tensor,
    mask: Tensor,
    aggregate: Aggregate,
    *,
    cliprange_value: float,
) -> tuple[Tensor, dict[str, Tensor]]:
    """0.5 * agg(max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2)); returns (loss, metrics)."""
    mask = mask.to(values.dtype)
    clipped_values = old_values + (values - old_values).clamp(-cliprange_value, cliprange_value)  # [N]
    vf_losses = (values - returns) ** 2  # [N]
    vf_losses_clipped = (clipped_values - returns) ** 2  # [N]
    loss = 0.5 * aggregate(torch.maximum(vf_losses, vf_losses_clipped), mask)
    metrics = {
        "vf_loss": loss.detach(),
        "vf_clip_frac": masked_mean((vf_losses_clipped > vf_losses).to(mask.dtype), mask).detach(),
        "values_mean": masked_mean(values, mask).detach(),
    }
    return loss, metrics
