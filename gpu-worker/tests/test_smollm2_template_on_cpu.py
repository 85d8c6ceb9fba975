"""The built-in `smollm2` chat template on SmolLM2-135M-Instruct's own tokenizer: the learner's SFT renders it with
transformers and the rollouts with @huggingface/jinja, and both give the same tokens; a conversation without tools
renders as SmolLM2's own template (from its GGUF) renders it; and token in, token out: the token ids of each turn's
rendering are a prefix of the next turn's, so the tokens a rollout holds are the tokens the learner trains on."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from toolrl_learner.model.model_store import named_model_dir

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = (REPO / "shared" / "policy" / "templates" / "smollm2.jinja").read_text()
OWN = (REPO / "test" / "fixtures" / "chat-templates" / "smollm2-135m-instruct.jinja").read_text()
CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}
TWO_CALLS = [
    {"role": "user", "content": "Maria had 4512 stickers, gave away 1208 and bought 317. How many now?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "calculator", "arguments": {"expression": "4512 - 1208"}},
            }
        ],
    },
    {"role": "tool", "name": "calculator", "content": "3304"},
    {
        "role": "assistant",
        "content": '<tool_call>\n{"name": "calculator", "arguments": {"expression": "3304 + 317"}}\n</tool_call>',
    },
    {"role": "tool", "name": "calculator", "content": "3621"},
    {"role": "assistant", "content": "She has \\boxed{3621} stickers."},
]
NO_TOOLS = [
    {"role": "system", "content": "You answer in one word."},
    {"role": "user", "content": "Capital of France?"},
    {"role": "assistant", "content": "Paris"},
    {"role": "user", "content": "And of Italy?"},
]


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(named_model_dir("smollm2-135m-instruct")))


def _render(tok, messages, tools, gen, template=TEMPLATE):
    return tok.apply_chat_template(
        messages, tools=tools, tokenize=False, add_generation_prompt=gen, chat_template=template
    )


def _ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


def test_the_converted_model_carries_smollm2s_own_template_on_cpu(tok):
    assert tok.chat_template == OWN


def test_without_tools_it_renders_as_smollm2s_own_template_on_cpu(tok):
    for messages in (NO_TOOLS, NO_TOOLS[1:2]):
        for gen in (False, True):
            assert _render(tok, messages, None, gen) == _render(tok, messages, None, gen, OWN)


def test_each_turns_tokens_are_a_prefix_of_the_next_on_cpu(tok):
    full = _ids(tok, _render(tok, TWO_CALLS, [CALCULATOR], False))
    for k in range(1, len(TWO_CALLS)):
        # The generation prompt comes before an assistant turn; tool results follow the assistant's turn directly.
        gen = TWO_CALLS[k]["role"] == "assistant"
        before = _ids(tok, _render(tok, TWO_CALLS[:k], [CALCULATOR], gen))
        through = _ids(tok, _render(tok, TWO_CALLS[: k + 1], [CALCULATOR], False))
        assert through[: len(before)] == before, k
        assert full[: len(through)] == through, k
    # The assistant's call is ordinary text to this tokenizer (no <tool_call> token), digits one token each.
    assert tok.convert_tokens_to_ids("<tool_call>") == tok.unk_token_id
    assert tok.tokenize("4512") == ["4", "5", "1", "2"]


JS_RENDER = """
import { readFileSync } from 'node:fs';
import { Template } from '@huggingface/jinja';
const { template, cases } = JSON.parse(readFileSync(0, 'utf8'));
const t = new Template(template);
process.stdout.write(JSON.stringify(cases.map((c) => t.render({ messages: c.messages, tools: c.tools ?? undefined,
  add_generation_prompt: c.gen, bos_token: '<|im_start|>', eos_token: '<|im_end|>' }))));
"""


@pytest.mark.skipif(
    shutil.which("node") is None or not (REPO / "node_modules" / "@huggingface" / "jinja").is_dir(),
    reason="needs node and `npm ci` (the rollouts' Jinja)",
)
def test_transformers_and_the_rollouts_jinja_give_the_same_tokens_on_cpu(tok):
    cases = [
        {"messages": m, "tools": t, "gen": g}
        for m, t in ((TWO_CALLS, [CALCULATOR]), (TWO_CALLS[:3], [CALCULATOR]), (NO_TOOLS, None))
        for g in (False, True)
    ]
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", JS_RENDER],
        input=json.dumps({"template": TEMPLATE, "cases": cases}),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=True,
    )
    for case, js in zip(cases, json.loads(proc.stdout), strict=True):
        py = _render(tok, case["messages"], case["tools"], case["gen"])
        assert js == py
        assert _ids(tok, js) == _ids(tok, py)
