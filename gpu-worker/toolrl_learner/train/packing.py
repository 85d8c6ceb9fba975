"""Sequence packing: sequences go into micro-batches by a token budget (first-fit decreasing, no
padding), each micro-batch one concatenated row with cu_seqlens so attention stays within a sequence."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor

from .batch import LearnerBatch


def plan_micro_batches(lengths: list[int], budget: int) -> list[list[int]]:
    """Sequence indices per micro-batch, each summing to <= budget tokens (a longer sequence is alone).

    First-fit decreasing: within 11/9 of the optimal number of bins, deterministic, and fast enough for
    the few hundred sequences of a step.
    """
    if budget <= 0:
        raise ValueError(f"micro-batch token budget must be positive, got {budget}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    bins: list[list[int]] = []
    room: list[int] = []
    for i in order:
        n = lengths[i]
        for b, free in enumerate(room):
            if n <= free:
                bins[b].append(i)
                room[b] -= n
                break
        else:
            bins.append([i])
            room.append(budget - n)
    return [sorted(b) for b in bins]


@dataclass
class MicroBatch:
    """One packed row. Loss tokens are those of `seq_index`, in order; `token_index` maps them to the batch."""

    input_ids: Tensor  # [T]
    position_ids: Tensor  # [T]
    cu_seqlens: Tensor  # [B+1] int32
    max_seqlen: int
    seq_index: Tensor  # [B] batch sequence of each packed sequence
    pred_rows: Tensor  # [n] row of the hidden state that predicts each loss token
    targets: Tensor  # [n]
    token_index: Tensor  # [n] index into the batch's loss tokens
    local_seq_ids: Tensor  # [n] in [0, B)

    @property
    def num_tokens(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def num_seqs(self) -> int:
        return int(self.seq_index.shape[0])

    def to(self, device: torch.device | str) -> MicroBatch:
        moved = {k: v.to(device, non_blocking=True) for k, v in vars(self).items() if isinstance(v, Tensor)}
        return replace(self, **moved)


def build_micro_batch(batch: LearnerBatch, seqs: list[int]) -> MicroBatch:
    ids, pos, rows, tok, local = [], [], [], [], []
    cu = [0]
    for j, s in enumerate(seqs):
        n = batch.token_ids[s].shape[0]
        ids.append(batch.token_ids[s])
        pos.append(torch.arange(n))
        rows.append(batch.loss_positions[s] - 1 + cu[-1])
        lo, hi = int(batch.tok_offsets[s]), int(batch.tok_offsets[s + 1])
        tok.append(torch.arange(lo, hi))
        local.append(torch.full((hi - lo,), j, dtype=torch.long))
        cu.append(cu[-1] + n)
    token_index = torch.cat(tok)
    return MicroBatch(
        input_ids=torch.cat(ids),
        position_ids=torch.cat(pos),
        cu_seqlens=torch.tensor(cu, dtype=torch.int32),
        max_seqlen=max(int(batch.token_ids[s].shape[0]) for s in seqs),
        seq_index=torch.tensor(seqs, dtype=torch.long),
        pred_rows=torch.cat(rows),
        targets=batch.targets[token_index],
        token_index=token_index,
        local_seq_ids=torch.cat(local),
    )


def pack_batch(batch: LearnerBatch, budget: int) -> list[MicroBatch]:
    return [build_micro_batch(batch, seqs) for seqs in plan_micro_batches(batch.lengths, budget)]


def pack_sequences(batch: LearnerBatch, seqs: list[int], budget: int) -> list[MicroBatch]:
    """Micro-batches of some of the batch's sequences (a PPO mini-batch)."""
    lengths = batch.lengths
    plan = plan_micro_batches([lengths[s] for s in seqs], budget)
    return [build_micro_batch(batch, [seqs[i] for i in b]) for b in plan]
