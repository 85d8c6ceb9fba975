"""The ONNX rollout bundle: onnxruntime's logits equal PyTorch's (prefill, cached decode, shared group prefix, left
padding) for Llama/Qwen2/Qwen3, the slots graph beside it (the engine's own cache: same logits, and a row's result
independent of the capacity and of its batch), the manifest, weights-only republish under the layout hash,
int8/int4."""

from __future__ import annotations

import hashlib
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from toolrl_learner.contracts import validate
from toolrl_learner.export.bundle import LayoutMismatchError, export_bundle, publish_weights
from toolrl_learner.export.cli import main as export_main
from toolrl_learner.export.quantize import dequantize, quantize_blockwise
from toolrl_learner.export.weights import ALIGN, QUANTIZED_LINEARS, layout_hash, layout_of_graph
from toolrl_learner.model.hf_io import load_pretrained
from toolrl_learner.model.modeling import pack
from toolrl_learner.model.tiny import TinySpec, build_tiny

ARCHS = {
    "qwen2": TinySpec(arch="qwen2", init_std=0.1, seed=1),
    "llama-llama3rope": TinySpec(arch="llama", num_kv_heads=1, init_std=0.1, seed=2),
    "qwen3": TinySpec(
        arch="qwen3", hidden_size=96, num_heads=4, head_dim=32, num_kv_heads=2, init_std=0.1, seed=3
    ),
}


def _model_dir(root: Path, name: str) -> Path:
    out = build_tiny(root / name, ARCHS[name])
    if name == "llama-llama3rope":
        cfg = json.loads((out / "config.json").read_text())
        cfg["rope_parameters"] = {
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 32,
        }
        (out / "config.json").write_text(json.dumps(cfg))
    return out


@pytest.fixture(
    scope="module", params=[(a, v) for a in sorted(ARCHS) for v in ("standard", "contrib")], ids=str
)
def exported(request, tmp_path_factory):
    arch, variant = request.param
    root = tmp_path_factory.mktemp(f"{arch}-{variant}")
    model_dir = _model_dir(root, arch)
    manifest = export_bundle(model_dir, root / "bundle", version=0, variant=variant)
    assert manifest["export"]["variant"] == variant
    return load_pretrained(model_dir).eval(), root / "bundle", manifest


def _session(bundle: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(bundle / "model.onnx"), providers=["CPUExecutionProvider"])


def _run(
    sess, model, ids: np.ndarray, mask: np.ndarray, pos: np.ndarray, past: dict | None = None, keep: int = 0
) -> dict:
    cfg = model.config
    if past is None:
        empty = np.zeros((ids.shape[0], cfg.num_key_value_heads, 0, cfg.head_dim), np.float32)
        past = {f"present.{i}.{kv}": empty for i in range(cfg.num_hidden_layers) for kv in ("key", "value")}
    feeds = {
        "input_ids": ids,
        "attention_mask": mask,
        "position_ids": pos,
        "num_logits_to_keep": np.array(keep),
    }
    feeds.update({k.replace("present", "past_key_values"): v for k, v in past.items() if k != "logits"})
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds), strict=True))


def _torch_logits(model, seq: list[int]) -> np.ndarray:
    with torch.no_grad():
        return model.forward_batch(torch.tensor([seq]))[0].numpy()


def test_graph_names_follow_optimum_on_cpu(exported):
    model, bundle, _ = exported
    sess, cfg = _session(bundle), model.config
    inputs = {i.name: (i.type, i.shape) for i in sess.get_inputs()}
    outputs = [o.name for o in sess.get_outputs()]
    layers = range(cfg.num_hidden_layers)
    assert list(inputs)[:3] == ["input_ids", "attention_mask", "position_ids"]
    assert list(inputs)[3:-1] == [f"past_key_values.{i}.{kv}" for i in layers for kv in ("key", "value")]
    assert list(inputs)[-1] == "num_logits_to_keep" and inputs["num_logits_to_keep"] == ("tensor(int64)", [])
    assert outputs == ["logits"] + [f"present.{i}.{kv}" for i in layers for kv in ("key", "value")]
    assert inputs["past_key_values.0.key"] == (
        "tensor(float)",
        ["batch_size", cfg.num_key_value_heads, "past_sequence_length", cfg.head_dim],
    )
    assert inputs["input_ids"] == ("tensor(int64)", ["batch_size", "sequence_length"])


