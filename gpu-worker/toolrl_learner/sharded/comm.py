"""The sharded learner's side of train/comm.py: each rank trains a token-balanced share of the batch's
sequences, every rank runs the same number of forwards and backwards (FSDP's gathers and reductions are
collectives), and per-rank partial results are summed.

The loss of every micro-batch is already normalised by the whole batch (token-mean over all loss tokens,
algos/aggregation.py), so the per-rank gradients add up to the single-process gradient: FSDP is told to sum
them (gradient divide factor 1), not to average a mean of per-rank means.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from ..train.batch import LearnerBatch
from ..train.packing import MicroBatch, build_micro_batch, plan_micro_batches
from .world import World

if TYPE_CHECKING:
    from torch.distributed.fsdp import FSDPModule


def assign_sequences(lengths: list[int], ranks: int) -> list[list[int]]:
    """Sequence indices per rank, balanced by tokens: longest first, each to the least loaded rank (ties to
    the lowest rank). Deterministic, so every rank computes the same assignment."""
    loads = [0] * ranks
    out: list[list[int]] = [[] for _ in range(ranks)]
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        r = min(range(ranks), key=lambda k: (loads[k], k))
        out[r].append(i)
        loads[r] += lengths[i]
    return [sorted(seqs) for seqs in out]


def padding_micro_batch() -> MicroBatch:
    """Two tokens and no loss token: a rank with fewer micro-batches than the others runs these, so that
    its forwards and backwards (zero gradients) meet the others' collectives."""
    empty = torch.zeros(0, dtype=torch.long)
    return MicroBatch(
        input_ids=torch.zeros(2, dtype=torch.long),
        position_ids=torch.arange(2),
        cu_seqlens=torch.tensor([0, 2], dtype=torch.int32),
        max_seqlen=2,
        seq_index=torch.zeros(1, dtype=torch.long),
        pred_rows=empty,
        targets=empty,
        token_index=empty,
        local_seq_ids=empty,
    )


def plan_rank_micro_batches(lengths: list[int], budget: int, ranks: int) -> list[list[list[int]]]:
    """Per rank, its micro-batches as batch sequence indices, every rank with the same count (padding: [])."""
    plans = []
    for seqs in assign_sequences(lengths, ranks):
        local = plan_micro_batches([lengths[i] for i in seqs], budget) if seqs else []
        plans.append([[seqs[j] for j in mb] for mb in local])
    most = max((len(p) for p in plans), default=0)
    return [p + [[]] * (most - len(p)) for p in plans]


class ShardedComm:
    def __init__(self, world: World, roots: list[FSDPModule]) -> None:
        """roots: the FSDP root modules (the policy, the reference), resharded after no-grad passes."""
        self.world = world
        self.size = world.size
        self.rank = world.rank
        self.roots = roots

    def micro_batches(
        self,
        batch: LearnerBatch,
        budget: int,
        seqs: list[int] | None = None,
        share_prefix: bool = False,
        dedup: bool = False,
        share_root: bool = False,
    ) -> list[MicroBatch]:
        """This rank's share (sequences balanced by tokens). Neither prefix sharing nor deduplication is applied
        here: a group's samples may land on different ranks (`share_prefix`, `dedup` and `share_root` are accepted
        and ignored)."""
        chosen = list(range(batch.num_seqs)) if seqs is None else seqs
        plan = plan_rank_micro_batches([batch.lengths[i] for i in chosen], budget, self.size)[self.rank]
        return [
            build_micro_batch(batch, [chosen[j] for j in mb]) if mb else padding_micro_batch() for mb in plan
        ]

    def all_sum(self, t: Tensor) -> Tensor:
        if self.size == 1:
            return t
        out = t.to(self.world.device).clone()
        torch.distributed.all_reduce(out)
        return out.to(t.device)

    def clip_grad_norm(self, params: Iterable[nn.Parameter], max_norm: float) -> Tensor:
        """As torch.nn.utils.clip_grad_norm_ (L2, coefficient max_norm / (norm + 1e-6) capped at 1), over the
        gradient shards of every rank: each rank squares its own shard, one all-reduce adds them."""
        from torch.distributed.tensor import DTensor

        grads = []
        for p in params:
            if p.grad is None:
                continue
            if not isinstance(p.grad, DTensor):
                raise RuntimeError(
                    "a trainable parameter is not sharded by FSDP; its gradient is not synchronised"
                )
            grads.append(p.grad.to_local())
        sq = torch.zeros((), device=self.world.device, dtype=torch.float32)
        for g in grads:
            sq += g.detach().float().pow(2).sum().to(sq.device)
        total = self.all_sum(sq).sqrt()
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.detach().mul_(coef.to(g.device, g.dtype))
        return total

    def after_no_grad(self) -> None:
        # An FSDP root keeps its gathered parameters after forward (backward would gather them right away);
        # after no-grad passes no backward comes, so they are freed here.
        for root in self.roots:
            root.reshard()
