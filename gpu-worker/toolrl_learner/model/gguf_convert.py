"""A GGUF file (llama.cpp's format) as a Hugging Face model folder the learner trains and exports.

The weights are dequantised by transformers' own GGUF loader (through llama.cpp's `gguf` package), which also
undoes the row order llama.cpp's converter gives Llama's q/k projections; they are saved in fp32, where every
dequantised value is exact. Loads: F32, F16, BF16 and every block type `gguf` dequantises (Q4_0, Q4_1, Q5_0, Q5_1,
Q8_0, the K-quants Q2_K-Q6_K, the IQ types, TQ1_0/TQ2_0, MXFP4), for the architectures the learner has (llama,
qwen2, qwen3).

The tokenizer of a GPT-2-style BPE file is rebuilt here from the file's vocabulary, merges and pre-tokenizer name,
because transformers picks its converter by architecture: a llama-architecture file with a byte-level BPE
tokenizer (SmolLM2) came out with a SentencePiece decoder, byte fallback and `<|im_start|>` as its eos token. A
SentencePiece file (`tokenizer.ggml.model` llama) goes through transformers' converter, which is written for it.
Special tokens and the chat template come from the file's own metadata either way.

Public API:
    convert_gguf(gguf_path, out_dir) -> Path      write config.json, model.safetensors, tokenizer files,
                                                   generation_config.json; out_dir is replaced atomically
    SUPPORTED_PRE_TOKENIZERS                       the GPT-2 BPE pre-tokenizer names rebuilt here
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .tokenizer import QWEN_SPLIT

log = logging.getLogger(__name__)

# GPT-2's split, and the same with every digit on its own (StarCoder's tokenizer family, SmolLM's included).
_GPT2 = "gpt2"
_DIGITS_GPT2 = "digits+gpt2"
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
# tokenizer.ggml.pre -> how text is split before BPE (llama.cpp's llama-vocab.cpp groups the names the same way).
SUPPORTED_PRE_TOKENIZERS: dict[str, str] = {
    "gpt2": _GPT2,
    "mpt": _GPT2,
    "olmo": _GPT2,
    "smollm": _DIGITS_GPT2,
    "starcoder": _DIGITS_GPT2,
    "refact": _DIGITS_GPT2,
    "codeshell": _DIGITS_GPT2,
    "qwen2": QWEN_SPLIT,
    "llama-bpe": _LLAMA3_SPLIT,
}
_CONTROL, _USER_DEFINED = 3, 4  # gguf.TokenType


class GgufError(ValueError):
    """A GGUF file this converter cannot turn into a model folder (the message says what and why)."""


def _field(reader: Any, key: str) -> Any:
    f = reader.fields.get(key)
    return None if f is None else f.contents()


def _bpe_tokenizer_json(reader: Any, source: Path) -> str:
    """tokenizer.json of a GPT-2-style byte-level BPE from the file's tokens, merges and pre-tokenizer name."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    pre = _field(reader, "tokenizer.ggml.pre") or "default"
    split = SUPPORTED_PRE_TOKENIZERS.get(pre)
    if split is None:
        raise GgufError(
            f"{source}: its BPE tokenizer splits text as {pre!r} (tokenizer.ggml.pre), which this converter "
            f"does not rebuild; it does {', '.join(sorted(SUPPORTED_PRE_TOKENIZERS))}. Convert the original "
            "Hugging Face model instead, or point model.path at a folder with its tokenizer.json"
        )
    tokens: list[str] = list(_field(reader, "tokenizer.ggml.tokens"))
    types: list[int] = list(_field(reader, "tokenizer.ggml.token_type") or [1] * len(tokens))
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges") or []]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    if split == _GPT2:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    elif split == _DIGITS_GPT2:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Digits(individual_digits=True),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
            ]
        )
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(split), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    # Control tokens are special (skipped when decoding with skip_special_tokens); user-defined ones are added
    # tokens that stay in decoded text (Qwen's <tool_call>).
    added = [
        AddedToken(tokens[i], special=types[i] == _CONTROL, normalized=False)
        for i in range(len(tokens))
        if types[i] in (_CONTROL, _USER_DEFINED)
    ]
    tok.add_tokens(added)
    return tok.to_str()


def _special_tokens(reader: Any) -> dict[str, str | None]:
    tokens = _field(reader, "tokenizer.ggml.tokens")
    out: dict[str, str | None] = {}
    for name, key in (("bos", "bos"), ("eos", "eos"), ("pad", "padding"), ("unk", "unknown")):
        i = _field(reader, f"tokenizer.ggml.{key}_token_id")
        out[f"{name}_token"] = tokens[int(i)] if i is not None and 0 <= int(i) < len(tokens) else None
    return out


