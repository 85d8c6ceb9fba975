"""Packed causal attention: B sequences concatenated along T, each attending only to its own past.

Backends behind one function, chosen per call:
- `varlen`: `torch.nn.attention.varlen.varlen_attn` (Flash Attention over cu_seqlens, no padding, O(T) memory);
  CUDA with fp16/bf16 inputs only, which is the learner's bf16-autocast path on an H100.
- `padded`: the pack scattered into right-padded [B, L_max] rows and one causal `scaled_dot_product_attention`
  (no mask tensor: with right padding, causality alone keeps every real token off the padding), gathered back.
  Work O(B x L_max^2) instead of O(T^2); the default off CUDA (bench/learner, "attention": fastest on a CPU).
- `per_seq`: one causal SDPA call per sequence over slices of the pack: no padding, a call per sequence.
- `sdpa`: SDPA with a dense block-diagonal causal mask [T, T]: O(T^2) memory and work whatever the sequences
  (a reference for the others and for the tests).

With `branch` (train/packing.py's shared prefixes) a packed unit is a prefix followed by branches: a token sees the
earlier tokens of its unit that are shared (branch -1) or of its own branch. That runs as the padded layout with a
boolean mask built from the positions and branch ids (`_padded_tree_sdpa`), whatever the backend asked.
"""

from __future__ import annotations

from typing import cast

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


def _padded_sdpa(q, k, v, cu_seqlens, max_seqlen, scale, gqa):
    total, hq, d = q.shape
    lengths = cu_seqlens[1:] - cu_seqlens[:-1]  # [B]
    b = lengths.shape[0]
    width = int(max_seqlen) if max_seqlen is not None else int(lengths.max())
    seq = torch.repeat_interleave(torch.arange(b, device=q.device), lengths.long(), output_size=total)  # [T]
    slot = seq * width + (torch.arange(total, device=q.device) - cu_seqlens[:-1].long()[seq])  # [T] row-major

    def rows(x):  # [T, H, D] -> [B, H, L, D], zeros in the padding
        out = x.new_zeros(b * width, x.shape[1], d).index_copy(0, slot, x)
        return out.view(b, width, x.shape[1], d).transpose(1, 2)

    out = F.scaled_dot_product_attention(
        rows(q), rows(k), rows(v), is_causal=True, scale=scale, enable_gqa=gqa
    )
    return out.transpose(1, 2).reshape(b * width, hq, d).index_select(0, slot)  # [T, Hq, D]


def _padded_tree_sdpa(q, k, v, cu_seqlens, max_seqlen, scale, gqa, branch, positions):
    total, hq, d = q.shape
    lengths = cu_seqlens[1:] - cu_seqlens[:-1]  # [U]
    u = lengths.shape[0]
    width = int(max_seqlen) if max_seqlen is not None else int(lengths.max())
    seq = torch.repeat_interleave(torch.arange(u, device=q.device), lengths.long(), output_size=total)  # [T]
    slot = seq * width + (torch.arange(total, device=q.device) - cu_seqlens[:-1].long()[seq])

    def rows(x):  # [T, H, D] -> [U, H, L, D], zeros in the padding
        out = x.new_zeros(u * width, x.shape[1], d).index_copy(0, slot, x)
        return out.view(u, width, x.shape[1], d).transpose(1, 2)

    def grid(x, fill):  # [T] -> [U, L]
        return x.new_full((u * width,), fill).index_copy(0, slot, x).view(u, width)

    pos = grid(positions.long(), -1)
    br = grid(branch.long(), -2)
    real = grid(torch.ones_like(branch, dtype=torch.bool), False)
    # Key j is visible to query i: a real token of the unit, not after i, shared or of i's own branch. Every query
    # sees itself, so a padding row's softmax stays finite (its output is dropped).
    allowed = (
        real[:, None, :]
        & (pos[:, None, :] <= pos[:, :, None])
        & ((br[:, None, :] == -1) | (br[:, None, :] == br[:, :, None]))
    ) | torch.eye(width, dtype=torch.bool, device=q.device)
    out = F.scaled_dot_product_attention(
        rows(q), rows(k), rows(v), attn_mask=allowed[:, None], scale=scale, enable_gqa=gqa
    )
    return out.transpose(1, 2).reshape(u * width, hq, d).index_select(0, slot)  # [T, Hq, D]


def _per_seq_sdpa(q, k, v, cu_seqlens, scale, gqa):
    bounds = cu_seqlens.tolist()
    outs = [
        F.scaled_dot_product_attention(
            q[a:z].transpose(0, 1),
            k[a:z].transpose(0, 1),
            v[a:z].transpose(0, 1),
            is_causal=True,
            scale=scale,
            enable_gqa=gqa,
        ).transpose(0, 1)
        for a, z in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    return torch.cat(outs)


BACKENDS = ("auto", "varlen", "padded", "per_seq", "sdpa")


def packed_causal_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens: torch.Tensor,
    max_seqlen: int | None = None,
    scale: float | None = None,
    backend: str = "auto",
    branch: torch.Tensor | None = None,
    positions: torch.Tensor | None = None,
) -> torch.Tensor:
    """Causal attention within each packed sequence.

    q: [T, Hq, D]; k, v: [T, Hkv, D] with Hq a multiple of Hkv (grouped-query attention);
    cu_seqlens: [B+1] int, cumulative sequence lengths starting at 0 and ending at T.
    backend: "auto" (varlen where it runs, else padded) or one of BACKENDS.
    branch, positions: [T] each, for units with a shared prefix (see the module's doc); both or neither.
    Returns [T, Hq, D].
    """
    total, hq, _ = q.shape
    hkv = k.shape[1]
    if backend not in BACKENDS:
        raise ValueError(f"unknown attention backend {backend!r}; one of {', '.join(BACKENDS)}")
    if branch is not None:
        if positions is None:
            raise ValueError("packed attention with branches needs the tokens' positions")
        return _padded_tree_sdpa(q, k, v, cu_seqlens, max_seqlen, scale, hq != hkv, branch, positions)
    use_varlen = backend == "varlen" or (backend == "auto" and _varlen_available(q))
    if use_varlen:
        from torch.nn.attention.varlen import varlen_attn

        cu = cu_seqlens.to(torch.int32)
        if max_seqlen is None:
            max_seqlen = int((cu[1:] - cu[:-1]).max().item())
        # Flash Attention takes fewer KV heads than query heads as they are (GQA), so K/V are not repeated.
        out = varlen_attn(q, k, v, cu, cu, max_seqlen, max_seqlen, scale=scale, window_size=(-1, 0))
        # Only with return_aux does varlen_attn return (output, aux); without it, the output alone.
        return cast(torch.Tensor, out)
    gqa = hq != hkv
    if backend in ("auto", "padded"):
        return _padded_sdpa(q, k, v, cu_seqlens, max_seqlen, scale, gqa)
    if backend == "per_seq":
        return _per_seq_sdpa(q, k, v, cu_seqlens, scale, gqa)
    mask = block_causal_mask(cu_seqlens, total)
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1),  # [Hq, T, D]
        k.transpose(0, 1),  # [Hkv, T, D]
        v.transpose(0, 1),
        attn_mask=mask,
        scale=scale,
        enable_gqa=gqa,
    )  # [Hq, T, D]
    return out.transpose(0, 1)
