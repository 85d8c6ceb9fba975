"""Checkpoints are never torn and never run code: a learner process killed while rewriting the checkpoint of
a step that already has one (a stage's SFT ending on a save step) leaves the complete one intact, so resume
finds the group ids it had committed; pickled files load with `weights_only=True`."""

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from remote_store import RemoteFolderStore

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.checkpoint import (
    TrainerState,
    UnsafeCheckpoint,
    complete_checkpoints,
    load_latest_checkpoint,
    save_checkpoint,
)
from toolrl_learner.train.policy import Policy

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2))


def _policy(tiny_dir, shift=0.0):
    p = Policy(LearnerConfig(model_path=str(tiny_dir), dtype="fp32"), tiny_dir, torch.device("cpu"))
    with torch.no_grad():
        p.base.model.norm.weight.add_(shift)  # a recognisable weight per checkpoint
    return p


def _store(kind: str, root: Path):
    return FolderBlobStore(root) if kind == "folder" else RemoteFolderStore(root)


# The child rewrites step 3 with new weights and stops at `pause` (prints "paused", then sleeps) so the parent
# can SIGKILL it there: "marker" = every file written, COMPLETE.json not yet; "files" = the weights written,
# rng.pt not yet.
_CHILD = """
import sys, time, torch
sys.path.insert(0, sys.argv[5])
from remote_store import RemoteFolderStore
from toolrl_learner.config import LearnerConfig
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train import checkpoint
from toolrl_learner.train.policy import Policy

tiny_dir, root, kind, pause = sys.argv[1:5]
store = FolderBlobStore(root) if kind == "folder" else RemoteFolderStore(__import__("pathlib").Path(root))

def stop(*args, **kwargs):
    print("paused", flush=True)
    time.sleep(600)

if pause == "marker":
    checkpoint._put_marker = stop
else:
    torch.save = stop
p = Policy(LearnerConfig(model_path=tiny_dir, dtype="fp32"), tiny_dir, torch.device("cpu"))
with torch.no_grad():
    p.base.model.norm.weight.add_(2.0)
state = checkpoint.TrainerState(step=3, consumed_group_ids=["a", "b"], sft_done_stages=["format"])
checkpoint.save_checkpoint(store, "r", p, None, state, __import__("pathlib").Path(root), keep=1)
print("finished", flush=True)
"""


@pytest.mark.parametrize(("kind", "pause"), [("folder", "files"), ("remote", "marker")])
def test_a_learner_killed_while_rewriting_a_step_keeps_its_complete_checkpoint_on_cpu(
    tiny_dir, tmp_path, kind, pause
):
    store = _store(kind, tmp_path)
    save_checkpoint(
        store,
        "r",
        _policy(tiny_dir, 1.0),
        None,
        TrainerState(step=3, consumed_group_ids=["a"]),
        tmp_path,
        keep=1,
    )
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tiny_dir), str(tmp_path), kind, pause, str(TESTS)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        assert child.stdout.readline().strip() == "paused"
        # the rewrite has started writing: some of its files are on the store already
        assert any("step-3-r1/" in k for k in store.list("runs/r/checkpoints/")) or kind == "remote"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()

    # resume takes the complete checkpoint of step 3 as it was: old weights, the groups it had committed
    assert complete_checkpoints(store, "r") == [(3, 0)]
    fresh = _policy(tiny_dir)
    state, _ = load_latest_checkpoint(store, "r", fresh, tmp_path)
    assert state.step == 3 and state.consumed_group_ids == ["a"]
    assert torch.allclose(fresh.base.model.norm.weight, torch.full_like(fresh.base.model.norm.weight, 2.0))

    # the restarted learner redoes the rewrite: it lands as a new revision, then the old one is pruned
    save_checkpoint(
        store,
        "r",
        _policy(tiny_dir, 2.0),
        None,
        TrainerState(step=3, consumed_group_ids=["a", "b"], sft_done_stages=["format"]),
        tmp_path,
        keep=1,
    )
    assert complete_checkpoints(store, "r") == [(3, 1)]
    assert {k.split("/")[3] for k in store.list("runs/r/checkpoints/")} == {"step-3-r1"}
    state, _ = load_latest_checkpoint(store, "r", fresh, tmp_path)
    assert state.consumed_group_ids == ["a", "b"] and state.sft_done_stages == ["format"]
    assert torch.allclose(fresh.base.model.norm.weight, torch.full_like(fresh.base.model.norm.weight, 3.0))


