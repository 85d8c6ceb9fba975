"""Calling user code with a deadline. A coroutine is cancelled when its time is up. A plain function runs on
a thread of its own, and when its time is up a CallTimeout is raised inside that thread (it lands at the
next Python bytecode; a function stuck inside one C call holds its thread until that call returns). A
coroutine that blocks the event loop cannot be stopped from inside: the TypeScript side restarts the host
when an answer is that late."""

from __future__ import annotations

import asyncio
import ctypes
import inspect
import threading
from collections.abc import Callable
from typing import Any


class CallTimeout(Exception):
    """Raised inside a plain function whose deadline passed."""


def _raise_in_thread(thread_id: int) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(CallTimeout))


async def call_with_deadline(fn: Callable[..., Any], args: tuple, kwargs: dict, timeout: float | None) -> Any:
    """fn(*args, **kwargs), awaited when it is (or returns) a coroutine; asyncio.TimeoutError past `timeout`."""
    if inspect.iscoroutinefunction(fn):
        return await asyncio.wait_for(fn(*args, **kwargs), timeout)
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()
    state = {"running": True}

    def settle(ok: bool, value: Any) -> None:
        if not done.done():
            (done.set_result if ok else done.set_exception)(value)

    def run() -> None:
        try:
            value = fn(*args, **kwargs)
            ok = True
        except BaseException as e:  # noqa: BLE001 (it is the caller's to report)
            value, ok = e, False
        finally:
            state["running"] = False
        loop.call_soon_threadsafe(settle, ok, value)

    thread = threading.Thread(target=run, name=f"toolrl-call-{getattr(fn, '__name__', 'fn')}", daemon=True)
    thread.start()
    try:
        value = await asyncio.wait_for(asyncio.shield(done), timeout)
    except (asyncio.TimeoutError, asyncio.CancelledError):  # noqa: UP041 - user Pythons older than 3.11 run this host
        if state["running"] and thread.ident is not None:
            _raise_in_thread(thread.ident)
        raise
    if inspect.isawaitable(value):  # a plain function that returned a coroutine (a decorated async method)
        return await asyncio.wait_for(value, timeout)
    return value


def accepts(fn: Callable[..., Any], name: str) -> bool:
    """Whether fn takes a keyword `name` (by name or through **kwargs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind is p.VAR_KEYWORD or (p.name == name and p.kind is not p.POSITIONAL_ONLY) for p in params
    )
