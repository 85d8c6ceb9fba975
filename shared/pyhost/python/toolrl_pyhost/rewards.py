"""Reward functions with verl's signature, `compute_score(data_source, solution_str, ground_truth, extra_info,
**reward_kwargs)` returning a number or a dict with `score` (verl's NaiveRewardManager), or its batched form
`compute_score(data_sources, solution_strs, ground_truths, extra_infos, **reward_kwargs)` returning a list
(verl's BatchRewardManager). Each item's failure (an exception, a timeout, a return of the wrong shape) is that
item's error: the others are still scored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .calls import call_with_deadline
from .errors import BadRequest, LoadFailed
from .loading import LoadError, load_dotted, load_from_file
from .shapes import ShapeError, score_result


@dataclass
class LoadedReward:
    label: str
    fn: Callable[..., Any]
    kwargs: dict
    batched: bool


def _error(kind: str, message: str) -> dict:
    return {"ok": False, "error": {"type": kind, "message": message[:4000]}}


def _failure(label: str, e: BaseException, timeout: float | None) -> dict:
    if isinstance(e, asyncio.TimeoutError):
        return _error("timeout", f"{label} did not finish within {timeout:g}s and was cancelled")
    if isinstance(e, ShapeError):
        return _error("user_error", f"{label}: {e}")
    from .errors import UserError

    return _error("user_error", str(UserError.wrap(label, e)))


class Rewards:
    def __init__(self) -> None:
        self.rewards: dict[str, LoadedReward] = {}
        self.stats = {"scored": 0, "failed": 0}

    def load(self, p: dict) -> dict:
        key = p.get("key")
        name = p.get("name")
        if not isinstance(key, str) or not isinstance(name, str):
            raise BadRequest("load_reward needs key and name")
        try:
            if p.get("path"):
                fn = load_from_file(p["path"], name)
                label = p.get("label") or f"{name} from {p['path']}"
            else:
                fn = load_dotted(name)
                label = name
        except LoadError as e:
            raise LoadFailed(str(e)) from e
        if not callable(fn):
            raise LoadFailed(f"{label} is a {type(fn).__name__}, not a function")
        kwargs = p.get("kwargs") or {}
        if not isinstance(kwargs, dict):
            raise BadRequest("kwargs must be an object")
        self.rewards[key] = LoadedReward(label, fn, kwargs, bool(p.get("batched")))
        return {"label": label}

    async def score(self, p: dict, timeout: float | None) -> dict:
        reward = self.rewards.get(p.get("key"))  # type: ignore[arg-type]
        if reward is None:
            raise BadRequest(f"no reward loaded under key {p.get('key')!r}")
        items = p.get("items")
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise BadRequest("items must be a list of objects")
        results = await (
            self._batched(reward, items, timeout) if reward.batched else self._each(reward, items, timeout)
        )
        self.stats["scored"] += len(results)
        self.stats["failed"] += sum(1 for r in results if not r["ok"])
        return {"results": results}

    async def _one(self, reward: LoadedReward, item: dict, timeout: float | None) -> dict:
        kwargs = {
            "data_source": item.get("dataSource"),
            "solution_str": item.get("solutionStr", ""),
            "ground_truth": item.get("groundTruth"),
            "extra_info": item.get("extraInfo") or {},
            **reward.kwargs,
        }
        try:
            return {"ok": True, **score_result(await call_with_deadline(reward.fn, (), kwargs, timeout))}
        except Exception as e:  # noqa: BLE001 (each item's failure is its own)
            return _failure(reward.label, e, timeout)

    async def _each(self, reward: LoadedReward, items: list, timeout: float | None) -> list:
        return list(await asyncio.gather(*(self._one(reward, item, timeout) for item in items)))

    async def _batched(self, reward: LoadedReward, items: list, timeout: float | None) -> list:
        kwargs = {
            "data_sources": [i.get("dataSource") for i in items],
            "solution_strs": [i.get("solutionStr", "") for i in items],
            "ground_truths": [i.get("groundTruth") for i in items],
            "extra_infos": [i.get("extraInfo") or {} for i in items],
            **reward.kwargs,
        }
        try:
            values = await call_with_deadline(reward.fn, (), kwargs, timeout)
        except Exception as e:  # noqa: BLE001 (one call for all: all share its failure)
            return [_failure(reward.label, e, timeout)] * len(items)
        if not isinstance(values, (list, tuple)) or len(values) != len(items):
            got = f"{len(values)} values" if isinstance(values, (list, tuple)) else type(values).__name__
            return [
                _error("user_error", f"{reward.label} (batched) returned {got} for {len(items)} items")
            ] * len(items)
        out = []
        for v in values:
            try:
                out.append({"ok": True, **score_result(v)})
            except ShapeError as e:
                out.append(_error("user_error", f"{reward.label}: {e}"))
        return out
