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

    def waiting_for(self, planned: int | None) -> str:
        """What the next release waits for, in words (the `waiting` line)."""
        start = self.settled * self.batch_prompts
        end = start + self.batch_prompts if planned is None else min(start + self.batch_prompts, planned)
        missing = [p for p in range(start, end) if p not in self.pending]
        later = sorted(p for p in self.pending if p >= end)
        held = (
            f"; holding {len(later)} groups of later batches (positions {later[0]}-{later[-1]})"
            if later
            else ""
        )
        return (
            f"batch {self.settled} (feeder positions {start}-{end - 1}): {end - start - len(missing)} of "
            f"{end - start} in, missing {_ranges(missing)}{held}"
        )

    def state(self) -> dict[str, Any]:
        """`batches` of learner/state.json."""
        return {"settled": self.settled, "versions": list(self.versions)}


def _ranges(ps: list[int]) -> str:
    """[3, 4, 5, 9] -> '3-5, 9'."""
    out: list[str] = []
    for p in ps:
        if out and out[-1].split("-")[-1] == str(p - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{p}"
        else:
            out.append(str(p))
    return ", ".join(out) or "none"
