"""An agent written against the OpenAI API with the `openai` package, as it would run against any OpenAI-compatible
server: it offers its own calculator, runs the calls the model asks for, sends their results back, and returns the
model's final answer. toolrl calls `run` once per episode with the episode's `base_url`; nothing else changes."""

from __future__ import annotations

import ast
import json
import operator

from openai import AsyncOpenAI

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

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def calculator(expression: str) -> str:
    """+ - * / and parentheses on numbers; anything else is an error the model reads."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"unsupported expression: {expression!r}")

    try:
        value = ev(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError) as e:
        return f"Error: {e}"
    return str(int(value)) if float(value).is_integer() else str(value)


async def run(base_url: str, model: str, messages: list[dict], **_) -> str | None:
    client = AsyncOpenAI(base_url=base_url, api_key="toolrl")
    history = list(messages)
    while True:
        completion = await client.chat.completions.create(model=model, messages=history, tools=[CALCULATOR])
        message = completion.choices[0].message
        history.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            result = (
                calculator(str(args.get("expression", "")))
                if call.function.name == "calculator"
                else (f"Error: no tool named {call.function.name}")
            )
            history.append({"role": "tool", "tool_call_id": call.id, "content": result})