def test_prefill_and_cached_decode_match_pytorch_on_cpu(exported):
    model, bundle, _ = exported
    sess = _session(bundle)
    rng = np.random.default_rng(0)
    seq = rng.integers(0, model.config.vocab_size, 40).tolist()
    ref = _torch_logits(model, seq)
    assert np.abs(ref).max() > 1.0, "logits too flat for the comparison to mean anything"

    full = _run(sess, model, np.array([seq]), np.ones((1, 40), np.int64), np.arange(40)[None])
    np.testing.assert_allclose(full["logits"][0], ref, atol=1e-4, rtol=1e-4)
    for keep in (1, 3):  # num_logits_to_keep: only the last k positions go through the lm_head
        last = _run(
            sess,
            model,
            np.array([seq, seq]),
            np.ones((2, 40), np.int64),
            np.tile(np.arange(40), (2, 1)),
            keep=keep,
        )
        assert last["logits"].shape == (2, keep, model.config.vocab_size)
        np.testing.assert_allclose(last["logits"][1], ref[-keep:], atol=1e-4, rtol=1e-4)

    out = _run(sess, model, np.array([seq[:25]]), np.ones((1, 25), np.int64), np.arange(25)[None])
    for t in range(25, 40):  # one token at a time on the growing cache
        out = _run(sess, model, np.array([[seq[t]]]), np.ones((1, t + 1), np.int64), np.array([[t]]), out)
        np.testing.assert_allclose(out["logits"][0, 0], ref[t], atol=1e-4, rtol=1e-4)
    assert out["present.0.key"].shape == (1, model.config.num_key_value_heads, 40, model.config.head_dim)


def test_group_decodes_on_a_shared_prompt_cache_on_cpu(exported):
    # Prefill the prompt once (batch 1), tile its cache to G = 3, decode three different continuations as a batch.
    model, bundle, _ = exported
    sess, g = _session(bundle), 3
    prompt = [5, 9, 200, 17, 3, 44]
    conts = [[10, 11, 12], [300, 2, 7], [60, 60, 60]]
    out = _run(sess, model, np.array([prompt]), np.ones((1, 6), np.int64), np.arange(6)[None])
    cache = {k: np.repeat(v, g, axis=0) for k, v in out.items() if k != "logits"}
    got = []
    for t in range(3):
        n = len(prompt) + t + 1
        ids = np.array([[c[t]] for c in conts])
        cache = _run(sess, model, ids, np.ones((g, n), np.int64), np.full((g, 1), n - 1), cache)
        got.append(cache["logits"][:, 0])
    for s, cont in enumerate(conts):
        ref = _torch_logits(model, prompt + cont)[len(prompt) :]
        np.testing.assert_allclose(np.stack([x[s] for x in got]), ref, atol=1e-4, rtol=1e-4)


