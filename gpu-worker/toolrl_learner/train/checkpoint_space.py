"""Whether the disk can hold a checkpoint, and a failure that says so when it cannot: torch's own message for a
write cut short by a full disk is only `unexpected pos ...`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch

from .critic import Critic
from .policy import Policy

# Beyond the estimate: safetensors headers, the tokenizer and config files, the RNG state.
_SPACE_MARGIN = 16 * 2**20


class CheckpointWriteFailed(RuntimeError):
    """A checkpoint could not be written (most often: the disk is full); the message names the folder, the
    space the checkpoint needs and the space left."""


def _tensor_bytes(obj: Any) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(_tensor_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_tensor_bytes(v) for v in obj)
    return 0


def checkpoint_bytes(policy: Policy, trainer_state: dict[str, Any] | None, critic: Critic | None) -> int:
    """About what a checkpoint writes: fp32 weights (the full model, or what trains), the warm-start
    reference, the critic, the optimizer state."""
    if policy.peft is None:
        weights = sum(p.numel() * 4 for p in policy.base.parameters())
    else:
        weights = sum(p.numel() * 4 for _, p in policy.named_trainable_parameters())
    reference = _tensor_bytes(policy.reference_tensors()) if policy.warm_start_reference else 0
    value = sum(p.numel() * 4 for p in critic.base.parameters()) if critic is not None else 0
    return weights + reference + value + _tensor_bytes(trainer_state)


def space_report(what: str, staging: Path, prefix: str, need: int) -> str:
    free = shutil.disk_usage(staging).free
    return (
        f"checkpoint {prefix} {what} (in {staging}): it needs about {need / 2**20:,.1f} MiB and the disk "
        f"has {free / 2**20:,.1f} MiB free; free disk space, or save less often (trainer.save_every) and keep "
        f"fewer checkpoints (trainer.keep_checkpoints)"
    )


def require_space(staging: Path, prefix: str, need: int) -> None:
    """Refuse to start a checkpoint the disk cannot hold, before writing a byte of it."""
    staging.mkdir(parents=True, exist_ok=True)
    if shutil.disk_usage(staging).free < need + _SPACE_MARGIN:
        raise CheckpointWriteFailed(space_report("not written", staging, prefix, need))
