"""BFCL environments for one entry, run by BFCL's own executor (`execute_multi_turn_func_call`).

The executor keeps the instances of an entry's classes in its module globals under a name built from a
"model name"; calling it again with the same name continues with the same (live) instances, as BFCL's
inference loop does. We use one fresh name per state ("token") so states never mix, and rebuild a state by
replaying the calls a trajectory already made from the entry's `initial_config` (serverless: no memory
between invocations is needed). A small LRU keeps recent live states by the hash of (entry, calls so far):
a trajectory's next call then continues its live instances instead of replaying; a miss replays. Both paths
give the same state (the classes are deterministic: their randomness is seeded in `initial_config`).
"""

import hashlib
import importlib
import inspect
import itertools
import json
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import bfcl_eval
from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

from .calls import CallError, to_call_string

# The classes of BFCL's multi-turn categories (base, miss_func, miss_param, long_context). The web-search and
# memory classes share the executor but need network access or extra packages, so they are not offered.
MULTI_TURN_CLASSES = (
    "GorillaFileSystem",
    "MathAPI",
    "MessageAPI",
    "TwitterAPI",
    "TicketAPI",
    "TradingBot",
    "TravelAPI",
    "VehicleControlAPI",
)

# How BFCL's executor reports a call that raised; kept in the output, flagged for the caller.
ERROR_PREFIX = "Error during execution: "


class EntryError(ValueError):
    """A request whose entry is unusable (unknown class, missing field)."""


@cache
def class_methods(class_name: str) -> dict[str, inspect.Signature]:
    """Public methods of a class with their signatures: the functions an entry offers."""
    if class_name not in MULTI_TURN_CLASSES:
        raise EntryError(
            f"class {class_name!r} is not a BFCL multi-turn class; known: {', '.join(MULTI_TURN_CLASSES)}"
        )
    cls = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)
    return {
        name: inspect.signature(fn)
        for name, fn in inspect.getmembers(cls, predicate=inspect.isfunction)
        if not name.startswith("_")
    }


@cache
def _bfcl_configs(category: str) -> dict[str, dict]:
    """`id -> initial_config` of one of BFCL's own data files (empty for a category it does not ship)."""
    path = Path(bfcl_eval.__file__).parent / "data" / f"BFCL_v4_{category}.json"
    if not path.is_file():
        return {}
    with open(path, encoding="utf-8") as f:
        return {e["id"]: e["initial_config"] for e in map(json.loads, f)}


def exact_config(entry_id: str, config: dict) -> dict:
    """BFCL's own initial_config for this entry when the given one equals it.

    JSON read by JavaScript keeps no difference between 10 and 10.0, but BFCL's states and results do (a fuel
    level of 10.0 plus 40 prints as 50.0). Where the row's config is numerically BFCL's own, BFCL's own (with
    its exact number types) is used; any other config is used as given.
    """
    original = _bfcl_configs(entry_id.rsplit("_", 1)[0]).get(entry_id)
    return original if original is not None and original == config else config


