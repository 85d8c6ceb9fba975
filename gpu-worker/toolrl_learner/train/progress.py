"""The two run files the learner shares with the pipeline: it reads run.json (the resolved config, how many
groups the run plans, whether it has failed) and writes state.json (its counters, which the feeder's top-up
and `toolrl status` read)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..contracts import timestamp, validate
from ..storage import BlobNotFound, BlobStore, keys
from .checkpoint import TrainerState
from .ordered import OrderedBatches


@dataclass(frozen=True)
class RunDoc:
    """What the learner reads of run.json."""

    config: dict[str, Any] | None  # the resolved run config
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
