"""Packed causal attention: B sequences concatenated along T, each attending only to its own past.

Two backends behind one function, chosen per call:
- `varlen`: `torch.nn.attention.varlen.varlen_attn` (Flash Attention over cu_seqlens, no padding, O(T) memory);
  CUDA with fp16/bf16 inputs only, which is the learner's bf16-autocast path on an H100.
- `sdpa`: `scaled_dot_product_attention` with a block-diagonal causal mask [T, T]; any device and dtype
  (CPU tests, fp32 parity checks). Memory is O(T^2) booleans, fine for the sizes CPU runs see.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def block_causal_mask(cu_seqlens: torch.Tensor, total: int) -> torch.Tensor:
    """[T, T] bool, True where query i may attend to key j: same sequence and j <= i."""
    pos = torch.arange(total, device=cu_seqlens.device)
    # Sequence index of every token: how many boundaries (after the first) lie at or before it.
    seq = torch.searchsorted(cu_seqlens[1:].contiguous(), pos, right=True)
    return (seq[:, None] == seq[None, :]) & (pos[None, :] <= pos[:, None])


def _varlen_available(q: torch.Tensor) -> bool:
    if not q.is_cuda or q.dtype not in (torch.float16, torch.bfloat16):
        return False
    try:
        from torch.nn.attention.varlen import varlen_attn  # noqa: F401
    except ImportError:
        return False
    return True


def packed_causal_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens: torch.Tensor,
    max_seqlen: int | None = None,
    scale: float | None = None,
    backend: str = "auto",
) -> torch.Tensor:
    """Causal attention within each packed sequence.

    q: [T, Hq, D]; k, v: [T, Hkv, D] with Hq a multiple of Hkv (grouped-query attention);
    cu_seqlens: [B+1] int, cumulative sequence lengths starting at 0 and ending at T.
    backend: "auto" (varlen where it runs, else sdpa), "varlen" or "sdpa".
    Returns [T, Hq, D].
    """
    total, hq, _ = q.shape
    hkv = k.shape[1]
    use_varlen = backend == "varlen" or (backend == "auto" and _varlen_available(q))
    if use_varlen:
        from torch.nn.attention.varlen import varlen_attn

        cu = cu_seqlens.to(torch.int32)
        if max_seqlen is None:
            max_seqlen = int((cu[1:] - cu[:-1]).max().item())
        # Flash Attention takes fewer KV heads than query heads as they are (GQA), so K/V are not repeated.
        return varlen_attn(q, k, v, cu, cu, max_seqlen, max_seqlen, scale=scale, window_size=(-1, 0))
    if backend not in ("auto", "sdpa"):
        raise ValueError(f"unknown attention backend {backend!r}; one of auto, varlen, sdpa")
    mask = block_causal_mask(cu_seqlens, total)
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1),  # [Hq, T, D]
        k.transpose(0, 1),  # [Hkv, T, D]
        v.transpose(0, 1),
        attn_mask=mask,
        scale=scale,
        enable_gqa=hq != hkv,
    )  # [Hq, T, D]
    return out.transpose(0, 1)
