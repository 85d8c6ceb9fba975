"""What every driver shares: common flags, stderr logging, and SIGTERM handling that never cuts a step
in half (a spot interruption gives two minutes: enough to finish the step and write a checkpoint)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator


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


def setup_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr, level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
