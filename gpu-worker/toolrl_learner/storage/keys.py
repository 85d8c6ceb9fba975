"""The bucket layout, filled from the key templates shared/topology.ts declares (generated into constants.json)."""

from __future__ import annotations

from ..contracts import constants


def _key(name: str, **values: str | int) -> str:
    return constants()["keys"][name].format(**values)


def run_json(run_id: str) -> str:
    return _key("runJson", runId=run_id)


def input_prefix(run_id: str) -> str:
    return _key("inputPrefix", runId=run_id)


def policy_version(run_id: str, v: int) -> str:
    return _key("policyVersion", runId=run_id, version=v)


def policy_latest(run_id: str) -> str:
    return _key("policyLatest", runId=run_id)


def group(run_id: str, group_id: str) -> str:
    return _key("group", runId=run_id, groupId=group_id)


def checkpoints(run_id: str) -> str:
    return _key("checkpointsPrefix", runId=run_id)


def checkpoint(run_id: str, step: int, revision: int = 0) -> str:
    """step-<S>/; a rewrite at the same step with new weights goes beside it, to step-<S>-r<k>/."""
    if revision:
        return _key("checkpointRevision", runId=run_id, step=step, revision=revision)
    return _key("checkpoint", runId=run_id, step=step)


def metrics(run_id: str) -> str:
    return _key("metrics", runId=run_id)


def learner_state(run_id: str) -> str:
    return _key("learnerState", runId=run_id)


def dead_letters(run_id: str) -> str:
    """Records of dead-lettered group messages: `<prefix><groupId>/<stage>-<messageId>.json`."""
    return _key("deadLetters", runId=run_id)


def dead_letter(run_id: str, group_id: str, stage: str, message_id: str) -> str:
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in message_id)
    return _key("deadLetter", runId=run_id, groupId=group_id, stage=stage, messageId=safe)
