"""The bundle's weights file, `model.onnx.data`: which tensors, in what order, at which offsets, and its layout hash.

The graph references every weight by (name, offset, length) in this one file. A new policy version rewrites
only this file; it is valid for the old graph exactly when its layout (names, dtypes, shapes, offsets) is the
same, which `layout_hash` condenses into one string stored in the manifest.

Public API:
    TensorEntry(name, array)                      one tensor to write (numpy, C-contiguous)
    bundle_tensors(model, quantization, block_size) -> list[TensorEntry]   the policy's weights, in file order
    write_data_file(entries, path) -> list[LayoutEntry]                   aligned writes, returns the layout
    layout_hash(layout) -> str                                           "sha256:<hex>"
    layout_of_graph(model_proto) -> list[LayoutEntry]                    read back from a graph's initializers
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import torch

from .quantize import quantize_blockwise

DATA_FILE = "model.onnx.data"
# Page-aligned offsets let onnxruntime memory-map large tensors instead of copying them.
ALIGN = 4096
_ONNX_DTYPES = {
    np.dtype(np.float32): onnx.TensorProto.FLOAT,
    np.dtype(np.float16): onnx.TensorProto.FLOAT16,
    np.dtype(np.uint8): onnx.TensorProto.UINT8,
    np.dtype(np.int64): onnx.TensorProto.INT64,
}
# Linear layers whose weights int8/int4 quantisation replaces (MatMulNBits); norms, biases and the embedding
# table (read by Gather) stay fp32.
QUANTIZED_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class TensorEntry:
    name: str
    array: np.ndarray


@dataclass(frozen=True)
class LayoutEntry:
    name: str
    dtype: int  # onnx.TensorProto data type
    shape: tuple[int, ...]
    offset: int
    length: int

    def as_list(self) -> list:
        return [self.name, self.dtype, list(self.shape), self.offset, self.length]


def _np(t: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(t.detach().to("cpu", torch.float32).numpy())


def layer_linear_names(cfg, i: int) -> list[str]:
    p = f"model.layers.{i}"
    return [
        f"{p}.self_attn.q_proj",
        f"{p}.self_attn.k_proj",
        f"{p}.self_attn.v_proj",
        f"{p}.self_attn.o_proj",
        f"{p}.mlp.gate_proj",
        f"{p}.mlp.up_proj",
        f"{p}.mlp.down_proj",
    ]


def bundle_tensors(
    state: Mapping[str, torch.Tensor], cfg, quantization: str = "none", block_size: int = 32
) -> list[TensorEntry]:
    """The exported tensors in file order, named as the graph names its initializers.

    Unquantised linear weights keep Hugging Face's [out, in] layout (the graph multiplies with Gemm transB=1), so
    a republish is a plain dump of the state dict. Quantised ones become `<linear>.weight_q` (uint8 blocks),
    `<linear>.weight_scales` and, for int4, `<linear>.weight_zero_points` (MatMulNBits' inputs, see quantize.py).
    Unquantised, the lm_head of a tied model is the embedding table itself and is written once; quantised, the
    lm_head always has its own blocks.
    """
    if quantization not in ("none", "int8", "int4"):
        raise ValueError(f"quantization must be none, int8 or int4, got {quantization!r}")
    bits = {"none": 0, "int8": 8, "int4": 4}[quantization]
    out: list[TensorEntry] = []

    def add(name: str) -> None:
        if name not in state:
            raise KeyError(f"state dict has no {name!r}")
        out.append(TensorEntry(name, _np(state[name])))

    def add_linear(prefix: str, has_bias: bool, weight: str | None = None) -> None:
        if bits:
            q = quantize_blockwise(state[weight or f"{prefix}.weight"], bits, block_size)
            out.append(TensorEntry(f"{prefix}.weight_q", q.packed))
            out.append(TensorEntry(f"{prefix}.weight_scales", q.scales))
            if q.zero_points is not None:
                out.append(TensorEntry(f"{prefix}.weight_zero_points", q.zero_points))
        else:
            add(f"{prefix}.weight")
        if has_bias:
            add(f"{prefix}.bias")

    add("model.embed_tokens.weight")
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}"
        add(f"{p}.input_layernorm.weight")
        q, k, v, o, gate, up, down = layer_linear_names(cfg, i)
        for name in (q, k, v):
            add_linear(name, cfg.qkv_bias)
        if cfg.qk_norm:
            add(f"{p}.self_attn.q_norm.weight")
            add(f"{p}.self_attn.k_norm.weight")
        add_linear(o, cfg.o_bias)
        add(f"{p}.post_attention_layernorm.weight")
        for name in (gate, up, down):
            add_linear(name, cfg.mlp_bias)
    add("model.norm.weight")
    if bits:
        # The lm_head is the largest projection (a third of Qwen2.5-0.5B's weights); quantised bundles give it
        # its own blocks, even when tied: the Gather keeps reading the fp32 embedding (a row per token).
        add_linear(
            "lm_head", False, "model.embed_tokens.weight" if cfg.tie_word_embeddings else "lm_head.weight"
        )
    elif not cfg.tie_word_embeddings:
        add("lm_head.weight")
    return out


def write_data_file(entries: list[TensorEntry], path: str | Path) -> list[LayoutEntry]:
    layout: list[LayoutEntry] = []
    offset = 0
    with open(path, "wb") as f:
        for e in entries:
            a = np.ascontiguousarray(e.array)
            if a.dtype not in _ONNX_DTYPES:
                raise TypeError(f"{e.name}: cannot export dtype {a.dtype}")
            pad = (-offset) % ALIGN
            if pad:
                f.write(b"\0" * pad)
                offset += pad
            data = a.tobytes()
            f.write(data)
            layout.append(LayoutEntry(e.name, _ONNX_DTYPES[a.dtype], tuple(a.shape), offset, len(data)))
            offset += len(data)
    return layout


def layout_hash(layout: list[LayoutEntry]) -> str:
    canon = json.dumps([DATA_FILE, [e.as_list() for e in layout]], separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canon.encode()).hexdigest()


def external_initializer(entry: LayoutEntry) -> onnx.TensorProto:
    t = onnx.TensorProto()
    t.name = entry.name
    t.data_type = entry.dtype
    t.dims.extend(entry.shape)
    t.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", DATA_FILE), ("offset", str(entry.offset)), ("length", str(entry.length))):
        kv = t.external_data.add()
        kv.key, kv.value = key, value
    return t


def layout_of_graph(model: onnx.ModelProto) -> list[LayoutEntry]:
    """The external initializers of a graph (loaded without its data), in offset order."""
    out = []
    for t in model.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        kv = {e.key: e.value for e in t.external_data}
        if kv.get("location") != DATA_FILE:
            raise ValueError(f"initializer {t.name} lives in {kv.get('location')!r}, not {DATA_FILE}")
        out.append(LayoutEntry(t.name, t.data_type, tuple(t.dims), int(kv["offset"]), int(kv["length"])))
    return sorted(out, key=lambda e: e.offset)
