"""Graph variants against each other: prefill and group-decode speed of the `contrib` graph (concat and shared
cache buffers) relative to the `standard` graph of the same bundle weights, timed interleaved in one process.

    gpu-worker/.venv/bin/python -m toolrl_learner.export.bench_graph [--preset qwen2.5-0.5b]
        [--quantization none,int4] [--n 8] [--prompt-tokens 128] [--new-tokens 32] [--rounds 3] [--threads 2]
    gpu-worker/.venv/bin/python -m toolrl_learner.export.bench_graph --projections   (one projection per format)

Builds (once, under --workdir) the preset's random-weight model and its bundles, then prints a Markdown table:
per quantisation and graph, the median prefill time (batch 1, num_logits_to_keep = 1) and the median decode
step (G rows, one token each, cache tiled from the prefill), with the ratio to the standard graph measured in
the same round. The engine-level benchmark (tokens/s against transformers.js and the bandwidth bound) is
`bench/rollout`; this one isolates what the graph itself contributes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

MODES = (("standard", False), ("contrib", False), ("contrib", True))  # (variant, shared cache buffer)


def _session(bundle: Path, threads: int):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(str(bundle / "model.onnx"), so, providers=["CPUExecutionProvider"])


def _time_one(sess, cfg: dict, g: int, prompt: int, steps: int, shared: bool) -> tuple[float, float]:
    """(prefill seconds, median decode-step seconds)."""
    import onnxruntime as ort

    layers, hkv, d = cfg["num_hidden_layers"], cfg["num_key_value_heads"], cfg["head_dim"]
    names = [o.name for o in sess.get_outputs()]
    kv = [f"{i}.{t}" for i in range(layers) for t in ("key", "value")]
    ids = np.random.default_rng(0).integers(0, 1000, (1, prompt))
    feeds = {
        "input_ids": ids,
        "attention_mask": np.ones((1, prompt), np.int64),
        "position_ids": np.arange(prompt)[None],
        "num_logits_to_keep": np.array(1),
        **{f"past_key_values.{k}": np.zeros((1, hkv, 0, d), np.float32) for k in kv},
    }
    t0 = time.perf_counter()
    out = dict(zip(names, sess.run(None, feeds), strict=True))
    prefill = time.perf_counter() - t0
    step_times: list[float] = []
    bufs: dict[str, ort.OrtValue] = {}
    cache: dict[str, np.ndarray] = {}
    if shared:
        for k in kv:
            b = np.zeros((g, hkv, prompt + steps, d), np.float32)
            b[:, :, :prompt] = out[f"present.{k}"]
            bufs[k] = ort.OrtValue.ortvalue_from_numpy(b)
    else:
        cache = {f"past_key_values.{k}": np.repeat(out[f"present.{k}"], g, axis=0) for k in kv}
    for t in range(steps):
        total = prompt + t + 1
        step = {
            "input_ids": np.full((g, 1), 7),
            "attention_mask": np.ones((g, total), np.int64),
            "position_ids": np.full((g, 1), total - 1),
            "num_logits_to_keep": np.array(1),
        }
        if shared:
            io = sess.io_binding()
            for name, value in step.items():
                io.bind_cpu_input(name, value)
            for k, buf in bufs.items():
                io.bind_ortvalue_input(f"past_key_values.{k}", buf)
                io.bind_ortvalue_output(f"present.{k}", buf)
            io.bind_output("logits")
            t0 = time.perf_counter()
            sess.run_with_iobinding(io)
            step_times.append(time.perf_counter() - t0)
        else:
            t0 = time.perf_counter()
            res = dict(zip(names, sess.run(None, {**step, **cache}), strict=True))
            step_times.append(time.perf_counter() - t0)
            cache = {f"past_key_values.{k}": res[f"present.{k}"] for k in kv}
    return prefill, statistics.median(step_times[1:] or step_times)


def _projection_session(kind: str, n: int, k: int, threads: int, bits: int = 0, level: int = 0):
    """A one-node graph: fp32 Gemm(transB) or MatMulNBits (bits, accuracy_level) on a random [N, K] weight."""
    import onnxruntime as ort
    import torch
    from onnx import helper, numpy_helper

    from .onnx_builder import FLOAT, MS_DOMAIN, OPSET
    from .quantize import quantize_blockwise

    w = torch.randn(n, k, generator=torch.Generator().manual_seed(0)) * 0.05
    if kind == "gemm":
        inits = [numpy_helper.from_array(w.numpy(), "W")]
        node = helper.make_node("Gemm", ["A", "W"], ["Y"], transB=1)
    else:
        q = quantize_blockwise(w, bits, 32)
        inits = [numpy_helper.from_array(q.packed, "B"), numpy_helper.from_array(q.scales, "S")]
        if q.zero_points is not None:
            inits.append(numpy_helper.from_array(q.zero_points, "Z"))
        node = helper.make_node(
            "MatMulNBits",
            ["A", "B", "S"] + (["Z"] if q.zero_points is not None else []),
            ["Y"],
            domain=MS_DOMAIN,
            K=k,
            N=n,
            bits=bits,
            block_size=32,
            accuracy_level=level,
        )
    graph = helper.make_graph(
        [node],
        "projection",
        [helper.make_tensor_value_info("A", FLOAT, ["M", k])],
        [helper.make_tensor_value_info("Y", FLOAT, ["M", n])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS_DOMAIN, 1)]
    )
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def projections(n: int, k: int, threads: int, repeats: int = 21) -> None:
    """Median time of one projection per weight format and accuracy level, relative to the fp32 Gemm."""
    kinds = {
        "fp32 Gemm": ("gemm", 0, 0),
        "int4, accuracy_level 4": ("nbits", 4, 4),
        "int4, accuracy_level 0": ("nbits", 4, 0),
        "int8, accuracy_level 4": ("nbits", 8, 4),
        "int8, accuracy_level 0": ("nbits", 8, 0),
    }
    sessions = {
        name: _projection_session(kind, n, k, threads, bits, level)
        for name, (kind, bits, level) in kinds.items()
    }
    print(f"\none [{n}, {k}] projection, {threads} threads, {repeats} interleaved repeats (median)\n")
    print("| weights | rows | ms | vs fp32 Gemm |")
    print("|---|---|---|---|")
    for rows in (1, 8):
        a = np.random.default_rng(0).random((rows, k), dtype=np.float32)
        times: dict[str, list[float]] = {name: [] for name in sessions}
        for _ in range(repeats):
            for name, sess in sessions.items():
                t0 = time.perf_counter()
                sess.run(None, {"A": a})
                times[name].append(time.perf_counter() - t0)
        ratios = {
            name: statistics.median(x / g for x, g in zip(t, times["fp32 Gemm"], strict=True))
            for name, t in times.items()
        }
        for name, t in times.items():
            print(f"| {name} | {rows} | {statistics.median(t) * 1e3:.3g} | {ratios[name]:.2f}x |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m toolrl_learner.export.bench_graph", description=(__doc__ or "").partition("\n")[0]
    )
    p.add_argument(
        "--preset", default="qwen2.5-0.5b", help="tiny preset (or `tiny` for the quick-start model)"
    )
    p.add_argument("--quantization", default="none,int4")
    p.add_argument("--n", type=int, default=8, help="group size G (decode batch)")
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--projections",
        action="store_true",
        help="instead: one gate_proj-shaped projection in each weight format and accuracy level",
    )
    p.add_argument("--workdir", default=str(Path(__file__).resolve().parents[3] / ".cache" / "bench-graph"))
    args = p.parse_args(argv)
    if args.projections:
        from ..model.tiny import PRESETS

        shape = PRESETS.get(args.preset, {"intermediate_size": 4864, "hidden_size": 896})
        projections(shape["intermediate_size"], shape["hidden_size"], args.threads)
        return 0
    from ..model.tiny import TinySpec, build_tiny
    from .bundle import export_bundle

    work = Path(args.workdir) / args.preset
    model_dir = work / "model"
    if not (model_dir / "config.json").is_file():
        build_tiny(model_dir, TinySpec() if args.preset == "tiny" else TinySpec.from_preset(args.preset))
    cfg = json.loads((model_dir / "config.json").read_text())
    quants = args.quantization.split(",")
    sessions = {}
    for q in quants:
        for variant in ("standard", "contrib"):
            bundle = work / f"{variant}-{q}"
            if not (bundle / "manifest.json").is_file():
                export_bundle(model_dir, bundle, 0, q, variant=variant)
            sessions[(q, variant)] = _session(bundle, args.threads)
    for (_, variant), sess in sessions.items():  # warm-up: first runs allocate and prepack
        _time_one(sess, cfg, args.n, args.prompt_tokens, 2, variant == "contrib")
        _time_one(sess, cfg, args.n, args.prompt_tokens, 2, False)
    results: dict[tuple, list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for q in quants:
            for variant, shared in MODES:
                r = _time_one(
                    sessions[(q, variant)], cfg, args.n, args.prompt_tokens, args.new_tokens, shared
                )
                results.setdefault((q, variant, shared), []).append(r)
    load = os.getloadavg()[0]
    print(
        f"{args.preset}, G = {args.n}, {args.prompt_tokens}-token prompt, {args.new_tokens} decode steps, "
        f"{args.threads} threads, {args.rounds} rounds, load average {load:.1f} at the end\n"
    )
    print("| weights | graph | prefill s | vs standard | decode step ms | vs standard | decode tok/s |")
    print("|---|---|---|---|---|---|---|")
    for q in quants:
        base = results[(q, "standard", False)]
        for variant, shared in MODES:
            rs = results[(q, variant, shared)]
            pre = statistics.median(r[0] for r in rs)
            step = statistics.median(r[1] for r in rs)
            # Ratios per round (same round, same machine state), then their median.
            pre_ratio = statistics.median(r[0] / b[0] for r, b in zip(rs, base, strict=True))
            step_ratio = statistics.median(r[1] / b[1] for r, b in zip(rs, base, strict=True))
            name = variant + (" (shared cache buffer)" if shared else "")
            print(
                f"| {q} | {name} | {pre:.3g} | {pre_ratio:.2f}x | {step * 1e3:.3g} | {step_ratio:.2f}x | "
                f"{args.n / step:.1f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
