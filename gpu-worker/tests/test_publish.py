"""Publishing policy versions: LATEST moves only after a version is complete (an upload that fails
halfway leaves it where it was, and the next attempt completes the version), and the session exports
the full graph once, then weights only - also after a restart, from the graph of the version LATEST names."""

import json

import pytest
import torch
from remote_store import RemoteFolderStore, UploadFailed

from toolrl_learner.contracts import validate
from toolrl_learner.export import bundle
from toolrl_learner.model.hf_io import load_pretrained
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.train.publish import Publisher
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import group, trajectory

RUN = "r-pub"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(
        tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    )


@pytest.fixture()
def exports(monkeypatch):
    """Which export each version went through (the real functions run; this only records the calls)."""
    calls = []
    full, weights = bundle.export_bundle, bundle.publish_weights

    def export_bundle(model, out, version, *a, **kw):
        calls.append(("graph", version))
        return full(model, out, version, *a, **kw)

    def publish_weights(model, out, version, graph_from):
        calls.append(("weights", version))
        return weights(model, out, version, graph_from=graph_from)

    monkeypatch.setattr(bundle, "export_bundle", export_bundle)
    monkeypatch.setattr(bundle, "publish_weights", publish_weights)
    return calls


def _latest(root) -> dict:
    return json.loads((root / f"runs/{RUN}/policy/LATEST.json").read_text())


def _fail_nth_upload_of(prefix: str, n: int):
    seen = []

    def fail(key: str) -> bool:
        if key.startswith(prefix):
            seen.append(key)
        return len(seen) == n and key.startswith(prefix)

    return fail


def _stored_files(store, manifest: dict) -> dict[str, str]:
    """Each file of a published version, by name: the key it is read from (its own folder, or the one it names)."""
    return {
        name: f"runs/{RUN}/policy/v{entry.get('version', manifest['version'])}/{name}"
        for name, entry in manifest["files"].items()
    }


def test_latest_stays_when_an_upload_fails_halfway_on_cpu(tiny_dir, tmp_path):
    v0p, v1 = f"runs/{RUN}/policy/v0/", f"runs/{RUN}/policy/v1/"
    store = RemoteFolderStore(tmp_path / "bucket", fail_put_file=_fail_nth_upload_of(v0p, 3))
    publisher = Publisher(store, RUN, tmp_path / "work", tiny_dir)
    model = load_pretrained(tiny_dir)
    with pytest.raises(UploadFailed):
        publisher.publish(model, 0)
    # a version's files go up at once: the third failed (the others may be up), so no manifest and no LATEST
    assert 2 <= len([k for k in store.uploads if k.startswith(v0p)])
    assert not store.exists(v0p + "manifest.json") and not store.exists(f"runs/{RUN}/policy/LATEST.json")
    store.fail_put_file = None
    v0 = publisher.publish(model, 0)
    with torch.no_grad():
        model.model.norm.weight.add_(0.5)  # the next policy: same layout, other weights
    store.fail_put_file = _fail_nth_upload_of(v1, 1)
    with pytest.raises(UploadFailed):
        publisher.publish(model, 1)
    # v1 uploads only its weights; that upload failed: no manifest, and LATEST still names v0 by its hash
    assert not store.exists(v1 + "manifest.json")
    assert _latest(tmp_path / "bucket") == v0 and v0["version"] == 0
    # the next attempt (the failure was transient) completes v1, then moves LATEST
    store.fail_put_file = None
    p1 = publisher.publish(model, 1)
    assert _latest(tmp_path / "bucket") == p1 and p1["version"] == 1
    manifest = validate("bundle-manifest", json.loads(store.get_bytes(v1 + "manifest.json")))
    assert all(store.exists(k) for k in _stored_files(store, manifest).values())


def test_a_version_in_a_bucket_uploads_only_the_files_that_changed_on_cpu(tiny_dir, tmp_path):
    # v1 and v2 change only the weights: each uploads its weights file and its manifest, which names v0 as where the
    # graph, config and tokenizer are; every file it lists is stored there, with the digest it lists
    import hashlib

    store = RemoteFolderStore(tmp_path / "bucket")
    publisher = Publisher(store, RUN, tmp_path / "work", tiny_dir)
    model = load_pretrained(tiny_dir)
    publisher.publish(model, 0)
    m0 = json.loads(store.get_bytes(f"runs/{RUN}/policy/v0/manifest.json"))
    for v in (1, 2):
        with torch.no_grad():
            model.model.norm.weight.add_(0.5)
        before = len(store.uploads)
        publisher.publish(model, v)
        prefix = f"runs/{RUN}/policy/v{v}/"
        assert store.uploads[before:] == [prefix + "model.onnx.data"]
        m = validate("bundle-manifest", json.loads(store.get_bytes(prefix + "manifest.json")))
        assert set(m["files"]) == set(m0["files"])
        for name, key in _stored_files(store, m).items():
            assert hashlib.sha256(store.get_bytes(key)).hexdigest() == m["files"][name]["sha256"], name
            assert key == (prefix + name if name == "model.onnx.data" else f"runs/{RUN}/policy/v0/{name}")
    # a learner restarted on another machine takes the graph from where v2's manifest says, and v3 names v0 too
    again = Publisher(store, RUN, tmp_path / "work2", tiny_dir)
    with torch.no_grad():
        model.model.norm.weight.add_(0.5)
    again.publish(model, 3)
    m3 = json.loads(store.get_bytes(f"runs/{RUN}/policy/v3/manifest.json"))
    assert {n: e.get("version") for n, e in m3["files"].items()} == {
        n: (None if n == "model.onnx.data" else 0) for n in m0["files"]
    }


