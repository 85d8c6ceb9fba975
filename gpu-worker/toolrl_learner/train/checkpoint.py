"""Checkpoints: `checkpoints/step-<S>/` with Hugging Face format weights (the full model in `model/`, or
peft's adapter folder in `adapter/`), the value head, a separate critic's weights in `critic/`, optimizer
state (the critic's beside the policy's) and RNG state, and `COMPLETE.json`.

`COMPLETE.json` is the commit record: written last, in one atomic put, it lists every file with its
sha256 and carries the trainer state (step, policy version, consumed and dropped group ids, data
position). A half-written checkpoint has no marker and is never taken for a complete one (S3 has no
atomic directory rename; the marker works on both stores); resume takes the newest checkpoint whose
files all match their hashes. Settling more group ids at the same step rewrites only the marker.

A complete checkpoint is never taken apart before its replacement is complete: new weights at a step that
already has one (a curriculum stage's SFT ending on a save step) go to the next revision, `step-<S>-r<k>/`,
and the older revision is pruned only after the new marker has landed. A learner killed mid-rewrite resumes
from the old one, whose consumed group ids match what the queue has already deleted.

Pickled files (optimizer, RNG state) load with `torch.load(weights_only=True)`: a checkpoint folder is data,
and one written by someone else must not run code in the learner.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
import random
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError

from ..storage import BlobNotFound, BlobStore, keys
from .checkpoint_space import CheckpointWriteFailed, checkpoint_bytes, require_space, space_report
from .critic import Critic
from .policy import Policy

log = logging.getLogger(__name__)
MARKER = "COMPLETE.json"
# The warm-started reference policy of a KL term (a LoRA adapter or the reference model's weights), when it is one.
REFERENCE = "reference.safetensors"
# What the unpickler may build besides tensors and plain containers: numpy's RNG state as checkpoints written
# before it was stored as a tensor hold it (an ndarray of uint32). Nothing here can run code.
_SAFE_GLOBALS: list[Any] = [
    np._core.multiarray._reconstruct,  # type: ignore[attr-defined]
    np.ndarray,
    np.dtype,
    type(np.dtype(np.uint32)),
]


@dataclass
class TrainerState:
    """What a resumed learner needs besides weights and optimizer: its counters and the ids it has settled."""

    step: int = 0
    policy_version: int = 0
    groups_consumed: int = 0
    groups_dropped: int = 0
    consumed_group_ids: list[str] = field(default_factory=list)
    dropped_group_ids: list[str] = field(default_factory=list)
    # Dropped because the pipeline dead-lettered them: trained after all if a DLQ redrive brings them back.
    dead_lettered_group_ids: list[str] = field(default_factory=list)
    reward_mean: float | None = None
    # Lines of an offline JSONL already read (the offline driver's data position).
    data_position: int = 0
    sft_done: bool = False  # the warm start (`trainer.sft`) before v0
    # Curriculum stages whose own `trainer.sft` (a format stage's demonstrations) has been trained.
    sft_done_stages: list[str] = field(default_factory=list)
    # trainer.deterministic: whole batches settled, and the policy version after each of the last few of them.
    batches_settled: int = 0
    batch_versions: list[int] = field(default_factory=list)
    # The step of the last publish (None in checkpoints written before it was kept: taken as `step`).
    published_step: int | None = None
    # Lineage anchors [version, index] left by resumes that republished (versions.py); empty for a run never killed.
    lineage: list[list[int]] = field(default_factory=list)
    # The policy version current at each checkpoint written (kept by trainer.keep_policy_versions: retention.py).
    checkpoint_versions: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TrainerState:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _rng_state() -> dict[str, Any]:
    legacy = np.random.get_state(legacy=True)
    if not isinstance(legacy, tuple):  # legacy=True promises the MT19937 tuple; numpy's stubs allow a dict
        raise TypeError(f"numpy.random.get_state(legacy=True) returned {type(legacy).__name__}")
    algorithm, key, pos, has_gauss, cached = legacy
    # numpy's key as a tensor, so the file holds nothing a weights-only unpickler refuses
    numpy_state = (algorithm, torch.from_numpy(key.astype(np.int64)), pos, has_gauss, cached)
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": numpy_state}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    algorithm, key, *rest = state["numpy"]
    key = key.numpy() if isinstance(key, torch.Tensor) else key
    np.random.set_state((algorithm, key.astype(np.uint32), *rest))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _write_files(
    out: Path, policy: Policy, trainer_state: dict[str, Any] | None, critic: Critic | None = None
) -> None:
    from safetensors.torch import save_file

    from ..model.hf_io import save_pretrained

    out.mkdir(parents=True, exist_ok=True)
    if policy.peft is None:
        save_pretrained(policy.base, out / "model", dtype=torch.float32, tokenizer_from=policy.model_dir)
    else:
        _save_adapter(policy, out / "adapter")
    trainable = policy.trainable_state(adapter=False)  # the value head, if any
    if trainable:
        save_file(trainable, str(out / "trainable.safetensors"), metadata={"format": "pt"})
    if policy.warm_start_reference:  # the KL term's reference is the warm start, not model.path's weights
        ref = {k: v.detach().to("cpu").contiguous() for k, v in policy.reference_tensors().items()}
        save_file(ref, str(out / REFERENCE), metadata={"format": "pt"})
    if critic is not None:
        critic.save(out / "critic")
    if trainer_state is not None:
        torch.save(trainer_state, out / "optimizer.pt")
    torch.save(_rng_state(), out / "rng.pt")


def _save_adapter(policy: Policy, out: Path) -> None:
    """A standard peft adapter folder (adapter_config.json + adapter_model.safetensors, fp32), so
    `PeftModel.from_pretrained(base, <checkpoint>/adapter)` (or AutoPeftModelForCausalLM) opens it."""
    if policy.peft is None:
        raise ValueError("an adapter checkpoint needs a LoRA policy (model.lora)")
    policy.peft.save_pretrained(str(out))
    config_path = out / "adapter_config.json"
    config = json.loads(config_path.read_text())
    # Our decoder is not a transformers model, so peft records neither; set what the Hub's loaders need.
    hub_id = not policy.cfg.model_path.startswith("tiny") and not Path(policy.cfg.model_path).exists()
    config["base_model_name_or_path"] = policy.cfg.model_path if hub_id else str(policy.model_dir)
    config["task_type"] = "CAUSAL_LM"
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def _put_marker(
    store: BlobStore, prefix: str, files: dict[str, Any], state: TrainerState, **extra: Any
) -> None:
    marker = {"step": state.step, "files": files, "trainerState": state.to_json(), **extra}
    store.put_bytes(prefix + MARKER, (json.dumps(marker, indent=1) + "\n").encode())


def rewrite_marker(store: BlobStore, prefix: str, state: TrainerState) -> bool:
    """Replace a complete checkpoint's trainer state (more settled group ids, same weights); False if the
    checkpoint has no marker."""
    try:
        marker = json.loads(store.get_bytes(prefix + MARKER))
    except BlobNotFound:
        return False
    extra = {k: v for k, v in marker.items() if k not in ("step", "files", "trainerState")}
    _put_marker(store, prefix, marker["files"], state, **extra)
    return True


def save_checkpoint(
    store: BlobStore,
    run_id: str,
    policy: Policy,
    trainer_state: dict[str, Any] | None,
    state: TrainerState,
    workdir: Path,
    keep: int = 2,
    weights_unchanged: bool = False,
    critic: Critic | None = None,
) -> str:
    """Write checkpoint step-<state.step>; returns its prefix. Older complete ones beyond `keep` are removed.

    weights_unchanged: nothing was trained since this step's checkpoint was written; only its marker (the
    trainer state) is replaced, atomically, so the complete checkpoint is never taken apart. Otherwise a step
    that already has a complete checkpoint gets a new revision beside it (see the module docstring).
    """
    done = complete_prefix(store, run_id, state.step)
    if weights_unchanged and done is not None and rewrite_marker(store, done, state):
        return done
    prefix = next_prefix(store, run_id, state.step)
    for stale in store.list(prefix):  # leftovers of an interrupted attempt; never a complete checkpoint
        store.delete(stale)
    local = store.local_path(prefix + MARKER)
    staging = Path(local).parent if local is not None else Path(tempfile.mkdtemp(prefix="ckpt-", dir=workdir))
    try:
        need = checkpoint_bytes(policy, trainer_state, critic)
        require_space(staging, prefix, need)
        try:
            _write_files(staging, policy, trainer_state, critic)
        except (OSError, RuntimeError, SafetensorError) as e:  # a full disk: torch says "unexpected pos ..."
            report = space_report("failed part-way", staging, prefix, need)
            for partial in store.list(prefix):  # no marker was written; give the space back
                store.delete(partial)
            raise CheckpointWriteFailed(f"{report} ({type(e).__name__}: {e})") from e
        files = {}
        for f in sorted(p for p in staging.rglob("*") if p.is_file()):
            rel = f.relative_to(staging).as_posix()
            files[rel] = {"sha256": _sha256(f), "bytes": f.stat().st_size}
            if local is None:
                store.put_file(prefix + rel, f)
        _put_marker(store, prefix, files, state)
    finally:
        if local is None:
            shutil.rmtree(staging, ignore_errors=True)
    prune(store, run_id, keep)
    return prefix


def complete_checkpoints(store: BlobStore, run_id: str) -> list[tuple[int, int]]:
    """(step, revision) of every checkpoint with a COMPLETE marker, newest first."""
    found = set()
    for key in store.list(keys.checkpoints(run_id)):
        ident = keys.parse_checkpoint(run_id, key)
        if ident and key == keys.checkpoint(run_id, *ident) + MARKER:
            found.add(ident)
    return sorted(found, reverse=True)


def complete_steps(store: BlobStore, run_id: str) -> list[int]:
    """Steps that have a complete checkpoint, newest first."""
    return sorted({step for step, _ in complete_checkpoints(store, run_id)}, reverse=True)


def complete_prefix(store: BlobStore, run_id: str, step: int) -> str | None:
    """The newest complete revision of step's checkpoint, or None."""
    revisions = [rev for s, rev in complete_checkpoints(store, run_id) if s == step]
    return keys.checkpoint(run_id, step, revisions[0]) if revisions else None


