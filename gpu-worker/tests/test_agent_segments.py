"""Agent episodes split into segments (the agent rewrote its history, shared/agent): each segment is trained as a
sequence of its own with its episode's advantage, the group's baseline counts the episode once, per-episode
metrics count episodes, and the contract check reads segment arrays as it reads a trajectory's."""

import pytest
import torch

from toolrl_learner.config import LearnerConfig
from toolrl_learner.contracts import ContractError
from toolrl_learner.train.batch import LearnerBatch, group_staleness
from toolrl_learner.train.group_check import check_scored_group
from toolrl_learner.train.outcomes import batch_metrics, compute_advantages
from toolrl_learner.train.synthetic import group, trajectory


def _segment(prompt: list[int], turn: list[int], *, version: int = 0) -> dict:
    """An earlier token sequence of an episode: a prompt and one sampled turn."""
    ids = prompt + turn
    mask = [0] * len(prompt) + [1] * len(turn)
    return {
        "tokenIds": ids,
        "promptLength": len(prompt),
        "lossMask": mask,
        "behaviorLogprobs": [-1.0 if m else 0.0 for m in mask],
        "policyVersions": [version if m else -1 for m in mask],
        "turnStart": 0,
        "turnEnd": 1,
        "reason": "the agent's message 1 differs from the conversation the episode holds",
    }


def _split_group():
    """Two episodes of one prompt, rewards 1 and 0; the first also has an earlier segment (2 loss tokens)."""
    a = trajectory([5, 6], [[10, 11]], 1.0)
    a["segments"] = [_segment([7], [30, 31], version=2)]  # type: ignore[typeddict-item]
    b = trajectory([5, 6], [[20, 21]], 0.0)
    return group("r", "e0-p0", [a, b])


def test_a_segment_is_a_sequence_with_its_episodes_reward_on_cpu():
    batch = LearnerBatch.from_groups([_split_group()], 0)
    assert batch.num_seqs == 3
    assert batch.episodes.tolist() == [0, 0, 1]  # trajectory a, its segment, trajectory b
    assert batch.primaries.tolist() == [0, 2]
    assert batch.rewards.tolist() == [1.0, 1.0, 0.0]
    assert batch.token_ids[1].tolist() == [7, 30, 31]
    assert batch.finish_reasons == ["eos", "segment", "eos"]


def test_grpo_baseline_counts_the_episode_once_and_its_segments_share_its_advantage_on_cpu():
    # Episodes r = [1, 0]: mean 0.5, unbiased std sqrt(0.5) = 0.707107 -> A = [+0.707107, -0.707107].
    # Loss tokens: a's 2, its segment's 2, b's 2 -> [+A0, +A0, +A0, +A0, A1, A1].
    # (Counting the segment as a third sample would give r = [1, 1, 0]: mean 2/3, A = [0.577, 0.577, -1.155].)
    batch = LearnerBatch.from_groups([_split_group()], 0)
    adv, _, _ = compute_advantages(LearnerConfig(adv_estimator="grpo"), batch)
    a0 = 0.5 / (0.5**0.5 + 1e-6)
    assert adv.tolist() == pytest.approx([a0] * 4 + [-a0] * 2, abs=1e-5)
    rloo, _, _ = compute_advantages(LearnerConfig(adv_estimator="rloo"), batch)
    assert rloo.tolist() == pytest.approx([1.0] * 4 + [-1.0] * 2)  # 2/1 * (r - 0.5)


def test_kl_in_the_reward_sums_over_all_of_an_episodes_sequences_on_cpu():
    # k1 = old - ref = 0.1 on every token of a's segment only; kl_coef 1: episode a's reward 1 - 0.2 = 0.8.
    # Episodes [0.8, 0]: mean 0.4, std sqrt(0.16 + 0.16) = 0.565685 -> A = +-0.707107 (scale-free with two).
    # Dr. GRPO (no std): A = [0.4, -0.4].
    batch = LearnerBatch.from_groups([_split_group()], 0)
    old = torch.tensor([-1.0, -1.0, -0.9, -0.9, -1.0, -1.0])
    ref = torch.tensor([-1.0, -1.0, -1.0, -1.0, -1.0, -1.0])
    cfg = LearnerConfig(adv_estimator="dr_grpo", use_kl_in_reward=True, kl_penalty="k1", kl_coef=1.0)
    adv, _, _ = compute_advantages(cfg, batch, old, None, ref)
    assert adv.tolist() == pytest.approx([0.4] * 4 + [-0.4] * 2, abs=1e-6)


def test_metrics_count_episodes_and_report_segments_on_cpu():
    batch = LearnerBatch.from_groups([_split_group()], 0)
    m = batch_metrics(batch, True)
    assert m["trajectories"] == 2.0
    assert m["agent_segments"] == 1.0
    assert m["reward_mean"] == 0.5
    assert m["finish/eos"] == 1.0
    assert "finish/segment" not in m
    plain = LearnerBatch.from_groups([group("r", "e0-p0", [trajectory([5], [[1]], 1.0)])], 0)
    assert "agent_segments" not in batch_metrics(plain, True)


def test_staleness_reads_the_segments_versions_on_cpu():
    # The trajectories were sampled by v4, the segment (earlier in the episode) by v1: 5 - 1 = 4 behind.
    t = trajectory([5], [[10]], 1.0, version=4)
    t["segments"] = [_segment([7], [30], version=1)]  # type: ignore[typeddict-item]
    assert group_staleness(group("r", "e0-p0", [t]), 5) == 4


def test_the_contract_check_reads_segments_on_cpu():
    check_scored_group(_split_group())  # type: ignore[arg-type]
    bad = _split_group()
    bad["trajectories"][0]["segments"][0]["lossMask"] = [0, 1]  # type: ignore[typeddict-item]
    with pytest.raises(ContractError, match="trajectories/0/segments/0/lossMask: has 2 entries, tokenIds 3"):
        check_scored_group(bad)  # type: ignore[arg-type]
