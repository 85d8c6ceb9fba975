"""The tiny-model factory: a random-weight Llama/Qwen2/Qwen3 model folder in Hugging Face format, tokenizer included.

Deterministic in (options, seed) and built in seconds, so tests and the quick start make it on the spot.
Presets give Qwen2.5-0.5B/1.5B/3B's real dimensions and vocabulary (random weights) for benchmarks.

Public API:
    PRESETS: dict[str, dict]                    "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b"
    VARIANTS: dict[str, dict]                   "mha": small variants of the default tiny model (its tokenizer)
    TinySpec(...)                               the options (dataclass; defaults are the quick-start model)
    tiny_spec(model_path, seed) -> TinySpec     `tiny`, `tiny:<variant>`, `tiny:<preset>` as model.path names them
    spec_shape(spec) -> ModelConfig             the model's shape (the builder and the memory planner read it)
    build_tiny(out_dir, spec=TinySpec()) -> Path   writes config.json, model.safetensors, generation_config.json,
                                                   tokenizer.json, tokenizer_config.json
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from .config import ModelConfig
from .hf_io import save_pretrained
from .modeling import CausalLM, init_weights, skip_init
from .tokenizer import find_qwen_tokenizer_json, train_tiny_tokenizer, write_tokenizer_files

PRESETS: dict[str, dict] = {
    # Dimensions from the released config.json files (vocab_size is padded past the tokenizer's 151,665 ids).
    "qwen2.5-0.5b": dict(
        arch="qwen2",
        hidden_size=896,
        intermediate_size=4864,
        num_layers=24,
        num_heads=14,
        num_kv_heads=2,
        vocab_size=151936,
        tie_word_embeddings=True,
        rope_theta=1_000_000.0,
        max_position_embeddings=32768,
    ),
    "qwen2.5-1.5b": dict(
        arch="qwen2",
        hidden_size=1536,
        intermediate_size=8960,
        num_layers=28,
        num_heads=12,
        num_kv_heads=2,
        vocab_size=151936,
        tie_word_embeddings=True,
        rope_theta=1_000_000.0,
        max_position_embeddings=32768,
    ),
    "qwen2.5-3b": dict(
        arch="qwen2",
        hidden_size=2048,
        intermediate_size=11008,
        num_layers=36,
        num_heads=16,
        num_kv_heads=2,
        vocab_size=151936,
        tie_word_embeddings=True,
        rope_theta=1_000_000.0,
        max_position_embeddings=32768,
    ),
}


# Variants of the default tiny model, named in `model.path: tiny:<name>`.
VARIANTS: dict[str, dict] = {
    # Every query head with its own key/value head (4/4 instead of 4/2). The quick start's warm start has to
    # teach copying (operands into the call, the result into the answer); with 4 key/value heads it formed for
    # every seed tried within the warm start's budget, with 2 only for some (measured while choosing the task).
    "mha": dict(num_kv_heads=4),
}


@dataclass(frozen=True)
class TinySpec:
    """arch: llama | qwen2 | qwen3. intermediate_size None -> 3 x hidden. head_dim None -> hidden // heads.
    vocab_size: BPE size for the tiny tokenizer (the model's vocab equals the tokenizer's, so every id decodes);
    with a preset it is the model's padded vocab over Qwen's real tokenizer. tie_word_embeddings None -> the
    architecture's habit for small models (tied for qwen2/qwen3, untied for llama). init_std: N(0, std) weights.
    dtype: "float32" | "bfloat16" of the saved safetensors. weights_seed: the weights' seed when it should differ
    from `seed`, which also seeds the tokenizer (runs vary the weights with their seed, not the vocabulary)."""

    arch: str = "qwen2"
    hidden_size: int = 128
    intermediate_size: int | None = None
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int | None = None
    vocab_size: int = 1024
    tie_word_embeddings: bool | None = None
    rope_theta: float = 10000.0
    max_position_embeddings: int = 4096
    seed: int = 0
    init_std: float = 0.02
    dtype: str = "float32"
    preset: str | None = None
    weights_seed: int | None = None

    @classmethod
    def from_preset(cls, name: str, **overrides) -> TinySpec:
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; one of {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], "preset": name, "dtype": "bfloat16", **overrides})


def tiny_spec(model_path: str, seed: int = 0) -> TinySpec:
    """`model.path: tiny`, `tiny:<variant>` or `tiny:<preset>` as the spec the builder and the memory planner share,
    its random weights drawn with `seed` (the tokenizer is the same for every seed)."""
    name = model_path.partition(":")[2]
    if name in VARIANTS:
        return TinySpec(**VARIANTS[name], weights_seed=seed)
    if name in PRESETS:
        return TinySpec.from_preset(name, weights_seed=seed)
    if name:
        raise ValueError(
            f"model.path {model_path!r}: no tiny variant or preset {name!r}; "
            f"one of {', '.join(f'tiny:{n}' for n in [*VARIANTS, *PRESETS])}"
        )
    return TinySpec(weights_seed=seed)


def is_tiny(model_path: str) -> bool:
    return model_path == "tiny" or model_path.startswith("tiny:")


def _tokenizer(spec: TinySpec) -> tuple[str, int, dict[str, int], int]:
    """The spec's tokenizer.json text, its model_max_length, its added tokens' ids and its number of ids."""
    if spec.preset:
        tokenizer_json = find_qwen_tokenizer_json().read_text()
        model_max_length = 131072
    else:
        tokenizer_json = train_tiny_tokenizer(spec.vocab_size, spec.seed).to_str()
        model_max_length = spec.max_position_embeddings
    added = {t["content"]: t["id"] for t in json.loads(tokenizer_json)["added_tokens"]}
    n_tokens = max(max(added.values()) + 1, len(json.loads(tokenizer_json)["model"]["vocab"]))
    return tokenizer_json, model_max_length, added, n_tokens


def spec_shape(
    spec: TinySpec, n_tokens: int | None = None, added: dict[str, int] | None = None
) -> ModelConfig:
    """The model the spec builds, the one definition of its shape (the builder and the memory planner read it).
    A preset's vocabulary is its padded size; otherwise the tokenizer's ids (`n_tokens`; trained here when not
    given), so that every id decodes."""
    if not spec.preset and (n_tokens is None or added is None):
        _, _, added, n_tokens = _tokenizer(spec)
    vocab = spec.vocab_size if spec.preset else n_tokens
    assert vocab is not None
    if n_tokens is not None and vocab < n_tokens:
        raise ValueError(f"vocab_size {vocab} is smaller than the tokenizer's {n_tokens} ids")
    # Small models tie the embeddings in qwen2/qwen3 and not in llama, unless the spec says.
    tied = spec.tie_word_embeddings if spec.tie_word_embeddings is not None else spec.arch != "llama"
    special = (
        {
            "bos_token_id": added["<|endoftext|>"],
            "eos_token_id": added["<|im_end|>"],
            "pad_token_id": added["<|endoftext|>"],
        }
        if added is not None
        else {}
    )
    return ModelConfig.from_hf(
        {
            "model_type": spec.arch,
            "hidden_size": spec.hidden_size,
            "intermediate_size": spec.intermediate_size or 3 * spec.hidden_size,
            "num_hidden_layers": spec.num_layers,
            "num_attention_heads": spec.num_heads,
            "num_key_value_heads": spec.num_kv_heads,
            "head_dim": spec.head_dim or spec.hidden_size // spec.num_heads,
            "vocab_size": vocab,
            "rms_norm_eps": 1e-6,
            "rope_parameters": {"rope_theta": spec.rope_theta, "rope_type": "default"},
            "tie_word_embeddings": tied,
            "max_position_embeddings": spec.max_position_embeddings,
            **special,
        }
    )


def spec_config(spec: TinySpec) -> tuple[ModelConfig, str, int]:
    """The spec's ModelConfig, its tokenizer.json text and the tokenizer's model_max_length."""
    tokenizer_json, model_max_length, added, n_tokens = _tokenizer(spec)
    return spec_shape(spec, n_tokens, added), tokenizer_json, model_max_length


def build_tiny(out_dir: str | Path, spec: TinySpec = TinySpec()) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg, tokenizer_json, model_max_length = spec_config(spec)
    added = {t["content"]: t["id"] for t in json.loads(tokenizer_json)["added_tokens"]}
    with skip_init():
        model = CausalLM(cfg)
    init_weights(model, spec.seed if spec.weights_seed is None else spec.weights_seed, spec.init_std)
    save_pretrained(model, out, dtype=getattr(torch, spec.dtype))
    write_tokenizer_files(out, tokenizer_json, model_max_length)
    generation = {
        "bos_token_id": added["<|endoftext|>"],
        "eos_token_id": [added["<|im_end|>"], added["<|endoftext|>"]],
        "pad_token_id": added["<|endoftext|>"],
        "do_sample": True,
    }
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    for stale in ("vocab.json", "merges.txt", "chat_template.jinja"):
        p = out / stale
        if p.is_file():
            p.unlink()
    return out
