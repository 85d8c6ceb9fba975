"""The bucket layout, filled from the key templates shared/topology.ts declares (generated into constants.json).

Keys are built with str.format and read back with patterns made from the same templates (as
shared/templates.ts does), so the learner restates no part of the layout by hand."""

from __future__ import annotations

import functools
import re

from ..contracts import constants

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
# What a numeric placeholder of the layout matches when a key is read back.
_NUMBER = r"\d+"


def _key(name: str, **values: str | int) -> str:
    return constants()["keys"][name].format(**values)


def _folder(name: str, placeholder: str, **values: str | int) -> str:
    """The filled template up to the folder that holds `{placeholder}`'s segment (everything of that kind)."""
    template = constants()["keys"][name]
    at = template.index("{" + placeholder + "}")
    return template[: template.rindex("/", 0, at) + 1].format(**values)


def _pattern(name: str, run_id: str, numbers: tuple[str, ...], whole: bool) -> re.Pattern[str]:
    """Keys of template `name` in run `run_id`, each other placeholder a named group (`numbers` match digits,
    the rest one key segment). `whole`: the key itself; otherwise anything under it (a folder template)."""
    return _compile(constants()["keys"][name], run_id, numbers, whole)


@functools.lru_cache(maxsize=64)
def _compile(template: str, run_id: str, numbers: tuple[str, ...], whole: bool) -> re.Pattern[str]:
    pieces = _PLACEHOLDER.split(template)
    out = []
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            out.append(re.escape(piece))
        elif piece == "runId":
            out.append(re.escape(run_id))
        else:
            out.append(f"(?P<{piece}>{_NUMBER if piece in numbers else '[^/]+?'})")
    return re.compile("".join(out) + ("$" if whole else ""))


def run_json(run_id: str) -> str:
    return _key("runJson", runId=run_id)


def input_prefix(run_id: str) -> str:
    return _key("inputPrefix", runId=run_id)


def policy_version(run_id: str, v: int) -> str:
    return _key("policyVersion", runId=run_id, version=v)


def policies(run_id: str) -> str:
    """The folder of every policy version of the run (`policy/`)."""
    return _folder("policyVersion", "version", runId=run_id)


def parse_policy_version(run_id: str, key: str) -> int | None:
    """The policy version whose folder `key` is in; None for any other key (LATEST.json)."""
    m = _pattern("policyVersion", run_id, ("version",), whole=False).match(key)
    return int(m["version"]) if m else None


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


def parse_checkpoint(run_id: str, key: str) -> tuple[int, int] | None:
    """(step, revision) of the checkpoint folder `key` is in (or is), revision 0 for step-<S>/; None for a key
    outside every checkpoint of the run."""
    for name in ("checkpointRevision", "checkpoint"):
        m = _pattern(name, run_id, ("step", "revision"), whole=False).match(key)
        if m:
            return int(m["step"]), int(m.groupdict().get("revision") or 0)
    return None


def metrics(run_id: str) -> str:
    return _key("metrics", runId=run_id)


def eval_summaries(run_id: str) -> str:
    """The folder of the pipeline's validation summaries, one per policy version."""
    return _folder("evalSummary", "version", runId=run_id)


def parse_eval_summary(run_id: str, key: str) -> int | None:
    """The policy version a validation summary's key names; None for any other key."""
    m = _pattern("evalSummary", run_id, ("version",), whole=True).match(key)
    return int(m["version"]) if m else None


def learner_state(run_id: str) -> str:
    return _key("learnerState", runId=run_id)


def learner_warm_start(run_id: str) -> str:
    return _key("learnerWarmStart", runId=run_id)


def queue_tally(run_id: str, writer: str) -> str:
    return _key("queueTally", runId=run_id, writer=writer)


def dead_letters(run_id: str) -> str:
    """Records of dead-lettered group messages: `<prefix><groupId>/<stage>-<messageId>.json`."""
    return _key("deadLetters", runId=run_id)


def dead_letter_group(run_id: str, key: str) -> str | None:
    """The group id of a dead-letter record's key; None for any other key."""
    m = _pattern("deadLetter", run_id, (), whole=True).match(key)
    return m["groupId"] if m else None


def dead_letter(run_id: str, group_id: str, stage: str, message_id: str) -> str:
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in message_id)
    return _key("deadLetter", runId=run_id, groupId=group_id, stage=stage, messageId=safe)