def _config(tiny_dir) -> dict:
    return {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"batch_prompts": 1, "save_every": 1, "micro_batch_tokens": 256, "max_staleness": 10},
        "logging": {"tensorboard": False},
    }


def _g(i: int) -> dict:
    trajs = [trajectory([5, 6], [[10 + i, 11 + k]], float(k % 2)) for k in range(4)]
    return {"type": "group", "group": group(RUN, f"e0-p{i}", trajs)}


def test_session_publishes_weights_only_after_v0_and_survives_a_failed_publish_on_cpu(
    tiny_dir, tmp_path, exports
):
    root = tmp_path / "bucket"
    v2 = f"runs/{RUN}/policy/v2/"
    store = RemoteFolderStore(root, fail_put_file=_fail_nth_upload_of(v2, 1))
    store.put_bytes(f"runs/{RUN}/run.json", json.dumps({"config": _config(tiny_dir)}).encode())
    events = []
    s = LearnerSession(store, RUN, emit=events.append, workdir=tmp_path / "work1", device="cpu")
    s.start()
    s.offer(_g(0))  # step 1 -> v1, checkpoint step-1
    with pytest.raises(UploadFailed):
        s.offer(_g(1))  # step 2 trains, its publish dies halfway: the learner crashes
    assert [e["version"] for e in events if e["type"] == "published"] == [0, 1]
    assert _latest(root)["version"] == 1 and not store.exists(v2 + "manifest.json")
    assert exports == [("graph", 0), ("weights", 1), ("weights", 2)]

    # a restart on another machine (empty workdir) resumes at step 1 / v1 and redoes step 2; the graph
    # comes from v1's bundle in the store, so v2 is again weights only
    store.fail_put_file = None
    events = []
    s = LearnerSession(store, RUN, emit=events.append, workdir=tmp_path / "work2", device="cpu")
    assert s.start() == {"type": "ready", "policyVersion": 1, "resumedFromStep": 1}
    s.offer(_g(1))
    assert [e["version"] for e in events if e["type"] == "published"] == [2]
    assert exports[3:] == [("weights", 2)]
    latest = _latest(root)
    assert latest["version"] == 2
    m0, m2 = (json.loads(store.get_bytes(f"runs/{RUN}/policy/v{v}/manifest.json")) for v in (0, 2))
    # the same graph, not uploaded again: v2 names v0 as where it is
    assert m2["files"]["model.onnx"] == {**m0["files"]["model.onnx"], "version": 0}
    assert m2["files"]["model.onnx.data"] != m0["files"]["model.onnx.data"]  # trained weights


def test_session_quantizes_the_bundle_with_the_configured_block_size_on_cpu(tiny_dir, tmp_path, exports):
    # model.rollout_quantization_block_size reaches the export: the tiny model's projections read 32 inputs, so
    # blocks of 16 give two scales per output row where the default 32 gives one; v1 (weights only) keeps them
    root = tmp_path / "bucket"
    config = _config(tiny_dir)
    config["model"] |= {"rollout_quantization": "int4", "rollout_quantization_block_size": 16}
    store = RemoteFolderStore(root)
    store.put_bytes(f"runs/{RUN}/run.json", json.dumps({"config": config}).encode())
    s = LearnerSession(store, RUN, emit=lambda e: None, workdir=tmp_path / "work", device="cpu")
    s.start()
    s.offer(_g(0))
    assert exports == [("graph", 0), ("weights", 1)]
    for v in (0, 1):
        m = json.loads(store.get_bytes(f"runs/{RUN}/policy/v{v}/manifest.json"))
        assert (m["quantization"], m["export"]["blockSize"]) == ("int4", 16)
    import onnx

    graph = onnx.load(root / f"runs/{RUN}/policy/v0/model.onnx", load_external_data=False).graph
    blocks = {
        a.i for n in graph.node if n.op_type == "MatMulNBits" for a in n.attribute if a.name == "block_size"
    }
    assert blocks == {16}


def test_a_weights_only_version_links_the_unchanged_files_and_keeps_their_digests_on_cpu(tiny_dir, tmp_path):
    # v1 changes only the weights: its graph, config and tokenizer are hard links to v0's (no copy), their manifest
    # entries are v0's (no rehash) and still the files' true digests; the weights file is new and hashed.
    import hashlib

    model = load_pretrained(tiny_dir, dtype=torch.float32)
    v0, v1 = tmp_path / "v0", tmp_path / "v1"
    m0 = bundle.export_bundle(model, v0, 0, tokenizer_dir=tiny_dir)
    with torch.no_grad():
        next(model.parameters()).add_(0.5)
    m1 = bundle.publish_weights(model, v1, 1, graph_from=v0)
    validate("bundle-manifest", m1)
    for name, entry in m1["files"].items():
        assert entry["sha256"] == hashlib.sha256((v1 / name).read_bytes()).hexdigest(), name
        if name != "model.onnx.data":
            assert (v1 / name).stat().st_ino == (v0 / name).stat().st_ino, name
            assert entry == m0["files"][name]
    assert m1["files"]["model.onnx.data"]["sha256"] != m0["files"]["model.onnx.data"]["sha256"]