def next_prefix(store: BlobStore, run_id: str, step: int) -> str:
    """Where new weights at step go: step-<S>/, or the revision after its newest complete one."""
    revisions = [rev for s, rev in complete_checkpoints(store, run_id) if s == step]
    return keys.checkpoint(run_id, step, revisions[0] + 1 if revisions else 0)


def prune(store: BlobStore, run_id: str, keep: int) -> None:
    complete = complete_checkpoints(store, run_id)
    if not complete:
        return
    kept = set(complete[:keep])
    newest = complete[0]
    for key in store.list(keys.checkpoints(run_id)):
        ident = keys.parse_checkpoint(run_id, key)
        if ident is None:
            continue
        # Older than the kept ones, or an incomplete attempt older than the newest complete one.
        if ident not in kept and ident < newest:
            store.delete(key)
    local = store.local_path(keys.checkpoint(run_id, *newest) + MARKER)
    if local is not None:  # a folder store keeps empty directories after its files are deleted
        for d in Path(local).parents[1].iterdir():
            if (
                d.is_dir()
                and keys.parse_checkpoint(run_id, f"{keys.checkpoints(run_id)}{d.name}/")
                and not any(p.is_file() for p in d.rglob("*"))
            ):
                shutil.rmtree(d, ignore_errors=True)


