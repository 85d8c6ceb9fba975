"""Old policy versions are deleted once nothing can need them (`trainer.keep_policy_versions: needed`, the default;
train/retention.py): after a run only v0, the validated versions, the checkpoints' versions, the final one and the
newest max_staleness + 2 are left, each still whole, in a folder store and in a bucket (whose later versions read
the graph from v0's folder); `all` keeps every one; and a deterministic run killed after its checkpoint still
replays the versions it had published, to the same weights as a run never killed."""

import json

import pytest
import torch
from remote_store import RemoteFolderStore

from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore, keys
from toolrl_learner.train.retention import plan
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import random_group

RUN = "r-keep"
BATCH = 2
STEPS = 10


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = build_tiny(
        tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    )
    return d, json.loads((d / "config.json").read_text())["vocab_size"]


def _config(model_dir, **trainer) -> dict:
    return {
        "model": {"path": str(model_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {
            "batch_prompts": BATCH,
            "micro_batch_tokens": 512,
            "max_staleness": 1,
            "deterministic": True,
            "publish_every": 1,
            "lr": 1e-3,
            **trainer,
        },
        "logging": {"tensorboard": False},
    }


def _store(root, bucket: bool):
    return RemoteFolderStore(root) if bucket else FolderBlobStore(root)


def _start(store, workdir, config, events=None) -> LearnerSession:
    run = {"config": config, "totals": {"groupsPlanned": STEPS * BATCH}}
    store.put_bytes(keys.run_json(RUN), json.dumps(run).encode())
    s = LearnerSession(
        store, RUN, emit=(events if events is not None else []).append, workdir=workdir, device="cpu"
    )
    s.start()
    return s


def _offer(s: LearnerSession, vocab: int, positions) -> None:
    for p in positions:
        # Sampled by the version the feeder pins a deterministic run's batch to (max_staleness 1).
        g = random_group(
            RUN, f"e0-p{p}", vocab=vocab, g=4, prompt_len=6, response_len=5, turns=1, seed=p,
            version=max(0, p // BATCH - 1),
        )  # fmt: skip
        g["position"] = p
        s.offer({"type": "group", "group": g})


def _versions(store) -> dict[int, set[str]]:
    """The files of each version folder in the store, by version."""
    out: dict[int, set[str]] = {}
    for key in store.list(keys.policies(RUN)):
        v = keys.parse_policy_version(RUN, key)
        if v is not None:
            out.setdefault(v, set()).add(key.rsplit("/", 1)[-1])
    return out


def _assert_whole(store, version: int) -> None:
    """Every file the version's manifest names is where the manifest says, at its size: the version loads."""
    manifest = json.loads(store.get_bytes(keys.policy_version(RUN, version) + "manifest.json"))
    for name, entry in manifest["files"].items():
        key = keys.policy_version(RUN, entry.get("version", version)) + name
        assert len(store.get_bytes(key)) == entry["bytes"], f"v{version}: {key}"


def _weights(s):
    return {n: p.detach().clone() for n, p in s.policy.named_trainable_parameters()}


def test_the_rule_keeps_what_rollouts_validation_checkpoints_and_a_resume_need():
    common = dict(checkpoint=8, pinned=[4, 8], eval_every=5, max_staleness=1, refs={})
    # v0, v5 and v10 validated, v4 and v8 checkpoints, v9-v11 the newest three; v12 is above LATEST (a cut-short
    # publish): left alone. v9..v11 > checkpoint; nothing in between is outside the window, so nothing retired.
    p = plan(range(13), latest=11, deterministic=True, **common)
    assert sorted(p.keep) == [0, 4, 5, 8, 9, 10, 11, 12]
    assert sorted(p.delete) == [1, 2, 3, 6, 7] and not p.retire
    # Past the newest checkpoint and out of the window: a deterministic run keeps the manifest (retire), an
    # asynchronous one (whose resume republishes) deletes it.
    p = plan(range(16), latest=15, deterministic=True, **common)
    assert sorted(p.retire) == [9, 11, 12] and 13 in p.keep
    async_plan = plan(range(16), latest=15, deterministic=False, **common)
    assert sorted(async_plan.delete) == [1, 2, 3, 6, 7, 9, 11, 12]
    # The newest checkpoint's version stays even when its checkpoint predates checkpoint_versions (none pinned).
    old = {**common, "checkpoint": 6, "pinned": []}
    assert 6 in plan(range(13), latest=11, deterministic=True, **old).keep
    # A bucket's v0 holds the graph of later versions, and v2's folder a file that v5 names: kept while v5 is.
    refs = {5: {0, 2}, 4: {0}, 2: {0}}
    p = plan(range(6), latest=5, checkpoint=5, pinned=[], eval_every=0, max_staleness=0, deterministic=False, refs=refs)  # fmt: skip
    assert sorted(p.keep) == [0, 2, 4, 5] and sorted(p.delete) == [1, 3]


@pytest.mark.parametrize("bucket", [False, True], ids=["folder", "bucket"])
def test_after_a_run_only_the_needed_versions_remain_each_whole_on_cpu(tmp_path, tiny, bucket):
    model_dir, vocab = tiny
    store = _store(tmp_path / "store", bucket)
    s = _start(store, tmp_path / "work", _config(model_dir, save_every=4, eval_every=5))
    _offer(s, vocab, range(STEPS * BATCH))
    assert s.done and s.state.policy_version == STEPS

    # v0; v5 and v10 (validated); v4, v8 and v10 (checkpoints; v10 the final one); v9 and v8 (the newest three)
    present = _versions(store)
    assert sorted(present) == [0, 4, 5, 8, 9, 10]
    for v in present:
        _assert_whole(store, v)
    if bucket:  # a later version uploads its weights only; the graph stays in v0's folder, which is kept
        assert present[10] == {"manifest.json", "model.onnx.data"}
    else:
        assert sorted(p.name for p in (tmp_path / "store" / "runs" / RUN / "policy").iterdir()) == [
            "LATEST.json", "v0", "v10", "v4", "v5", "v8", "v9"
        ]  # fmt: skip


def test_keep_policy_versions_all_keeps_every_version_on_cpu(tmp_path, tiny):
    model_dir, vocab = tiny
    store = FolderBlobStore(tmp_path / "store")
    s = _start(store, tmp_path / "work", _config(model_dir, save_every=4, keep_policy_versions="all"))
    _offer(s, vocab, range(STEPS * BATCH))
    assert s.done
    assert sorted(_versions(store)) == list(range(STEPS + 1))


@pytest.mark.parametrize("bucket", [False, True], ids=["folder", "bucket"])
def test_a_deterministic_resume_replays_versions_whose_weights_were_deleted_on_cpu(tmp_path, tiny, bucket):
    model_dir, vocab = tiny
    config = _config(model_dir, save_every=5)
    straight = _start(_store(tmp_path / "straight", bucket), tmp_path / "w0", config)
    _offer(straight, vocab, range(STEPS * BATCH))

    # GIVEN a learner killed after step 9: its checkpoint is at step 5 (v5), LATEST at v9
    store = _store(tmp_path / "crashed", bucket)
    _offer(_start(store, tmp_path / "w1", config), vocab, range(9 * BATCH))
    present = _versions(store)
    # v6 is past the checkpoint and out of the window (v7-v9): only its manifest is left, for the replay's check
    assert sorted(present) == [0, 5, 6, 7, 8, 9]
    assert present[6] == {"manifest.json"}

    # WHEN a new learner (another machine: its own workdir) resumes and gets the groups not committed
    events: list[dict] = []
    s = _start(store, tmp_path / "w2", config, events)
    assert s.state.step == 5
    _offer(s, vocab, range(5 * BATCH, STEPS * BATCH))

    # THEN it replayed v6-v9 (not published again), published v10, and ends as the run never killed
    assert s.done
    assert [e["version"] for e in events if e["type"] == "published"] == [10]
    assert s.versions.lineage.to_json() == []
    wa, wb = _weights(straight), _weights(s)
    assert all(torch.equal(wa[n], wb[n]) for n in wa)
    # and once its checkpoint at step 10 is complete the retired v6 is gone: v0, v5 and v10 (checkpoints), v8-v10
    assert sorted(_versions(store)) == [0, 5, 8, 9, 10]
    for v in _versions(store):
        _assert_whole(store, v)
