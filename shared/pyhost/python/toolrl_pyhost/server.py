"""The Python host's methods on the JSON-lines RPC (rpc.py): hello, stats, load_tool, execute, calc_reward,
release, load_reward, score, load_agent, run_agent, and cancel. A request's `timeout` (seconds) bounds each call
into user code. Requests run concurrently. Error types: bad_request, load_error, user_error (the user's code raised), timeout, internal. The
TypeScript side (shared/pyhost/protocol.ts) holds the same shapes as zod schemas. EOF on stdin releases every live
instance and ends the process."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from .agents import Agents
from .errors import BadRequest, HostError
from .rewards import Rewards
from .rpc import RpcServer
from .tools import Tools


def _verl_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("verl")
    except Exception:  # noqa: BLE001 (not installed: None)
        return None


def _error_of(e: BaseException) -> tuple[str, str]:
    if isinstance(e, HostError):
        return e.type, str(e)
    return "internal", f"{type(e).__name__}: {e}"


class Host:
    def __init__(self, tools: Tools, rewards: Rewards, agents: Agents | None = None):
        self.tools = tools
        self.rewards = rewards
        self.agents = agents or Agents()

    async def handle(self, method: str, p: dict, request: dict) -> Any:
        timeout = request.get("timeout")
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise BadRequest("timeout must be a positive number of seconds")
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
        raise BadRequest(f"unknown method {method!r}")


async def serve(ttl: float, max_instances: int, sweep_every: float) -> int:
    host = Host(Tools(ttl, max_instances), Rewards())
    server = RpcServer(host.handle, _error_of, concurrent=True)
    await server.serve(tick=host.tools.sweep, tick_every=sweep_every)
    await host.tools.release_all()
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
