"""The shapes user code exchanges with the host: the tool schema a class is given (verl's pydantic
OpenAIFunctionToolSchema when the class is a verl tool, else an attribute view of the same JSON), and the
return values of execute / create / calc_reward / compute_score, normalised to JSON."""

from __future__ import annotations

import json
import math
from typing import Any


class SchemaView:
    """Attribute access over a JSON object (`schema.function.name`), plus pydantic's `model_dump`, so a class
    written against verl's OpenAIFunctionToolSchema runs without verl installed."""

    def __init__(self, data: dict[str, Any]):
        self._data = data

    def __getattr__(self, key: str) -> Any:
        try:
            value = self._data[key]
        except KeyError:
            raise AttributeError(key) from None
        return SchemaView(value) if isinstance(value, dict) else value

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return json.loads(json.dumps(self._data))

    def __repr__(self) -> str:
        return f"SchemaView({self._data!r})"


def is_verl_class(cls: type) -> bool:
    return any(getattr(c, "__module__", "").startswith("verl.") for c in getattr(cls, "__mro__", ()))


def schema_for(cls: type, schema: dict[str, Any] | None) -> Any:
    """What the class's constructor gets as `tool_schema`."""
    if schema is None:
        return None
    if is_verl_class(cls):
        from verl.tools.schemas import OpenAIFunctionToolSchema

        return OpenAIFunctionToolSchema.model_validate(schema)
    return SchemaView(schema)


def schema_dict(value: Any) -> dict[str, Any] | None:
    """A tool schema object (pydantic, SchemaView, dict) as plain JSON."""
    if value is None:
        return None
    if isinstance(value, dict):
        return json.loads(json.dumps(value))
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(exclude_unset=True, exclude_none=True)
        except TypeError:
            return dump()
    raise TypeError(f"a tool schema must be a dict or a pydantic model, got {type(value).__name__}")


class ShapeError(TypeError):
    """User code returned something the protocol cannot carry; the message says what was expected."""


def finite(value: Any, what: str) -> float:
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ShapeError(f"{what} must be a finite number, got {value!r}"[:300])
    return float(value)


def response_text(response: Any) -> str:
    """verl's ToolResponse (text, image, video), a str, a dict with `text`, or None."""
    if response is None:
        return ""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        text = response.get("text")
        others = [k for k in ("image", "video") if response.get(k)]
    else:
        text = getattr(response, "text", None)
        others = [k for k in ("image", "video") if getattr(response, k, None)]
        if text is None and not others and not hasattr(response, "text"):
            raise ShapeError(f"a tool response must be a str or have .text, got {type(response).__name__}")
    if others:
        note = f"[{' and '.join(others)} omitted: toolrl's policies read text]"
        return f"{text}\n{note}" if text else note
    return "" if text is None else str(text)


def json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def execute_result(value: Any) -> dict[str, Any]:
    """execute's return: (response, step_reward, metrics) as verl's BaseTool, or a shorter tuple, or a bare
    response."""
    reward: Any = None
    metrics: Any = None
    if isinstance(value, tuple):
        if not 1 <= len(value) <= 3:
            raise ShapeError(
                f"execute returned a tuple of {len(value)}; expected (response, reward, metrics)"
            )
        response, reward, metrics = (*value, None, None)[:3]
    else:
        response = value
    out: dict[str, Any] = {"text": response_text(response)}
    if reward is not None:
        out["reward"] = finite(reward, "the step reward execute returned")
    if metrics:
        if not isinstance(metrics, dict):
            raise ShapeError(f"the metrics execute returned must be a dict, got {type(metrics).__name__}")
        out["metrics"] = json_safe(metrics)
    return out


def created_id(value: Any, asked: str) -> str:
    """create's return: (instance_id, response) as verl's BaseTool, an instance id, or None (the one asked)."""
    if isinstance(value, tuple) and value:
        value = value[0]
    if value is None:
        return asked
    return str(value)


def score_result(value: Any) -> dict[str, Any]:
    """compute_score's return: a number, or a dict with `score` and extra values (numbers are kept as
    components, as verl keeps them as reward_extra_info)."""
    if isinstance(value, dict):
        if "score" not in value:
            raise ShapeError(f"a reward dict needs a 'score' key; got keys {sorted(value)[:10]}")
        extra = {}
        for k, v in value.items():
            if k == "score":
                continue
            if isinstance(v, (bool, int, float)) and math.isfinite(float(v)):
                extra[str(k)] = float(v)
        return {"score": finite(value["score"], "score"), "extra": extra}
    return {"score": finite(value, "the reward"), "extra": {}}
