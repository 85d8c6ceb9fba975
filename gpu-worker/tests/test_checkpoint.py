"""Checkpoint machinery and the folder blob store: a half-written checkpoint is never taken for a
complete one, a corrupted one is skipped for the previous complete one, old ones are pruned, and a
re-commit at the same step replaces only the marker."""

import json

import pytest
import torch

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore, open_store
from toolrl_learner.train.checkpoint import (
    TrainerState,
    complete_steps,
    load_latest_checkpoint,
    save_checkpoint,
)
from toolrl_learner.train.policy import Policy


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2))


def _policy(tiny_dir, seed_shift=0.0):
    p = Policy(LearnerConfig(model_path=str(tiny_dir), dtype="fp32"), tiny_dir, torch.device("cpu"))
    with torch.no_grad():
        p.base.model.norm.weight.add_(seed_shift)  # a recognisable weight per checkpoint
    return p


def test_folder_store_semantics_on_cpu(tmp_path):
    store = open_store(str(tmp_path))
    assert isinstance(store, FolderBlobStore)
    assert store.put_if_absent("a/b.json", b"1") is True
    assert store.put_if_absent("a/b.json", b"2") is False
    assert store.get_bytes("a/b.json") == b"1"
    store.put_bytes("a/b.json", b"3")
    (tmp_path / "a" / ".tmp-123-4").write_bytes(b"partial")  # a writer's temp file (TS or Python)
    store.put_bytes("a/c/d.txt", b"x")
    assert store.list("a/") == ["a/b.json", "a/c/d.txt"]
    assert store.list("a/c") == ["a/c/d.txt"]
    store.delete("a/b.json")
    assert not store.exists("a/b.json")
    with pytest.raises(KeyError):
        store.get_bytes("a/b.json")
    for bad in ("../x", "/abs", "a//b", "a/./b"):
        with pytest.raises(ValueError, match="invalid blob key"):
            store.put_bytes(bad, b"")


def test_half_written_and_corrupted_checkpoints_are_skipped_on_cpu(tiny_dir, tmp_path):
    store = FolderBlobStore(tmp_path)
    save_checkpoint(
        store,
        "r",
        _policy(tiny_dir, 1.0),
        None,
        TrainerState(step=2, consumed_group_ids=["a"]),
        tmp_path,
        keep=5,
    )
    save_checkpoint(
        store,
        "r",
        _policy(tiny_dir, 2.0),
        None,
        TrainerState(step=4, consumed_group_ids=["a", "b"]),
        tmp_path,
        keep=5,
    )
    # step 6: files written, marker missing (the writer died) -> not complete
    save_checkpoint(store, "r", _policy(tiny_dir, 3.0), None, TrainerState(step=6), tmp_path, keep=5)
    store.delete("runs/r/checkpoints/step-6/COMPLETE.json")
    assert complete_steps(store, "r") == [4, 2]
    fresh = _policy(tiny_dir)
    state, _ = load_latest_checkpoint(store, "r", fresh, tmp_path)
    assert state.step == 4 and state.consumed_group_ids == ["a", "b"]
    assert torch.allclose(fresh.base.model.norm.weight, torch.full_like(fresh.base.model.norm.weight, 3.0))
    # step 4's weights corrupted on disk -> its hash fails -> step 2 is taken
    weights = tmp_path / "runs/r/checkpoints/step-4/model/model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    state, _ = load_latest_checkpoint(store, "r", fresh, tmp_path)
    assert state.step == 2 and state.consumed_group_ids == ["a"]
    assert torch.allclose(fresh.base.model.norm.weight, torch.full_like(fresh.base.model.norm.weight, 2.0))


def test_prune_keeps_the_newest_complete_ones_on_cpu(tiny_dir, tmp_path):
    store = FolderBlobStore(tmp_path)
    policy = _policy(tiny_dir)
    for step in (1, 2, 3, 4):
        save_checkpoint(store, "r", policy, None, TrainerState(step=step), tmp_path, keep=2)
    assert complete_steps(store, "r") == [4, 3]
    assert sorted(p.name for p in (tmp_path / "runs/r/checkpoints").iterdir()) == ["step-3", "step-4"]