def test_left_padded_batch_matches_unpadded_on_cpu(exported):
    model, bundle, manifest = exported
    if manifest["export"]["variant"] == "contrib":
        pytest.skip("the contrib graph takes unpadded rows (GroupQueryAttention reads lengths from the mask)")
    sess = _session(bundle)
    a, b = [7, 8, 9, 10, 11, 12], [40, 41, 42]
    ids = np.array([a, [0, 0, 0] + b])
    mask = np.array([[1] * 6, [0, 0, 0, 1, 1, 1]])
    pos = np.array([list(range(6)), [0, 0, 0, 0, 1, 2]])
    out = _run(sess, model, ids, mask, pos)
    assert np.isfinite(out["logits"]).all()  # fully masked padding rows stay finite
    np.testing.assert_allclose(out["logits"][0], _torch_logits(model, a), atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(out["logits"][1, 3:], _torch_logits(model, b), atol=1e-4, rtol=1e-4)
    # ... and keeps decoding with the padding in the mask.
    step_mask = np.concatenate([mask, np.ones((2, 1), np.int64)], axis=1)
    step = _run(sess, model, np.array([[13], [43]]), step_mask, np.array([[6], [3]]), out)
    np.testing.assert_allclose(step["logits"][1, 0], _torch_logits(model, b + [43])[-1], atol=1e-4, rtol=1e-4)


def _step_in_place(sess, bufs: dict, ids: list[list[int]], start: int) -> np.ndarray:
    """One call with past and present bound to the same buffers; returns logits [B, S, V]."""
    g, end = len(ids), start + len(ids[0])
    io = sess.io_binding()
    io.bind_cpu_input("input_ids", np.array(ids))
    io.bind_cpu_input("attention_mask", np.ones((g, end), np.int64))
    io.bind_cpu_input("position_ids", np.tile(np.arange(start, end), (g, 1)))
    io.bind_cpu_input("num_logits_to_keep", np.array(0))
    for name, buf in bufs.items():
        io.bind_ortvalue_input(f"past_key_values.{name}", buf)
        io.bind_ortvalue_output(f"present.{name}", buf)
    io.bind_output("logits")
    sess.run_with_iobinding(io)
    return io.get_outputs()[-1].numpy()


def test_contrib_graph_writes_a_shared_cache_buffer_in_place_on_cpu(exported):
    # Past and present bound to one preallocated [B, Hkv, M, D] buffer per layer: GroupQueryAttention appends
    # the new K/V at each row's length and the graph never copies the cache.
    model, bundle, manifest = exported
    if manifest["export"]["variant"] != "contrib":
        pytest.skip("standard graphs concatenate past and new K/V")
    cfg, sess, cap = model.config, _session(bundle), 24
    seqs = [[3, 1, 4, 1, 5, 9, 2, 6, 5, 3], [2, 7, 1, 8, 2, 8, 1, 8, 2, 8]]

    def buffers(batch: int) -> dict:
        shape = (batch, cfg.num_key_value_heads, cap, cfg.head_dim)
        layers = range(cfg.num_hidden_layers)
        return {
            f"{i}.{kv}": ort.OrtValue.ortvalue_from_numpy(np.zeros(shape, np.float32))
            for i in layers
            for kv in ("key", "value")
        }

    bufs = buffers(2)
    got = [_step_in_place(sess, bufs, [s[:6] for s in seqs], 0)]  # prefill 6 tokens of both rows
    for t in (6, 7):  # then a token at a time for the batch
        got.append(_step_in_place(sess, bufs, [[s[t]] for s in seqs], t))
    got = np.concatenate(got, axis=1)
    for row, seq in enumerate(seqs):
        np.testing.assert_allclose(got[row], _torch_logits(model, seq)[:8], atol=1e-4, rtol=1e-4)
    assert bufs["0.key"].numpy()[:, :, 8:].max() == 0  # nothing written past the 8 tokens
    # Several new tokens on a cache (a tool result's delta) need batch 1 in GroupQueryAttention's CPU kernel.
    row0 = buffers(1)
    for name, buf in bufs.items():
        row0[name] = ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(buf.numpy()[:1]))
    tail = _step_in_place(sess, row0, [seqs[0][8:10]], 8)
    np.testing.assert_allclose(tail[0], _torch_logits(model, seqs[0])[8:], atol=1e-4, rtol=1e-4)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_manifest_and_files_on_cpu(exported):
    model, bundle, manifest = exported
    cfg = model.config
    assert validate("bundle-manifest", json.loads((bundle / "manifest.json").read_text())) == manifest
    assert (
        manifest["numLayers"],
        manifest["numKeyValueHeads"],
        manifest["headDim"],
        manifest["vocabSize"],
    ) == (
        cfg.num_hidden_layers,
        cfg.num_key_value_heads,
        cfg.head_dim,
        cfg.vocab_size,
    )
    assert manifest["modelType"] == cfg.model_type and manifest["dtype"] == "fp32"
    assert set(manifest["files"]) == {
        "model.onnx",
        "model.slots.onnx",
        "model.onnx.data",
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
    }
    for name, f in manifest["files"].items():
        assert f == {"sha256": _sha(bundle / name), "bytes": (bundle / name).stat().st_size}, name
    assert manifest["eosTokenIds"] == [0, 2]  # <|endoftext|>, <|im_end|> in the tiny tokenizer
    layout = layout_of_graph(onnx.load(str(bundle / "model.onnx"), load_external_data=False))
    assert manifest["layoutHash"] == layout_hash(layout)
    assert all(e.offset % ALIGN == 0 for e in layout)
    n_weights = sum(1 for _ in model.parameters())
    assert len(layout) == n_weights  # every parameter once (a tied lm_head is the embedding)
    # The graph holds no weights; the contrib one carries GroupQueryAttention's cos/sin tables (2 x P x D/2 fp32).
    tables = (
        cfg.max_position_embeddings * cfg.head_dim * 4 if manifest["export"]["variant"] == "contrib" else 0
    )
    assert (bundle / "model.onnx").stat().st_size < 200_000 + tables
    slots = onnx.load(str(bundle / "model.slots.onnx"), load_external_data=False)
    assert layout_of_graph(slots) == layout  # the same weights file, read the same way


