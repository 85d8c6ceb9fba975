"""Synthetic scored groups that satisfy the scored-group contract: for tests, the offline driver's
smoke runs and bench/learner. A trajectory is prompt tokens, then turns of sampled tokens, optionally
separated by tool-result tokens (loss mask 0)."""

from __future__ import annotations

import random

from ..scored_group import ScoredGroup, ToolCall, Trajectory, Turn


def trajectory(
    prompt: list[int],
    turns: list[list[int]],
    reward: float,
    *,
    tool_results: list[list[int]] | None = None,
    behavior_logprob: float = -1.0,
    version: int = 0,
    sample_index: int = 0,
    reward_components: dict[str, float] | None = None,
) -> Trajectory:
    """One trajectory: prompt, turn 0, tool result 0, turn 1, ... (tool results are not trained on)."""
    ids, mask = list(prompt), [0] * len(prompt)
    turn_records: list[Turn] = []
    for i, turn in enumerate(turns):
        start = len(ids)
        ids += turn
        mask += [1] * len(turn)
        calls: list[ToolCall] = []
        if tool_results and i < len(tool_results):
            calls = [
                {
                    "name": "calculator",
                    "arguments": {"expr": "1+1"},
                    "result": {"ok": True, "output": "2", "error": None, "truncated": False},
                    "durationMs": 1,
                }
            ]
        turn_records.append(
            {
                "turn": i,
                "policyVersion": version,
                "text": "",
                "content": "",
                "toolCalls": calls,
                "parseErrors": [],
                "stop": "tool_call" if calls else "eos",
                "tokenStart": start,
                "tokenEnd": len(ids),
            }
        )
        if tool_results and i < len(tool_results):
            ids += tool_results[i]
            mask += [0] * len(tool_results[i])
    return {
        "sampleIndex": sample_index,
        "tokenIds": ids,
        "promptLength": len(prompt),
        "lossMask": mask,
        "behaviorLogprobs": [behavior_logprob if m else 0.0 for m in mask],
        "policyVersions": [version if m else -1 for m in mask],
        "finishReason": "eos",
        "turns": turn_records,
        "messages": [],
        "reward": float(reward),
        "rewardComponents": reward_components if reward_components is not None else {"task": float(reward)},
    }


def group(
    run_id: str, group_id: str, trajectories: list[Trajectory], *, epoch: int = 0, stage: str | None = None
) -> ScoredGroup:
    for i, t in enumerate(trajectories):
        t["sampleIndex"] = i
    return {
        "schemaVersion": 1,
        "runId": run_id,
        "groupId": group_id,
        "promptId": group_id.split("-", 1)[-1],
        "epoch": epoch,
        "stage": stage,
        "split": "train",
        "dataSource": "synthetic",
        "trajectories": trajectories,
    }


def random_group(
    run_id: str,
    group_id: str,
    *,
    vocab: int,
    g: int = 4,
    prompt_len: int = 16,
    response_len: int = 32,
    tool_len: int = 8,
    turns: int = 2,
    version: int = 0,
    seed: int = 0,
) -> ScoredGroup:
    """G random multi-turn trajectories of one random prompt, rewards 0/1 alternating (always some signal)."""
    rng = random.Random(seed)
    prompt = [rng.randrange(vocab) for _ in range(prompt_len)]
    trajs = []
    for i in range(g):
        t_turns = [[rng.randrange(vocab) for _ in range(response_len)] for _ in range(turns)]
        tools = [[rng.randrange(vocab) for _ in range(tool_len)] for _ in range(turns - 1)]
        trajs.append(trajectory(prompt, t_turns, float(i % 2), tool_results=tools, version=version))
    return group(run_id, group_id, trajs)