def test_recommit_at_the_same_step_rewrites_only_the_marker_on_cpu(tiny_dir, tmp_path):
    store = FolderBlobStore(tmp_path)
    policy = _policy(tiny_dir)
    save_checkpoint(store, "r", policy, None, TrainerState(step=3, consumed_group_ids=["a"]), tmp_path)
    weights = tmp_path / "runs/r/checkpoints/step-3/model/model.safetensors"
    inode = weights.stat().st_ino
    state = TrainerState(step=3, consumed_group_ids=["a"], dropped_group_ids=["b"], policy_version=4)
    save_checkpoint(store, "r", policy, None, state, tmp_path, weights_unchanged=True)
    assert weights.stat().st_ino == inode  # untouched
    marker = json.loads(store.get_bytes("runs/r/checkpoints/step-3/COMPLETE.json"))
    assert (
        marker["trainerState"]["dropped_group_ids"] == ["b"] and marker["trainerState"]["policy_version"] == 4
    )
    loaded, _ = load_latest_checkpoint(store, "r", _policy(tiny_dir), tmp_path)
    assert loaded == state


def test_keys_follow_the_generated_layout_on_cpu():
    # storage/keys.py fills the templates shared/topology.ts declares (constants.json): the documented layout.
    from toolrl_learner.storage import keys

    assert keys.run_json("RID") == "runs/RID/run.json"
    assert keys.input_prefix("RID") == "runs/RID/input/"
    assert keys.policy_version("RID", 7) == "runs/RID/policy/v7/"
    assert keys.policy_latest("RID") == "runs/RID/policy/LATEST.json"
    assert keys.group("RID", "e0-p3") == "runs/RID/groups/e0-p3.json"
    assert keys.checkpoints("RID") == "runs/RID/checkpoints/"
    assert keys.checkpoint("RID", 7) == "runs/RID/checkpoints/step-7/"
    assert keys.checkpoint("RID", 7, 2) == "runs/RID/checkpoints/step-7-r2/"
    assert keys.metrics("RID") == "runs/RID/metrics/"
    assert keys.learner_state("RID") == "runs/RID/learner/state.json"


def test_keys_read_back_from_the_same_templates_on_cpu(monkeypatch):
    # Checkpoint folders, validation summaries and dead-letter records are recognised by patterns made from the
    # templates that build them, so a changed template changes both: here a layout unlike today's.
    from toolrl_learner.storage import keys

    for ident in [(7, 0), (7, 2), (120, 13)]:
        assert keys.parse_checkpoint("r.1", keys.checkpoint("r.1", *ident) + "model/x.safetensors") == ident
        assert keys.parse_checkpoint("r.1", keys.checkpoint("r.1", *ident)) == ident
    assert keys.parse_checkpoint("r.1", "runs/r.1/checkpoints/step-x/COMPLETE.json") is None
    assert keys.parse_checkpoint("r.1", "runs/rX1/checkpoints/step-7/COMPLETE.json") is None  # `.` is literal
    assert keys.parse_checkpoint("r.1", "runs/r.1/metrics/step-7/") is None
    assert keys.eval_summaries("r") == "runs/r/metrics/eval/"
    assert keys.parse_eval_summary("r", "runs/r/metrics/eval/v12.json") == 12
    assert keys.parse_eval_summary("r", "runs/r/metrics/eval/v12.json.tmp") is None
    assert keys.dead_letter_group("r", keys.dead_letter("r", "val-v3-p1", "tool-call", "m/1")) == "val-v3-p1"
    assert keys.dead_letter_group("r", "runs/r/dead-letters/stray.txt") is None

    layout = json.loads(json.dumps(keys.constants()))
    layout["keys"].update(
        checkpointsPrefix="x/{runId}/ckpt/",
        checkpoint="x/{runId}/ckpt/s{step}/",
        checkpointRevision="x/{runId}/ckpt/s{step}.{revision}/",
        evalSummary="x/{runId}/val/{version}/summary.json",
    )
    monkeypatch.setattr(keys, "constants", lambda: layout)
    assert keys.checkpoint("r", 7, 2) == "x/r/ckpt/s7.2/"
    assert keys.parse_checkpoint("r", "x/r/ckpt/s7.2/COMPLETE.json") == (7, 2)
    assert keys.parse_checkpoint("r", "x/r/ckpt/s7/COMPLETE.json") == (7, 0)
    assert keys.parse_checkpoint("r", "runs/r/checkpoints/step-7/COMPLETE.json") is None
    assert keys.eval_summaries("r") == "x/r/val/"
    assert keys.parse_eval_summary("r", "x/r/val/4/summary.json") == 4