def fetch(store: BlobStore, prefix: str, marker: dict[str, Any], workdir: Path) -> Path | None:
    """A local folder with the checkpoint's files, each verified against the marker; None if any is bad."""
    local = store.local_path(prefix + MARKER)
    folder = (
        Path(local).parent if local is not None else Path(tempfile.mkdtemp(prefix="resume-", dir=workdir))
    )
    for rel, meta in marker["files"].items():
        path = folder / rel
        if local is None:
            store.get_file(prefix + rel, path)
        if not path.is_file() or path.stat().st_size != meta["bytes"] or _sha256(path) != meta["sha256"]:
            log.warning("checkpoint %s: %s is missing or does not match its hash; skipping it", prefix, rel)
            return None
    return folder


def _load_trainable(policy: Policy, folder: Path) -> None:
    """The adapter (peft's folder) and the value head (trainable.safetensors, which also held the adapter
    in checkpoints written before the adapter folder had weights)."""
    from safetensors.torch import load_file

    device = str(policy.device)
    state = {}
    adapter = folder / "adapter" / "adapter_model.safetensors"
    if adapter.is_file():
        state.update({f"adapter.{k}": v for k, v in load_file(str(adapter), device=device).items()})
    if (folder / "trainable.safetensors").is_file():
        state.update(load_file(str(folder / "trainable.safetensors"), device=device))
    if state:
        policy.load_trainable_state(state)
    if (folder / REFERENCE).is_file():
        policy.load_reference_tensors(load_file(str(folder / REFERENCE), device=device))


