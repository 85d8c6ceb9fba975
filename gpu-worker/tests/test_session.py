"""Session-level behaviour that depends on the algorithm config: a group of one is dropped and counted
for the group-relative estimators but trained by reinforce_pp and gae (their baseline is the batch or a
critic), and sequence-level rollout IS in mask mode drops whole trajectories the rollout sampled from a
policy too far from the learner's."""

import io
import json
from contextlib import redirect_stdout

import pytest

from toolrl_learner.model.logprobs_cli import main as logprobs_main
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import group, trajectory

RUN = "r-sess"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(
        tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    )


def _session(root, tiny_dir, events, batch_prompts=2, **algorithm):
    config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"batch_prompts": batch_prompts, "micro_batch_tokens": 256, "max_staleness": 10},
        "algorithm": algorithm,
        "logging": {"tensorboard": False},
    }
    store = FolderBlobStore(root)
    store.put_bytes(f"runs/{RUN}/run.json", json.dumps({"config": config, "totals": {}}).encode())
    s = LearnerSession(store, RUN, emit=events.append, device="cpu")
    s.start()
    return s


def _g(i, rewards=(0.0, 1.0, 0.0, 1.0)):
    # prompt [5, 6] + 2 sampled tokens: 2 loss tokens per trajectory
    trajs = [trajectory([5, 6], [[10 + i, 11 + k]], r) for k, r in enumerate(rewards)]
    return group(RUN, f"e0-p{i}", trajs)


@pytest.mark.parametrize("estimator", ["grpo", "dr_grpo", "rloo", "reinforce_pp", "gae"])
def test_a_group_of_one_is_dropped_only_for_group_relative_estimators_on_cpu(tiny_dir, tmp_path, estimator):
    events = []
    s = _session(tmp_path, tiny_dir, events, adv_estimator=estimator)
    s.offer({"type": "group", "group": _g(0)})
    s.offer({"type": "group", "group": _g(1, rewards=(1.0,))})
    (step,) = [e["metrics"] for e in events if e["type"] == "step"]
    dropped = [(e["groupId"], e["reason"], e.get("message")) for e in events if e["type"] == "dropped"]
    if estimator in ("grpo", "dr_grpo", "rloo"):
        # no baseline for one sample: dropped, counted, and the batch of 2 arrivals trains on the other group
        assert dropped == [("e0-p1", "no_signal", "a group of one")]
        assert (s.state.groups_dropped, s.state.dropped_group_ids) == (1, ["e0-p1"])
        assert (step["groups"], step["trajectories"], step["dropped_groups"]) == (1, 4, 1)
    else:
        assert dropped == [] and s.state.groups_dropped == 0
        assert (step["groups"], step["trajectories"], step["no_signal_groups"]) == (2, 5, 0)
        # Returns are the rewards on both loss tokens (gamma 1; for gae V = 0 from the zero-initialised
        # head and lambda 1 give the same), whitened over the batch's 10 tokens: [0, 1, 0, 1 | 1] x 2,
        # mean 0.6, unbiased var = (4 x 0.36 + 6 x 0.16) / 9 = 0.266667, std 0.516398
        # -> reward 1: 0.4 / 0.516398 = 0.774597 (the group of one too), reward 0: -0.6 / 0.516398 = -1.161895
        assert (step["adv_max"], step["adv_min"]) == (pytest.approx(0.774597, abs=1e-5), pytest.approx(-1.161895, abs=1e-5))  # fmt: skip
    assert s.state.consumed_group_ids == [g for g in ("e0-p0", "e0-p1") if g not in s.state.dropped_group_ids]


def _learner_logprobs(tiny_dir, tmp_path, g) -> list[list[float]]:
    """The initial policy's log-probs of each trajectory (0 on unsampled tokens), from the logprobs command."""
    (tmp_path / "g.json").write_text(json.dumps(g))
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert logprobs_main(["--model", str(tiny_dir), "--input", str(tmp_path / "g.json"), "--json"]) == 0
    return [s["logprobs"] for s in json.loads(buf.getvalue())["samples"]]


def test_sequence_level_rollout_is_masks_whole_trajectories_on_cpu(tiny_dir, tmp_path):
    events = []
    s = _session(
        tmp_path, tiny_dir, events, batch_prompts=1, rollout_is="sequence", rollout_is_mode="mask",
        rollout_is_threshold=2.0,
    )  # fmt: skip
    # Step 1: the rollout's log-probs are the learner's own (w = 1), except trajectory 3's, each sampled
    # token 1 nat likelier than the learner finds it: log w = -1 per token, -2 over the sequence,
    # w = e^-2 = 0.135 < 1/2 -> masked (both its tokens). 2 of the batch's 8 loss tokens are masked:
    # masked_frac = 2 / 8 = 0.25; weight mean = (6 x 1 + 2 x 0) / 8 = 0.75
    g0 = _g(0)
    for k, (t, lp) in enumerate(
        zip(g0["trajectories"], _learner_logprobs(tiny_dir, tmp_path, g0), strict=True)
    ):
        t["behaviorLogprobs"] = [x + (1.0 if k == 3 and m else 0.0) for x, m in zip(lp, t["lossMask"], strict=True)]  # fmt: skip
    s.offer({"type": "group", "group": g0})
    m1 = [e["metrics"] for e in events if e["type"] == "step"][0]
    assert m1["rollout_is_masked_frac"] == pytest.approx(0.25)
    assert m1["rollout_is_weight_mean"] == pytest.approx(0.75, abs=1e-4)
    # Step 2: every trajectory far off (log w ~ +45 per sequence): all masked, no gradient at all (Adam's
    # momentum from step 1 still moves the weights; this batch adds nothing to it)
    g1 = _g(1)
    for t in g1["trajectories"]:
        t["behaviorLogprobs"] = [-30.0 if m else 0.0 for m in t["lossMask"]]
    s.offer({"type": "group", "group": g1})
    m2 = [e["metrics"] for e in events if e["type"] == "step"][1]
    assert m2["rollout_is_masked_frac"] == 1.0 and m2["rollout_is_weight_mean"] == 0.0
    assert m2["pg_loss"] == 0.0 and m2["grad_norm"] == 0.0
    grads = [p.grad for _, p in s.policy.named_trainable_parameters() if p.grad is not None]
    assert grads and all(not g.any() for g in grads)