def _perturbed(model_dir: Path):
    """The policy after one optimizer step: same shapes, different values."""
    model = load_pretrained(model_dir).train()
    ids, pos, cu = pack([torch.arange(1, 30)])
    model(ids, pos, cu)[:-1].log_softmax(-1).gather(1, ids[1:, None]).sum().neg().backward()
    torch.optim.SGD(model.parameters(), lr=1.0).step()
    return model.eval()


def test_weights_only_republish_on_cpu(tmp_path):
    model_dir = _model_dir(tmp_path, "qwen2")
    v0 = export_bundle(model_dir, tmp_path / "v0", version=0)
    new = _perturbed(model_dir)
    v1 = publish_weights(new, tmp_path / "v1", version=1, graph_from=tmp_path / "v0")
    assert v1["version"] == 1 and v1["layoutHash"] == v0["layoutHash"]
    assert v1["files"]["model.onnx"] == v0["files"]["model.onnx"]  # the graph is byte-identical
    assert v1["files"]["tokenizer.json"] == v0["files"]["tokenizer.json"]
    assert v1["files"]["model.onnx.data"]["sha256"] != v0["files"]["model.onnx.data"]["sha256"]
    seq = list(range(3, 23))
    out = _run(
        _session(tmp_path / "v1"), new, np.array([seq]), np.ones((1, 20), np.int64), np.arange(20)[None]
    )
    np.testing.assert_allclose(out["logits"][0], _torch_logits(new, seq), atol=1e-4, rtol=1e-4)
    # In place (the same folder) works too, and export_bundle(graph_from=...) is the same operation.
    v2 = export_bundle(new, tmp_path / "v1", version=2, graph_from=tmp_path / "v1")
    assert v2["version"] == 2 and v2["files"]["model.onnx.data"] == v1["files"]["model.onnx.data"]
    assert (
        validate("bundle-manifest", json.loads((tmp_path / "v1" / "manifest.json").read_text()))["version"]
        == 2
    )


