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
earlier tokens of its unit that are shared (branch -1) or of its own branch. That runs as two calls: the shared
tokens causally, then the branches batched over [prefix; branch] (`_shared_prefix_sdpa`, about a quarter of the work
of one masked row per unit); backend `sdpa` runs the unit as one row with the dense boolean mask built from the
positions and branch ids instead (`_padded_tree_sdpa`, the reference).

A micro-batch may also begin with a root (`trainer.share_batch_prefix`): its first unit's tokens, branch -2, are a
prefix every sequence of the micro-batch begins with (a system prompt and tool schema), and every token of every unit
sees them. That runs as the root causally, then each unit's shared tokens over [root; themselves], then the branches
over [root; their unit's shared tokens; themselves] (`_rooted_sdpa`); the reference is one [T, T] mask
(`_dense_tree_sdpa`).

On a CPU, bf16/fp16 inputs (bf16 autocast) are computed in fp32: PyTorch's CPU attention kernel is slower in bf16.
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F

# On a CPU, compute bf16/fp16 attention in fp32 (faster there, and closer); bench/learner turns it off to measure.
CPU_FP32_ATTENTION = True
# Shared-prefix units as two calls of the work they need (_shared_prefix_sdpa) rather than one masked row.
SPLIT_SHARED_PREFIX = True


def attention_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype packed_causal_attention computes in for inputs like x: fp32 on a CPU, x's own elsewhere."""
    return torch.float32 if CPU_FP32_ATTENTION and x.device.type == "cpu" else x.dtype


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


def _shared_prefix_sdpa(q, k, v, cu_seqlens, scale, gqa, branch):
    """Units of a shared prefix and branches in two attention calls that do only the work the tree needs: the
    shared tokens (the prefixes, and the lone sequences, which lead their units) causally among their unit's shared
    tokens; then every branch's tokens over [its unit's prefix; the branch itself], the branches batched as rows
    of the same width. A unit of a P-token prefix and B branches of L tokens costs P^2 / 2 + B L (P + L) score
    entries instead of the (P + B L)^2 of one masked row (4-5x fewer for the quickstart's shapes)."""
    total, hq, d = q.shape
    dev = q.device
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).long()  # [U]
    u = lengths.shape[0]
    unit = torch.repeat_interleave(torch.arange(u, device=dev), lengths, output_size=total)  # [T]
    shared = branch < 0  # [T]
    n_shared = torch.zeros(u, dtype=torch.long, device=dev).index_add_(0, unit, shared.long())  # [U]
    sh_rows = torch.nonzero(shared).squeeze(1)  # [Ts]
    has = n_shared > 0
    cu_sh = F.pad(torch.cumsum(n_shared[has], 0), (1, 0)).to(torch.int32)  # [U'+1]
    out_sh = _padded_sdpa(q[sh_rows], k[sh_rows], v[sh_rows], cu_sh, int(n_shared.max()), scale, gqa)
    br_rows = torch.nonzero(~shared).squeeze(1)  # [Tb]
    if br_rows.numel() == 0:
        return out_sh
    # Branch segments: runs of branch tokens of one (unit, branch), in row order.
    key = unit[br_rows] * (int(branch.max()) + 1) + branch[br_rows]
    first = torch.ones_like(key, dtype=torch.bool)
    first[1:] = key[1:] != key[:-1]
    seg = torch.cumsum(first.long(), 0) - 1  # [Tb]
    nb = int(seg[-1]) + 1
    seg_start = br_rows[first]  # [NB] the segment's first row
    seg_len = torch.bincount(seg, minlength=nb)  # [NB]
    seg_unit = unit[seg_start]
    pre_len, pre_start = n_shared[seg_unit], cu_seqlens[:-1].long()[seg_unit]  # [NB]
    lq, p = int(seg_len.max()), int(pre_len.max())
    i, j = torch.arange(lq, device=dev), torch.arange(p, device=dev)
    q_real = i[None] < seg_len[:, None]  # [NB, Lq]
    pre_real = j[None] < pre_len[:, None]  # [NB, P]
    q_idx = torch.where(q_real, seg_start[:, None] + i[None], total)  # row `total`: a zero row (padding)
    k_idx = torch.cat([torch.where(pre_real, pre_start[:, None] + j[None], total), q_idx], 1)  # [NB, P+Lq]
    # A query sees its unit's prefix and its branch's tokens up to itself (a padding query: at least itself).
    causal = torch.ones(lq, lq, dtype=torch.bool, device=dev).tril()
    mask = torch.cat([pre_real[:, None, :].expand(nb, lq, p), causal[None].expand(nb, lq, lq)], 2)

    def grid(x, idx):  # [T, H, D] -> [NB, H, L, D]
        # index_select, not x[idx]: a prefix row is gathered once per branch, and the backward of x[idx] on a CPU
        # sums those duplicates with atomic adds from several threads, in an order that differs from call to call
        # (a deterministic run would not repeat); index_select's backward (index_add) sums them in index order.
        rows = torch.cat([x, x.new_zeros(1, *x.shape[1:])]).index_select(0, idx.reshape(-1))
        return rows.view(*idx.shape, *x.shape[1:]).transpose(1, 2)

    out_br = F.scaled_dot_product_attention(
        grid(q, q_idx), grid(k, k_idx), grid(v, k_idx), attn_mask=mask[:, None], scale=scale, enable_gqa=gqa
    ).transpose(1, 2)[q_real]  # [Tb, Hq, D], in row order
    out = q.new_zeros(total, hq, d)
    return out.index_copy(0, sh_rows, out_sh).index_copy(0, br_rows, out_br)


