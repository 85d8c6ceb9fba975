"""`python -m toolrl_learner stdio --root DIR --run-id ID [--max-steps N]`: the learner driven over JSON
lines (shared/schemas/learner-stdio.ts): groups in on stdin, events out on stdout, logs on stderr.

Exit codes (common.py): 0 done (stop, EOF, planned groups seen or max steps), 143 after SIGTERM (checkpoint
written first), 1 on a fatal error (an `error` line is printed first). A learner tied to `toolrl train`
(lifeline.py) takes EOF for that process's death and exits at once (137), finishing nothing.

Under torchrun (`python -m toolrl_learner launch`) rank 0 speaks the protocol and the other ranks follow it
(sharded/session.py); they never read stdin or write stdout.

stdin is read on a thread, so the session ticks every TICK_S while no line comes: it then sees dead-lettered
groups and a failed run even when nothing more will ever arrive on stdin, and says what it waits for (a
`waiting` line, once per idle spell: the embedded runtime fails a run that waits with nothing on its way).
"""

from __future__ import annotations

import json
import logging
import queue
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import lifeline
from ..contracts import ContractError, validate
from .common import LineWriter, SignalGuard, base_parser, drive, lead_or_follow, parse_args, protocol_stdout

if TYPE_CHECKING:
    from ..sharded.world import World
    from ..train.session import LearnerSession

log = logging.getLogger("toolrl_learner.stdio")
TICK_S = 2.0
_EOF = object()


def lines_with_ticks(stream, tick_s: float = TICK_S) -> Iterator[str | None]:
    """The stream's lines, with None whenever `tick_s` passes without one; ends at EOF."""
    q: queue.Queue[Any] = queue.Queue()

    def pump() -> None:
        for raw in stream:
            q.put(raw)
        q.put(_EOF)

    threading.Thread(target=pump, daemon=True, name="stdin").start()
    while True:
        try:
            item = q.get(timeout=tick_s)
        except queue.Empty:
            yield None
            continue
        if item is _EOF:
            return
        yield item


def parse_line(raw: str) -> dict[str, Any]:
    """One stdin line, checked against learner-stdio-in (an inline group's token arrays are checked whole
    later, by the session's fast group check)."""
    from ..train.group_check import light_copy

    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ContractError(f"not JSON: {e}") from None
    if isinstance(obj, dict) and isinstance(obj.get("group"), dict):
        validate("learner-stdio-in", {**obj, "group": light_copy(obj["group"])})
    else:
        validate("learner-stdio-in", obj)
    return obj


def main(argv: list[str]) -> int:
    p = base_parser("stdio", (__doc__ or "").partition("\n")[0])
    p.add_argument("--root", required=True, help="blob store root: a folder, or s3://bucket[/prefix]")
    args = parse_args(p, argv)
    out = protocol_stdout()
    return lead_or_follow(args, lambda world: _lead(args, world, out))


def _lead(args, world: World, out: LineWriter) -> int:
    def open_session() -> LearnerSession:
        from ..sharded.session import open_session
        from ..storage import open_store

        return open_session(
            open_store(args.root),
            args.run_id,
            world,
            emit=out,
            workdir=args.workdir,
            max_steps=args.max_steps,
        )

    def feed(session: LearnerSession, guard: SignalGuard) -> None:
        lines = lines_with_ticks(sys.stdin)
        announced = -1  # out.count when the last `waiting` line went out
        read = 0  # input lines read (the `waiting` line says how many: the runtime then knows what it has not seen)
        while True:
            # an idle tick (None) is waiting too: the learner's time between groups
            with session.timer.phase("wait"):
                raw = next(lines, "")
            if raw is None:
                with guard.busy():
                    session.tick()
                if session.done:
                    return
                if announced != out.count:  # idle, and something happened since it last said so
                    out({"type": "waiting", "waitingFor": session.waiting_for(), "linesRead": read})
                    announced = out.count
                continue
            announced = -1
            read += 1 if raw else 0
            if not raw and lifeline.tied():
                lifeline.parent_gone()  # `toolrl train` died: finishing now would write into a run it no longer runs
            if not raw or session.done:
                return
            if not raw.strip():
                continue
            try:
                with session.timer.phase("receive"):
                    line = parse_line(raw)
            except ContractError as e:
                gid = _group_id(raw)
                log.warning("bad input line (group %s): %s", gid, e)
                out({"type": "dropped", "groupId": gid, "reason": "invalid", "message": str(e)})
                continue
            if line["type"] == "stop":
                return
            with guard.busy():
                session.offer(line)

    return drive(out, open_session, feed)


def _group_id(raw: str) -> str:
    try:
        obj = json.loads(raw)
        return str(obj.get("groupId") or (obj.get("group") or {}).get("groupId") or "?")
    except (json.JSONDecodeError, AttributeError):
        return "?"
