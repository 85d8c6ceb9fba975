"""The run files the learner shares with the pipeline: it reads run.json (the resolved config, how many
groups the run plans, whether it has failed) and writes state.json (its counters, which the feeder's top-up
and `toolrl status` read) and, while its warm start runs, warm-start.json (`toolrl status` shows it)."""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from ..contracts import timestamp, validate
from ..storage import BlobNotFound, BlobStore, keys
from .checkpoint import TrainerState
from .ordered import OrderedBatches

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunDoc:
    """What the learner reads of run.json."""

    config: dict[str, Any] | None  # the resolved run config
    # `resolved`: the run's and each curriculum stage's complete config, merged once by the run-starter
    resolved: dict[str, Any] | None
    groups_planned: int | None  # totals.groupsPlanned, once the feeder has counted them
    failed: str | None  # the reason, once the run's status is `failed`


def read_run(store: BlobStore, run_id: str) -> RunDoc | None:
    """run.json, or None while it does not exist."""
    try:
        run = json.loads(store.get_bytes(keys.run_json(run_id)))
    except BlobNotFound:
        return None
    planned = (run.get("totals") or {}).get("groupsPlanned")
    return RunDoc(
        config=run.get("config"),
        resolved=run.get("resolved"),
        groups_planned=int(planned) if planned is not None else None,
        failed=(run.get("reason") or "the run failed") if run.get("status") == "failed" else None,
    )


def write_state(
    store: BlobStore,
    run_id: str,
    state: TrainerState,
    *,
    done: bool,
    ordered: OrderedBatches | None,
    failed: str | None = None,
) -> dict[str, Any]:
    """Writes state.json (the learner-state contract) and returns it; `failed`: why the learner stops the run."""
    doc: dict[str, Any] = {
        "step": state.step,
        "policyVersion": state.policy_version,
        "groupsConsumed": state.groups_consumed,
        "groupsDropped": state.groups_dropped,
        "rewardMean": state.reward_mean,
        "done": done,
        "updatedAt": timestamp(),
    }
    if ordered is not None and ordered.versions:
        doc["batches"] = ordered.state()
    if failed is not None:
        doc["failed"] = failed
    validate("learner-state", doc)
    store.put_bytes(keys.learner_state(run_id), (json.dumps(doc) + "\n").encode())
    return doc


class WarmStartProgress:
    """Writes learner/warm-start.json while an SFT warm start runs: at its first step, at most every
    `interval_s` after, and at its last step (done), so `toolrl status` can show a run that has no step yet."""

    def __init__(self, store: BlobStore, run_id: str, stage: str | None, interval_s: float) -> None:
        self.store, self.run_id, self.stage, self.interval_s = store, run_id, stage, interval_s
        self.last = -math.inf

    def step(self, step: int, steps: int, loss: float | None) -> None:
        now = time.monotonic()
        done = step >= steps
        if not done and now - self.last < self.interval_s:
            return
        self.last = now
        doc = {
            "stage": self.stage,
            "step": step,
            "steps": steps,
            "loss": loss if loss is None or math.isfinite(loss) else None,
            "done": done,
            "updatedAt": timestamp(),
        }
        validate("learner-warm-start", doc)
        try:
            self.store.put_bytes(keys.learner_warm_start(self.run_id), (json.dumps(doc) + "\n").encode())
        except Exception as e:  # noqa: BLE001 - progress is for display; the warm start goes on without it
            log.warning("could not write the warm start's progress: %s", e)
