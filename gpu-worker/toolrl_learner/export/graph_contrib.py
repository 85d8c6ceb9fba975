"""The decoder with onnxruntime's fused CPU operators (variant `contrib`): same inputs, outputs and weights as the
standard graph, fewer and faster kernels for decoding.

    GroupQueryAttention (com.microsoft)      RoPE (do_rotary, cos/sin tables baked in), causal GQA and the KV cache
                                             write in one kernel; past and present may share one buffer
    SkipSimplifiedLayerNormalization (ms)    residual add + RMSNorm in one pass (outputs the normed and the sum)
    MatMulNBits (ms)                         int8/int4 projections, as in the standard graph
Inputs, outputs and their names are the standard graph's (see GRAPH.md), with two differences the engine must
respect: rows carry no padding (GroupQueryAttention takes each row's length from attention_mask's sum and
positions from it, so attention_mask must be all ones and position_ids are not read), and the cache may be a
preallocated buffer of capacity M >= total length that the kernel writes in place (present aliases past).

Public API:
    build_contrib_graph(cfg, quant=None) -> GraphBuilder
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from ..model.config import ModelConfig
from .graph_common import QuantSpec, declare_io, keep_last, linear, lm_head, rms_norm
from .onnx_builder import FLOAT, INT32, MS_DOMAIN, GraphBuilder


def skip_rms_norm(g: GraphBuilder, x: str, skip: str, weight: str, eps: float) -> tuple[str, str]:
    """(RMSNorm(x + skip) * weight, x + skip) in one SkipSimplifiedLayerNormalization."""
    base = g._fresh("SkipSimplifiedLayerNormalization")
    normed, total = f"{base}:0", f"{base}:3"
    g.nodes.append(
        helper.make_node(
            "SkipSimplifiedLayerNormalization",
            [x, skip, weight],
            [normed, "", "", total],
            name=f"{base}_node",
            domain=MS_DOMAIN,
            epsilon=eps,
        )
    )
    g.uses_ms_domain = True
    return normed, total


def rotary_tables(cfg: ModelConfig) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin [max_position_embeddings, D/2] for GroupQueryAttention's do_rotary (half-split, HF convention)."""
    pos = np.arange(cfg.max_position_embeddings, dtype=np.float32)[:, None]
    angles = (
        pos * cfg.inv_freq().numpy()[None, :]
    )  # fp32, as the standard graph and transformers compute them
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def build_contrib_graph(cfg: ModelConfig, quant: QuantSpec | None = None) -> GraphBuilder:
    g = GraphBuilder()
    hq, hkv, d, hid = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.hidden_size
    eps = cfg.rms_norm_eps
    io = declare_io(g, cfg)

    # GroupQueryAttention's view of the mask: the index of each row's last token, and the total length.
    lengths = g.op("ReduceSum", [io.mask, g.const([1])], keepdims=0)  # [B]
    seqlens_k = g.op("Cast", [g.op("Sub", [lengths, g.const(1)])], to=INT32, name="/gqa/seqlens_k")
    total = g.op("Shape", [io.mask], start=1, end=2)  # [1]
    total_len = g.op("Cast", [g.op("Squeeze", [total, g.const([0])])], to=INT32, name="/gqa/total_len")
    cos, sin = rotary_tables(cfg)
    cos_cache = g.const(cos, np.float32, name="rotary.cos_cache")
    sin_cache = g.const(sin, np.float32, name="rotary.sin_cache")
    seq3 = g.op("Concat", [io.bs, g.const([-1])], axis=0, name="/shape/bs_")  # [B, S, -1]

    x = g.op("Gather", ["model.embed_tokens.weight", io.ids], axis=0)  # [B, S, H]
    x = g.op("Reshape", [x, g.const([-1, hid])], name="/embed/flat")  # [N, H]
    residual, pending = x, None  # pending: the last block's output, not yet added to the residual
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}"
        if pending is None:
            h = rms_norm(g, residual, f"{p}.input_layernorm.weight", eps)
        else:
            h, residual = skip_rms_norm(g, pending, residual, f"{p}.input_layernorm.weight", eps)
        q = linear(g, h, f"{p}.self_attn.q_proj", hid, hq * d, cfg.qkv_bias, quant)  # [N, Hq*D]
        k = linear(g, h, f"{p}.self_attn.k_proj", hid, hkv * d, cfg.qkv_bias, quant)  # [N, Hkv*D]
        v = linear(g, h, f"{p}.self_attn.v_proj", hid, hkv * d, cfg.qkv_bias, quant)
        if cfg.qk_norm:  # Qwen3: RMSNorm over each head before RoPE (which GroupQueryAttention applies)
            q = rms_norm(g, g.op("Reshape", [q, g.const([-1, hq, d])]), f"{p}.self_attn.q_norm.weight", eps)
            k = rms_norm(g, g.op("Reshape", [k, g.const([-1, hkv, d])]), f"{p}.self_attn.k_norm.weight", eps)
        q3, k3, v3 = (g.op("Reshape", [t, seq3]) for t in (q, k, v))  # [B, S, heads*D]
        attn = f"/layers.{i}/attn"
        g.nodes.append(
            helper.make_node(
                "GroupQueryAttention",
                [q3, k3, v3, io.past[i][0], io.past[i][1], seqlens_k, total_len, cos_cache, sin_cache],
                [attn, f"present.{i}.key", f"present.{i}.value"],
                name=f"{attn}_node",
                domain=MS_DOMAIN,
                num_heads=hq,
                kv_num_heads=hkv,
                do_rotary=1,
                rotary_interleaved=0,
            )
        )
        for kv in ("key", "value"):
            g.output(
                f"present.{i}.{kv}",
                f"present.{i}.{kv}",
                FLOAT,
                ["batch_size", hkv, "present_sequence_length", d],
            )
        attn = g.op("Reshape", [attn, g.const([-1, hq * d])])  # [N, Hq*D]
        o = linear(g, attn, f"{p}.self_attn.o_proj", hq * d, hid, cfg.o_bias, quant)
        h, residual = skip_rms_norm(g, o, residual, f"{p}.post_attention_layernorm.weight", eps)
        gate = linear(g, h, f"{p}.mlp.gate_proj", hid, cfg.intermediate_size, cfg.mlp_bias, quant)
        up = linear(g, h, f"{p}.mlp.up_proj", hid, cfg.intermediate_size, cfg.mlp_bias, quant)
        act = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), up])  # SiLU(gate) * up
        pending = linear(g, act, f"{p}.mlp.down_proj", cfg.intermediate_size, hid, cfg.mlp_bias, quant)
    g.uses_ms_domain = True

    def final_norm() -> str:
        if pending is None:
            raise ValueError("the model has no decoder layers (num_hidden_layers = 0)")
        last_out, last_res = keep_last(g, cfg, io, pending), keep_last(g, cfg, io, residual)
        return skip_rms_norm(g, last_out, last_res, "model.norm.weight", eps)[0]

    lm_head(g, cfg, io, final_norm, quant)
    return g
