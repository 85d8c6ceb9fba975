"""Pieces both graph variants share: the Optimum-named inputs, projections (Gemm or MatMulNBits), RMSNorm and the
lm_head with `num_logits_to_keep`.

Public API:
    QuantSpec(bits, block_size, accuracy_level)
    Io: the graph inputs (ids, mask, pos, keep, past) and dynamic sizes (bs = [B, S], b1 = [B])
    declare_io(g, cfg) -> Io
    linear(g, x, prefix, k, n, bias, quant) -> y          x [M, K] -> [M, N] against the checkpoint's [N, K]
    rms_norm(g, x, weight, eps) -> y                      over the last axis
    lm_head(g, cfg, io, x, quant, final_norm) -> None     declares the `logits` output
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..model.config import ModelConfig
from .onnx_builder import FLOAT, INT64, MS_DOMAIN, GraphBuilder


@dataclass(frozen=True)
class QuantSpec:
    """MatMulNBits settings. accuracy_level 4 lets onnxruntime quantise activations to int8 per block on the fly
    (its fastest CPU path); 0 keeps fp32 activations (bit-for-bit the dequantised model)."""

    bits: int
    block_size: int = 32
    accuracy_level: int = 4


@dataclass(frozen=True)
class Io:
    ids: str
    mask: str
    pos: str
    keep: str
    past: list[tuple[str, str]]
    bs: str  # int64 [2] = [B, S]
    b1: str  # int64 [1] = [B]


def declare_io(g: GraphBuilder, cfg: ModelConfig) -> Io:
    hkv, d = cfg.num_key_value_heads, cfg.head_dim
    ids = g.input("input_ids", INT64, ["batch_size", "sequence_length"])
    mask = g.input("attention_mask", INT64, ["batch_size", "total_sequence_length"])
    pos = g.input("position_ids", INT64, ["batch_size", "sequence_length"])
    past = []
    for i in range(cfg.num_hidden_layers):
        shape = ["batch_size", hkv, "past_sequence_length", d]
        k = g.input(f"past_key_values.{i}.key", FLOAT, shape)
        past.append((k, g.input(f"past_key_values.{i}.value", FLOAT, shape)))
    # transformers.js' name and meaning: 0 = logits for every new position, k = only the last k.
    keep = g.input("num_logits_to_keep", INT64, [])
    bs = g.op("Shape", [ids], name="/shape/bs")
    b1 = g.op("Slice", [bs, g.const([0]), g.const([1])], name="/shape/b")
    return Io(ids, mask, pos, keep, past, bs, b1)


def linear(g: GraphBuilder, x: str, prefix: str, k: int, n: int, bias: bool, quant: QuantSpec | None) -> str:
    """y = x W^T + b for x [M, K] and the checkpoint's W [N, K] (`<prefix>.weight`, or its quantised blocks)."""
    if quant is None:
        return g.op("Gemm", [x, f"{prefix}.weight"] + ([f"{prefix}.bias"] if bias else []), transB=1)
    inputs = [x, f"{prefix}.weight_q", f"{prefix}.weight_scales"]
    if quant.bits == 4:
        inputs.append(f"{prefix}.weight_zero_points")
    y = g.op(
        "MatMulNBits",
        inputs,
        domain=MS_DOMAIN,
        K=k,
        N=n,
        bits=quant.bits,
        block_size=quant.block_size,
        accuracy_level=quant.accuracy_level,
    )
    return g.op("Add", [y, f"{prefix}.bias"]) if bias else y


def rms_norm(g: GraphBuilder, x: str, weight: str, eps: float) -> str:
    # Written as Pow/ReduceMean/Add/Sqrt/Div/Mul: the pattern onnxruntime fuses into SimplifiedLayerNormalization.
    sq = g.op("Pow", [x, g.const(2.0, np.float32)])
    ms = g.op("ReduceMean", [sq], axes=[-1], keepdims=1)
    rms = g.op("Sqrt", [g.op("Add", [ms, g.const(eps, np.float32)])])
    return g.op("Mul", [weight, g.op("Div", [x, rms])])


def rotary(g: GraphBuilder, x: str, cos: str, sin: str, half: int) -> str:
    """x [B, S, H, D] -> x*cos + rotate_half(x)*sin, with cos/sin [B, S, 1, D]."""
    x1, x2 = g.ops("Split", [x, g.const([half, half])], 2, axis=-1)
    rotated = g.op("Concat", [g.op("Neg", [x2]), x1], axis=-1)
    return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [rotated, sin])])


def rope_tables(g: GraphBuilder, cfg: ModelConfig, pos: str) -> tuple[str, str]:
    """cos, sin [B, S, 1, D] for positions pos [B, S]: freqs = pos * inv_freq in fp32, as transformers computes
    them."""
    inv_freq = g.const(cfg.inv_freq().numpy(), np.float32, name="rotary.inv_freq")
    posf = g.op("Unsqueeze", [g.op("Cast", [pos], to=FLOAT), g.const([2])])  # [B, S, 1]
    freqs = g.op("Mul", [posf, inv_freq])  # [B, S, D/2]
    angles = g.op("Concat", [freqs, freqs], axis=-1)  # [B, S, D]
    cos = g.op("Unsqueeze", [g.op("Cos", [angles]), g.const([2])], name="/rotary/cos")
    sin = g.op("Unsqueeze", [g.op("Sin", [angles]), g.const([2])], name="/rotary/sin")
    return cos, sin


