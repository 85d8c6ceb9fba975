"""Loss aggregation (`algorithm.loss_agg_mode`, verl's names) over packed per-token losses.

A step accumulates gradients over several micro-batches, so the normaliser must be the whole
mini-batch's, not the micro-batch's: callers pass `num_tokens` / `num_seqs` counted over the full batch
(defaults: this call's own counts). A sequence never spans two micro-batches, so per-sequence sums are
complete inside one call.

token-mean              sum_i sum_t l_it / sum_i |o_i|            (DAPO, arXiv:2503.14476)
seq-mean-token-mean     1/S sum_i (1/|o_i| sum_t l_it)            (GRPO as published, arXiv:2402.03300)
seq-mean-token-sum      1/S sum_i sum_t l_it
seq-mean-token-sum-norm 1/S sum_i sum_t l_it / L                  (Dr. GRPO, arXiv:2503.20783: L a constant,
                                                                  the generation budget, not |o_i|)
"""

from __future__ import annotations

from torch import Tensor

from .segments import segment_mean, segment_sum

LOSS_AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")


def aggregate_loss(
    loss: Tensor,
    mask: Tensor,
    seq_ids: Tensor,
    num_seqs: int,
    mode: str,
    *,
    num_tokens: float | Tensor | None = None,
    num_loss_seqs: float | Tensor | None = None,
    norm_constant: float | None = None,
) -> Tensor:
    """Reduce per-token `loss` [N] to a scalar.

    num_seqs: size of the seq_ids range in this call. num_tokens / num_loss_seqs: the batch-wide number
    of masked-in tokens / of sequences with at least one (defaults: counted here). norm_constant: L of
    seq-mean-token-sum-norm.
    """
    mask = mask.to(loss.dtype)
    if mode == "token-mean":
        denom = num_tokens if num_tokens is not None else mask.sum().clamp(min=1)
        return (loss * mask).sum() / denom
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"unknown loss_agg_mode {mode!r}; one of {', '.join(LOSS_AGG_MODES)}")
    counts = segment_sum(mask, seq_ids, num_seqs)  # [S]
    if num_loss_seqs is None:
        num_loss_seqs = (counts > 0).sum().clamp(min=1)
    if mode == "seq-mean-token-mean":
        per_seq = segment_mean(loss, mask, seq_ids, num_seqs)  # [S], 0 for an empty sequence
    else:
        per_seq = segment_sum(loss * mask, seq_ids, num_seqs)  # [S]
    if mode == "seq-mean-token-sum-norm":
        if not norm_constant:
            raise ValueError("seq-mean-token-sum-norm needs norm_constant (the generation budget in tokens)")
        per_seq = per_seq / norm_constant
    return per_seq.sum() / num_loss_seqs
