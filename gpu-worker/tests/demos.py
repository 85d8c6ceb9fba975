"""Warm-start demonstrations the learner's SFT tests share: one calculator call of `a * b` or `a + b`, its result,
the answer."""


def calculator_call(expression: str) -> str:
    return (
        f'<tool_call>\n{{"name": "calculator", "arguments": {{"expression": "{expression}"}}}}\n</tool_call>'
    )


def calculator_demo(a: int, op: str, b: int) -> dict:
    result = a * b if op == "*" else a + b
    return {
        "messages": [
            {"role": "user", "content": f"What is {a} {op} {b}?"},
            {"role": "assistant", "content": calculator_call(f"{a}{op}{b}")},
            {"role": "tool", "content": str(result)},
            {"role": "assistant", "content": f"The answer is {result}."},
        ]
    }


CALL = calculator_call("17*23")
DEMO = calculator_demo(17, "*", 23)