def attention_inputs(
    g: GraphBuilder,
    cfg: ModelConfig,
    layer: int,
    h: str,
    shapes: tuple[str, str],
    rope: tuple[str, str],
    quant: QuantSpec | None,
) -> tuple[str, str, str]:
    """Layer `layer`'s queries, keys and values for the normed hidden state h [N, H], as [B, heads, S, D]: the
    projections, reshaped by shapes (q [B, S, Hq, D], kv [B, S, Hkv, D]), QK-norm where the model has it, RoPE."""
    hq, hkv, d, hid = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.hidden_size
    p = f"model.layers.{layer}"
    q_shape, kv_shape = shapes
    q = g.op("Reshape", [linear(g, h, f"{p}.self_attn.q_proj", hid, hq * d, cfg.qkv_bias, quant), q_shape])
    k = g.op("Reshape", [linear(g, h, f"{p}.self_attn.k_proj", hid, hkv * d, cfg.qkv_bias, quant), kv_shape])
    v = g.op("Reshape", [linear(g, h, f"{p}.self_attn.v_proj", hid, hkv * d, cfg.qkv_bias, quant), kv_shape])
    if cfg.qk_norm:
        q = rms_norm(g, q, f"{p}.self_attn.q_norm.weight", cfg.rms_norm_eps)
        k = rms_norm(g, k, f"{p}.self_attn.k_norm.weight", cfg.rms_norm_eps)
    cos, sin = rope
    q = g.op("Transpose", [rotary(g, q, cos, sin, d // 2)], perm=[0, 2, 1, 3])  # [B, Hq, S, D]
    k = g.op("Transpose", [rotary(g, k, cos, sin, d // 2)], perm=[0, 2, 1, 3])  # [B, Hkv, S, D]
    v = g.op("Transpose", [v], perm=[0, 2, 1, 3])  # [B, Hkv, S, D]
    return q, k, v


def layer_rest(
    g: GraphBuilder, cfg: ModelConfig, layer: int, x: str, attn: str, quant: QuantSpec | None
) -> str:
    """The rest of layer `layer` after attention: x + o_proj(attn), then the post-attention norm and the SwiGLU MLP
    with its residual. x [N, H], attn [B, Hkv, rep*S, D] (the rep query heads of a KV head stacked) -> [N, H]."""
    p = f"model.layers.{layer}"
    hq, d, hid, inter = cfg.num_attention_heads, cfg.head_dim, cfg.hidden_size, cfg.intermediate_size
    attn = g.op("Reshape", [attn, g.const([0, hq, -1, d])])  # [B, Hq, S, D]
    attn = g.op("Transpose", [attn], perm=[0, 2, 1, 3])  # [B, S, Hq, D]
    attn = g.op("Reshape", [attn, g.const([-1, hq * d])])  # [N, Hq*D]
    x = g.op("Add", [x, linear(g, attn, f"{p}.self_attn.o_proj", hq * d, hid, cfg.o_bias, quant)])
    h = rms_norm(g, x, f"{p}.post_attention_layernorm.weight", cfg.rms_norm_eps)
    gate = linear(g, h, f"{p}.mlp.gate_proj", hid, inter, cfg.mlp_bias, quant)
    up = linear(g, h, f"{p}.mlp.up_proj", hid, inter, cfg.mlp_bias, quant)
    act = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), up])  # SiLU(gate) * up
    return g.op("Add", [x, linear(g, act, f"{p}.mlp.down_proj", inter, hid, cfg.mlp_bias, quant)])


def final_logits(g: GraphBuilder, cfg: ModelConfig, io: Io, x: str, quant: QuantSpec | None) -> None:
    """The `logits` output: the final norm and the LM head over the last `num_logits_to_keep` positions of x."""
    lm_head(
        g,
        cfg,
        io,
        lambda: rms_norm(g, keep_last(g, cfg, io, x), "model.norm.weight", cfg.rms_norm_eps),
        quant,
    )


def keep_last(g: GraphBuilder, cfg: ModelConfig, io: Io, x: str) -> str:
    """Rows of x [B*S, H] for the last `num_logits_to_keep` positions of each sequence -> [B*K, H]."""
    x3 = g.op("Reshape", [x, g.op("Concat", [io.bs, g.const([cfg.hidden_size])], axis=0)])  # [B, S, H]
    start = g.op("Neg", [g.op("Unsqueeze", [io.keep, g.const([0])])])  # [-k]; k = 0 gives 0: every position
    x3 = g.op("Slice", [x3, start, g.const([np.iinfo(np.int64).max]), g.const([1])])  # [B, K, H]
    return g.op("Reshape", [x3, g.const([-1, cfg.hidden_size])])


def lm_head(
    g: GraphBuilder, cfg: ModelConfig, io: Io, final_norm: Callable[[], str], quant: QuantSpec | None
) -> None:
    """Declare `logits` [B, K, V] from the final hidden rows that `final_norm()` returns ([B*K, H])."""
    x = final_norm()
    if quant is not None:
        logits = linear(g, x, "lm_head", cfg.hidden_size, cfg.vocab_size, False, quant)
    else:
        head = "model.embed_tokens.weight" if cfg.tie_word_embeddings else "lm_head.weight"
        logits = g.op("Gemm", [x, head], transB=1)  # [B*K, V]
    shape = g.op("Concat", [io.b1, g.const([-1, cfg.vocab_size])], axis=0)
    g.op("Reshape", [logits, shape], name="logits")
    g.output("logits", "logits", FLOAT, ["batch_size", "num_logits", cfg.vocab_size])
    g.outputs.insert(0, g.outputs.pop())  # logits first, then present.*, as Optimum orders them
