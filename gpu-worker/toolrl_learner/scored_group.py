"""The scored group, the learner's input contract (shared/schemas `ScoredGroup`), as typed views of the JSON.

Keys are the wire's (camelCase, as the zod schema names them) so a group is the parsed JSON itself, with no
copy: `group_check.check_scored_group` validates it against the generated JSON Schema at the boundary and
returns it under this type. Only the fields the learner reads are typed in full.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

FinishReason = Literal[
    "eos", "max_turns", "max_tool_calls", "max_total_response_length", "length", "error", "timeout"
]


class Turn(TypedDict):
    """One assistant turn of a trajectory; the learner counts its tool calls."""

    turn: int
    policyVersion: int
    text: str
    content: str
    toolCalls: list[dict[str, Any]]
    parseErrors: list[dict[str, Any]]
    stop: Literal["eos", "tool_call", "length"]
    tokenStart: int
    tokenEnd: int


class TokenSequence(TypedDict):
    """The token-level fields every trained sequence has (a trajectory, or one of its segments)."""

    tokenIds: list[int]
    promptLength: int
    lossMask: list[int]
    behaviorLogprobs: list[float]
    policyVersions: list[int]


class Segment(TokenSequence):
    """An agent episode's earlier token sequence (its agent rewrote its history): trained with the episode's
    advantage; its turns are the trajectory's turns[turnStart:turnEnd]."""

    turnStart: int
    turnEnd: int
    reason: str


class Trajectory(TypedDict):
    """One of the group's G samples: every token as sampled or appended, and per-token training data."""

    sampleIndex: int
    tokenIds: list[int]  # prompt + every turn + tool results
    promptLength: int
    lossMask: list[int]  # 1 on sampled tokens only
    behaviorLogprobs: list[float]  # the rollout's log-prob of each sampled token, 0 elsewhere
    policyVersions: list[int]  # the version that sampled each token, -1 elsewhere
    finishReason: FinishReason
    turns: list[Turn]
    messages: list[dict[str, Any]]
    reward: float
    rewardComponents: dict[str, float]
    rewardErrors: NotRequired[list[Any]]
    segments: NotRequired[list[Segment]]


class ScoredGroup(TypedDict):
    """G scored trajectories of one prompt (a group id is prompt x epoch)."""

    schemaVersion: int
    runId: str
    groupId: str
    promptId: str
    epoch: int
    stage: NotRequired[str | None]  # the curriculum stage whose overrides train it
    split: NotRequired[Literal["train", "val"]]
    dataSource: str
    position: NotRequired[int | None]  # the feeder's walk position (trainer.deterministic)
    trajectories: list[Trajectory]
    completedBy: NotRequired[int]
