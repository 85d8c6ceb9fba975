"""Batches that train nothing, and the bound after which a run that cannot learn stops (verl's
`max_num_gen_batches`, DAPO's dynamic sampling).

With filter_groups, a group whose samples all score alike is dropped; when every group of a batch is dropped
(a policy that never calls its tool, a task it always or never solves) nothing trains, and the pipeline would
sample batch after batch for nothing. Each such batch is reported (a metrics row with how many groups were
dropped and why, and what their trajectories scored); after `algorithm.max_num_gen_batches` of them in a row the
learner stops the run with a reason that names the cause. A run that ends having trained no step fails too, so
it never reports "completed".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..scored_group import ScoredGroup
from .batch import group_staleness

# Drops that mean "sampled, and nothing to learn from": the reasons that make a batch empty.
COUNTED = ("no_signal", "stale")


@dataclass
class NoSignalWatch:
    """What has been dropped since the last trained step; `batch_done` is told each batch's end."""

    batch_prompts: int
    max_batches: int  # 0 or less: no bound
    empty_batches: int = 0  # consecutive batches since the last trained step that trained nothing
    reasons: Counter[str] = field(default_factory=Counter)
    rewards: list[float] = field(default_factory=list)
    tool_calls: int = 0
    trajectories: int = 0
    total_reasons: Counter[str] = field(default_factory=Counter)  # over the whole run, for the final verdict
    _batch_start: tuple[Counter[str], int, int] = field(default_factory=lambda: (Counter(), 0, 0))
    # The version this learner published when it started: a group partly sampled before it (the backlog a restart
    # finds in flight, too stale for the resumed weights) is dropped but says nothing about whether the run learns.
    start_version: int = 0
    backlog: int = 0  # such drops since the last batch's end

    def dropped(self, reason: str, group: ScoredGroup | None) -> None:
        if reason not in COUNTED:
            return
        if reason == "stale" and group is not None and group_staleness(group, self.start_version) > 0:
            self.backlog += 1
            return
        self.reasons[reason] += 1
        self.total_reasons[reason] += 1
        for t in (group or {}).get("trajectories", []):  # type: ignore[union-attr]
            self.rewards.append(float(t["reward"]))
            self.tool_calls += sum(len(turn.get("toolCalls", [])) for turn in t.get("turns", []))
            self.trajectories += 1

    def trained(self) -> dict[str, float]:
        """A step trained: the drops since the previous one, for its metrics row; the streak restarts."""
        row = self._counts()
        row["empty_batches"] = float(self.empty_batches)
        self._reset()
        return row

    def batch_empty(self, step: int, policy_version: int) -> dict[str, Any]:
        """A batch ended with nothing to train: its metrics row, with this batch's drops and what its trajectories
        scored (no reward_mean, so plots of the trained steps skip it)."""
        reasons, first, calls = self._batch_start
        counted = self.reasons - reasons
        if counted or not self.backlog:  # a batch of the restart's backlog alone does not count
            self.empty_batches += 1
        row: dict[str, Any] = {
            "step": step,
            "policy_version": policy_version,
            "groups": 0,
            "empty_batch": 1,
            "empty_batches": self.empty_batches,
            **self._counts(counted),
        }
        if self.backlog:
            row["dropped/stale_before_restart"] = float(self.backlog)
            self.backlog = 0
        rewards = self.rewards[first:]
        if rewards:
            row["dropped_reward_mean"] = sum(rewards) / len(rewards)
            row["dropped_tool_calls_per_trajectory"] = (self.tool_calls - calls) / len(rewards)
        self._batch_start = (Counter(self.reasons), len(self.rewards), self.tool_calls)
        return row

    def exhausted(self) -> bool:
        return self.max_batches > 0 and self.empty_batches >= self.max_batches

    def reason(self) -> str:
        """Why the run stops after `max_batches` empty batches in a row: what was dropped and what it scored."""
        groups = sum(self.reasons.values())
        head = (
            f"no group had different rewards in {self.empty_batches} batches in a row ({groups} groups, "
            f"algorithm.max_num_gen_batches={self.max_batches})"
            if self.reasons["no_signal"] == groups
            else f"no group could be trained in {self.empty_batches} batches in a row ({groups} groups: "
            f"{self._why()}; algorithm.max_num_gen_batches={self.max_batches})"
        )
        return f"{head}: {self._diagnosis()}"

    def never_trained(self, planned: int | None) -> str:
        """Why a run that took no step fails instead of completing."""
        dropped = sum(self.total_reasons.values())
        what = (
            f"all {dropped} groups sampled were dropped ({self._why(self.total_reasons)})"
            if dropped
            else ("no group reached the learner")
        )
        tail = f": {self._diagnosis()}" if self.trajectories else ""
        return f"the run trained nothing: {what}{tail}"

    # -- helpers ------------------------------------------------------------------------------------------

    def _counts(self, reasons: Counter[str] | None = None) -> dict[str, float]:
        reasons = self.reasons if reasons is None else reasons
        return {f"dropped/{r}": float(reasons[r]) for r in COUNTED if reasons[r]}

    def _why(self, reasons: Counter[str] | None = None) -> str:
        reasons = self.reasons if reasons is None else reasons
        words = {
            "no_signal": "no signal, all rewards of the group equal",
            "stale": "too stale (trainer.max_staleness)",
        }
        return "; ".join(f"{n} {words[r]}" for r, n in reasons.items() if n)

    def _diagnosis(self) -> str:
        if not self.trajectories:
            return "filter_groups leaves the learner nothing to train"
        lo, hi = min(self.rewards), max(self.rewards)
        calls = self.tool_calls / self.trajectories
        scored = (
            f"every trajectory scored {lo:.3f}" if lo == hi else f"trajectories scored {lo:.3f} to {hi:.3f}"
        )
        cause = ""
        if calls == 0:
            cause = "; the policy never calls a tool (a warm start, trainer.sft, teaches the call format)"
        elif lo == hi:
            cause = (
                "; every sample of every group succeeds or fails alike, so GRPO has no advantage to follow"
            )
        return (
            f"{scored}, {calls:.2f} tool calls per trajectory{cause}. Set algorithm.max_num_gen_batches=0 to "
            "sample on regardless"
        )

    def _reset(self) -> None:
        self.empty_batches = 0
        self.reasons = Counter()
        self.rewards = []
        self.tool_calls = 0
        self.trajectories = 0
        self._batch_start = (Counter(), 0, 0)
