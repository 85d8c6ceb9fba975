"""The same agent with the OpenAI Agents SDK (`openai-agents`): an `Agent` with a function tool, run by `Runner` on
the SDK's Chat Completions model pointed at the episode's `base_url`. The SDK loops by itself (model, tool, model)
and returns the final output. Tracing is off: it would export to OpenAI's servers."""

from __future__ import annotations

import json

from agents import (
    Agent,
    FunctionTool,
    OpenAIChatCompletionsModel,
    RunContextWrapper,
    Runner,
    set_tracing_disabled,
)
from calculator_agent import CALCULATOR, calculator
from openai import AsyncOpenAI

set_tracing_disabled(True)


async def _invoke(_ctx: RunContextWrapper, arguments: str) -> str:
    return calculator(str(json.loads(arguments or "{}").get("expression", "")))


# The tool's schema as the warm start's demonstrations rendered it (FunctionTool rather than @function_tool, whose
# generated schema adds titles and additionalProperties the model has not seen).
CALCULATOR_TOOL = FunctionTool(
    name=CALCULATOR["function"]["name"],
    description=CALCULATOR["function"]["description"],
    params_json_schema=CALCULATOR["function"]["parameters"],
    on_invoke_tool=_invoke,
    strict_json_schema=False,
)


async def run(base_url: str, model: str, messages: list[dict], **_) -> str | None:
    agent = Agent(
        name="calculator agent",
        tools=[CALCULATOR_TOOL],
        model=OpenAIChatCompletionsModel(
            model=model, openai_client=AsyncOpenAI(base_url=base_url, api_key="toolrl")
        ),
    )
    result = await Runner.run(agent, input=messages, max_turns=10)
    return result.final_output
