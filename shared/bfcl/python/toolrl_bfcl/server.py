"""The JSON-lines protocol on stdin/stdout: one request `{"id", "method", "params"}` per line, one answer
`{"id", "ok": true, "result"}` or `{"id", "ok": false, "error": {"type", "message"}}` per line, in order.
The TypeScript side (shared/bfcl/protocol.ts) holds the same shapes as zod schemas.

Methods: `hello`, `execute`, `score`, `state`, `parse`, `stats`. Requests are served one at a time (the
environments are plain Python objects); EOF on stdin ends the process.
"""

import json
import os
import sys
import traceback
from importlib.metadata import version

from .calls import CallError, parse_call_string
from .envs import MULTI_TURN_CLASSES, Entry, EntryError, Environments
from .score import score


class BadRequest(ValueError):
    pass


def _params(request) -> dict:
    params = request.get("params", {})
    if not isinstance(params, dict):
        raise BadRequest("params must be an object")
    return params


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


def serve(cache_size: int) -> int:
    # The protocol owns the real stdout; anything the environments print goes to stderr instead.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    envs = Environments(cache_size)
    for line in sys.stdin:
        if not line.strip():
            continue
        request_id = None
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise BadRequest("a request must be a JSON object")
            request_id = request.get("id")
            answer = {
                "id": request_id,
                "ok": True,
                "result": handle(envs, request.get("method"), _params(request)),
            }
        except (BadRequest, EntryError, CallError, json.JSONDecodeError) as err:
            answer = {
                "id": request_id,
                "ok": False,
                "error": {"type": "bad_request", "message": str(err)},
            }
        except Exception as err:  # noqa: BLE001 -- an environment bug must not end the process: report it
            where = traceback.extract_tb(err.__traceback__)[-1]
            message = f"{type(err).__name__}: {err} (at {os.path.basename(where.filename)}:{where.lineno})"
            answer = {
                "id": request_id,
                "ok": False,
                "error": {"type": "internal", "message": message},
            }
        protocol_out.write(json.dumps(answer, default=repr) + "\n")
    envs.clear()
    return 0
