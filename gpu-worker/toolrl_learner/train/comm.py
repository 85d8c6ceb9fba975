"""How a learner step is spread over processes. `LOCAL` is the single-process learner: every micro-batch is
this process's and every reduction is the identity. The sharded learner (sharded/comm.py) gives each rank its
share of the micro-batches and sums the partial results, so the trainer and SFT code is the same for both."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import torch
from torch import Tensor

from .batch import LearnerBatch
from .packing import MicroBatch, pack_batch, pack_sequences


class Comm(Protocol):
    """What the trainer and SFT ask of the way a step is spread: LocalComm here, or sharded/comm.py's ShardedComm."""

    size: int
    rank: int

    def micro_batches(
        self,
        batch: LearnerBatch,
        budget: int,
        seqs: list[int] | None = None,
        share_prefix: bool = False,
        dedup: bool = False,
        share_root: bool = False,
    ) -> list[MicroBatch]: ...

    def all_sum(self, t: Tensor) -> Tensor: ...

    def clip_grad_norm(self, params: Iterable[torch.nn.Parameter], max_norm: float) -> Tensor: ...

    def after_no_grad(self) -> None: ...


class LocalComm:
    size = 1
    rank = 0

    def micro_batches(
        self,
        batch: LearnerBatch,
        budget: int,
        seqs: list[int] | None = None,
        share_prefix: bool = False,
        dedup: bool = False,
        share_root: bool = False,
    ) -> list[MicroBatch]:
        """This process's micro-batches of the batch, or of its sequences `seqs` (a PPO mini-batch); here: all
        of them. With `share_prefix` a group's samples share their common prefix, with `dedup` samples with the
        same tokens are packed once, with `share_root` the prefix all sequences share once a micro-batch
        (packing.py)."""
        if seqs is None:
            return pack_batch(batch, budget, share_prefix, dedup, share_root)
        return pack_sequences(batch, seqs, budget, share_prefix, dedup, share_root)

    def all_sum(self, t: Tensor) -> Tensor:
        """The sum over processes of a tensor each holds a part of (here: itself)."""
        return t

    def clip_grad_norm(self, params: Iterable[torch.nn.Parameter], max_norm: float) -> Tensor:
        """Clip the global gradient norm; returns the norm before clipping."""
        return torch.nn.utils.clip_grad_norm_(list(params), max_norm)

    def after_no_grad(self) -> None:
        """Called after a pass of no-grad forwards (the sharded learner frees gathered parameters)."""


LOCAL = LocalComm()
