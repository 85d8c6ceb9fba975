"""The bucket layout, as shared/topology.ts `keys` declares it (keep the two in step)."""

from __future__ import annotations


def run_json(run_id: str) -> str:
    return f"runs/{run_id}/run.json"


def input_prefix(run_id: str) -> str:
    return f"runs/{run_id}/input/"


def policy_version(run_id: str, v: int) -> str:
    return f"runs/{run_id}/policy/v{v}/"


def policy_latest(run_id: str) -> str:
    return f"runs/{run_id}/policy/LATEST.json"


def group(run_id: str, group_id: str) -> str:
    return f"runs/{run_id}/groups/{group_id}.json"


def checkpoints(run_id: str) -> str:
    return f"runs/{run_id}/checkpoints/"


def checkpoint(run_id: str, step: int, revision: int = 0) -> str:
    """step-<S>/; a rewrite at the same step with new weights goes beside it, to step-<S>-r<k>/."""
    suffix = f"-r{revision}" if revision else ""
    return f"runs/{run_id}/checkpoints/step-{step}{suffix}/"


def metrics(run_id: str) -> str:
    return f"runs/{run_id}/metrics/"


def learner_state(run_id: str) -> str:
    return f"runs/{run_id}/learner/state.json"


def dead_letters(run_id: str) -> str:
    """Records of dead-lettered group messages: `<prefix><groupId>/<stage>-<messageId>.json`."""
    return f"runs/{run_id}/dead-letters/"


def dead_letter(run_id: str, group_id: str, stage: str, message_id: str) -> str:
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in message_id)
    return f"{dead_letters(run_id)}{group_id}/{stage}-{safe}.json"