def _write_tokenizer(reader: Any, source: Path, out: Path) -> None:
    model = _field(reader, "tokenizer.ggml.model")
    specials = _special_tokens(reader)
    if model == "gpt2":
        tokenizer_json = _bpe_tokenizer_json(reader, source)
        (out / "tokenizer.json").write_text(tokenizer_json)
        spec = json.loads(tokenizer_json)
        config: dict[str, Any] = {
            "added_tokens_decoder": {
                str(t["id"]): {
                    k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")
                }
                for t in spec["added_tokens"]
            },
            "tokenizer_class": "PreTrainedTokenizerFast",
            "clean_up_tokenization_spaces": False,
        }
    elif model == "llama":
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
        tok.save_pretrained(str(out))
        config = json.loads((out / "tokenizer_config.json").read_text())
    else:
        raise GgufError(
            f"{source}: tokenizer.ggml.model {model!r} is not converted (gpt2, a byte-level BPE, and llama, "
            "SentencePiece, are)"
        )
    add_bos = _field(reader, "tokenizer.ggml.add_bos_token")
    config.update(
        {
            **specials,
            "add_bos_token": bool(add_bos) if add_bos is not None else False,
            "add_eos_token": False,
            "model_max_length": int(
                _field(reader, f"{_field(reader, 'general.architecture')}.context_length") or 32768
            ),
        }
    )
    template = _field(reader, "tokenizer.chat_template")
    if template:
        config["chat_template"] = template
    else:
        config.pop("chat_template", None)
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    (out / "chat_template.jinja").unlink(missing_ok=True)  # the template lives in tokenizer_config.json


def _write_weights(source: Path, out: Path) -> dict[str, Any]:
    """Dequantised fp32 weights and config.json through transformers' GGUF loader; returns the config."""
    import torch
    from transformers import AutoModelForCausalLM

    from .config import ModelConfig
    from .hf_io import _write_shards

    try:
        hf = AutoModelForCausalLM.from_pretrained(
            str(source.parent), gguf_file=source.name, dtype=torch.float32
        )
    except (ValueError, NotImplementedError, KeyError) as e:
        raise GgufError(f"{source}: transformers could not load it: {e}") from e
    # Only what differs from transformers' defaults (to_dict would carry id2label, return_dict, ...).
    raw = {**hf.config.to_diff_dict(), "model_type": hf.config.model_type}
    for key in (
        "quantization_config",
        "_name_or_path",
        "_model_name_or_path",
        "transformers_version",
        "dtype",
    ):
        raw.pop(key, None)
    cfg = ModelConfig.from_hf(raw)  # refuses an architecture the learner does not have, by name
    state = {k: v.detach().to(torch.float32).contiguous() for k, v in hf.state_dict().items()}
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    _write_shards(state, out, 5 * 1024**3)
    config = cfg.to_hf()
    config["dtype"] = "float32"
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return config


def convert_gguf(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """Convert `gguf_path` into the model folder `out_dir` (written beside it and renamed into place)."""
    from gguf import GGUFReader

    source = Path(gguf_path).resolve()
    out = Path(out_dir)
    if not source.is_file():
        raise FileNotFoundError(f"{source}: no such GGUF file")
    try:
        reader = GGUFReader(source)
    except (ValueError, OSError) as e:
        raise GgufError(f"{source}: not a readable GGUF file ({e})") from e
    arch = _field(reader, "general.architecture")
    if arch not in ("llama", "qwen2", "qwen3"):
        raise GgufError(
            f"{source}: architecture {arch!r}; the learner trains llama, qwen2 and qwen3 (general.architecture)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        _write_tokenizer(reader, source, tmp)
        config = _write_weights(source, tmp)
        gen = {"bos_token_id": config.get("bos_token_id"), "eos_token_id": config.get("eos_token_id")}
        if config.get("pad_token_id") is not None:
            gen["pad_token_id"] = config["pad_token_id"]
        (tmp / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
        (tmp / "SOURCE.json").write_text(
            json.dumps(
                {"gguf": source.name, "architecture": arch, "name": _field(reader, "general.name")}, indent=2
            )
            + "\n"
        )
        os.chmod(tmp, 0o755)
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("converted %s into %s", source, out)
    return out
