"""Agent functions (`rollout.agent: {path: agents/my_agent.py, name: run}`): one function per run, called once per
episode with keyword arguments (`base_url` and `model` of the episode's OpenAI-compatible endpoint, `messages`,
`tools`, `extra_info`, and whatever else the rollout stage passes); it runs its own loop and tools and returns
when the episode is done. A function that takes only some of the arguments gets only those (it must take
`base_url`). What it returns comes back as JSON: nothing, the final answer as text, or a dict (with `answer`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .calls import accepts, call_with_deadline
from .errors import BadRequest, LoadFailed, Timeout, UserError
from .loading import LoadError, load_from_file


@dataclass
class LoadedAgent:
    label: str
    fn: Callable[..., Any]


def _jsonable(value: Any) -> Any:
    """The value as plain JSON (pydantic models and dataclasses through their own dumps, anything else as str)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json")
    return json.loads(json.dumps(value, default=str))


def agent_result(value: Any) -> dict:
    """{answer, output}: a str return is the answer; a dict's `answer` (or `final_answer`) when it is text."""
    if value is None:
        return {"answer": None, "output": None}
    if isinstance(value, str):
        return {"answer": value, "output": None}
    output = _jsonable(value)
    answer = None
    if isinstance(output, dict):
        for key in ("answer", "final_answer", "final_output"):
            if isinstance(output.get(key), str):
                answer = output[key]
                break
    return {"answer": answer, "output": output}


class Agents:
    def __init__(self) -> None:
        self.agents: dict[str, LoadedAgent] = {}
        self.stats = {"episodes": 0, "agent_errors": 0}

    def load(self, p: dict) -> dict:
        key, path, name = p.get("key"), p.get("path"), p.get("name")
        if not isinstance(key, str) or not isinstance(path, str) or not isinstance(name, str):
            raise BadRequest("load_agent needs key, path and name")
        label = p.get("label") or f"{name} from {path}"
        try:
            fn = load_from_file(path, name)
        except LoadError as e:
            raise LoadFailed(str(e)) from e
        if not callable(fn):
            raise LoadFailed(f"{label} is a {type(fn).__name__}, not a function")
        if not accepts(fn, "base_url"):
            raise LoadFailed(
                f"{label} takes no `base_url` keyword: an agent is called with base_url, model, messages, "
                "tools and extra_info"
            )
        self.agents[key] = LoadedAgent(label, fn)
        return {"label": label}

    async def run(self, p: dict, timeout: float | None) -> dict:
        agent = self.agents.get(p.get("key"))  # type: ignore[arg-type]
        if agent is None:
            raise BadRequest(f"no agent loaded under key {p.get('key')!r}")
        kwargs = p.get("kwargs")
        if not isinstance(kwargs, dict):
            raise BadRequest("kwargs must be an object")
        given = {k: v for k, v in kwargs.items() if accepts(agent.fn, k)}
        self.stats["episodes"] += 1
        try:
            value = await call_with_deadline(agent.fn, (), given, timeout)
        except asyncio.TimeoutError:  # noqa: UP041 - see calls.py
            self.stats["agent_errors"] += 1
            raise Timeout(f"{agent.label} did not return within {timeout:g}s and was cancelled") from None
        except Exception as e:  # noqa: BLE001 (the episode's failure, reported with the user's frames)
            self.stats["agent_errors"] += 1
            raise UserError.wrap(agent.label, e) from e
        return agent_result(value)
