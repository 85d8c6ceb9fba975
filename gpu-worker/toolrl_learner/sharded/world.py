"""Which process this is: rank, world size and device from torchrun's environment, and the process groups.

A learner started by torchrun (WORLD_SIZE set) joins the default group (NCCL on GPUs, gloo on CPU) for the
FSDP collectives, plus a gloo group with a long timeout for the commands rank 0 sends: the other ranks wait
on it while rank 0 waits for scored groups, which can take longer than any collective should.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch

log = logging.getLogger(__name__)
# The followers wait on the command group for as long as rank 0 waits for groups (Batch allows 14 days).
COMMAND_TIMEOUT = timedelta(days=14)
# A collective of the step itself (FSDP gathers, reductions, checkpoint planning).
COLLECTIVE_TIMEOUT = timedelta(minutes=30)


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1
    device: torch.device = torch.device("cpu")
    backend: str | None = None  # "nccl" / "gloo"; None outside torchrun
    commands: Any = None  # the gloo process group of the command channel

    @property
    def leader(self) -> bool:
        return self.rank == 0

    @property
    def sharded(self) -> bool:
        """Started by torchrun: the sharded learner runs, even with one process (FSDP's CPU offload)."""
        return self.backend is not None

    def barrier(self) -> None:
        if self.sharded:
            torch.distributed.barrier(group=self.commands)


_current: World | None = None


def current_world() -> World:
    """The World init_world made (one process when it was not called)."""
    return _current or World()


def under_torchrun() -> bool:
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


def _die_with_parent() -> None:
    """torchrun starts each rank in its own session; if torchrun itself is killed (SIGKILL: no chance to stop
    its children), the ranks must not live on holding the queue's messages and the GPU."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
        if os.getppid() == 1:  # the parent died before prctl took effect
            os._exit(137)


def device_for(flag: str | None, local_rank: int) -> torch.device:
    """`--device`: cpu, cuda (this rank's GPU, LOCAL_RANK) or cuda:N; default: this rank's GPU when there is one."""
    if flag == "cpu" or (flag is None and not torch.cuda.is_available()):
        return torch.device("cpu")
    if flag not in (None, "cuda") and not flag.startswith("cuda"):
        raise ValueError(f"--device must be cpu, cuda or cuda:N, got {flag!r}")
    have = torch.cuda.device_count()
    index = int(flag.split(":", 1)[1]) if flag and ":" in flag else local_rank
    if index >= have:
        raise RuntimeError(
            f"rank {local_rank} of this node needs GPU {index}, but this machine has {have} "
            "(trainer.num_gpus or --nproc-per-node is more than its GPUs; on a machine without GPUs, "
            "run the ranks on CPU with --device cpu, or `toolrl train --learner-device cpu`)"
        )
    return torch.device("cuda", index)


def init_world(device_flag: str | None = None) -> World:
    """This process's World; under torchrun, joins the process groups first."""
    if not under_torchrun():
        dev = torch.device(device_flag) if device_flag else None
        return World(device=dev or torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    _die_with_parent()
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_size = int(os.environ.get("LOCAL_WORLD_SIZE", str(size)))
    device = device_for(device_flag, local_rank)
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist = torch.distributed
    if not dist.is_initialized():
        dist.init_process_group(
            backend, timeout=COLLECTIVE_TIMEOUT, device_id=device if device.type == "cuda" else None
        )
    commands = dist.new_group(backend="gloo", timeout=COMMAND_TIMEOUT)
    log.info("rank %d of %d (local %d of %d) on %s, %s", rank, size, local_rank, local_size, device, backend)
    global _current
    _current = World(rank, size, local_rank, local_size, device, backend, commands)
    return _current


@contextlib.contextmanager
def node_first(world: World) -> Iterator[None]:
    """Run the body on each node's local rank 0 first, then on the node's other ranks (a download or a model
    build into the shared work folder happens once per node)."""
    if world.local_rank != 0:
        world.barrier()
    try:
        yield
    finally:
        if world.local_rank == 0:
            world.barrier()


def shutdown(world: World) -> None:
    if world.sharded and torch.distributed.is_initialized():
        with contextlib.suppress(Exception):
            torch.distributed.destroy_process_group()