def test_a_checkpoint_the_disk_cannot_hold_is_refused_before_a_byte_is_written_on_cpu(
    tiny_dir, tmp_path, monkeypatch
):
    from collections import namedtuple

    from toolrl_learner.train import checkpoint

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(checkpoint.shutil, "disk_usage", lambda _path: usage(2**30, 2**30 - 2**20, 2**20))
    store = FolderBlobStore(tmp_path)
    with pytest.raises(checkpoint.CheckpointWriteFailed) as failed:
        save_checkpoint(store, "r", _policy(tiny_dir), None, TrainerState(step=1), tmp_path)
    message = str(failed.value)
    assert "step-1/ not written" in message and "1.0 MiB free" in message and "trainer.save_every" in message
    assert complete_steps(store, "r") == []
    assert not any(p.is_file() for p in (tmp_path / "runs/r/checkpoints").rglob("*"))
    monkeypatch.undo()
    save_checkpoint(store, "r", _policy(tiny_dir), None, TrainerState(step=1), tmp_path)
    assert complete_steps(store, "r") == [1]


def test_sharded_ranks_on_one_disk_need_its_space_together_and_each_disk_is_judged_alone():
    from toolrl_learner.train.checkpoint_space import RankSpace, shared_disk_shortfalls

    mib = 2**20

    def rank(r, host, device, need, free):
        return RankSpace(
            rank=r, host=host, device=device, folder=f"/work/{host}", need=need * mib, free=free * mib
        )

    # GIVEN two ranks on host a writing 300 MiB each to one file system with 500 MiB free, and two ranks on
    # host b writing to two file systems with room each
    ranks = [
        rank(0, "a", 1, 300, 500),
        rank(1, "a", 1, 300, 500),
        rank(2, "b", 1, 300, 400),
        rank(3, "b", 2, 300, 400),
    ]
    # THEN only host a's disk is short, and the message names its folder, its ranks, the need and the space
    short = shared_disk_shortfalls("runs/r/checkpoints/step-3/", ranks)
    assert len(short) == 1
    assert "step-3/ not written (in /work/a on a, ranks 0, 1)" in short[0]
    assert "616.0 MiB" in short[0] and "500.0 MiB free" in short[0] and "trainer.save_every" in short[0]
    # AND with room for both ranks' shards and the margin, nothing is short
    assert shared_disk_shortfalls("p/", [rank(0, "a", 1, 300, 700), rank(1, "a", 1, 300, 700)]) == []


# A file-size limit makes the weights' write fail for real part-way (as a full disk does), in a child process.
_SMALL_DISK = """
import resource, signal, sys
from pathlib import Path
import torch
from toolrl_learner.config import LearnerConfig
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.checkpoint import CheckpointWriteFailed, TrainerState, complete_steps, save_checkpoint
from toolrl_learner.train.policy import Policy
tiny, root = Path(sys.argv[1]), Path(sys.argv[2])
policy = Policy(LearnerConfig(model_path=str(tiny), dtype="fp32"), tiny, torch.device("cpu"))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))
store = FolderBlobStore(root)
try:
    save_checkpoint(store, "r", policy, None, TrainerState(step=2), root)
except CheckpointWriteFailed as e:
    print("FAILED", e)
print("COMPLETE", complete_steps(store, "r"))
"""


def test_a_write_that_fails_part_way_names_the_checkpoint_and_the_space_on_cpu(tiny_dir, tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _SMALL_DISK, str(tiny_dir), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "FAILED checkpoint runs/r/checkpoints/step-2/ failed part-way" in out.stdout, out.stdout
    assert "MiB free" in out.stdout and "trainer.keep_checkpoints" in out.stdout
    assert "COMPLETE []" in out.stdout
    assert not any(
        p.is_file() for p in (tmp_path / "runs/r/checkpoints").rglob("*")
    )  # the part written is gone
