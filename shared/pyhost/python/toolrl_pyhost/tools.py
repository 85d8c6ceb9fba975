"""Tool classes and their per-trajectory instances. A class is loaded once per host with its `config` and
`tool_schema` (verl's BaseTool constructor); an instance is created per trajectory (`create(instance_id,
**create_kwargs)`), executed, asked for its reward and released, as verl's multi-turn rollout drives tools.

A call for an instance this process does not hold (the host restarted, or another container served the
trajectory's earlier calls) rebuilds it first: create, then the trajectory's earlier calls to the tool replayed
in order (their outputs dropped), as BFCL's environments are rebuilt. Instances idle past `ttl` seconds, or the
least recently used beyond `max_instances`, are released: a trajectory that was abandoned never leaks."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from .calls import accepts, call_with_deadline
from .errors import BadRequest, LoadFailed, Timeout, UserError
from .loading import LoadError, load_dotted, load_from_file
from .shapes import ShapeError, created_id, execute_result, finite, schema_dict, schema_for


@dataclass
class LoadedTool:
    key: str
    label: str
    obj: Any
    schema: dict[str, Any]
    # our instance id -> the id the tool's create returned, least recently used first
    live: OrderedDict = field(default_factory=OrderedDict)
    used: dict[str, float] = field(default_factory=dict)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)


def _construct(cls: Any, config: dict, schema: dict | None, label: str) -> Any:
    if not isinstance(cls, type):
        raise LoadFailed(f"{label} is a {type(cls).__name__}, not a class")
    kwargs: dict[str, Any] = {}
    if accepts(cls, "config"):
        kwargs["config"] = config
    if accepts(cls, "tool_schema"):
        kwargs["tool_schema"] = schema_for(cls, schema)
    try:
        return cls(**kwargs)
    except Exception as e:  # noqa: BLE001
        raise LoadFailed(f"constructing {label} failed: {UserError.wrap(label, e)}") from e


def _schema_of(obj: Any, given: dict | None, label: str) -> dict[str, Any]:
    getter = getattr(obj, "get_openai_tool_schema", None)
    value = getter() if callable(getter) else getattr(obj, "tool_schema", None)
    schema = schema_dict(value) if value is not None else given
    if not schema or not isinstance(schema.get("function"), dict) or not schema["function"].get("name"):
        raise LoadFailed(
            f"{label} gives no OpenAI tool schema ({{type: function, function: {{name, description, parameters}}}}): "
            "add `tool_schema` to its entry in the tool config"
        )
    schema.setdefault("type", "function")
    return schema


class Tools:
    def __init__(self, ttl: float, max_instances: int):
        self.ttl = ttl
        self.max_instances = max_instances
        self.tools: dict[str, LoadedTool] = {}
        self.stats = {
            "loaded": 0,
            "created": 0,
            "rebuilt": 0,
            "replayed": 0,
            "executed": 0,
            "released": 0,
            "evicted": 0,
        }

    def live(self) -> int:
        return sum(len(t.live) for t in self.tools.values())

    # -- loading ------------------------------------------------------------------------------------------

    def load(self, p: dict) -> dict:
        key = _text(p, "key")
        config = p.get("config") or {}
        given = p.get("toolSchema")
        try:
            if p.get("path"):
                label = p.get("label") or f"{p.get('name')} from {p['path']}"
                cls = load_from_file(p["path"], _text(p, "name"))
            else:
                label = _text(p, "className")
                cls = load_dotted(label)
        except LoadError as e:
            raise LoadFailed(str(e)) from e
        obj = _construct(cls, config, given, label)
        schema = _schema_of(obj, given, label)
        self.tools[key] = LoadedTool(key, label, obj, schema)
        self.stats["loaded"] += 1
        return {"schema": schema}

    def _tool(self, p: dict) -> LoadedTool:
        key = _text(p, "key")
        tool = self.tools.get(key)
        if tool is None:
            raise BadRequest(f"no tool loaded under key {key!r}")
        return tool

    # -- the lifecycle --------------------------------------------------------------------------------------

    async def _call(self, tool: LoadedTool, method: str, args: tuple, kwargs: dict, timeout: float | None):
        fn = getattr(tool.obj, method, None)
        if not callable(fn):
            raise UserError(f"{tool.label} has no {method}() method")
        try:
            return await call_with_deadline(fn, args, kwargs, timeout)
        except asyncio.TimeoutError:  # noqa: UP041 - see calls.py
            raise Timeout(
                f"{tool.label}.{method} did not finish within {timeout:g}s and was cancelled"
            ) from None
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001
            raise UserError.wrap(f"{tool.label}.{method}", e) from e

    async def _create(
        self, tool: LoadedTool, instance: str, create_kwargs: dict, timeout: float | None
    ) -> str:
        fn = getattr(tool.obj, "create", None)
        if not callable(fn):  # a tool without per-trajectory state
            return instance
        kwargs = dict(create_kwargs)
        # verl's agent loop passes the row's create_kwargs as one keyword; its older rollout spreads them:
        # a tool written for either reads them.
        if "create_kwargs" not in kwargs and accepts(fn, "create_kwargs"):
            kwargs["create_kwargs"] = dict(create_kwargs)
        returned = await self._call(tool, "create", (instance,), kwargs, timeout)
        self.stats["created"] += 1
        return created_id(returned, instance)

    async def _ensure(
        self, tool: LoadedTool, instance: str, ensure: dict | None, timeout: float | None
    ) -> dict:
        """The tool's id of `instance`, creating and replaying it when this process does not hold it."""
        lock = tool.locks.setdefault(instance, asyncio.Lock())
        async with lock:
            if instance in tool.live:
                tool.live.move_to_end(instance)
                tool.used[instance] = time.monotonic()
                return {"id": tool.live[instance], "rebuilt": False, "replayed": 0}
            if ensure is None:
                tool.locks.pop(instance, None)
                raise BadRequest(f"{tool.label}: no live instance {instance!r}")
            try:
                their = await self._create(tool, instance, ensure.get("createKwargs") or {}, timeout)
            except BaseException:
                tool.locks.pop(instance, None)
                raise
            history = ensure.get("history") or []
            for params in history:
                # Earlier calls rebuild the state; what they returned the model has already read.
                try:
                    await self._call(
                        tool, "execute", (their, params), ensure.get("executeKwargs") or {}, timeout
                    )
                except (UserError, Timeout):
                    pass
                self.stats["replayed"] += 1
            if history:
                self.stats["rebuilt"] += 1
            tool.live[instance] = their
            tool.used[instance] = time.monotonic()
        await self._evict_over_capacity()
        return {"id": their, "rebuilt": bool(history), "replayed": len(history)}

    async def execute(self, p: dict, timeout: float | None) -> dict:
        tool = self._tool(p)
        instance = _text(p, "instance")
        params = p.get("parameters")
        if not isinstance(params, dict):
            raise BadRequest("parameters must be an object")
        held = await self._ensure(tool, instance, p.get("ensure"), timeout)
        value = await self._call(tool, "execute", (held["id"], params), _kwargs(p), timeout)
        self.stats["executed"] += 1
        try:
            out = execute_result(value)
        except ShapeError as e:
            raise UserError(f"{tool.label}.execute: {e}") from e
        return {**out, "rebuilt": held["rebuilt"], "replayed": held["replayed"]}

    async def calc_reward(self, p: dict, timeout: float | None) -> dict:
        tool = self._tool(p)
        held = await self._ensure(tool, _text(p, "instance"), p.get("ensure"), timeout)
        if not callable(getattr(tool.obj, "calc_reward", None)):
            return {"reward": None, "rebuilt": held["rebuilt"]}
        value = await self._call(tool, "calc_reward", (held["id"],), _kwargs(p), timeout)
        try:
            reward = None if value is None else finite(value, f"{tool.label}.calc_reward's return")
        except ShapeError as e:
            raise UserError(str(e)) from e
        return {"reward": reward, "rebuilt": held["rebuilt"]}

    async def release(self, p: dict, timeout: float | None) -> dict:
        tool = self._tool(p)
        return {"released": await self._release(tool, _text(p, "instance"), timeout, _kwargs(p))}

    async def _release(
        self, tool: LoadedTool, instance: str, timeout: float | None, kwargs: dict | None = None
    ) -> bool:
        their = tool.live.pop(instance, None)
        tool.used.pop(instance, None)
        tool.locks.pop(instance, None)
        if their is None:
            return False
        self.stats["released"] += 1
        if callable(getattr(tool.obj, "release", None)):
            await self._call(tool, "release", (their,), kwargs or {}, timeout)
        return True

    async def _evict_over_capacity(self) -> None:
        while self.live() > self.max_instances:
            oldest = min(
                (
                    (t, i)
                    for t in self.tools.values()
                    for i in t.live
                    if not t.locks.get(i, asyncio.Lock()).locked()
                ),
                key=lambda ti: ti[0].used.get(ti[1], 0.0),
                default=None,
            )
            if oldest is None:
                return
            self.stats["evicted"] += 1
            await self._release_quietly(*oldest)

    async def _release_quietly(self, tool: LoadedTool, instance: str) -> None:
        try:
            await self._release(tool, instance, 30.0)
        except Exception:  # noqa: BLE001 (an instance being dropped has no one to report to)
            pass

    async def sweep(self) -> None:
        """Releases instances idle for longer than ttl (abandoned trajectories)."""
        cutoff = time.monotonic() - self.ttl
        for tool in list(self.tools.values()):
            for instance in [i for i, t in tool.used.items() if t < cutoff]:
                lock = tool.locks.get(instance)
                if lock is not None and lock.locked():
                    continue
                self.stats["evicted"] += 1
                await self._release_quietly(tool, instance)

    async def release_all(self) -> None:
        for tool in list(self.tools.values()):
            for instance in list(tool.live):
                await self._release_quietly(tool, instance)


def _kwargs(p: dict) -> dict:
    """The row's `execute_kwargs` / `calc_reward_kwargs` / `release_kwargs` (verl's tools_kwargs)."""
    value = p.get("kwargs") or {}
    if not isinstance(value, dict):
        raise BadRequest("kwargs must be an object")
    return value


def _text(p: dict, key: str) -> str:
    value = p.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} must be a non-empty string")
    return value
