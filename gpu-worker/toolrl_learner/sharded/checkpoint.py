"""Sharded checkpoints with torch.distributed.checkpoint (DCP): `checkpoints/step-<S>/dcp/` holds every rank's
shards of the trained weights and of AdamW's state (`__<rank>_<n>.distcp`) and the plan that maps them to
parameter names (`.metadata`), beside `rng.pt` and the `COMPLETE.json` commit record of train/checkpoint.py.

Each rank writes and uploads its own shard files; rank 0 gathers their hashes and writes the marker last,
so a rank that dies mid-save leaves no marker and the checkpoint is never taken for complete. DCP reshards
on load: a checkpoint resumes with any number of ranks, and the single-process learner loads it whole.
With LoRA only the adapters (the trainable parameters) are saved; the frozen base comes from model.path.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..storage import BlobStore, keys
from ..train.checkpoint import (
    MARKER,
    TrainerState,
    _load_pickle,
    _put_marker,
    _rng_state,
    _set_rng_state,
    _sha256,
    complete_checkpoints,
    next_prefix,
    prune,
)
from ..train.checkpoint_space import CheckpointWriteFailed, RankSpace, shared_disk_shortfalls, tensor_bytes
from ..train.policy import Policy
from .world import World, node_first

log = logging.getLogger(__name__)
DCP = "dcp"


def trained_modules(policy: Policy) -> nn.Module:
    """The modules whose parameters the optimizer updates, under stable names (`base.`, `value_head.`) that
    are the same sharded or not, so a checkpoint maps between the two."""
    mods = nn.ModuleDict({"base": policy.base})
    if policy.value_head is not None:
        mods["value_head"] = policy.value_head
    return mods


def _options():
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    # LoRA's frozen base is not the run's to save (full fine-tuning has no frozen parameter), so it is absent
    # when loading too; a trainable parameter the checkpoint lacks fails in dcp.load already.
    return StateDictOptions(ignore_frozen_params=True, strict=False)


def _state(policy: Policy, trainer) -> dict[str, Any]:
    """What a checkpoint holds: the trained weights, the optimizer's state and, when the KL term's reference
    is the warm-started policy, that reference's weights (`reference`, loaded in place)."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_state_dict

    state: dict[str, Any]
    if trainer is None:
        state = {"model": get_model_state_dict(trained_modules(policy), options=_options())}
    else:
        model, optim = get_state_dict(trained_modules(policy), trainer.optimizer, options=_options())
        state = {"model": model, "optim": optim, "trainer_step": torch.tensor(trainer.step_count)}
    if policy.warm_start_reference:
        state["reference"] = policy.reference_tensors()
    return state


def _apply(policy: Policy, trainer, state: dict[str, Any]) -> None:
    from torch.distributed.checkpoint.state_dict import set_model_state_dict, set_state_dict

    if trainer is None:
        set_model_state_dict(trained_modules(policy), state["model"], options=_options())
        return
    set_state_dict(
        trained_modules(policy),
        trainer.optimizer,
        model_state_dict=state["model"],
        optim_state_dict=state["optim"],
        options=_options(),
    )
    trainer.step_count = int(state["trainer_step"])


def load_dcp(folder: Path, policy: Policy, trainer=None) -> None:
    """Load a sharded checkpoint's `dcp/` into this process's policy (and optimizer): resharded to however
    this process holds them (whole, for the single-process learner)."""
    from torch.distributed.checkpoint.filesystem import FileSystemReader
    from torch.distributed.checkpoint.state_dict_loader import load as dcp_load

    saved = FileSystemReader(str(folder / DCP)).read_metadata().state_dict_metadata
    if policy.cfg.needs_reference and any(k.startswith("reference.") for k in saved):
        policy.reference_from_current()  # holders shaped and sharded as this process holds the weights
    state = _state(policy, trainer)
    group = None
    if torch.distributed.is_initialized():
        from .world import current_world

        group = current_world().commands
    dcp_load(state, checkpoint_id=str(folder / DCP), process_group=group)
    _apply(policy, trainer, state)


# -- save ---------------------------------------------------------------------------------------------------


def _mine(folder: Path, world: World) -> list[Path]:
    """The files this rank wrote: its shard files; rank 0 also the plan and the RNG state."""
    files = sorted((folder / DCP).glob(f"__{world.rank}_*.distcp"))
    if world.leader:
        files += [folder / DCP / ".metadata", folder / "rng.pt"]
    return files


def _require_space(folder: Path, prefix: str, need: int, world: World) -> None:
    """Every rank: refuse the checkpoint, before any rank writes a byte of it, when some disk cannot hold the
    shards its ranks write (ranks of one host sharing a file system need its space together). The ranks'
    reports are gathered, so all of them refuse together and none waits in DCP's save for one that did not
    start."""
    mine = RankSpace(
        rank=world.rank,
        host=socket.gethostname(),
        device=os.stat(folder).st_dev,
        folder=str(folder),
        need=need,
        free=shutil.disk_usage(folder).free,
    )
    everyone: list[Any] = [None] * world.size
    torch.distributed.all_gather_object(everyone, mine, group=world.commands)
    short = shared_disk_shortfalls(prefix, everyone)
    if short:
        raise CheckpointWriteFailed("; ".join(short))