class UnsafeCheckpoint(RuntimeError):
    """A checkpoint file holds objects a weights-only unpickler refuses to build."""


def _load_pickle(path: Path, device: torch.device) -> Any:
    try:
        with torch.serialization.safe_globals(_SAFE_GLOBALS):
            return torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as e:
        raise UnsafeCheckpoint(
            f"{path} holds objects other than tensors and plain containers; refusing to unpickle it "
            f"(torch.load weights_only=True). Was the checkpoint written by someone else? {str(e).splitlines()[-1]}"
        ) from e


def load_latest_checkpoint(
    store: BlobStore,
    run_id: str,
    policy: Policy,
    workdir: Path,
    critic: Critic | None = None,
    trainer=None,
) -> tuple[TrainerState, dict[str, Any] | None] | None:
    """Restore the newest verifiable checkpoint into `policy` (and `critic`: weights, RNG); returns (state,
    optimizer state or None), or None when there is no complete checkpoint.

    A sharded learner's checkpoint (`dcp/`, sharded/checkpoint.py) loads whole into this process, weights and
    optimizer state (into `trainer`) alike, whatever the world size that wrote it; its optimizer state is
    then already in place and None is returned for it. The sharded learner trains no separate critic, so
    such a checkpoint holds none and a run with `critic:` cannot resume from it."""
    for step, revision in complete_checkpoints(store, run_id):
        prefix = keys.checkpoint(run_id, step, revision)
        marker = json.loads(store.get_bytes(prefix + MARKER))
        folder = fetch(store, prefix, marker, workdir)
        if folder is None:
            continue
        try:
            if (folder / "dcp").is_dir():
                from ..sharded.checkpoint import load_dcp

                load_dcp(folder, policy, trainer)
            if (folder / "model").is_dir():
                policy.load_base_weights(folder / "model")
            _load_trainable(policy, folder)
            if critic is not None:
                if not (folder / "critic").is_dir():
                    raise ValueError(f"{prefix} holds no critic: it was written by a run without `critic:`")
                critic.load(folder / "critic")
            optimizer = (
                _load_pickle(folder / "optimizer.pt", policy.device)
                if (folder / "optimizer.pt").is_file()
                else None
            )
            _set_rng_state(_load_pickle(folder / "rng.pt", torch.device("cpu")))
            state = TrainerState.from_json(marker["trainerState"])
        finally:
            if store.local_path(prefix + MARKER) is None:
                shutil.rmtree(folder, ignore_errors=True)
        log.info("resumed from %s (step %d, policy v%d)", prefix, state.step, state.policy_version)
        return state, optimizer
    return None
