"""How a learner session takes groups, one at a time, mixed into LearnerSession (session.py): dedupe, intake.py's
checks, drops on record (no signal, stale, invalid, dead-lettered), deterministic runs' batches in feeder order,
and when the planned groups are all seen. The step, publishing, checkpoints and the run's life cycle are
session.py's."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from ..config import LearnerConfig
from ..contracts import ContractError
from ..scored_group import ScoredGroup
from ..storage import BlobNotFound, BlobStore
from .checkpoint import TrainerState
from .dead_letters import DeadLetterWatch
from .intake import refusal, resolve_group
from .ledger import GroupLedger
from .metrics import MetricsLogger
from .no_signal import COUNTED, NoSignalWatch
from .ordered import OrderedBatches
from .progress import RunDoc
from .timing import PhaseTimer
from .versions import Versions

log = logging.getLogger(__name__)


class GroupIntake:
    """The session's state these methods share (set by LearnerSession's __init__ and start())."""

    store: BlobStore
    run_id: str
    emit: Callable[[dict[str, Any]], None]
    cfg: LearnerConfig
    state: TrainerState
    ledger: GroupLedger
    versions: Versions
    no_signal: NoSignalWatch
    dead_letters: DeadLetterWatch
    ordered: OrderedBatches | None
    timer: PhaseTimer
    buffer: list[ScoredGroup]
    batch_arrivals: int
    gen_offered: int
    groups_planned: int | None
    run_failed: str | None
    failure: str | None
    done: bool
    _totals_read_at: float

    # LearnerSession's own steps (session.py)
    def step(self) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        raise NotImplementedError

    def _write_state(self) -> None:
        raise NotImplementedError

    def _read_run(self) -> RunDoc | None:
        raise NotImplementedError

    def _metrics(self) -> MetricsLogger:
        raise NotImplementedError

    def offer(self, line: dict[str, Any]) -> None:
        """Take one group (inline or by reference); may run a step, publish, checkpoint and finish."""
        if self.done:
            return
        group_id = line.get("groupId") or (line.get("group") or {}).get("groupId") or "?"
        run_id = line.get("runId") or (line.get("group") or {}).get("runId")
        try:
            with self.timer.phase("receive"):
                group = resolve_group(self.store, self.run_id, line)
        except (ContractError, BlobNotFound, ValueError, KeyError) as e:
            reason = f"manifest {e} not found" if isinstance(e, BlobNotFound) else str(e)
            log.warning("dropping invalid group %s: %s", group_id, reason)
            self.emit({"type": "dropped", "groupId": group_id, "reason": "invalid", "message": reason})
            if run_id == self.run_id and group_id != "?" and not self.ledger.known(group_id):
                # One of this run's planned groups that can never be trained: counted, so the run can end.
                self._record_drop(group_id)
                self.dead_letters.record_refused(group_id, f"learner: {reason}")
                if self.ordered is not None:
                    self._place_ordered(line.get("position"), group_id, None)
                    return
            self.tick()
            return
        gid = group["groupId"]
        if gid in self.state.dead_lettered_group_ids:
            # Counted as dropped when a stage dead-lettered it; it came after all (a DLQ redrive sent it back).
            self._revive(gid)
        if self.ledger.known(gid):
            self.emit({"type": "dropped", "groupId": gid, "reason": "duplicate"})
            self.ledger.duplicate(gid)
            return
        if self.ordered is not None:
            self.ledger.in_flight.add(gid)
            self._place_ordered(group.get("position"), gid, group)
            return
        refused = refusal(group, self.state.policy_version, self.cfg, self.versions.lineage)
        if refused is None:
            self.buffer.append(group)
            self.ledger.in_flight.add(gid)
            self.batch_arrivals += 1
        else:
            self._drop(gid, *refused, group=group)
            if refused[0] == "no_signal" and not self.cfg.refill_filtered_groups:
                self.batch_arrivals += 1  # refill off: a filtered group still takes its place in the batch
        if self.cfg.refill_filtered_groups and (refused is None or refused[0] in COUNTED):
            # Refill: a batch of arrivals that did not fill the batch is a generation batch that trained nothing.
            self.gen_offered += 1
            if self.gen_offered >= self.cfg.batch_prompts and len(self.buffer) < self.cfg.batch_prompts:
                self.gen_offered = 0
                self._empty_batch()
        if len(self.buffer) >= self.cfg.batch_prompts or self.batch_arrivals >= self.cfg.batch_prompts:
            self.step()
        if self._should_stop():
            self.finish()

    def _place_ordered(self, position: int | None, gid: str, group: ScoredGroup | None) -> None:
        """Deterministic runs: hold the group at its position; train every batch that is now complete, in order."""
        assert self.ordered is not None
        if position is None:
            raise ValueError(
                f"trainer.deterministic: group {gid} carries no feeder position, so its batch cannot be known "
                "(was it issued by a feeder of an older version?)"
            )
        self.ordered.add(int(position), group)
        while not self.done and (arrivals := self.ordered.release(self.groups_planned)) is not None:
            dropped = 0
            for a in arrivals:
                g = a.group
                if g is None:
                    continue  # dropped on arrival (unreadable), counted then
                # Judged at release, against the version the batch is trained by, so arrival order cannot matter.
                refused = refusal(g, self.state.policy_version, self.cfg, self.versions.lineage)
                if refused is None:
                    self.buffer.append(g)
                else:
                    self._drop(g["groupId"], *refused, group=g, write_state=False)
                    dropped += 1
            if dropped:
                # The batch's drops on record at once (one state.json, one feeder pass), before its step trains:
                # the feeder refills their slots meanwhile.
                self._write_state()
            self.step()  # settles the batch (before a checkpoint at this step records how many are settled)
            if self._should_stop():
                break
        if self._should_stop():
            self.finish()

    def _drop(
        self,
        gid: str,
        reason: str,
        message: str,
        group: ScoredGroup | None = None,
        *,
        write_state: bool = True,
    ) -> None:
        self.ledger.pending.append(gid)
        # On record in the learner's log too (the `dropped` line reaches the pipeline only): which group, and why.
        log.info("dropped group %s (%s): %s", gid, reason, message)
        self.emit({"type": "dropped", "groupId": gid, "reason": reason, "message": message})
        self.no_signal.dropped(reason, group)
        self._record_drop(gid, write_state=write_state)

    def _empty_batch(self) -> None:
        """A batch's groups were all dropped: say so in the metrics, and stop the run once that has gone on for
        algorithm.max_num_gen_batches batches in a row."""
        row = self.no_signal.batch_empty(self.state.step, self.state.policy_version)
        self._metrics().log(row)
        if self.no_signal.exhausted() and self.failure is None:
            self.failure = self.no_signal.reason()
            log.warning("run %s cannot learn; stopping: %s", self.run_id, self.failure)

    def _record_drop(self, gid: str, *, write_state: bool = True) -> None:
        self.ledger.dropped(gid)
        # The feeder keeps at most batch_prompts x (1 + max_staleness) groups in flight, counting consumed and
        # dropped ones from state.json: a drop not on record there leaves its slot taken, and when every group in
        # flight is dropped (no signal, stale) no step comes to write it, so nothing more is fed and the run stalls.
        # (A released deterministic batch writes it once for all its drops: write_state=False.)
        if write_state:
            self._write_state()

    def _revive(self, gid: str) -> None:
        self.ledger.revive(gid)
        log.info("group %s was dead-lettered and has arrived after all: training it", gid)

    def _poll_dead_letters(self) -> None:
        known = self.ledger.settled | self.ledger.in_flight | {g["groupId"] for g in self.buffer}
        for gid, reason in self.dead_letters.new_train_groups(known):
            self.state.dead_lettered_group_ids.append(gid)
            self._drop(gid, "dead_lettered", reason)

    def _should_stop(self) -> bool:
        if self.cfg.max_steps is not None and self.state.step >= self.cfg.max_steps:
            return True
        if time.monotonic() - self._totals_read_at > 5:
            self._read_run()
        if self.run_failed is not None or self.failure is not None:
            return True
        if self.dead_letters.due():
            self._poll_dead_letters()
        # Buffered groups count: finish() trains them, so the last partial batch is not waited for forever.
        seen = self.state.groups_consumed + self.state.groups_dropped + len(self.buffer)
        return self.groups_planned is not None and seen >= self.groups_planned

    def waiting_for(self) -> str:
        """What the learner waits for while no input comes (the stdio driver's `waiting` line)."""
        if self.ordered is not None:
            what = self.ordered.waiting_for(self.groups_planned)
        else:
            what = f"{len(self.buffer)} of {self.cfg.batch_prompts} groups of the next batch in"
        seen = self.state.groups_consumed + self.state.groups_dropped
        planned = self.groups_planned if self.groups_planned is not None else "?"
        return f"step {self.state.step + 1}, {what} ({seen} of {planned} planned groups settled)"

    def tick(self) -> None:
        """Between inputs (idle polls): finish once the planned groups are all seen (totals may come late)."""
        if not self.done and self._should_stop():
            self.finish()
