"""Whether the disk can hold a checkpoint, and a failure that says so when it cannot: torch's own message for a
write cut short by a full disk is only `unexpected pos ...`."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .critic import Critic
from .policy import Policy

# What to do about a disk too full for a checkpoint, in each message that says so.
_ADVICE = "free disk space, or save less often (trainer.save_every) and keep fewer checkpoints (trainer.keep_checkpoints)"

# Beyond the estimate: safetensors headers, the tokenizer and config files, the RNG state.
_SPACE_MARGIN = 16 * 2**20


class CheckpointWriteFailed(RuntimeError):
    """A checkpoint could not be written (most often: the disk is full); the message names the folder, the
    space the checkpoint needs and the space left."""


def _local_shard(t: torch.Tensor) -> torch.Tensor:
    if torch.distributed.is_available():
        from torch.distributed.tensor import DTensor

        if isinstance(t, DTensor):
            return t.to_local()
    return t


def tensor_bytes(obj: Any) -> int:
    """The bytes of the tensors in `obj` (nested dicts, lists and tuples); of a DTensor, this rank's shard (what
    the rank writes)."""
    if isinstance(obj, torch.Tensor):
        local = _local_shard(obj)
        return local.numel() * local.element_size()
    if isinstance(obj, dict):
        return sum(tensor_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(v) for v in obj)
    return 0


def checkpoint_bytes(policy: Policy, trainer_state: dict[str, Any] | None, critic: Critic | None) -> int:
    """About what a checkpoint writes: fp32 weights (the full model, or what trains), the warm-start
    reference, the critic, the optimizer state."""
    if policy.peft is None:
        weights = sum(p.numel() * 4 for p in policy.base.parameters())
    else:
        weights = sum(p.numel() * 4 for _, p in policy.named_trainable_parameters())
    reference = tensor_bytes(policy.reference_tensors()) if policy.warm_start_reference else 0
    value = sum(p.numel() * 4 for p in critic.base.parameters()) if critic is not None else 0
    return weights + reference + value + tensor_bytes(trainer_state)


def space_report(what: str, staging: Path, prefix: str, need: int) -> str:
    free = shutil.disk_usage(staging).free
    return (
        f"checkpoint {prefix} {what} (in {staging}): it needs about {need / 2**20:,.1f} MiB and the disk "
        f"has {free / 2**20:,.1f} MiB free; {_ADVICE}"
    )


def require_space(staging: Path, prefix: str, need: int) -> None:
    """Refuse to start a checkpoint the disk cannot hold, before writing a byte of it."""
    staging.mkdir(parents=True, exist_ok=True)
    if shutil.disk_usage(staging).free < need + _SPACE_MARGIN:
        raise CheckpointWriteFailed(space_report("not written", staging, prefix, need))


@dataclass(frozen=True)
class RankSpace:
    """One rank's share of a sharded checkpoint and the disk it writes to (the ranks' reports are gathered, so
    every rank decides alike)."""

    rank: int
    host: str
    device: int  # st_dev of the folder: ranks on one host writing to one file system share its free space
    folder: str
    need: int
    free: int


def shared_disk_shortfalls(prefix: str, ranks: Sequence[RankSpace]) -> list[str]:
    """For each disk (host and file system) whose free space is less than what the ranks writing to it need
    together, a message naming the folder, the ranks, the need and the space left; empty when every disk has
    room."""
    disks: dict[tuple[str, int], list[RankSpace]] = {}
    for r in ranks:
        disks.setdefault((r.host, r.device), []).append(r)
    short = []
    for (host, _), on_disk in disks.items():
        need = sum(r.need for r in on_disk) + _SPACE_MARGIN
        free = min(r.free for r in on_disk)
        if free < need:
            names = ", ".join(str(r.rank) for r in on_disk)
            short.append(
                f"checkpoint {prefix} not written (in {on_disk[0].folder} on {host}, ranks {names}): their shards "
                f"need about {need / 2**20:,.1f} MiB and the disk has {free / 2**20:,.1f} MiB free; {_ADVICE}"
            )
    return short
