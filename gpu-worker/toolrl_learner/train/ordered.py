"""Deterministic runs (`trainer.deterministic`): batches of groups by their place in the feeder's walk, not by
arrival. Batch t holds positions [t b, (t+1) b) (the last one ends at the planned count); it is released, sorted
by position, once every one of its positions has arrived, and later groups wait for their batch.

The policy version after each settled batch is kept (the last few), because the feeder pins batch t's rollouts
to the version after t - max_staleness batches and reads it from `learner/state.json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..scored_group import ScoredGroup

# Versions kept after the newest settled batch: the feeder needs the one after t - max_staleness, and it is at
# most max_staleness + 1 batches behind (the schema caps max_staleness well below this in deterministic runs).
KEEP_VERSIONS = 16


@dataclass
class Arrival:
    """One position of a batch: the group to judge at release, or None when it was dropped on arrival (invalid)."""

    position: int
    group: ScoredGroup | None


@dataclass
class OrderedBatches:
    batch_prompts: int
    settled: int = 0  # whole batches trained or dropped
    versions: list[int] = field(default_factory=list)  # version after settled - len + 1 .. settled batches
    pending: dict[int, Arrival] = field(default_factory=dict)

    def batch_of(self, position: int) -> int:
        return position // self.batch_prompts

    def add(self, position: int, group: ScoredGroup | None) -> None:
        if self.batch_of(position) < self.settled:
            raise ValueError(
                f"position {position} belongs to batch {self.batch_of(position)}, settled already"
            )
        self.pending[position] = Arrival(position, group)

    def release(self, planned: int | None) -> list[Arrival] | None:
        """The next batch's arrivals in position order when all of them are in, else None."""
        start = self.settled * self.batch_prompts
        end = start + self.batch_prompts
        if planned is not None:
            end = min(end, planned)
        if end <= start or any(p not in self.pending for p in range(start, end)):
            return None
        return [self.pending.pop(p) for p in range(start, end)]

    def settle(self, version_after: int) -> None:
        self.settled += 1
        self.versions = (self.versions + [version_after])[-KEEP_VERSIONS:]

    def state(self) -> dict[str, Any]:
        """`batches` of learner/state.json."""
        return {"settled": self.settled, "versions": list(self.versions)}
