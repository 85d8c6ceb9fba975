"""BFCL's environment process on the JSON-lines RPC (toolrl_pyhost.rpc, the Python host's server, on PYTHONPATH
beside this package). Methods: `hello`, `execute`, `score`, `state`, `parse`, `stats`. Requests are served one at
a time, in order (the environments are plain Python objects); errors are `bad_request` and `internal`. The
TypeScript side (shared/bfcl/protocol.ts) holds the same shapes as zod schemas. EOF on stdin ends the process.
"""

import asyncio
import os
import sys
import traceback
from importlib.metadata import version

from toolrl_pyhost.rpc import BadRequest, RpcServer

from .calls import CallError, parse_call_string
from .envs import MULTI_TURN_CLASSES, Entry, EntryError, Environments
from .score import score


def _list(params: dict, key: str) -> list:
    value = params.get(key, [])
    if not isinstance(value, list):
        raise BadRequest(f"{key} must be a list")
    return value


def handle(envs: Environments, method: str, params: dict):
    if method == "hello":
        return {
            "bfclEval": version("bfcl-eval"),
            "python": sys.version.split()[0],
            "classes": list(MULTI_TURN_CLASSES),
        }
    if method == "stats":
        return {**envs.stats, "live": len(envs.live)}
    entry = Entry.parse(params.get("entry"))
    if method == "execute":
        results = envs.execute(
            entry,
            _list(params, "history"),
            _list(params, "calls"),
            use_cache=params.get("useCache", True) is not False,
        )
        return {"results": results}
    if method == "state":
        return {
            "state": envs.state(
                entry,
                _list(params, "history"),
                use_cache=params.get("useCache") is True,
            )
        }
    if method == "score":
        return score(
            entry,
            params.get("groundTruth"),
            params.get("modelTurns", []),
            force_terminated=params.get("forceTerminated") is True,
        )
    if method == "parse":
        methods = entry.methods()
        calls = _list(params, "calls")
        if not all(isinstance(c, str) for c in calls):
            raise BadRequest("calls must be a list of call strings")
        return {"calls": [parse_call_string(c, methods) for c in calls]}
    raise BadRequest(f"unknown method {method!r}")


def _error_of(err: BaseException) -> tuple[str, str]:
    if isinstance(err, (EntryError, CallError)):
        return "bad_request", str(err)
    # An environment bug must not end the process: report it, with where it happened.
    where = traceback.extract_tb(err.__traceback__)[-1]
    return "internal", f"{type(err).__name__}: {err} (at {os.path.basename(where.filename)}:{where.lineno})"


def serve(cache_size: int) -> int:
    envs = Environments(cache_size)

    async def handle_request(method: str, params: dict, _request: dict):
        return handle(envs, method, params)

    asyncio.run(RpcServer(handle_request, _error_of, concurrent=False, json_default=repr).serve())
    envs.clear()
    return 0