def test_republish_refuses_another_layout_on_cpu(tmp_path):
    model_dir = _model_dir(tmp_path, "qwen2")
    export_bundle(model_dir, tmp_path / "v0", version=0)
    other = load_pretrained(
        build_tiny(tmp_path / "wider", TinySpec(hidden_size=64, num_heads=2, num_kv_heads=1))
    )
    with pytest.raises(LayoutMismatchError, match="model config differs"):
        publish_weights(other, tmp_path / "v1", version=1, graph_from=tmp_path / "v0")
    assert not (tmp_path / "v1" / "manifest.json").exists()
    # Same config but a doctored manifest: the hash check itself must refuse.
    manifest = json.loads((tmp_path / "v0" / "manifest.json").read_text())
    manifest["layoutHash"] = "sha256:" + "0" * 64
    (tmp_path / "v0" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(LayoutMismatchError, match="do not match the layout"):
        publish_weights(load_pretrained(model_dir), tmp_path / "v2", version=1, graph_from=tmp_path / "v0")
    assert not (tmp_path / "v2" / "model.onnx.data").exists()


def test_int4_block_codes_by_hand_on_cpu():
    # One block of 16 weights -0.5, -0.4, ..., 1.0: lo = -0.5, hi = 1.0, scale = 1.5 / 15 = 0.1,
    # zero point = round(0.5 / 0.1) = 5, code_i = round(w_i / 0.1) + 5 = i. Byte j packs codes 2j (low nibble)
    # and 2j+1 (high nibble): 0x10, 0x32, 0x54, ... ; the zero-point byte packs 5 in its low nibble.
    w = (torch.arange(16, dtype=torch.float32) * 0.1 - 0.5)[None]
    q = quantize_blockwise(w, bits=4, block_size=16)
    assert q.packed.tolist() == [[[2 * j + 16 * (2 * j + 1) for j in range(8)]]]
    assert q.scales.tolist() == [[pytest.approx(0.1)]] and q.zero_points.tolist() == [[5]]
    torch.testing.assert_close(dequantize(q, 16), w, atol=1e-6, rtol=0)
    # int8 symmetric: scale = max|w| / 127 = 1/127, codes = round(w * 127) + 128.
    q8 = quantize_blockwise(w, bits=8, block_size=16)
    assert q8.zero_points is None and q8.packed[0, 0, 15] == 255 and q8.packed[0, 0, 5] == 128
    assert (dequantize(q8, 16) - w).abs().max() <= 0.5 / 127 + 1e-7


@pytest.mark.parametrize(
    "quantization,bits,variant", [("int8", 8, "standard"), ("int4", 4, "standard"), ("int4", 4, "contrib")]
)
def test_quantized_bundle_runs_the_dequantized_policy_on_cpu(tmp_path, quantization, bits, variant):
    model_dir = _model_dir(tmp_path, "qwen2")
    fp32 = export_bundle(model_dir, tmp_path / "fp32", version=0)
    opts = dict(version=0, quantization=quantization, variant=variant)
    exact = export_bundle(model_dir, tmp_path / "q0", accuracy_level=0, **opts)
    fast = export_bundle(model_dir, tmp_path / "q4", accuracy_level=4, **opts)
    assert exact["quantization"] == quantization and exact["export"]["accuracyLevel"] == 0
    data = lambda m: m["files"]["model.onnx.data"]["bytes"]  # noqa: E731
    assert data(exact) < data(fp32) and data(exact) == data(fast)
    # What the quantised graph computes is the model whose projections are the dequantised weights.
    model = load_pretrained(model_dir).eval()
    deq = load_pretrained(model_dir).eval()
    with torch.no_grad():
        for name, mod in deq.named_modules():
            if name.rsplit(".", 1)[-1] in QUANTIZED_LINEARS:
                mod.weight.copy_(dequantize(quantize_blockwise(mod.weight, bits, 32), mod.weight.shape[1]))
        # The lm_head gets its own quantised copy of the tied table; the embedding lookup stays fp32.
        table = deq.model.embed_tokens.weight
        deq.lm_head.weight = torch.nn.Parameter(
            dequantize(quantize_blockwise(table, bits, 32), table.shape[1])
        )
    seq = list(range(40, 72))
    feeds = (np.array([seq]), np.ones((1, 32), np.int64), np.arange(32)[None])
    want = _torch_logits(deq, seq)
    assert np.abs(want - _torch_logits(model, seq)).max() > 1e-3  # quantisation does change the policy
    # accuracy_level 0 multiplies fp32 activations by the dequantised weights: PyTorch parity.
    np.testing.assert_allclose(_run(_session(tmp_path / "q0"), model, *feeds)["logits"][0], want, atol=2e-4)
    # accuracy_level 4 also rounds activations to int8 per block: close, not equal (logits span ~[-4, 4]).
    np.testing.assert_allclose(_run(_session(tmp_path / "q4"), model, *feeds)["logits"][0], want, atol=0.3)
    # Republishing a quantised bundle keeps its layout.
    again = publish_weights(_perturbed(model_dir), tmp_path / "q1", version=1, graph_from=tmp_path / "q4")
    assert again["layoutHash"] == fast["layoutHash"] and again["quantization"] == quantization


def test_cli_export_and_republish_on_cpu(tmp_path):
    model_dir = _model_dir(tmp_path, "qwen2")

    def run(args):
        buf = io.StringIO()
        with redirect_stdout(buf):
            assert export_main(args) == 0
        return json.loads(buf.getvalue())

    first = run(["--model", str(model_dir), "--out", str(tmp_path / "b0")])
    assert first["version"] == 0 and not first["weightsOnly"] and first["layoutHash"].startswith("sha256:")
    again = run(
        [
            "--model",
            str(model_dir),
            "--out",
            str(tmp_path / "b1"),
            "--version",
            "1",
            "--graph-from",
            str(tmp_path / "b0"),
        ]
    )
    assert again["weightsOnly"] and again["layoutHash"] == first["layoutHash"] and again["version"] == 1


def _slots_run(
    sess, cfg, ids: list[list[int]], lengths: list[int], past: list[np.ndarray], keep: int = 1
) -> dict:
    """past: per layer and K/V, [B, Hkv, C, D] with row b's first lengths[b] slots its cache."""
    feeds = {
        "input_ids": np.array(ids, np.int64),
        "past_lengths": np.array(lengths, np.int64),
        "num_logits_to_keep": np.array(keep),
    }
    for i in range(cfg.num_hidden_layers):
        feeds[f"past_key_values.{i}.key"], feeds[f"past_key_values.{i}.value"] = past[2 * i], past[2 * i + 1]
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds), strict=True))


