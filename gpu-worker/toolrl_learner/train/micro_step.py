"""What one micro-batch's forward and backward reads: the micro-batch, its mini-batch's loss normalisers, and
the whole batch's per-token tensors that it indexes (advantages, behaviour, old and reference log-probs, and
GAE's targets when the policy's own value head trains)."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from ..config import LearnerConfig
from .packing import MicroBatch


@dataclass(frozen=True)
class ValueTargets:
    """GAE's regression targets for the policy's value head, over the batch's loss tokens [N]."""

    returns: Tensor  # [N] value targets (advantages + old values)
    old_values: Tensor  # [N] the values the batch was scored with (cliprange_value is around them)


@dataclass(frozen=True)
class BatchTokens:
    """Per-loss-token tensors of the whole batch [N], on the device; a micro-batch indexes them with
    `token_index`."""

    advantages: Tensor  # [N]
    behavior_logprobs: Tensor  # [N] the rollout's log-probs (truncated importance sampling)
    old_logprobs: Tensor | None  # [N] pi_old, when recomputed before the update; else the forward's, detached
    ref_logprobs: Tensor | None  # [N] the reference policy's (use_kl_loss)
    values: ValueTargets | None  # when the policy's value head trains with it (GAE without a separate critic)


@dataclass(frozen=True)
class MicroStep:
    """One micro-batch's share of a mini-batch's update."""

    cfg: LearnerConfig  # the batch's (its curriculum stage's) config
    mb: MicroBatch
    num_tokens: float  # loss tokens of the whole mini-batch: the loss's normaliser
    num_loss_seqs: float  # sequences of the mini-batch with any loss token
    tokens: BatchTokens