# The branch id of a micro-batch's root tokens (its first unit): seen by every token of the micro-batch.
ROOT_BRANCH = -2


def _dense_tree_sdpa(q, k, v, cu_seqlens, scale, gqa, branch, positions):
    """The reference for a micro-batch with a root: one attention call over the [T, T] mask of the tree."""
    total = q.shape[0]
    rows = torch.arange(total, device=q.device)
    unit = torch.searchsorted(cu_seqlens[1:].contiguous(), rows, right=True)
    br, pos = branch.long(), positions.long()
    same_unit = (unit[:, None] == unit[None, :]) & ((br[None, :] < 0) | (br[None, :] == br[:, None]))
    allowed = ((same_unit | (br[None, :] == ROOT_BRANCH)) & (pos[None, :] <= pos[:, None])) | torch.eye(
        total, dtype=torch.bool, device=q.device
    )
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1),
        k.transpose(0, 1),
        v.transpose(0, 1),
        attn_mask=allowed,
        scale=scale,
        enable_gqa=gqa,
    )
    return out.transpose(0, 1)


def _over_ancestors(q, k, v, scale, gqa, root, seg_start, seg_len, pre_start, pre_len):
    """Segments of rows (`seg_start`, `seg_len`), each attending to the root rows [0, root), to `pre_len` rows
    from `pre_start` (its unit's shared tokens; 0 for none) and causally to itself, batched as rows of one width.
    Returns the segments' rows (in segment order, each segment's in row order) and their outputs."""
    total, dev = q.shape[0], q.device
    nb = int(seg_start.shape[0])
    lq, p = int(seg_len.max()), int(pre_len.max())
    i, j = torch.arange(lq, device=dev), torch.arange(p, device=dev)
    q_real = i[None] < seg_len[:, None]  # [NB, Lq]
    pre_real = j[None] < pre_len[:, None]  # [NB, P]
    q_idx = torch.where(q_real, seg_start[:, None] + i[None], total)  # row `total`: a zero row (padding)
    root_idx = torch.arange(root, device=dev)[None].expand(nb, root)
    k_idx = torch.cat([root_idx, torch.where(pre_real, pre_start[:, None] + j[None], total), q_idx], 1)
    causal = torch.ones(lq, lq, dtype=torch.bool, device=dev).tril()
    mask = torch.cat(
        [
            torch.ones(nb, lq, root, dtype=torch.bool, device=dev),
            pre_real[:, None, :].expand(nb, lq, p),
            causal[None].expand(nb, lq, lq),
        ],
        2,
    )

    # [T, H, D] -> [NB, H, L, D]; index_select for a deterministic backward (_shared_prefix_sdpa's grid)
    def grid(x, idx):
        rows = torch.cat([x, x.new_zeros(1, *x.shape[1:])]).index_select(0, idx.reshape(-1))
        return rows.view(*idx.shape, *x.shape[1:]).transpose(1, 2)

    out = F.scaled_dot_product_attention(
        grid(q, q_idx), grid(k, k_idx), grid(v, k_idx), attn_mask=mask[:, None], scale=scale, enable_gqa=gqa
    ).transpose(1, 2)[q_real]
    return q_idx[q_real], out


