"""What every driver shares: common flags, stderr logging, stdout kept for the protocol's lines, SIGTERM
handling that never cuts a step in half (a spot interruption gives two minutes: enough to finish the step and
write a checkpoint), and the one life every driver's session leads (`drive`): start, be fed, finish, with the
exit codes below. A driver keeps only where its groups come from."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..contracts import validate

if TYPE_CHECKING:
    from ..sharded.world import World
    from ..train.session import LearnerSession

# Exit codes: done (stop, EOF, planned groups seen or max steps), a fatal error (an `error` line is printed
# first), SIGTERM or SIGINT (the checkpoint written first; 128 + 15, as a process killed by SIGTERM).
EXIT_DONE, EXIT_FAILED, EXIT_TERMINATED = 0, 1, 143


class Terminated(Exception):
    """SIGTERM/SIGINT arrived; the driver checkpoints and exits."""


class SignalGuard:
    """Turns SIGTERM/SIGINT into `Terminated`, raised at once when idle (e.g. blocked reading input) or
    right after the current unit of work when inside `busy()`."""

    def __init__(self) -> None:
        self.requested = False
        self._busy = False
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum, frame) -> None:
        logging.getLogger("toolrl_learner").warning("received %s", signal.Signals(signum).name)
        self.requested = True
        if not self._busy:
            raise Terminated()

    def shield(self) -> None:
        """From now on signals only set the flag (the final checkpoint must not be interrupted)."""
        self._busy = True

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        self._busy = True
        try:
            yield
        finally:
            self._busy = False
        if self.requested:
            raise Terminated()


class LineWriter:
    """Validated JSON lines on stdout (the runtime parses every line; nothing else may go there)."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stdout
        self.lock = threading.Lock()
        self.count = 0  # lines written

    def __call__(self, msg: dict[str, Any]) -> None:
        validate("learner-stdio-out", msg)
        with self.lock:
            self.stream.write(json.dumps(msg) + "\n")
            self.stream.flush()
            self.count += 1


def base_parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m toolrl_learner {prog}", description=description)
    p.add_argument("--run-id", default=os.environ.get("TOOLRL_RUN_ID"), help="run id (env TOOLRL_RUN_ID)")
    p.add_argument(
        "--max-steps", type=int, help="stop after this many learner steps (overrides trainer.max_steps)"
    )
    p.add_argument("--workdir", help="local scratch folder (model build, bundle staging)")
    p.add_argument("--device", help="cuda, cuda:1 or cpu (default: cuda when available)")
    p.add_argument("--log-level", default=os.environ.get("TOOLRL_LOG_LEVEL", "INFO"))
    return p


def parse_args(
    p: argparse.ArgumentParser, argv: list[str], required: tuple[str, ...] = ("run_id",)
) -> argparse.Namespace:
    """The driver's flags, each of `required` present (a flag or its environment variable), logging set up."""
    args = p.parse_args(argv)
    for flag in required:
        if not getattr(args, flag):
            p.error(f"--{flag.replace('_', '-')} is required (or its environment variable)")
    setup_logging(args.log_level)
    return args


def setup_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr, level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def protocol_stdout() -> LineWriter:
    """The protocol's writer on stdout; anything a library prints goes to stderr, so stdout is ours alone."""
    out = LineWriter(sys.stdout)
    sys.stdout = sys.stderr
    return out


def lead_or_follow(args: argparse.Namespace, lead: Callable[[World], int]) -> int:
    """Under torchrun rank 0 leads (runs the driver); the other ranks follow it (sharded/session.py) and never
    read the driver's input or write stdout. One process is rank 0 of one."""
    from ..sharded.world import init_world

    world = init_world(args.device)
    if not world.leader:
        from ..sharded.session import run_follower

        return run_follower(args.root, args.run_id, world)
    return lead(world)


def drive(
    out: Callable[[dict[str, Any]], None],
    open_session: Callable[[], LearnerSession],
    feed: Callable[[LearnerSession, SignalGuard], None],
) -> int:
    """A session's life under a driver; returns the exit code. `open_session` builds it (and whatever the
    driver needs beside it) and `feed` offers it groups, each offer inside `guard.busy()`, until it is done or
    the input ends; then what is buffered trains and the session finishes. SIGTERM checkpoints what is trained
    and exits 143; any other error is reported as an `error` line and exits 1. The session is told the code
    either way (the sharded leader hands it to the other ranks)."""
    guard = SignalGuard()
    session: LearnerSession | None = None
    code = EXIT_FAILED
    try:
        with guard.busy():
            session = open_session()
            session.start()
        feed(session, guard)
        with guard.busy():
            session.finish()
        code = EXIT_DONE
    except Terminated:
        guard.shield()
        if session is not None and hasattr(session, "state"):  # started far enough to have trained
            session.interrupt()
        code = EXIT_TERMINATED
    except Exception as e:  # noqa: BLE001 - reported on the protocol, then the process fails
        traceback.print_exc(file=sys.stderr)
        out({"type": "error", "message": f"{type(e).__name__}: {e}"})
        code = EXIT_FAILED
    finally:
        if session is not None:
            session.close(code)
    return code
