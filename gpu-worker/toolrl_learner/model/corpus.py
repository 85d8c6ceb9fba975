"""A seeded synthetic corpus for the tiny tokenizer: digits and arithmetic, English, tool-call JSON, chat markup.

Its only job is to give BPE merges that make the demo's conversations short in tokens; it is generated, not
stored, so the tokenizer is rebuilt identically from the seed in well under a second.
"""

from __future__ import annotations

import json
import random

WORDS = (
    "the a an of to and in is it that for on with as was be by at this are from or have not but what all "
    "were when we there can which their said if do will each about how up out them then she many some so "
    "these would other into has more her two like him see time could no make than first been its who now "
    "people my made over did down only way find use may water long little very after words called just "
    "where most know get through back much before go good new write our used me man too any day same "
    "right look think also around another came come work three word must because does part even place "
    "well such here take why things help put years different away again off went old number great tell "
    "men say small every found still between name should home big give air line set own under read last "
    "never us left end along while might next sound below saw something thought both few those always "
    "looked show large often together asked house world going want school important until form food keep "
    "children feet land side without boy once animals life enough took sometimes four head above kind "
    "began almost live page got earth need far hand high year mother light parts country father let night "
    "following picture being study second eyes soon times story boys since white days paper hard near "
    "sentence better best across during today others however sure means knew try told young miles sun "
    "question answer result compute calculate total sum difference product value number numbers equals "
    "search weather city temperature date file tool call function arguments please thanks let me check "
    "the answer is step first then finally therefore because so we get"
).split()
TOOL_NAMES = ("calculator", "python", "search", "get_weather", "lookup", "final_answer")
CITIES = ("Paris", "London", "Tokyo", "Berlin", "Madrid", "Rome", "Cairo", "Lima", "Oslo", "Seoul")
OPS = ("+", "-", "*", "/")
SYSTEM_TEXT = (
    "You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user "
    "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    "</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call>"
)


def _expression(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(0, 999), rng.randint(1, 99)
    op = rng.choice(OPS)
    value = {"+": a + b, "-": a - b, "*": a * b, "/": round(a / b, 4)}[op]
    return f"{a} {op} {b}", str(value)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(4, 14))]
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice((".", "?", "!", "."))


def _tool_schema(rng: random.Random) -> str:
    name = rng.choice(TOOL_NAMES)
    param = rng.choice(("expression", "query", "city", "code", "answer"))
    schema = {
        "type": "function",
        "function": {
            "name": name,
            "description": _sentence(rng),
            "parameters": {
                "type": "object",
                "properties": {param: {"type": "string", "description": _sentence(rng)}},
                "required": [param],
            },
        },
    }
    return json.dumps(schema)


def _tool_call(rng: random.Random) -> str:
    expr, value = _expression(rng)
    kind = rng.randrange(4)
    if kind == 0:
        call = {"name": "calculator", "arguments": {"expression": expr}}
    elif kind == 1:
        call = {"name": "get_weather", "arguments": {"city": rng.choice(CITIES)}}
    elif kind == 2:
        call = {"name": "search", "arguments": {"query": " ".join(rng.choice(WORDS) for _ in range(3))}}
    else:
        call = {"name": "final_answer", "arguments": {"answer": value}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


def _exchange(rng: random.Random) -> str:
    expr, value = _expression(rng)
    return (
        f"<|im_start|>user\nWhat is {expr}?<|im_end|>\n<|im_start|>assistant\n{_tool_call(rng)}<|im_end|>\n"
        f"<|im_start|>user\n<tool_response>\n{value}\n</tool_response><|im_end|>\n"
        f"<|im_start|>assistant\n<think>\n{_sentence(rng)}\n</think>\n\nThe answer is {value}.<|im_end|>\n"
    )


def synthetic_corpus(seed: int, lines: int = 4000) -> list[str]:
    """`lines` documents mixing the five kinds of text the tiny model will see."""
    rng = random.Random(seed)
    makers = (
        lambda: " ".join(_sentence(rng) for _ in range(rng.randint(1, 4))),
        lambda: "{} = {}".format(*_expression(rng)),
        lambda: _exchange(rng),
        lambda: _tool_schema(rng),
        lambda: SYSTEM_TEXT,
        lambda: " ".join(str(rng.randint(0, 10 ** rng.randint(1, 6))) for _ in range(rng.randint(1, 8))),
    )
    return [rng.choice(makers)() for _ in range(lines)]
