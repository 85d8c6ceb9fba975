"""PPO mini-batches (verl's ppo_mini_batch_size, in groups): each epoch shuffles the batch's groups and cuts
them into mini-batches, one optimiser step each, with the loss normalised over the mini-batch. The shuffle is
a pure function of the seed, the learner step and the epoch, so a resumed run repeats it exactly."""

from __future__ import annotations

import functools

import torch

from ..algos.aggregation import aggregate_loss
from ..config import LearnerConfig
from .batch import LearnerBatch
from .packing import MicroBatch


def mini_batches(
    batch: LearnerBatch, groups_per_step: int | None, *, seed: int, step: int, epoch: int
) -> list[list[int]]:
    """Sequence indices of each mini-batch. None (or at least the batch's groups): one mini-batch of every
    sequence, in order, as a step without mini-batches."""
    n_groups = len(batch.group_ids)
    if groups_per_step is None or groups_per_step >= n_groups:
        return [list(range(batch.num_seqs))]
    gen = torch.Generator().manual_seed((seed * 1_000_003 + step) * 131 + epoch)
    order = torch.randperm(n_groups, generator=gen).tolist()
    seqs_of: list[list[int]] = [[] for _ in range(n_groups)]
    for s, g in enumerate(batch.group_index.tolist()):
        seqs_of[g].append(s)
    return [
        sorted(s for g in order[i : i + groups_per_step] for s in seqs_of[g])
        for i in range(0, n_groups, groups_per_step)
    ]


def loss_totals(batch: LearnerBatch, seqs: list[int]) -> tuple[int, float]:
    """Loss tokens of the sequences, and how many of them have any: the mini-batch's normalisers."""
    counts = [int(batch.tok_offsets[s + 1] - batch.tok_offsets[s]) for s in seqs]
    return sum(counts), float(max(1, sum(1 for c in counts if c > 0)))


def filtered_loss_norm(cfg: LearnerConfig, kept_groups: int) -> float:
    """The factor on a step's loss normalisers for `algorithm.filter_groups_norm`: under `batch`, batch_prompts
    over the groups the batch kept, so the groups it lacks (dropped by filter_groups, or stale) count as groups
    with zero advantage; 1 under `kept`, or when the batch is full."""
    if cfg.filter_groups_norm != "batch" or not 0 < kept_groups < cfg.batch_prompts:
        return 1.0
    return cfg.batch_prompts / kept_groups


def micro_aggregate(cfg: LearnerConfig, mb: MicroBatch, num_tokens: float, num_loss_seqs: float):
    """The loss aggregation of one micro-batch, normalised by its mini-batch's totals."""
    return functools.partial(
        aggregate_loss,
        seq_ids=mb.local_seq_ids,
        num_seqs=mb.num_seqs,
        mode=cfg.resolved_loss_agg_mode,
        num_tokens=float(num_tokens),
        num_loss_seqs=num_loss_seqs,
        norm_constant=cfg.loss_norm_constant,
    )
