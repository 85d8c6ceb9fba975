"""Per-sequence reductions over packed per-token tensors: token i belongs to sequence `seq_ids[i]`."""

from __future__ import annotations

import torch
from torch import Tensor


def segment_sum(values: Tensor, seq_ids: Tensor, num_seqs: int) -> Tensor:
    """sum_{i: seq_ids[i] == s} values[i] for each s in [0, num_seqs)."""
    out = torch.zeros(num_seqs, dtype=values.dtype, device=values.device)
    return out.index_add(0, seq_ids, values)  # [S]


def segment_mean(values: Tensor, mask: Tensor, seq_ids: Tensor, num_seqs: int) -> Tensor:
    """Masked mean per sequence; 0 for a sequence with no unmasked token."""
    mask = mask.to(values.dtype)
    total = segment_sum(values * mask, seq_ids, num_seqs)  # [S]
    count = segment_sum(mask, seq_ids, num_seqs)  # [S]
    return total / count.clamp(min=1)  # [S]


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1)


def masked_whiten(values: Tensor, mask: Tensor, eps: float = 1e-8) -> Tensor:
    """(x - mean) * rsqrt(var + eps) over unmasked entries (unbiased var); masked entries become 0.

    eps sits under the square root, as in verl's `masked_whiten`: a batch whose values are all equal has
    var ~ rounding noise, and (x - mean) / (std + eps) would blow that noise up to advantages of size ~1
    (eight rewards of 0.7 in float32: -0.85 on every token). The statistics are taken in float64 so that
    the noise itself is ~1e-17 instead of ~1e-8; the result comes back in the input's dtype.
    """
    x = values.to(torch.float64)
    m = mask.to(torch.float64)
    n = m.sum()
    mean = (x * m).sum() / n.clamp(min=1)
    var = (((x - mean) ** 2) * m).sum() / (n - 1).clamp(min=1)
    return ((x - mean) * torch.rsqrt(var + eps) * m).to(values.dtype)
