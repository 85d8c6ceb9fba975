"""Where the learner's wall-clock goes, by phase: each step row carries `timing_s/<phase>` (verl's metric
prefix), the seconds spent in that phase since the previous row, so the rows of a run add up to its wall-clock
(`timing_s/other` is what no phase claimed). bench/embedded reads them."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

PREFIX = "timing_s/"


class PhaseTimer:
    """Flat (non-nested) phases: a phase started inside another would count its time twice."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._spent: dict[str, float] = {}
        self._since = clock()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = self._clock()
        try:
            yield
        finally:
            self.add(name, self._clock() - t0)

    def add(self, name: str, seconds: float) -> None:
        self._spent[name] = self._spent.get(name, 0.0) + seconds

    def take(self) -> dict[str, float]:
        """The phases since the last take (as `timing_s/<phase>`, with `other` the unclaimed rest); resets."""
        now = self._clock()
        out = {PREFIX + k: v for k, v in self._spent.items()}
        out[PREFIX + "other"] = max(0.0, (now - self._since) - sum(self._spent.values()))
        self._spent, self._since = {}, now
        return out
