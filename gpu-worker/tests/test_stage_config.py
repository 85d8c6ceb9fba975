"""A curriculum stage's config is the one run.json's `resolved` holds (merged once by the run-starter,
shared/config/merge.ts): a stage that samples at another `rollout.temperature` and with another
`max_total_response_length` is trained on log-probs at that temperature and with that Dr. GRPO normaliser. The
check is the one the parity tests make: the learner's log-probs against the rollout's behaviour log-probs (here the
policy's own at the stage's temperature, so they agree to rounding when, and only when, the temperature is right)."""

import io
import json
from contextlib import redirect_stdout

import pytest

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.logprobs_cli import main as logprobs_main
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import group, trajectory

RUN = "r-stage"
RUN_T, STAGE_T = 1.0, 0.4
RUN_L, STAGE_L = 1024, 16


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(
        tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    )


def _config(tiny_dir):
    return {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "rollout": {"temperature": RUN_T, "multi_turn": {"max_total_response_length": RUN_L}},
        "algorithm": {"adv_estimator": "dr_grpo"},
        "trainer": {"batch_prompts": 1, "micro_batch_tokens": 256, "max_staleness": 10},
        "stages": [
            {"name": "warm", "data": {"train": "t.parquet"}, "overrides": {}},
            {
                "name": "cool",
                "data": {"train": "t.parquet"},
                "overrides": {
                    "rollout": {"temperature": STAGE_T, "multi_turn": {"max_total_response_length": STAGE_L}}
                },
            },
        ],
        "logging": {"tensorboard": False},
    }


def _cool(config):
    """The `cool` stage's complete config as the run-starter writes it into `resolved` (the merge is TypeScript's:
    test/unit/config/resolve.test.ts covers it on every section)."""
    rollout = {"temperature": STAGE_T, "multi_turn": {"max_total_response_length": STAGE_L}}
    return {**config, "rollout": rollout}


def _logprobs(tiny_dir, tmp_path, g, temperature) -> list[list[float]]:
    """The initial policy's log-probs of each trajectory at `temperature` (0 on unsampled tokens)."""
    (tmp_path / "g.json").write_text(json.dumps(g))
    buf = io.StringIO()
    argv = ["--model", str(tiny_dir), "--input", str(tmp_path / "g.json"), "--temperature", str(temperature)]
    with redirect_stdout(buf):
        assert logprobs_main([*argv, "--json"]) == 0
    return [s["logprobs"] for s in json.loads(buf.getvalue())["samples"]]


def test_a_stage_trains_at_its_own_temperature_and_response_budget_on_cpu(tiny_dir, tmp_path):
    config = _config(tiny_dir)
    resolved = {"run": config, "stages": {"warm": config, "cool": _cool(config)}}
    store = FolderBlobStore(tmp_path)
    run_json = {"config": config, "resolved": resolved, "totals": {}}
    store.put_bytes(f"runs/{RUN}/run.json", json.dumps(run_json).encode())
    events = []
    s = LearnerSession(store, RUN, emit=events.append, device="cpu")
    s.start()
    cfgs = s.model.trainer.stage_cfgs
    assert (cfgs["warm"].temperature, cfgs["warm"].loss_norm_constant) == (RUN_T, RUN_L)
    assert (cfgs["cool"].temperature, cfgs["cool"].loss_norm_constant) == (STAGE_T, STAGE_L)

    trajs = [trajectory([5, 6], [[10, 11 + k, 12]], float(k % 2)) for k in range(4)]
    g = group(RUN, "e0-p0", trajs, stage="cool")
    at_stage = _logprobs(tiny_dir, tmp_path, g, STAGE_T)
    at_run = _logprobs(tiny_dir, tmp_path, g, RUN_T)
    for t, lp in zip(g["trajectories"], at_stage, strict=True):
        t["behaviorLogprobs"] = lp  # what the stage's rollout sampled with
    # The two temperatures score these tokens far apart: a learner at the run's temperature could not agree.
    sampled = [(a, b) for la, lb, t in zip(at_stage, at_run, trajs, strict=True)
               for a, b, m in zip(la, lb, t["lossMask"], strict=True) if m]  # fmt: skip
    assert sum(abs(a - b) for a, b in sampled) / len(sampled) > 0.1
    s.offer({"type": "group", "group": g})
    (step,) = [e["metrics"] for e in events if e["type"] == "step"]
    assert step["stage_index"] == 1.0
    # pi_old (the learner's log-probs before the update) against pi_rollout: the same up to rounding.
    assert abs(step["rollout_kl_k1"]) < 1e-4
    assert step["rollout_is_weight_mean"] == pytest.approx(1.0, abs=1e-4)


def test_without_resolved_a_stage_overriding_what_the_learner_reads_is_refused_on_cpu(tiny_dir):
    config = _config(tiny_dir)
    cfg = LearnerConfig.from_run_config(config)
    with pytest.raises(ValueError, match=r"stage 'cool' overrides rollout\.temperature, rollout\.multi_turn"):
        cfg.stage_configs(config)
    # algorithm and trainer overrides alone are read from the run config as before
    config["stages"][1]["overrides"] = {"trainer": {"lr": 1e-5}}
    assert cfg.stage_configs(config)["cool"].lr == 1e-5
