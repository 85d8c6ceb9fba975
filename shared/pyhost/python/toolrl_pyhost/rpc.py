"""The one JSON-lines RPC server on stdin/stdout (shared/pyhost/rpc.ts is its client), for the Python host
(server.py) and BFCL's environment process (toolrl_bfcl/server.py). One request per line:
    {"id": 7, "method": "execute", "params": {...}, ...}
one answer per line:
    {"id": 7, "ok": true, "result": ...}   or   {"id": 7, "ok": false, "error": {"type": "...", "message": "..."}}
A `handle(method, params, request)` coroutine serves a request; with `concurrent` requests run at once (answers in
any order) and `cancel {target}` cancels one, else one at a time in order. `error_of(exception)` names an exception's
error type and message; a bug in a handler is answered as an error and never ends the process.

The process's own stdout carries only answers: file descriptor 1 is pointed at stderr before any user code runs, so
a print() in a tool or an environment cannot corrupt the protocol. EOF on stdin ends the loop.

Runs on the user's interpreter (3.9+)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Awaitable
from typing import Any, Callable

Handler = Callable[[str, dict, dict], Awaitable[Any]]
ErrorOf = Callable[[BaseException], "tuple[str, str]"]


class BadRequest(ValueError):
    """A request the protocol does not allow (not an object, params not an object, unknown method or key)."""


def _protocol_out():
    """Answers go to a private copy of stdout; fd 1 (and sys.stdout) become stderr for everything else."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


class RpcServer:
    def __init__(
        self,
        handle: Handler,
        error_of: ErrorOf,
        *,
        concurrent: bool,
        json_default: Callable[[Any], Any] = str,
    ) -> None:
        """json_default: how a result value JSON cannot hold is written (str; repr where its type matters)."""
        self.handle = handle
        self.json_default = json_default
        self.error_of = error_of
        self.concurrent = concurrent
        self.tasks: dict[Any, asyncio.Task] = {}
        self.out = _protocol_out()
        self._turn: asyncio.Lock | None = None

    def answer(self, rid: Any, payload: dict) -> None:
        self.out.write(json.dumps({"id": rid, **payload}, default=self.json_default) + "\n")
        self.out.flush()

    def _fail(self, rid: Any, type_: str, message: str) -> None:
        self.answer(rid, {"ok": False, "error": {"type": type_, "message": message}})

    def dispatch(self, line: str) -> None:
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("a request must be a JSON object")
        except ValueError as e:
            self._fail(None, "bad_request", f"not a request: {e}")
            return
        rid = req.get("id")
        if self.concurrent and req.get("method") == "cancel":
            params = req.get("params") or {}
            task = self.tasks.get(params.get("target")) if isinstance(params, dict) else None
            if task is not None:
                task.cancel()
            self.answer(rid, {"ok": True, "result": {"cancelled": task is not None}})
            return
        task = asyncio.ensure_future(self.run(rid, req))
        self.tasks[rid] = task
        task.add_done_callback(lambda _t, rid=rid: self.tasks.pop(rid, None))

    async def run(self, rid: Any, req: dict) -> None:
        if self._turn is None:
            self._turn = asyncio.Lock()
        if self.concurrent:
            await self._serve(rid, req)
            return
        async with self._turn:  # one at a time, in the order they came
            await self._serve(rid, req)

    async def _serve(self, rid: Any, req: dict) -> None:
        try:
            params = req.get("params", {})
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise BadRequest("params must be an object")
            result = await self.handle(str(req.get("method")), params, req)
            self.answer(rid, {"ok": True, "result": result})
        except asyncio.CancelledError:
            self._fail(rid, "timeout", "the call was cancelled")
        except BadRequest as e:
            self._fail(rid, "bad_request", str(e))
        except Exception as e:  # noqa: BLE001 (a bug here must not end the process)
            self._fail(rid, *self.error_of(e))

    async def serve(
        self, tick: Callable[[], Awaitable[None]] | None = None, tick_every: float = 60.0
    ) -> None:
        """Until EOF on stdin; `tick` runs every `tick_every` seconds meanwhile. Requests still running at EOF are
        cancelled."""
        loop = asyncio.get_running_loop()
        ended = loop.create_future()

        def read() -> None:
            for raw in sys.stdin.buffer:
                line = raw.decode("utf-8", errors="replace").strip()
                if line:
                    loop.call_soon_threadsafe(self.dispatch, line)
            loop.call_soon_threadsafe(lambda: ended.done() or ended.set_result(None))

        threading.Thread(target=read, name="toolrl-stdin", daemon=True).start()
        while not ended.done():
            await asyncio.wait([ended], timeout=tick_every)
            if tick is not None:
                await tick()
        if self.concurrent:
            for task in list(self.tasks.values()):
                task.cancel()
        elif self.tasks:
            await asyncio.wait(list(self.tasks.values()))
