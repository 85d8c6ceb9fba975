"""The decoder with the KV cache kept by its caller (variant `slots`): the graph reads the cache as an input and
returns only the new tokens' keys and values, so a decode step never copies the cache.

The standard graph returns `present` = past + new: one copy of the whole cache inside the graph (`Concat`) and,
under onnxruntime-node, a second into a fresh JS buffer for every output. Here the caller keeps one buffer per
layer with a capacity of C slots per row, feeds it as is (row b's first `past_lengths[b]` slots are its tokens, the
rest are ignored), and writes the returned keys and values of the new tokens into the next slots itself.

    input_ids [B, S], past_lengths [B], past_key_values.N.key|value [B, Hkv, C, D], num_logits_to_keep []
        ->  logits [B, K, V], new_key_values.N.key|value [B, Hkv, S, D]

New token j of row b sits at position past_lengths[b] + j and attends to the row's past slots and to new tokens
0..j. The softmax runs in two parts (past slots, new tokens) joined by their common max, never over a
concatenation: a row's real slots are always at the same indices and its ignored slots contribute exact zeros, so
its logits do not depend on C, i.e. on which other rows share the batch (test_export_on_cpu.py checks it
bit for bit). Weights, names of initializers and the weights file are the standard graph's (the same layoutHash).

Public API:
    build_slots_graph(cfg, quant=None) -> GraphBuilder
"""

from __future__ import annotations

import numpy as np

from ..model.config import ModelConfig
from .graph_common import (
    Io,
    QuantSpec,
    attention_inputs,
    final_logits,
    layer_rest,
    rms_norm,
    rope_tables,
)
from .onnx_builder import FLOAT, INT64, GraphBuilder

SLOTS_GRAPH_FILE = "model.slots.onnx"


