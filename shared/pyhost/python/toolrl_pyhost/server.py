"""The JSON-lines protocol on stdin/stdout. One request per line:
    {"id": 7, "method": "execute", "params": {...}, "timeout": 30}
one answer per line, in any order (requests run concurrently):
    {"id": 7, "ok": true, "result": {...}}   or   {"id": 7, "ok": false, "error": {"type", "message"}}
Error types: bad_request, load_error, user_error (the user's code raised), timeout, internal.
Methods: hello, stats, load_tool, execute, calc_reward, release, load_reward, score, load_agent, run_agent,
cancel.
`timeout` (seconds) bounds each call into user code. The TypeScript side (shared/pyhost/protocol.ts) holds the
same shapes as zod schemas.

The process's own stdout carries only answers: file descriptor 1 is pointed at stderr before any user code is
imported, so a print() in a tool (verl's BaseTool prints its schema) cannot corrupt the protocol. EOF on stdin
releases every live instance and ends the process."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
from typing import Any

from .agents import Agents
from .errors import BadRequest, HostError
from .rewards import Rewards
from .tools import Tools


def _verl_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("verl")
    except Exception:  # noqa: BLE001 (not installed: None)
        return None


class Server:
    def __init__(self, out, tools: Tools, rewards: Rewards, agents: Agents | None = None):
        self.out = out
        self.tools = tools
        self.rewards = rewards
        self.agents = agents or Agents()
        self.tasks: dict[Any, asyncio.Task] = {}

    def answer(self, rid: Any, payload: dict) -> None:
        self.out.write(json.dumps({"id": rid, **payload}, default=str) + "\n")
        self.out.flush()

    def dispatch(self, line: str) -> None:
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("a request must be a JSON object")
        except ValueError as e:
            self.answer(
                None, {"ok": False, "error": {"type": "bad_request", "message": f"not a request: {e}"}}
            )
            return
        rid = req.get("id")
        task = asyncio.ensure_future(self.run(rid, req))
        self.tasks[rid] = task
        task.add_done_callback(lambda _t, rid=rid: self.tasks.pop(rid, None))

    async def run(self, rid: Any, req: dict) -> None:
        try:
            params = req.get("params") or {}
            if not isinstance(params, dict):
                raise BadRequest("params must be an object")
            timeout = req.get("timeout")
            if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
                raise BadRequest("timeout must be a positive number of seconds")
            result = await self.handle(str(req.get("method")), params, timeout)
            self.answer(rid, {"ok": True, "result": result})
        except asyncio.CancelledError:
            self.answer(rid, {"ok": False, "error": {"type": "timeout", "message": "the call was cancelled"}})
        except HostError as e:
            self.answer(rid, {"ok": False, "error": {"type": e.type, "message": str(e)}})
        except Exception as e:  # noqa: BLE001 (a bug here must not end the process)
            self.answer(
                rid, {"ok": False, "error": {"type": "internal", "message": f"{type(e).__name__}: {e}"}}
            )

    async def handle(self, method: str, p: dict, timeout: float | None) -> Any:
        if method == "hello":
            return {"python": sys.version.split()[0], "pid": os.getpid(), "verl": _verl_version()}
        if method == "stats":
            return {**self.tools.stats, **self.rewards.stats, **self.agents.stats, "live": self.tools.live()}
        if method == "load_tool":
            return self.tools.load(p)
        if method == "execute":
            return await self.tools.execute(p, timeout)
        if method == "calc_reward":
            return await self.tools.calc_reward(p, timeout)
        if method == "release":
            return await self.tools.release(p, timeout)
        if method == "load_reward":
            return self.rewards.load(p)
        if method == "score":
            return await self.rewards.score(p, timeout)
        if method == "load_agent":
            return self.agents.load(p)
        if method == "run_agent":
            return await self.agents.run(p, timeout)
        if method == "cancel":
            task = self.tasks.get(p.get("target"))
            if task is not None:
                task.cancel()
            return {"cancelled": task is not None}
        raise BadRequest(f"unknown method {method!r}")


async def serve(ttl: float, max_instances: int, sweep_every: float) -> int:
    # Answers go to a private copy of stdout; fd 1 (and sys.stdout) become stderr for everything else.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    loop = asyncio.get_running_loop()
    server = Server(out, Tools(ttl, max_instances), Rewards())
    ended = loop.create_future()

    def read() -> None:
        for raw in sys.stdin.buffer:
            line = raw.decode("utf-8", errors="replace").strip()
            if line:
                loop.call_soon_threadsafe(server.dispatch, line)
        loop.call_soon_threadsafe(lambda: ended.done() or ended.set_result(None))

    threading.Thread(target=read, name="toolrl-stdin", daemon=True).start()
    while not ended.done():
        await asyncio.wait([ended], timeout=sweep_every)
        await server.tools.sweep()
    for task in list(server.tasks.values()):
        task.cancel()
    await server.tools.release_all()
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolrl_pyhost", description=__doc__.split("\n")[0])
    ap.add_argument("--ttl", type=float, default=900.0, help="release instances idle this many seconds")
    ap.add_argument(
        "--max-instances", type=int, default=4096, help="release the least recently used beyond this"
    )
    ap.add_argument("--sweep-every", type=float, default=None, help="seconds between idle checks (ttl/4)")
    a = ap.parse_args(argv)
    return asyncio.run(serve(a.ttl, a.max_instances, a.sweep_every or max(0.05, min(60.0, a.ttl / 4))))
