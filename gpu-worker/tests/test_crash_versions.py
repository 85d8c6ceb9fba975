"""A learner killed after its last checkpoint leaves policy versions behind that its resumed successor does not have
the weights of (train/versions.py). Here the kill is a session abandoned mid-run and a new one started on the same
store, as the stdio driver's next process would: a deterministic run replays those versions (the same weights, not
published again) and ends as the straight run does; an asynchronous one republishes and counts staleness along
its lineage, so the resume drops no group. A checkpoint written at a save step counts the batch it follows."""

import json

import torch

from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import random_group
from toolrl_learner.train.versions import Lineage

RUN = "r-crash"
PLANNED = 8  # 4 batches of 2


def _config(model_dir, deterministic: bool) -> dict:
    return {
        "model": {"path": str(model_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {
            "batch_prompts": 2,
            "micro_batch_tokens": 512,
            "max_staleness": 1,
            "deterministic": deterministic,
            "save_every": 2,
            "publish_every": 1,
            "lr": 1e-3,
        },
        "logging": {"tensorboard": False},
    }


def _start(root, model_dir, events, deterministic=True) -> tuple[LearnerSession, FolderBlobStore]:
    store = FolderBlobStore(root)
    run = {"config": _config(model_dir, deterministic), "totals": {"groupsPlanned": PLANNED}}
    store.put_bytes(f"runs/{RUN}/run.json", json.dumps(run).encode())
    s = LearnerSession(store, RUN, emit=events.append, device="cpu")
    s.start()
    return s, store


def _groups(vocab: int) -> list[dict]:
    out = []
    for p in range(PLANNED):
        # Sampled by the version before the batch's (max_staleness 1), as the feeder pins a deterministic run's.
        g = random_group(
            RUN,
            f"e0-p{p}",
            vocab=vocab,
            g=4,
            prompt_len=6,
            response_len=5,
            turns=1,
            seed=p,
            version=max(0, p // 2 - 1),
        )
        g["position"] = p
        out.append(g)
    return out


def _offer(s: LearnerSession, groups, positions) -> None:
    for p in positions:
        s.offer({"type": "group", "group": json.loads(json.dumps(groups[p]))})


def _weights(s):
    return {n: p.detach().clone() for n, p in s.policy.named_trainable_parameters()}


def _marker(root, step):
    return json.loads((root / "runs" / RUN / "checkpoints" / f"step-{step}" / "COMPLETE.json").read_text())


def _tiny(tmp_path):
    d = build_tiny(tmp_path / "tiny", TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1))
    return d, json.loads((d / "config.json").read_text())["vocab_size"]


def test_lineage_counts_publishes_along_the_learners_own_history():
    line = Lineage()
    assert line.index(7) == 7 and line.staleness(3, 7) == 4
    # Checkpoint at v4, a killed learner published v5 and v6; the resume republished v4's weights as v7.
    line.anchor(7, 4)
    assert [line.index(v) for v in (3, 4, 5, 6, 7, 8)] == [3, 4, 5, 6, 4, 5]
    assert line.staleness(4, 7) == 0  # the same weights
    assert line.staleness(3, 8) == 2
    assert line.staleness(6, 7) == 0  # an orphan ahead of the learner is not stale
    assert Lineage.from_json(line.to_json()) == line


def test_a_deterministic_resume_replays_the_versions_published_after_its_checkpoint_on_cpu(tmp_path):
    model_dir, vocab = _tiny(tmp_path)
    groups = _groups(vocab)
    straight_events: list[dict] = []
    straight, _ = _start(tmp_path / "straight", model_dir, straight_events)
    _offer(straight, groups, range(PLANNED))
    assert straight.done

    # GIVEN a learner that trained 3 batches, checkpointed after the 2nd and published v3, then was killed
    root = tmp_path / "crashed"
    _offer(_start(root, model_dir, [])[0], groups, range(6))
    marker = _marker(root, 2)["trainerState"]
    # the checkpoint counts the batch its step trained (one fewer sent a resumed learner waiting for trained groups)
    assert (marker["batches_settled"], marker["batch_versions"]) == (2, [0, 1, 2])
    assert json.loads((root / "runs" / RUN / "policy" / "LATEST.json").read_text())["version"] == 3

    # WHEN a new learner resumes and gets the groups not committed (batches 2 and 3)
    events: list[dict] = []
    s, store = _start(root, model_dir, events)
    ready = next(e for e in events if e["type"] == "ready")
    assert ready == {"type": "ready", "policyVersion": 2, "resumedFromStep": 2}
    _offer(s, groups, range(4, PLANNED))

    # THEN it retrained v3 (the same weights: not published again), published v4, and ended as the straight run
    assert s.done
    assert [e["version"] for e in events if e["type"] == "published"] == [4]
    assert s.state.policy_version == straight.state.policy_version == 4
    assert s.state.consumed_group_ids == straight.state.consumed_group_ids
    wa, wb = _weights(straight), _weights(s)
    assert all(torch.equal(wa[n], wb[n]) for n in wa)
    rows = {e["step"]: e["metrics"] for e in straight_events if e["type"] == "step"}
    for e in (e for e in events if e["type"] == "step"):
        assert e["metrics"]["pg_loss"] == rows[e["step"]]["pg_loss"]
        assert e["metrics"]["policy_version"] == rows[e["step"]]["policy_version"]
    assert json.loads(store.get_bytes(f"runs/{RUN}/learner/state.json"))["batches"]["versions"][-1] == 4


def test_a_version_cut_short_by_the_kill_is_published_whole_on_cpu(tmp_path):
    model_dir, vocab = _tiny(tmp_path)
    groups = _groups(vocab)
    straight, _ = _start(tmp_path / "straight", model_dir, [])
    _offer(straight, groups, range(PLANNED))

    # GIVEN a learner killed while it published v3: some of its files written, no manifest, LATEST still at v2
    root = tmp_path / "crashed"
    _offer(_start(root, model_dir, [])[0], groups, range(6))
    policy = root / "runs" / RUN / "policy"
    (policy / "v3" / "manifest.json").unlink()
    (policy / "v3" / "model.onnx.data").write_bytes(b"cut short")
    latest = json.loads((policy / "LATEST.json").read_text())
    (policy / "LATEST.json").write_text(
        json.dumps({**latest, "version": 2, "prefix": latest["prefix"][:-3] + "v2/"})
    )

    # WHEN a new learner resumes and trains the rest
    events: list[dict] = []
    s, _ = _start(root, model_dir, events)
    _offer(s, groups, range(4, PLANNED))

    # THEN v3 is published whole (it was never announced), and the run ends as the straight run
    assert [e["version"] for e in events if e["type"] == "published"] == [3, 4]
    manifest = json.loads((policy / "v3" / "manifest.json").read_text())
    assert manifest["files"]["model.onnx.data"]["bytes"] == (policy / "v3" / "model.onnx.data").stat().st_size
    wa, wb = _weights(straight), _weights(s)
    assert all(torch.equal(wa[n], wb[n]) for n in wa)


def test_a_replay_that_trains_other_weights_goes_on_under_new_numbers_on_cpu(tmp_path):
    model_dir, vocab = _tiny(tmp_path)
    groups = _groups(vocab)
    root = tmp_path / "run"
    _offer(_start(root, model_dir, [])[0], groups, range(6))
    # GIVEN v3 as a learner on another machine might have written it (its weights' digest differs)
    manifest_path = root / "runs" / RUN / "policy" / "v3" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["model.onnx.data"]["sha256"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest))

    # WHEN the resumed learner trains step 3 again
    events: list[dict] = []
    s, _ = _start(root, model_dir, events)
    _offer(s, groups, range(4, PLANNED))

    # THEN its step-3 weights go out as v4 (v3 is never rewritten), the next as v5, and the run completes
    assert [e["version"] for e in events if e["type"] == "published"] == [4, 5]
    assert s.done and s.state.consumed_group_ids == [f"e0-p{p}" for p in range(PLANNED)]
    assert s.versions.lineage.to_json() == [[4, 3]]


def test_an_asynchronous_resume_republishes_and_drops_no_group_for_the_lost_versions_on_cpu(tmp_path):
    model_dir, vocab = _tiny(tmp_path)
    groups = _groups(vocab)
    root = tmp_path / "run"
    # GIVEN an asynchronous learner killed after step 3 (checkpoint at 2, v3 published)
    _offer(_start(root, model_dir, [], deterministic=False)[0], groups, range(6))

    # WHEN a new learner resumes: the checkpoint's weights (v2's) go out as v4
    events: list[dict] = []
    s, _ = _start(root, model_dir, events, deterministic=False)
    assert [e["version"] for e in events if e["type"] == "published"] == [4]
    assert _marker(root, 2)["trainerState"]["lineage"] == [[4, 2]]  # on record before anything trains
    # and it gets the uncommitted groups, sampled by v1 and v2 (3 and 2 versions behind v4 by number)
    _offer(s, groups, range(4, PLANNED))

    # THEN none is stale along the lineage (v4 is v2's weights): every group trained exactly once
    assert [e for e in events if e["type"] == "dropped"] == []
    assert s.done and s.state.consumed_group_ids == [f"e0-p{p}" for p in range(PLANNED)]
    assert s.state.groups_dropped == 0