def test_revisions_order_after_their_step_and_before_the_next_on_cpu(tiny_dir, tmp_path):
    store = FolderBlobStore(tmp_path)
    policy = _policy(tiny_dir)
    for step in (2, 3, 3, 3):
        save_checkpoint(store, "r", policy, None, TrainerState(step=step), tmp_path, keep=3)
    assert complete_checkpoints(store, "r") == [(3, 2), (3, 1), (3, 0)]
    save_checkpoint(store, "r", policy, None, TrainerState(step=4), tmp_path, keep=2)
    assert complete_checkpoints(store, "r") == [(4, 0), (3, 2)]
    # a marker-only recommit (nothing trained since) goes to the newest revision of its step
    save_checkpoint(
        store,
        "r",
        policy,
        None,
        TrainerState(step=4, dropped_group_ids=["x"]),
        tmp_path,
        weights_unchanged=True,
    )
    assert complete_checkpoints(store, "r") == [(4, 0), (3, 2)]


def _retamper(store, prefix: str, rel: str, payload: bytes) -> None:
    """Replace one file of a checkpoint and re-sign the marker, as someone with write access to the bucket can."""
    store.put_bytes(prefix + rel, payload)
    marker = json.loads(store.get_bytes(prefix + "COMPLETE.json"))
    marker["files"][rel] = {"sha256": hashlib.sha256(payload).hexdigest(), "bytes": len(payload)}
    store.put_bytes(prefix + "COMPLETE.json", json.dumps(marker).encode())


class _Payload:
    """Unpickling this creates a file: what a hostile optimizer.pt could do instead."""

    def __init__(self, flag: Path) -> None:
        self.flag = flag

    def __reduce__(self):
        return (open, (str(self.flag), "w"))


def test_a_pickle_that_would_run_code_is_refused_on_cpu(tiny_dir, tmp_path):
    store = FolderBlobStore(tmp_path / "store")
    save_checkpoint(store, "r", _policy(tiny_dir), {"step": 1}, TrainerState(step=1), tmp_path)
    flag = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"optimizer": _Payload(flag), "step": 1}, path)
    _retamper(store, "runs/r/checkpoints/step-1/", "optimizer.pt", path.read_bytes())
    with pytest.raises(UnsafeCheckpoint, match=r"optimizer\.pt holds objects other than tensors"):
        load_latest_checkpoint(store, "r", _policy(tiny_dir), tmp_path)
    assert not flag.exists()


def test_rng_state_of_older_checkpoints_still_loads_weights_only_on_cpu(tiny_dir, tmp_path):
    # Checkpoints written before the numpy key was stored as a tensor pickled numpy's ndarray.
    store = FolderBlobStore(tmp_path / "store")
    optimizer_state = {"optimizer": {"state": {}, "param_groups": []}, "step": 1, "total_steps": None}
    save_checkpoint(store, "r", _policy(tiny_dir), optimizer_state, TrainerState(step=1), tmp_path)
    np.random.seed(1234)
    old = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    expected = np.random.rand(3)
    path = tmp_path / "rng-old.pt"
    torch.save(old, path)
    _retamper(store, "runs/r/checkpoints/step-1/", "rng.pt", path.read_bytes())
    np.random.seed(0)
    _, optimizer = load_latest_checkpoint(store, "r", _policy(tiny_dir), tmp_path)
    assert optimizer == optimizer_state
    assert np.random.rand(3).tolist() == expected.tolist()