@dataclass(frozen=True)
class Entry:
    """What an environment is built from: BFCL's `id`, `initial_config` and `involved_classes`."""

    id: str
    initial_config: dict
    involved_classes: tuple[str, ...]

    @staticmethod
    def parse(raw) -> "Entry":
        if not isinstance(raw, dict):
            raise EntryError("entry must be an object {id, initialConfig, involvedClasses}")
        entry_id, config, classes = (
            raw.get("id"),
            raw.get("initialConfig"),
            raw.get("involvedClasses"),
        )
        if not isinstance(entry_id, str) or not entry_id:
            raise EntryError("entry.id must be a non-empty string")
        if not isinstance(config, dict):
            raise EntryError(f"entry {entry_id}: initialConfig must be an object")
        if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
            raise EntryError(f"entry {entry_id}: involvedClasses must be a non-empty list of class names")
        for c in classes:
            class_methods(c)
        return Entry(entry_id, exact_config(entry_id, config), tuple(classes))

    @property
    def category(self) -> str:
        return self.id.rsplit("_", 1)[0]

    @property
    def long_context(self) -> bool:
        # The same test BFCL's inference and checker apply to the entry id.
        return "long_context" in self.category or "composite" in self.category

    def methods(self) -> dict[str, inspect.Signature]:
        out = {}
        for c in self.involved_classes:
            out.update(class_methods(c))
        return out

    def as_test_entry(self) -> dict:
        """The entry in the shape BFCL's checker reads."""
        return {
            "id": self.id,
            "initial_config": self.initial_config,
            "involved_classes": list(self.involved_classes),
        }

    def digest(self) -> str:
        text = json.dumps([self.id, self.initial_config, self.involved_classes], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


_tokens = itertools.count()


def new_token(kind: str = "env") -> str:
    """A model name no other state uses (BFCL names instances after it)."""
    return f"toolrl_{kind}{next(_tokens)}"


def release(token: str) -> None:
    """Drops every instance BFCL's executor keeps under this token (including the checker's `_eval` names)."""
    names = vars(multi_turn_utils)
    for key in [k for k in names if k.startswith(f"{token}_")]:
        del names[key]


def run_calls(entry: Entry, token: str, call_strings: list[str]) -> tuple[list[str], dict]:
    """Runs call strings on the live instances of `token` (created from initial_config on first use)."""
    return multi_turn_utils.execute_multi_turn_func_call(
        call_strings,
        entry.initial_config,
        list(entry.involved_classes),
        token,
        entry.id,
        long_context=entry.long_context,
    )


def call_strings(entry: Entry, calls) -> list[str]:
    if not isinstance(calls, list):
        raise CallError("calls must be a list of {name, arguments}")
    methods = set(entry.methods())
    out = []
    for i, call in enumerate(calls):
        if not isinstance(call, dict):
            raise CallError(f"call {i} must be an object {{name, arguments}}")
        out.append(to_call_string(call.get("name"), call.get("arguments") or {}, methods))
    return out


def history_key(entry_digest: str, strings: list[str]) -> str:
    h = hashlib.sha256(entry_digest.encode())
    for s in strings:
        h.update(b"\x00")
        h.update(s.encode())
    return h.hexdigest()


class Environments:
    """Replays or continues entry states; `cache_size` live states are kept (0: always replay)."""

    def __init__(self, cache_size: int = 256):
        self.cache_size = cache_size
        self.live: OrderedDict[str, str] = OrderedDict()  # history key -> token of its live instances
        self.stats = {"replays": 0, "continued": 0, "replayedCalls": 0, "calls": 0}

    def _state_after(self, entry: Entry, history: list[str], use_cache: bool) -> tuple[str, dict]:
        """The token of live instances in the state after `history`, popped from the cache or replayed."""
        key = history_key(entry.digest(), history)
        if use_cache and key in self.live:
            self.stats["continued"] += 1
            return self.live.pop(key), {}
        token = new_token()
        self.stats["replays"] += 1
        self.stats["replayedCalls"] += len(history)
        try:
            _, instances = run_calls(entry, token, history)
        except BaseException:
            release(token)
            raise
        return token, instances

    def _keep(self, entry: Entry, strings: list[str], token: str) -> None:
        if self.cache_size <= 0:
            release(token)
            return
        self.live[history_key(entry.digest(), strings)] = token
        while len(self.live) > self.cache_size:
            _, old = self.live.popitem(last=False)
            release(old)

    def execute(self, entry: Entry, history, calls, use_cache: bool = True) -> list[dict]:
        """Runs `calls` in the state after `history`; one `{output, raised}` per call, in order."""
        past, new = call_strings(entry, history), call_strings(entry, calls)
        token, _ = self._state_after(entry, past, use_cache)
        try:
            outputs, _ = run_calls(entry, token, new)
        except BaseException:
            release(token)
            raise
        self.stats["calls"] += len(new)
        self._keep(entry, past + new, token)
        return [{"output": o, "raised": o.startswith(ERROR_PREFIX)} for o in outputs]

    def state(self, entry: Entry, history, use_cache: bool = False) -> dict:
        """The public attributes of every instance after `history` (JSON), e.g. to compare two runs."""
        past = call_strings(entry, history)
        token, _ = self._state_after(entry, past, use_cache)
        try:
            _, instances = run_calls(entry, token, [])
            return {name: public_state(inst) for name, inst in sorted(instances.items())}
        finally:
            if use_cache:
                self._keep(entry, past, token)
            else:
                release(token)

    def clear(self) -> None:
        for token in self.live.values():
            release(token)
        self.live.clear()


def public_state(value, _path: frozenset = frozenset()):
    """A JSON view of an object graph: public attributes of objects (what BFCL's state check compares).
    A reference back to an object on the current path (a directory's `parent`) is written as its class name."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if id(value) in _path:
        return f"<{type(value).__name__} (cycle)>"
    path = _path | {id(value)}
    if isinstance(value, (list, tuple)):
        return [public_state(v, path) for v in value]
    if isinstance(value, dict):
        return {str(k): public_state(v, path) for k, v in value.items()}
    if hasattr(value, "__dict__"):
        return {k: public_state(v, path) for k, v in vars(value).items() if not k.startswith("_")}
    return repr(value)
