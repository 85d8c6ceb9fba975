"""ModelConfig: the decoder-only Llama / Qwen2 / Qwen2.5 / Qwen3 family's shape, read from a Hugging Face config.json.

Public API (engineer E's trainer and the exporter rely on these names):
    ModelConfig                      frozen dataclass; fields below
    ModelConfig.from_hf(dict)        from a parsed config.json (transformers 4.x or 5.x spelling)
    ModelConfig.from_file(path)      from a model folder or a config.json path
    ModelConfig.to_hf() -> dict      a config.json that transformers and transformers.js both load
    ModelConfig.to_dict() -> dict    same as to_hf (peft reads `model.config.to_dict()["model_type"]`)
    cfg.inv_freq() -> Tensor[D/2]    RoPE inverse frequencies (default and llama3 scaling), fp32
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

SUPPORTED_MODEL_TYPES = ("llama", "qwen2", "qwen3")
_ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}


@dataclass(frozen=True)
class ModelConfig:
    """One decoder-only transformer: pre-norm RMSNorm, RoPE, grouped-query attention, SwiGLU MLP.

    model_type: "llama" | "qwen2" | "qwen3" (Qwen2.5 checkpoints say "qwen2").
    hidden_size, intermediate_size, num_hidden_layers: width, MLP width, depth.
    num_attention_heads, num_key_value_heads: query heads and KV heads (GQA when fewer KV heads).
    head_dim: per-head width; hidden_size // num_attention_heads unless config.json says otherwise (Qwen3).
    vocab_size: rows of embed_tokens and lm_head (Qwen pads it beyond the tokenizer's size).
    rms_norm_eps, rope_theta: as in config.json. rope_scaling: None or a llama3 rope_parameters dict.
    tie_word_embeddings: lm_head shares embed_tokens' weight (Qwen2.5-0.5B/1.5B, Qwen3-0.6B).
    qk_norm: RMSNorm over head_dim on q and k before RoPE (Qwen3).
    qkv_bias, o_bias, mlp_bias: which projections have a bias (Qwen2: q/k/v only; Llama/Qwen3: attention_bias).
    max_position_embeddings, bos/eos/pad_token_id: carried through to config.json.
    extra: every other key of the source config.json, written back unchanged by to_hf().
    """

    model_type: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = None
    tie_word_embeddings: bool = False
    qk_norm: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    max_position_embeddings: int = 32768
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None
    pad_token_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.model_type not in SUPPORTED_MODEL_TYPES:
            raise ValueError(
                f"model_type {self.model_type!r} is not supported; one of {SUPPORTED_MODEL_TYPES}"
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads})"
            )
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even for RoPE, got {self.head_dim}")
        if self.rope_scaling is not None and self.rope_scaling.get("rope_type") != "llama3":
            raise ValueError(
                f"rope_type {self.rope_scaling.get('rope_type')!r} is not supported (default and llama3 are)"
            )

    @property
    def num_key_value_groups(self) -> int:
        return self.num_attention_heads // self.num_key_value_heads

    @property
    def architecture(self) -> str:
        return _ARCHITECTURES[self.model_type]

    @classmethod
    def from_file(cls, path: str | Path) -> ModelConfig:
        p = Path(path)
        if p.is_dir():
            p = p / "config.json"
        if not p.is_file():
            raise FileNotFoundError(f"no config.json at {p}")
        return cls.from_hf(json.loads(p.read_text()))

    @classmethod
    def from_hf(cls, raw: dict[str, Any]) -> ModelConfig:
        mt = raw.get("model_type")
        if mt not in SUPPORTED_MODEL_TYPES:
            raise ValueError(
                f"config.json model_type {mt!r} is not supported; one of {SUPPORTED_MODEL_TYPES}"
            )
        if raw.get("use_sliding_window"):
            raise ValueError("config.json use_sliding_window=true is not supported")
        if raw.get("hidden_act", "silu") != "silu":
            raise ValueError(f"hidden_act {raw['hidden_act']!r} is not supported (silu is)")
        for key in (
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "vocab_size",
        ):
            if not isinstance(raw.get(key), int):
                raise ValueError(f"config.json: {key} must be an integer, got {raw.get(key)!r}")
        heads = raw["num_attention_heads"]
        # transformers 5 moved rope_theta/rope_scaling into rope_parameters; 4.x checkpoints have them top-level.
        rope = dict(raw.get("rope_parameters") or raw.get("rope_scaling") or {})
        theta = float(rope.get("rope_theta", raw.get("rope_theta", 10000.0)))
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        scaling = None if rope_type == "default" else {**rope, "rope_type": rope_type}
        attention_bias = bool(raw.get("attention_bias", False))
        known = {f.name for f in fields(cls)} | {
            "rope_parameters",
            "rope_scaling",
            "attention_bias",
            "architectures",
            "model_type",
        }
        return cls(
            model_type=mt,
            hidden_size=raw["hidden_size"],
            intermediate_size=raw["intermediate_size"],
            num_hidden_layers=raw["num_hidden_layers"],
            num_attention_heads=heads,
            num_key_value_heads=raw.get("num_key_value_heads") or heads,
            head_dim=raw.get("head_dim") or raw["hidden_size"] // heads,
            vocab_size=raw["vocab_size"],
            rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
            rope_theta=theta,
            rope_scaling=scaling,
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
            qk_norm=mt == "qwen3",
            qkv_bias=True if mt == "qwen2" else attention_bias,
            o_bias=False if mt == "qwen2" else attention_bias,
            mlp_bias=bool(raw.get("mlp_bias", False)),
            max_position_embeddings=int(raw.get("max_position_embeddings", 32768)),
            bos_token_id=raw.get("bos_token_id"),
            eos_token_id=raw.get("eos_token_id"),
            pad_token_id=raw.get("pad_token_id"),
            extra={k: v for k, v in raw.items() if k not in known},
        )

    def to_hf(self) -> dict[str, Any]:
        rope_parameters = {"rope_theta": self.rope_theta, "rope_type": "default"}
        if self.rope_scaling:
            rope_parameters = {**self.rope_scaling, "rope_theta": self.rope_theta}
        out: dict[str, Any] = {
            **self.extra,
            "architectures": [self.architecture],
            "model_type": self.model_type,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab_size,
            "hidden_act": "silu",
            "rms_norm_eps": self.rms_norm_eps,
            # Both spellings: transformers 5 reads rope_parameters, 4.x and transformers.js read rope_theta.
            "rope_theta": self.rope_theta,
            "rope_parameters": rope_parameters,
            "tie_word_embeddings": self.tie_word_embeddings,
            "max_position_embeddings": self.max_position_embeddings,
            "bos_token_id": self.bos_token_id,
            "eos_token_id": self.eos_token_id,
            "pad_token_id": self.pad_token_id,
        }
        if self.model_type == "qwen2":
            out["use_sliding_window"] = False
        else:
            out["attention_bias"] = self.qkv_bias
        if self.model_type == "llama":
            out["mlp_bias"] = self.mlp_bias
        return out

    def to_dict(self) -> dict[str, Any]:
        return self.to_hf()

    def replace(self, **changes: Any) -> ModelConfig:
        return ModelConfig(**{**asdict(self), **changes})

    def inv_freq(self) -> torch.Tensor:
        """RoPE inverse frequencies [head_dim/2] in fp32, with Llama 3.1's frequency-dependent scaling if set."""
        d = self.head_dim
        inv = 1.0 / (self.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
        if not self.rope_scaling:
            return inv
        # Llama 3.1 (arXiv:2407.21783): long wavelengths divided by `factor`, short ones kept, a smooth ramp between.
        s = self.rope_scaling
        factor, lo, hi = float(s["factor"]), float(s["low_freq_factor"]), float(s["high_freq_factor"])
        old_ctx = float(s["original_max_position_embeddings"])
        low_wavelen, high_wavelen = old_ctx / lo, old_ctx / hi
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old_ctx / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        return torch.where(medium, smoothed, scaled)

    def num_parameters(self) -> int:
        h, i, d = self.hidden_size, self.intermediate_size, self.head_dim
        q, kv = self.num_attention_heads * d, self.num_key_value_heads * d
        attn = h * q + 2 * h * kv + q * h + (q + 2 * kv if self.qkv_bias else 0) + (h if self.o_bias else 0)
        mlp = 3 * h * i + ((2 * i + h) if self.mlp_bias else 0)
        norms = 2 * h + (2 * d if self.qk_norm else 0)
        emb = self.vocab_size * h * (1 if self.tie_word_embeddings else 2)
        return emb + h + self.num_hidden_layers * (attn + mlp + norms)