def _rooted_sdpa(q, k, v, cu_seqlens, scale, gqa, branch):
    """A micro-batch whose first unit is a root every token sees, in three kinds of attention call: the root
    causally; every unit's shared tokens (its prefix, or a lone sequence) over [root; themselves]; every branch over
    [root; its unit's shared tokens; itself]. The root's keys and values are gathered once per segment instead of
    its tokens running through the model once per group."""
    total, hq, d = q.shape
    dev = q.device
    root = int(cu_seqlens[1])
    out = q.new_zeros(total, hq, d)
    out_root = F.scaled_dot_product_attention(
        q[:root].transpose(0, 1),
        k[:root].transpose(0, 1),
        v[:root].transpose(0, 1),
        is_causal=True,
        scale=scale,
        enable_gqa=gqa,
    ).transpose(0, 1)
    out = out.index_copy(0, torch.arange(root, device=dev), out_root)
    if total == root:
        return out
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).long()
    unit = torch.repeat_interleave(torch.arange(lengths.shape[0], device=dev), lengths, output_size=total)
    rest = torch.arange(root, total, device=dev)
    br = branch[rest].long()
    # Segments: runs of rows of one (unit, branch) after the root; a unit's shared rows (branch -1) come first.
    key = unit[rest] * (int(br.max()) + 2) + br + 1
    first = torch.ones_like(key, dtype=torch.bool)
    first[1:] = key[1:] != key[:-1]
    seg = torch.cumsum(first.long(), 0) - 1
    seg_start = rest[first]
    seg_len = torch.bincount(seg, minlength=int(seg[-1]) + 1)
    seg_unit, seg_branch = unit[seg_start], br[first]
    n_shared = torch.zeros_like(lengths).index_add_(0, unit[rest], (br < 0).long())  # [U]
    shared = seg_branch < 0
    for pick, with_prefix in ((shared, False), (~shared, True)):
        if not bool(pick.any()):
            continue
        starts, lens, units = seg_start[pick], seg_len[pick], seg_unit[pick]
        pre_len = n_shared[units] if with_prefix else torch.zeros_like(lens)
        rows, seg_out = _over_ancestors(
            q, k, v, scale, gqa, root, starts, lens, cu_seqlens[:-1].long()[units], pre_len
        )
        out = out.index_copy(0, rows, seg_out)
    return out


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
    low = (torch.bfloat16, torch.float16)
    if attention_dtype(q) == torch.float32 and (q.dtype in low or torch.is_autocast_enabled(q.device.type)):
        # PyTorch's CPU attention kernel is slower in bf16 than in fp32 (~1.4x the CPU time at 135M's heads, even
        # counting the casts): under bf16 autocast on a CPU, attention computes in fp32 (and returns v's dtype).
        with torch.autocast(q.device.type, enabled=False):
            out = packed_causal_attention(
                q.float(), k.float(), v.float(), cu_seqlens, max_seqlen, scale, backend, branch, positions
            )
        return out.to(v.dtype)
    if branch is not None:
        if positions is None:
            raise ValueError("packed attention with branches needs the tokens' positions")
        if bool(branch[0] == ROOT_BRANCH):
            if backend == "sdpa" or not SPLIT_SHARED_PREFIX:
                return _dense_tree_sdpa(q, k, v, cu_seqlens, scale, hq != hkv, branch, positions)
            return _rooted_sdpa(q, k, v, cu_seqlens, scale, hq != hkv, branch)
        if backend == "sdpa" or not SPLIT_SHARED_PREFIX:  # the dense-mask reference
            return _padded_tree_sdpa(q, k, v, cu_seqlens, max_seqlen, scale, hq != hkv, branch, positions)
        return _shared_prefix_sdpa(q, k, v, cu_seqlens, scale, hq != hkv, branch)
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