def _slots(cfg, rows: list[list[np.ndarray]], capacity: int) -> list[np.ndarray]:
    """A batch cache of `capacity` slots from per-row caches (each a list of [Hkv, T, D] per layer and K/V)."""
    out = []
    for j in range(2 * cfg.num_hidden_layers):
        buf = np.zeros((len(rows), cfg.num_key_value_heads, capacity, cfg.head_dim), np.float32)
        for b, row in enumerate(rows):
            buf[b, :, : row[j].shape[1]] = row[j]
        out.append(buf)
    return out


def test_slots_graph_matches_pytorch_and_its_rows_do_not_depend_on_the_batch_on_cpu(exported):
    """The engine's graph (graph_slots.py): prefill and decode on a caller-kept cache give PyTorch's logits, and a row's
    logits are bit for bit the same at any capacity that is a multiple of the engine's chunk and beside any other
    rows, which is what lets concurrent rollouts share decode steps without changing a sampled token."""
    model, bundle, _ = exported
    cfg = model.config
    sess = ort.InferenceSession(str(bundle / "model.slots.onnx"), providers=["CPUExecutionProvider"])
    kv = [f"new_key_values.{i}.{x}" for i in range(cfg.num_hidden_layers) for x in ("key", "value")]
    rng = np.random.default_rng(4)
    seqs = [rng.integers(0, cfg.vocab_size, n).tolist() for n in (40, 23, 57)]
    caches, firsts = [], []
    for seq in seqs:
        ref = _torch_logits(model, seq)
        # Prefill of all but the last token on an empty cache (one ignored slot), then the last one decoded.
        pre = _slots_run(
            sess,
            cfg,
            [seq[:-1]],
            [0],
            _slots(cfg, [[np.zeros((cfg.num_key_value_heads, 0, cfg.head_dim), np.float32)] * len(kv)], 1),
            keep=0,
        )
        np.testing.assert_allclose(pre["logits"][0], ref[:-1], atol=1e-4, rtol=1e-4)
        cache = [pre[n][0] for n in kv]
        step = _slots_run(sess, cfg, [[seq[-1]]], [len(seq) - 1], _slots(cfg, [cache], 64))
        np.testing.assert_allclose(step["logits"][0, 0], ref[-1], atol=1e-4, rtol=1e-4)
        caches.append(cache)
        firsts.append(seq[-1])
    alone = [
        _slots_run(sess, cfg, [[firsts[b]]], [len(seqs[b]) - 1], _slots(cfg, [caches[b]], 64))["logits"][0]
        for b in range(len(seqs))
    ]
    for capacity in (64, 128, 192):
        for order in ([0, 1, 2], [2, 0], [1]):
            out = _slots_run(
                sess,
                cfg,
                [[firsts[b]] for b in order],
                [len(seqs[b]) - 1 for b in order],
                _slots(cfg, [caches[b] for b in order], capacity),
            )
            for r, b in enumerate(order):
                assert np.array_equal(out["logits"][r], alone[b]), (capacity, order, b)