def save_sharded(
    store: BlobStore, run_id: str, policy: Policy, trainer, state: TrainerState, world: World, workdir: Path
) -> None:
    """Every rank: write checkpoint step-<state.step> (all ranks' shards, then rank 0's marker). Only rank
    0's `state` is used (the other ranks pass a placeholder)."""
    from torch.distributed.checkpoint.state_dict_saver import save as dcp_save

    # rank 0 picks the folder: step-<S>/, or a new revision beside a complete one (train/checkpoint.py)
    box = [next_prefix(store, run_id, state.step) if world.leader else None]
    torch.distributed.broadcast_object_list(box, src=0, group=world.commands)
    prefix = box[0]
    if prefix is None:
        raise RuntimeError("rank 0 sent no checkpoint folder")
    if world.leader:
        for stale in store.list(prefix):  # leftovers of an interrupted attempt; never a complete checkpoint
            store.delete(stale)
    world.barrier()
    local = store.local_path(prefix + MARKER)
    folder = (
        Path(local).parent
        if local is not None
        else Path(workdir) / f"ckpt-{prefix.rstrip('/').rsplit('/', 1)[-1]}-rank{world.rank}"
    )
    try:
        (folder / DCP).mkdir(parents=True, exist_ok=True)
        state_dict = _state(policy, trainer)
        _require_space(folder, prefix, tensor_bytes(state_dict), world)
        dcp_save(state_dict, checkpoint_id=str(folder / DCP), process_group=world.commands)
        if world.leader:
            torch.save(_rng_state(), folder / "rng.pt")
        files = {}
        for f in _mine(folder, world):
            rel = f.relative_to(folder).as_posix()
            files[rel] = {"sha256": _sha256(f), "bytes": f.stat().st_size}
            if local is None:
                store.put_file(prefix + rel, f)
        everyone: list[Any] = [None] * world.size
        torch.distributed.all_gather_object(everyone, files, group=world.commands)
    finally:
        if local is None:
            shutil.rmtree(folder, ignore_errors=True)
    if world.leader:
        merged = {k: v for part in everyone for k, v in part.items()}
        _put_marker(store, prefix, dict(sorted(merged.items())), state, format="dcp", worldSize=world.size)
        prune(store, run_id, policy.cfg.keep_checkpoints)


# -- load ---------------------------------------------------------------------------------------------------


def _fetch_verified(store: BlobStore, prefix: str, marker: dict[str, Any], folder: Path) -> bool:
    for rel, meta in marker["files"].items():
        path = folder / rel
        if store.local_path(prefix + MARKER) is None and not path.is_file():
            store.get_file(prefix + rel, path)
        if not path.is_file() or path.stat().st_size != meta["bytes"] or _sha256(path) != meta["sha256"]:
            log.warning("checkpoint %s: %s is missing or does not match its hash; skipping it", prefix, rel)
            return False
    return True


def load_sharded(
    store: BlobStore, run_id: str, policy: Policy, trainer, world: World, workdir: Path
) -> TrainerState | None:
    """Every rank: restore the newest verifiable checkpoint (any world size wrote it); rank 0 gets its
    TrainerState, the others None. None everywhere when there is none."""
    found = complete_checkpoints(store, run_id) if world.leader else []
    box = [found]
    torch.distributed.broadcast_object_list(box, src=0, group=world.commands)
    for step, revision in box[0]:
        prefix = keys.checkpoint(run_id, step, revision)
        marker = json.loads(store.get_bytes(prefix + MARKER))
        if not any(rel.startswith(DCP + "/") for rel in marker["files"]):
            raise RuntimeError(
                f"{prefix} was written by the single-process learner (trainer.num_gpus 1); resume this run "
                "with one learner process, or start a new run for the sharded learner"
            )
        local = store.local_path(prefix + MARKER)
        folder = Path(local).parent if local is not None else Path(workdir) / f"resume-{step}-r{revision}"
        ok = True
        with node_first(world):
            if world.local_rank == 0:
                ok = _fetch_verified(store, prefix, marker, folder)
        votes: list[Any] = [None] * world.size
        torch.distributed.all_gather_object(votes, ok, group=world.commands)
        if all(votes):
            try:
                load_dcp(folder, policy, trainer)
                _set_rng_state(_load_pickle(folder / "rng.pt", torch.device("cpu")))
            finally:
                world.barrier()
                if local is None and world.local_rank == 0:
                    shutil.rmtree(folder, ignore_errors=True)
            state = TrainerState.from_json(marker["trainerState"])
            log.info("resumed from %s (step %d, written by %s ranks)", prefix, step, marker.get("worldSize"))
            return state if world.leader else None
        world.barrier()
        if local is None and world.local_rank == 0:
            shutil.rmtree(folder, ignore_errors=True)
    return None
