"""The decoder as an ONNX graph with standard operators and an Optimum-style KV cache (variant `standard`).

Inputs and outputs are named as Optimum and transformers.js name them, so onnxruntime-node, transformers.js and
Optimum's ORTModelForCausalLM can all drive it (see GRAPH.md):
    input_ids, attention_mask, position_ids, past_key_values.N.key|value, num_logits_to_keep
        ->  logits, present.N.key|value
The hidden state flows as a 2-D [batch*seq, hidden] tensor so every projection is one Gemm(transB=1) on the
Hugging Face [out, in] weight as stored in the checkpoint; quantised projections are MatMulNBits instead.

Public API:
    build_standard_graph(cfg, quant=None) -> GraphBuilder   (weights referenced by name, not yet attached)
"""

from __future__ import annotations

import numpy as np

from ..model.config import ModelConfig
from .graph_common import (
    QuantSpec,
    attention_inputs,
    declare_io,
    final_logits,
    layer_rest,
    rms_norm,
    rope_tables,
)
from .onnx_builder import BOOL, FLOAT, GraphBuilder


def build_standard_graph(cfg: ModelConfig, quant: QuantSpec | None = None) -> GraphBuilder:
    g = GraphBuilder()
    hq, hkv, d, hid = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.hidden_size
    rep = cfg.num_key_value_groups
    io = declare_io(g, cfg)
    ids, mask, pos, past, bs, b1 = io.ids, io.mask, io.pos, io.past, io.bs, io.b1

    # Dynamic sizes, computed once: B, S (from input_ids) and T = past + S (from attention_mask).
    s1 = g.op("Slice", [bs, g.const([1]), g.const([2])], name="/shape/s")  # [1]
    t1 = g.op("Slice", [g.op("Shape", [mask]), g.const([1]), g.const([2])], name="/shape/t")  # [1]
    q_shape = g.op("Concat", [bs, g.const([hq, d])], axis=0, name="/shape/q")  # [B, S, Hq, D]
    kv_shape = g.op("Concat", [bs, g.const([hkv, d])], axis=0, name="/shape/kv")  # [B, S, Hkv, D]
    grouped5 = g.op("Concat", [b1, g.const([hkv, rep]), s1, t1], axis=0, name="/shape/scores5")
    grouped4 = g.op("Concat", [b1, g.const([hkv, -1]), t1], axis=0, name="/shape/scores4")

    rope = rope_tables(g, cfg, pos)  # RoPE from the given positions

    # allowed[b, 0, 0, i, j]: key j is not padding and is not after query i (query i sits at T - S + i).
    t0 = g.op("Squeeze", [t1, g.const([0])])
    s0 = g.op("Squeeze", [s1, g.const([0])])
    kpos = g.op("Range", [g.const(0), t0, g.const(1)])  # [T]
    qpos = g.op("Range", [g.op("Sub", [t0, s0]), t0, g.const(1)])  # [S]
    causal = g.op(
        "LessOrEqual", [g.op("Unsqueeze", [kpos, g.const([0])]), g.op("Unsqueeze", [qpos, g.const([1])])]
    )  # [S, T]
    not_pad = g.op("Unsqueeze", [g.op("Cast", [mask], to=BOOL), g.const([1, 2, 3])])  # [B, 1, 1, 1, T]
    allowed = g.op("And", [causal, not_pad], name="/mask/allowed")  # [B, 1, 1, S, T]
    masked_value = g.const(np.finfo(np.float32).min, np.float32)
    scale = g.const(d**-0.5, np.float32)

    x = g.op("Gather", ["model.embed_tokens.weight", ids], axis=0)  # [B, S, H]
    x = g.op("Reshape", [x, g.const([-1, hid])], name="/embed/flat")  # [N, H]
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}"
        h = rms_norm(g, x, f"{p}.input_layernorm.weight", cfg.rms_norm_eps)
        q, k, v = attention_inputs(g, cfg, i, h, (q_shape, kv_shape), rope, quant)  # [B, heads, S, D]
        present_k = g.op("Concat", [past[i][0], k], axis=2, name=f"present.{i}.key")  # [B, Hkv, T, D]
        present_v = g.op("Concat", [past[i][1], v], axis=2, name=f"present.{i}.value")
        g.output(present_k, f"present.{i}.key", FLOAT, ["batch_size", hkv, "total_sequence_length", d])
        g.output(present_v, f"present.{i}.value", FLOAT, ["batch_size", hkv, "total_sequence_length", d])
        # Grouped-query attention without repeating K/V: the `rep` query heads of a KV head are stacked along
        # the sequence axis, so each KV head is one batched matmul.
        qg = g.op("Reshape", [g.op("Mul", [q, scale]), g.const([0, hkv, -1, d])])  # [B, Hkv, rep*S, D]
        kt = g.op("Transpose", [present_k], perm=[0, 1, 3, 2])  # [B, Hkv, D, T]
        scores = g.op("Reshape", [g.op("MatMul", [qg, kt]), grouped5])  # [B, Hkv, rep, S, T]
        scores = g.op("Where", [allowed, scores, masked_value])
        probs = g.op("Reshape", [g.op("Softmax", [scores], axis=-1), grouped4])  # [B, Hkv, rep*S, T]
        attn = g.op("MatMul", [probs, present_v])  # [B, Hkv, rep*S, D]
        x = layer_rest(g, cfg, i, x, attn, quant)
    final_logits(g, cfg, io, x, quant)
    return g
