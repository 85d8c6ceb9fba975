"""The model shape the memory plan needs, without the weights: a local folder's config.json, `tiny` (the
built-in test model), or a Hugging Face Hub id from a table of popular ones (their released config.json
values), so that a plan for `Qwen/Qwen2.5-7B-Instruct` needs no download."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..model.config import ModelConfig


def _qwen2(h, i, layers, heads, kv, vocab=151936, tied=False) -> dict[str, Any]:
    return dict(model_type="qwen2", hidden_size=h, intermediate_size=i, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv, vocab_size=vocab, tie_word_embeddings=tied,
                attention_bias=True)  # fmt: skip


def _qwen3(h, i, layers, heads, kv, tied=False) -> dict[str, Any]:
    return dict(model_type="qwen3", hidden_size=h, intermediate_size=i, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv, head_dim=128, vocab_size=151936,
                tie_word_embeddings=tied)  # fmt: skip


def _llama(h, i, layers, heads, kv, vocab=128256, tied=False) -> dict[str, Any]:
    return dict(model_type="llama", hidden_size=h, intermediate_size=i, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv, vocab_size=vocab, tie_word_embeddings=tied)  # fmt: skip


# Hub id (lower case, without -Instruct/-Base) -> config.json fields that set the memory.
KNOWN: dict[str, dict[str, Any]] = {
    "qwen/qwen2.5-0.5b": _qwen2(896, 4864, 24, 14, 2, tied=True),
    "qwen/qwen2.5-1.5b": _qwen2(1536, 8960, 28, 12, 2, tied=True),
    "qwen/qwen2.5-3b": _qwen2(2048, 11008, 36, 16, 2, tied=True),
    "qwen/qwen2.5-7b": _qwen2(3584, 18944, 28, 28, 4, vocab=152064),
    "qwen/qwen2.5-14b": _qwen2(5120, 13824, 48, 40, 8, vocab=152064),
    "qwen/qwen2.5-32b": _qwen2(5120, 27648, 64, 40, 8, vocab=152064),
    "qwen/qwen2.5-72b": _qwen2(8192, 29568, 80, 64, 8, vocab=152064),
    "qwen/qwen3-0.6b": _qwen3(1024, 3072, 28, 16, 8, tied=True),
    "qwen/qwen3-1.7b": _qwen3(2048, 6144, 28, 16, 8, tied=True),
    "qwen/qwen3-4b": _qwen3(2560, 9728, 36, 32, 8, tied=True),
    "qwen/qwen3-8b": _qwen3(4096, 12288, 36, 32, 8),
    "qwen/qwen3-14b": _qwen3(5120, 17408, 40, 40, 8),
    "qwen/qwen3-32b": _qwen3(5120, 25600, 64, 64, 8),
    "meta-llama/llama-3.2-1b": _llama(2048, 8192, 16, 32, 8, tied=True),
    "meta-llama/llama-3.2-3b": _llama(3072, 8192, 28, 24, 8, tied=True),
    "meta-llama/llama-3.1-8b": _llama(4096, 14336, 32, 32, 8),
    "huggingfacetb/smollm2-135m": {
        **_llama(576, 1536, 30, 9, 3, vocab=49152, tied=True),
        "rope_theta": 100000.0,
        "rms_norm_eps": 1e-5,
    },
}


def _known_key(model_path: str) -> str:
    key = model_path.lower()
    for suffix in ("-instruct", "-base"):
        key = key.removesuffix(suffix)
    return key.replace("meta-llama-3", "llama-3")


def model_shape(model_path: str, base_dir: Path | None = None) -> ModelConfig:
    """`model.path` as the plan sees it: a folder with config.json (relative to base_dir), `tiny[:variant|preset]`
    (the shape the builder makes, model/tiny.py), a built-in model name (model_store.NAMED_MODELS: its converted
    folder once `npm run setup` has made it, its Hub id's KNOWN shape before), or a Hub id in KNOWN."""
    from ..model.model_store import NAMED_MODELS, model_cache
    from ..model.tiny import is_tiny, spec_shape, tiny_spec

    if is_tiny(model_path):
        return spec_shape(tiny_spec(model_path))
    path = Path(model_path)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if (path / "config.json").is_file():
        return ModelConfig.from_file(path)
    if model_path in NAMED_MODELS and not path.exists():
        converted = model_cache() / model_path
        if (converted / "config.json").is_file():
            return ModelConfig.from_file(converted)
        return ModelConfig.from_hf(KNOWN[_known_key(NAMED_MODELS[model_path].hub_id)])
    if path.suffix.lower() == ".gguf":
        raise ValueError(
            f"model.path {model_path!r}: the planner reads a model folder's config.json; convert the file first "
            f"(gpu-worker/.venv/bin/python -m toolrl_learner model convert {model_path} --out <folder>) and plan "
            f"with model.path=<folder>"
        )
    if _known_key(model_path) in KNOWN:
        return ModelConfig.from_hf(KNOWN[_known_key(model_path)])
    raise ValueError(
        f"model.path {model_path!r}: no config.json there, and not a model this planner knows by name "
        f"({', '.join(sorted(KNOWN))}); point it at a folder with the model's config.json"
    )