def build_slots_graph(cfg: ModelConfig, quant: QuantSpec | None = None) -> GraphBuilder:
    g = GraphBuilder()
    hq, hkv, d, hid = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.hidden_size
    rep = cfg.num_key_value_groups
    ids = g.input("input_ids", INT64, ["batch_size", "sequence_length"])
    lengths = g.input("past_lengths", INT64, ["batch_size"])
    past = []
    for i in range(cfg.num_hidden_layers):
        shape = ["batch_size", hkv, "capacity", d]
        k = g.input(f"past_key_values.{i}.key", FLOAT, shape)
        past.append((k, g.input(f"past_key_values.{i}.value", FLOAT, shape)))
    keep = g.input("num_logits_to_keep", INT64, [])
    bs = g.op("Shape", [ids], name="/shape/bs")
    b1 = g.op("Slice", [bs, g.const([0]), g.const([1])], name="/shape/b")
    io = Io(ids=ids, mask="", pos="", keep=keep, past=past, bs=bs, b1=b1)

    s1 = g.op("Slice", [bs, g.const([1]), g.const([2])], name="/shape/s")  # [1]
    c1 = g.op("Slice", [g.op("Shape", [past[0][0]]), g.const([2]), g.const([3])], name="/shape/c")  # [1]
    q_shape = g.op("Concat", [bs, g.const([hq, d])], axis=0, name="/shape/q")  # [B, S, Hq, D]
    kv_shape = g.op("Concat", [bs, g.const([hkv, d])], axis=0, name="/shape/kv")  # [B, S, Hkv, D]
    past5 = g.op("Concat", [b1, g.const([hkv, rep]), s1, c1], axis=0, name="/shape/past5")
    new5 = g.op("Concat", [b1, g.const([hkv, rep]), s1, s1], axis=0, name="/shape/new5")
    flat4 = g.op("Concat", [b1, g.const([hkv, -1]), s1], axis=0, name="/shape/flat4")  # [B, Hkv, rep*S, S]
    flatc = g.op("Concat", [b1, g.const([hkv, -1]), c1], axis=0, name="/shape/flatc")  # [B, Hkv, rep*S, C]

    # Positions of the new tokens: past_lengths[b] + j.
    s0 = g.op("Squeeze", [s1, g.const([0])])
    steps = g.op("Range", [g.const(0), s0, g.const(1)])  # [S]
    pos = g.op("Add", [g.op("Unsqueeze", [lengths, g.const([1])]), steps], name="/positions")  # [B, S]
    rope = rope_tables(g, cfg, pos)

    # past_ok[b, 0, 0, 0, c]: slot c holds one of row b's tokens. new_ok[i, j]: new token j is not after i.
    c0 = g.op("Squeeze", [c1, g.const([0])])
    slots = g.op("Range", [g.const(0), c0, g.const(1)])  # [C]
    past_ok = g.op(
        "Less", [g.op("Unsqueeze", [slots, g.const([0])]), g.op("Unsqueeze", [lengths, g.const([1])])]
    )
    past_ok = g.op("Unsqueeze", [past_ok, g.const([1, 2, 3])], name="/mask/past")  # [B, 1, 1, 1, C]
    new_ok = g.op(
        "LessOrEqual", [g.op("Unsqueeze", [steps, g.const([0])]), g.op("Unsqueeze", [steps, g.const([1])])]
    )  # [S, S]
    masked_value = g.const(np.finfo(np.float32).min, np.float32)
    scale = g.const(d**-0.5, np.float32)

    x = g.op("Gather", ["model.embed_tokens.weight", ids], axis=0)  # [B, S, H]
    x = g.op("Reshape", [x, g.const([-1, hid])], name="/embed/flat")  # [N, H]
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}"
        h = rms_norm(g, x, f"{p}.input_layernorm.weight", cfg.rms_norm_eps)
        q, k, v = attention_inputs(g, cfg, i, h, (q_shape, kv_shape), rope, quant)  # [B, heads, S, D]
        g.output(k, f"new_key_values.{i}.key", FLOAT, ["batch_size", hkv, "sequence_length", d])
        g.output(v, f"new_key_values.{i}.value", FLOAT, ["batch_size", hkv, "sequence_length", d])
        # Grouped-query attention as in the standard graph (the rep query heads of a KV head stacked), scored
        # against the past slots and the new tokens separately.
        qg = g.op("Reshape", [g.op("Mul", [q, scale]), g.const([0, hkv, -1, d])])  # [B, Hkv, rep*S, D]
        past_k, past_v = past[i]
        sp = g.op("Reshape", [g.op("MatMul", [qg, g.op("Transpose", [past_k], perm=[0, 1, 3, 2])]), past5])
        sn = g.op("Reshape", [g.op("MatMul", [qg, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), new5])
        sp = g.op("Where", [past_ok, sp, masked_value])  # [B, Hkv, rep, S, C]
        sn = g.op("Where", [new_ok, sn, masked_value])  # [B, Hkv, rep, S, S]
        top = g.op(
            "Max",
            [
                g.op("ReduceMax", [sp], axes=[-1], keepdims=1),
                g.op("ReduceMax", [sn], axes=[-1], keepdims=1),
            ],
        )  # [B, Hkv, rep, S, 1]
        ep = g.op("Exp", [g.op("Sub", [sp, top])])
        en = g.op("Exp", [g.op("Sub", [sn, top])])
        total = g.op(
            "Add",
            [
                g.op("ReduceSum", [ep, g.const([-1])], keepdims=1),
                g.op("ReduceSum", [en, g.const([-1])], keepdims=1),
            ],
        )
        weighted = g.op(
            "Add",
            [
                g.op("MatMul", [g.op("Reshape", [ep, flatc]), past_v]),
                g.op("MatMul", [g.op("Reshape", [en, flat4]), v]),
            ],
        )  # [B, Hkv, rep*S, D]
        attn = g.op("Div", [weighted, g.op("Reshape", [total, g.const([0, hkv, -1, 1])])])
        x = layer_rest(g, cfg, i, x, attn, quant)
    final_logits(g, cfg, io, x, quant)
    return g
