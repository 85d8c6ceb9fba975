"""The learner learns: groups that reward one particular token raise that token's probability."""

import pytest
import torch

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.train.batch import LearnerBatch
from toolrl_learner.train.packing import pack_batch
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.synthetic import group, trajectory
from toolrl_learner.train.trainer import Trainer

PROMPT = [11, 12, 13, 14]
CANDIDATES = [100, 200, 300, 400]
TARGET = 200
TOOL = [50, 51, 52]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=64, num_layers=2, num_heads=4))


def _target_prob(policy, prefix):
    g = group("r", "probe", [trajectory(prefix, [[TARGET]], 0.0)])
    (mb,) = pack_batch(LearnerBatch.from_groups([g], 0), 1024)
    return float(policy.forward_old(mb).logprobs.exp()[-1])


def _groups(policy, step, prefix_turn):
    """One group of 4 samples: the candidates as the last sampled token, reward 1 only for TARGET.
    Behaviour log-probs are the policy's own (what a rollout with these weights would have recorded)."""
    trajs = []
    for c in CANDIDATES:
        if prefix_turn:  # multi-turn: turn 0, a tool result, then the candidate
            trajs.append(trajectory(PROMPT, [[7, 8], [c]], float(c == TARGET), tool_results=[TOOL]))
        else:
            trajs.append(trajectory(PROMPT, [[c]], float(c == TARGET)))
    g = group("r", f"e0-p{step}", trajs)
    batch = LearnerBatch.from_groups([g], 0)
    for mb in pack_batch(batch, 1024):
        lp = policy.forward_old(mb).logprobs
        for k, tok in enumerate(mb.token_index.tolist()):
            s = int(batch.seq_ids[tok])
            pos = int(batch.loss_positions[s][tok - int(batch.tok_offsets[s])])
            g["trajectories"][s]["behaviorLogprobs"][pos] = float(lp[k])
    return [g]


@pytest.mark.parametrize(("estimator", "multi_turn"), [("grpo", False), ("rloo", True), ("dr_grpo", True)])
def test_rewarded_token_probability_rises_on_cpu(tiny_dir, estimator, multi_turn):
    cfg = LearnerConfig(
        model_path=str(tiny_dir), dtype="fp32", lr=1e-2, adv_estimator=estimator, temperature=1.0
    )
    policy = Policy(cfg, tiny_dir, torch.device("cpu"))
    trainer = Trainer(cfg, policy)
    prefix = PROMPT + [7, 8] + TOOL if multi_turn else PROMPT
    probs = [_target_prob(policy, prefix)]
    for step in range(4):
        trainer.step(_groups(policy, step, multi_turn), 0)
        probs.append(_target_prob(policy, prefix))
    # random init: p(target) ~ 1/V ~ 1e-3; each step must raise it, and 4 steps at least 5-fold
    assert all(b > a for a, b in zip(probs, probs[1:], strict=False)), probs
    assert probs[-1] > 5 * probs[0], probs
