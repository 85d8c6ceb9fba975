"""What one offered group must pass before it may join a batch: readable (inline, or a manifest read by
reference with its sha256 checked), valid against the ScoredGroup contract and of this run (`resolve_group`),
then fresh enough for the policy that will train it and carrying a signal to learn from (`refusal`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, cast

from ..algos.advantages import has_signal
from ..config import LearnerConfig
from ..contracts import ContractError, validate
from ..scored_group import ScoredGroup, ScoredGroupMessage
from ..storage import BlobStore
from .batch import group_staleness, oldest_version
from .group_check import check_scored_group
from .versions import Lineage


def resolve_group(store: BlobStore, run_id: str, line: dict[str, Any]) -> ScoredGroup:
    """A ScoredGroup from an inline group or a queue message (manifest read, sha256 checked, validated)."""
    if "group" in line:
        group = line["group"]
    else:
        fields = {k: v for k, v in line.items() if k != "type"}
        message = cast(ScoredGroupMessage, validate("scored-group-message", fields))
        raw = store.get_bytes(message["manifestKey"])
        digest = hashlib.sha256(raw).hexdigest()
        if digest != message["sha256"]:
            raise ContractError(f"{message['manifestKey']}: sha256 {digest} != message's {message['sha256']}")
        group = json.loads(raw)
        if group.get("groupId") != message["groupId"]:
            raise ContractError(
                f"{message['manifestKey']}: groupId {group.get('groupId')!r} != {message['groupId']!r}"
            )
    scored = check_scored_group(group)
    if scored["runId"] != run_id:
        raise ContractError(f"group {scored['groupId']} belongs to run {scored['runId']}, not {run_id}")
    return scored


def refusal(
    group: ScoredGroup, policy_version: int, cfg: LearnerConfig, lineage: Lineage | None = None
) -> tuple[str, str] | None:
    """Why the policy at `policy_version` must not train the group, as the `dropped` line's (reason, message):
    too stale (trainer.max_staleness, counted along `lineage` after a crash: versions.py), or no signal while
    trainer.filter_groups is on; None to train it."""
    staleness = group_staleness(group, policy_version, lineage)
    if staleness > cfg.max_staleness:
        oldest = oldest_version(group)
        return "stale", f"oldest sampled token (v{oldest}) is {staleness} versions behind v{policy_version}"
    rewards = [t["reward"] for t in group["trajectories"]]
    if cfg.filter_groups and not has_signal(rewards, cfg.group_relative):
        return "no_signal", "all rewards equal" if len(rewards) > 1 else "a group of one"
    return None
