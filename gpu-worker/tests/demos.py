"""A warm-start demonstration the learner's SFT tests share: one calculator call, its result, the answer."""

CALL = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "17*23"}}\n</tool_call>'
DEMO = {
    "messages": [
        {"role": "user", "content": "What is 17 * 23?"},
        {"role": "assistant", "content": CALL},
        {"role": "tool", "content": "391"},
        {"role": "assistant", "content": "The answer is 391."},
    ]
}
