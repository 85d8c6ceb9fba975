"""The sharded learner (FSDP2 under torchrun) against the single-process one, on CPU with gloo: one step on a
fixed batch gives the same losses and the same updated weights with 2 ranks as with one process; a 2-rank
checkpoint resumes on 3 ranks and in one process and both continue exactly as the single-process run; LoRA
with a value head matches too; a rank killed mid-step fails the job before anything is published or
committed, and a restart trains the step's groups once. With 2 GPUs the parity test also runs on NCCL.

Every learner here is the real driver (`python -m toolrl_learner launch ... stdio`) on a folder store."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from demos import calculator_demo
from hang import HANG_S

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.sharded.comm import assign_sequences, plan_rank_micro_batches
from toolrl_learner.sharded.launch import torchrun_args
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.checkpoint import complete_steps, load_latest_checkpoint
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import random_group

RUN = "r-dist"
DEMO = calculator_demo(2, "+", 3)
# The metrics a step sums over ranks, and the gradient norm: each must equal the single process's.
LR = 1e-2
COMPARED = (
    "lr",
    "pg_loss",
    "kl_loss",
    "kl",
    "entropy",
    "clip_frac",
    "grad_norm",
    "vf_loss",
    "adv_mean",
    "reward_mean",
)
TWO_GPUS = torch.cuda.device_count() >= 2


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    # Odd sizes on purpose: shards of unequal length (FSDP pads them) on 2 and 3 ranks.
    spec = TinySpec(hidden_size=48, num_layers=2, num_heads=3, num_kv_heads=1, intermediate_size=80)
    return build_tiny(tmp_path_factory.mktemp("tiny"), spec)


def _groups(start, n=2):
    # Unequal lengths, so the token-balanced split across ranks is uneven and has padding micro-batches.
    return [
        random_group(RUN, f"e0-p{i}", vocab=900, g=4, response_len=6 + 5 * i, tool_len=4, seed=i)
        for i in range(start, start + n)
    ]


def _config(tiny_dir, **model):
    return {
        "model": {"path": str(tiny_dir), "dtype": "fp32", **model},
        "data": {"train": "t.parquet"},
        "trainer": {
            "batch_prompts": 2,
            "save_every": 1,
            "micro_batch_tokens": 48,
            "lr": LR,
            # lr = LR x (step + 1) / 4: a resumed run must restore the learner step, or its lr is off
            "warmup_steps": 4,
            "sft": {"data": f"runs/{RUN}/input/sft.jsonl", "steps": 2, "batch_size": 3},
        },
        "algorithm": {"use_kl_loss": True, "kl_loss_coef": 0.1},
        "logging": {"tensorboard": False},
    }


def _store(root: Path, config) -> FolderBlobStore:
    run = root / "runs" / RUN
    (run / "input").mkdir(parents=True, exist_ok=True)
    (run / "run.json").write_text(json.dumps({"config": config, "totals": {"groupsPlanned": None}}))
    demo = json.dumps(DEMO) + "\n"
    (run / "input" / "sft.jsonl").write_text(demo * 4)
    return FolderBlobStore(root)


def _line(g):
    return json.dumps({"type": "group", "group": g}) + "\n"


def _learner_cmd(root: Path, nproc: int, device: str = "cpu"):
    return [
        sys.executable,
        "-m",
        "toolrl_learner",
        "launch",
        f"--nproc-per-node={nproc}",
        "stdio",
        "--root",
        str(root),
        "--run-id",
        RUN,
        "--device",
        device,
    ]


def _launch(root: Path, nproc: int, groups, device: str = "cpu"):
    """Run the sharded learner on `groups` until EOF; returns (exit code, its events)."""
    p = subprocess.run(
        _learner_cmd(root, nproc, device),
        input="".join(_line(g) for g in groups),
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    events = [json.loads(x) for x in p.stdout.splitlines()]
    assert p.returncode == 0, p.stderr[-4000:]
    return events


def _steps(events):
    return [e["metrics"] for e in events if e["type"] == "step"]


def _single(root: Path, batches, device="cpu"):
    """The single-process learner in this process: one step per batch; returns (events, weights after each)."""
    events = []
    s = LearnerSession(FolderBlobStore(root), RUN, emit=events.append, device=device)
    s.start()
    after = []
    for batch in batches:
        for g in batch:
            s.offer({"type": "group", "group": g})
        after.append(_trained(s.policy))
    s.finish()
    return events, after


def _trained(policy):
    """The trained weights by name (LoRA adapters and the value head included), on CPU."""
    out = {n: p.detach().float().cpu().clone() for n, p in policy.named_trainable_parameters()}
    assert out
    return out


def _checkpoint_weights(root: Path, config):
    """The newest checkpoint of the run, loaded whole into a single-process policy (the 2 -> 1 path)."""
    cfg = LearnerConfig.from_run_config(config)
    policy = Policy(cfg, Path(config["model"]["path"]), torch.device("cpu"))
    loaded = load_latest_checkpoint(FolderBlobStore(root), RUN, policy, root / "load-work")
    assert loaded is not None
    return loaded[0], _trained(policy)


def _assert_same_step(sharded, single, rtol=1e-4, atol=1e-6):
    for k in COMPARED:
        if k in single:
            assert sharded[k] == pytest.approx(single[k], rel=rtol, abs=atol), k
    assert sharded["loss_tokens"] == single["loss_tokens"]


def _assert_same_weights(a, b, atol=1e-6):
    """Equal to fp32 rounding, with AdamW's amplification of it allowed for. AdamW moves a weight by about
    lr * m / (sqrt(v) + eps): where a gradient element sums to nearly nothing (|g| near eps), the summation
    order (one process, or shards on ranks) decides how far, by up to a few % of lr, and later steps carry
    that on. So: all but 3% of the weights within atol, all but 0.5% within 10 x atol (measured here: 1.1% and
    0.05% after one step at atol 1e-6; 1.0% and 0.01% after two at 1e-5). A lost gradient share or a wrong
    normalisation moves most weights by about lr (1e-2)."""
    assert a.keys() == b.keys()
    d = torch.cat([(a[k] - b[k]).abs().flatten() for k in a])
    _assert_within(d, atol)


def _assert_within(d, atol):
    off, far = float((d > atol).float().mean()), float((d > 10 * atol).float().mean())
    assert off <= 0.03 and far <= 0.005, f"{off:.2%} of weights off by > {atol}, {far:.2%} by > {10 * atol}"


def _assert_same_bundle(a: Path, b: Path, version: int) -> None:
    """The published rollout bundles hold the same weights (to the tolerance of _assert_same_weights)."""
    wa, wb = (
        np.fromfile(r / "runs" / RUN / "policy" / f"v{version}" / "model.onnx.data", dtype=np.float32)
        for r in (a, b)
    )
    assert wa.shape == wb.shape
    _assert_within(torch.from_numpy(np.abs(wa - wb)), 1e-6)


# -- the split ------------------------------------------------------------------------------------------------


def test_sequences_are_split_across_ranks_by_tokens_with_equal_micro_batch_counts():
    # longest first, each to the least loaded rank (ties: lowest): 9|8|7, 6 -> 7, 5 -> 8, 4 -> 9, 3 -> 13 (rank 0),
    # 2 -> 13 (rank 1), 2 -> 13 (rank 2): 16, 15, 15 tokens
    assert assign_sequences([9, 8, 7, 6, 5, 4, 3, 2, 2], 3) == [[0, 5, 6], [1, 4, 7], [2, 3, 8]]
    plans = plan_rank_micro_batches([30, 30, 5], budget=32, ranks=2)
    # rank 0 gets 30 + 5 (two micro-batches of at most 32 tokens), rank 1 gets 30 and pads with an empty one
    assert plans == [[[0], [2]], [[1], []]]
    assert plan_rank_micro_batches([4], budget=8, ranks=3) == [[[0]], [[]], [[]]]


# -- launcher -------------------------------------------------------------------------------------------------


def test_torchrun_arguments_on_one_machine_and_on_a_batch_multi_node_job():
    cmd = ["sqs", "--run-id", "r"]
    assert torchrun_args(8, cmd, {}) == [
        "--standalone",
        "--nproc-per-node=8",
        "--max-restarts=0",
        "--module",
        "toolrl_learner",
        *cmd,
    ]
    env = {
        "AWS_BATCH_JOB_NUM_NODES": "2",
        "AWS_BATCH_JOB_NODE_INDEX": "1",
        "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
        "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.3.7",
    }
    assert torchrun_args(8, cmd, env)[:4] == [
        "--nnodes=2",
        "--node-rank=1",
        "--master-addr=10.0.3.7",
        "--master-port=29500",
    ]


@pytest.mark.skipif(torch.cuda.device_count() >= 2, reason="the machine has the GPUs")
def test_launch_refuses_more_gpu_processes_than_gpus_with_the_numbers(tmp_path):
    cmd = _learner_cmd(tmp_path, 2)[:-2]  # no --device cpu
    p = subprocess.run(cmd, input="", capture_output=True, text=True, timeout=HANG_S)
    assert p.returncode == 2
    (line,) = [json.loads(x) for x in p.stdout.splitlines()]
    assert line["type"] == "error"
    assert "asks for 2 GPU processes" in line["message"] and "--device cpu" in line["message"]


# -- parity, resume -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference(tiny_dir, tmp_path_factory):
    """The single-process run: SFT warm start, then step 1 on groups 0-1 and step 2 on groups 2-3."""
    root = tmp_path_factory.mktemp("single")
    _store(root, _config(tiny_dir, gradient_checkpointing=True))
    events, after = _single(root, [_groups(0), _groups(2)])
    return {"root": root, "events": events, "steps": _steps(events), "weights": after}


@pytest.fixture(scope="module")
def two_ranks(tiny_dir, tmp_path_factory):
    """The same run on 2 ranks, stopped after step 1 (its checkpoint holds 2 ranks' shards)."""
    root = tmp_path_factory.mktemp("two")
    _store(root, _config(tiny_dir, gradient_checkpointing=True))
    return root, _launch(root, 2, _groups(0))


def test_two_ranks_take_the_single_process_step_on_cpu(tiny_dir, reference, two_ranks):
    root, events = two_ranks
    # The SFT warm start: each rank trains its share of every batch; the summed losses are the single process's.
    sft = [e["loss"] for e in events if e["type"] == "sft"]
    assert sft == pytest.approx([e["loss"] for e in reference["events"] if e["type"] == "sft"], rel=1e-5)
    (step,) = _steps(events)
    _assert_same_step(step, reference["steps"][0])
    state, weights = _checkpoint_weights(root, _config(tiny_dir))
    assert (state.step, state.consumed_group_ids) == (1, ["e0-p0", "e0-p1"])
    _assert_same_weights(weights, reference["weights"][0])
    # Rank 0 publishes the gathered weights: the rollout bundle is the single process's.
    _assert_same_bundle(root, reference["root"], 1)
    marker = json.loads((root / "runs" / RUN / "checkpoints" / "step-1" / "COMPLETE.json").read_text())
    assert marker["worldSize"] == 2 and {"dcp/__0_0.distcp", "dcp/__1_0.distcp", "dcp/.metadata"} <= set(
        marker["files"]
    )


def test_a_two_rank_checkpoint_resumes_on_three_ranks_on_cpu(tiny_dir, reference, two_ranks, tmp_path):
    root = tmp_path / "three"
    shutil.copytree(two_ranks[0], root)
    events = _launch(root, 3, _groups(2))
    assert [e["resumedFromStep"] for e in events if e["type"] == "ready"] == [1]
    assert not [e for e in events if e["type"] == "sft"]  # the warm start is not redone
    (step,) = _steps(events)
    _assert_same_step(step, reference["steps"][1])
    state, weights = _checkpoint_weights(root, _config(tiny_dir))
    assert state.consumed_group_ids == ["e0-p0", "e0-p1", "e0-p2", "e0-p3"]
    _assert_same_weights(weights, reference["weights"][1], atol=1e-5)


def test_a_two_rank_checkpoint_resumes_in_one_process_on_cpu(tiny_dir, reference, two_ranks, tmp_path):
    root = tmp_path / "one"
    shutil.copytree(two_ranks[0], root)
    events, (weights,) = _single(root, [_groups(2)])
    assert [e["resumedFromStep"] for e in events if e["type"] == "ready"] == [1]
    (step,) = _steps(events)
    _assert_same_step(step, reference["steps"][1])
    _assert_same_weights(weights, reference["weights"][1], atol=1e-5)


def test_lora_with_a_value_head_and_mini_batches_on_two_ranks_matches_one_process_on_cpu(tiny_dir, tmp_path):
    config = _config(tiny_dir, lora={"rank": 4, "alpha": 8})
    config["algorithm"] = {"adv_estimator": "gae", "use_kl_loss": True}
    # Two mini-batches of one group each (verl's ppo_mini_batch_size): each is split across the ranks on its own.
    config["trainer"]["ppo_mini_batch_size"] = 1
    del config["trainer"]["sft"]
    single, sharded = tmp_path / "single", tmp_path / "sharded"
    _store(single, config)
    _store(sharded, config)
    events, (weights,) = _single(single, [_groups(0)])
    sharded_events = _launch(sharded, 2, _groups(0))
    _assert_same_step(_steps(sharded_events)[0], _steps(events)[0])
    assert _steps(sharded_events)[0]["actor_updates"] == _steps(events)[0]["actor_updates"] == 2
    _, sharded_weights = _checkpoint_weights(sharded, config)
    assert any(".lora_A." in k for k in sharded_weights) and "value_head.weight" in sharded_weights
    _assert_same_weights(sharded_weights, weights)
    # Published with the adapters merged into the base, as the single process merges them.
    _assert_same_bundle(sharded, single, 1)


def test_ptx_demonstrations_on_two_ranks_match_one_process_on_cpu(tiny_dir, tmp_path):
    # trainer.sft.ptx_coef with no warm start (steps: 0): every rank loads the demonstrations and trains its share.
    config = _config(tiny_dir)
    config["trainer"]["sft"].update(steps=0, ptx_coef=0.5)
    single, sharded = tmp_path / "single", tmp_path / "sharded"
    _store(single, config)
    _store(sharded, config)
    events, (weights,) = _single(single, [_groups(0)])
    sharded_events = _launch(sharded, 2, _groups(0))
    assert not [e for e in events + sharded_events if e["type"] == "sft"]  # 0 steps: no warm start
    one, two = _steps(events)[0], _steps(sharded_events)[0]
    _assert_same_step(two, one)
    assert one["ptx_loss"] > 0 and two["ptx_loss"] == pytest.approx(one["ptx_loss"], rel=1e-4)
    _, sharded_weights = _checkpoint_weights(sharded, config)
    _assert_same_weights(sharded_weights, weights)


def test_a_separate_critic_is_refused_on_two_ranks_with_what_to_do(tiny_dir, tmp_path):
    # The separate PPO critic is not sharded: the run fails at start, saying so, before any rank loads a model.
    config = _config(tiny_dir)
    config["critic"] = {"model": {"path": str(tiny_dir)}}
    config["algorithm"] = {"adv_estimator": "gae"}
    del config["trainer"]["sft"]
    _store(tmp_path, config)
    p = subprocess.run(
        _learner_cmd(tmp_path, 2), input=_line(_groups(0)[0]), capture_output=True, text=True, timeout=HANG_S
    )
    assert p.returncode != 0
    events = [json.loads(x) for x in p.stdout.splitlines()]
    assert events[-1]["type"] == "error"
    assert "not supported by the sharded learner (2 ranks)" in events[-1]["message"]
    assert "trainer.num_gpus: 1" in events[-1]["message"]
    assert not (tmp_path / "runs" / RUN / "policy").exists()


@pytest.mark.skipif(not TWO_GPUS, reason="needs 2 GPUs (NCCL)")
def test_two_ranks_on_nccl_take_the_single_gpu_step(tiny_dir, tmp_path):
    config = _config(tiny_dir)
    single, sharded = tmp_path / "single", tmp_path / "sharded"
    _store(single, config)
    _store(sharded, config)
    events, _ = _single(single, [_groups(0)], device="cuda")
    sharded_events = _launch(sharded, 2, _groups(0), device="cuda")
    _assert_same_step(_steps(sharded_events)[0], _steps(events)[0], rtol=1e-3, atol=1e-5)


# -- a rank killed mid-step -----------------------------------------------------------------------------------


def _wait_for(path: Path, text: str, proc, timeout=HANG_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        assert proc.poll() is None, f"the learner exited ({proc.returncode}) before {text!r}"
        time.sleep(0.2)
    raise AssertionError(f"no {text!r} in {path} after {timeout} s")


def _rank_pid(parent: int, rank: int) -> int:
    """The pid of the learner rank `rank` among the launcher's children (torchrun starts them)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and f"RANK={rank}".encode() in environ:
            return int(entry.name)
    raise AssertionError(f"no rank {rank} under pid {parent}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the rank's process in /proc")
def test_a_rank_killed_mid_step_fails_the_job_and_commits_nothing_on_cpu(two_ranks, tmp_path):
    # GIVEN the 2-rank run after its step 1, restarted on 2 ranks
    root = tmp_path / "killed"
    shutil.copytree(two_ranks[0], root)
    out, err = tmp_path / "out.jsonl", tmp_path / "err.log"
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen(_learner_cmd(root, 2), stdin=subprocess.PIPE, stdout=o, stderr=e, text=True)
    try:
        _wait_for(out, '"ready"', proc)
        # WHEN rank 1 is held, the next batch arrives, rank 0 enters the step, and rank 1 is killed there
        victim = _rank_pid(proc.pid, 1)
        os.kill(victim, signal.SIGSTOP)
        proc.stdin.write("".join(_line(g) for g in _groups(2)))
        proc.stdin.flush()
        _wait_for(err, "step 2: 2 groups on 2 ranks", proc)
        os.kill(victim, signal.SIGKILL)
        code = proc.wait(timeout=HANG_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    # THEN the job fails, and step 2 left nothing: no metrics, no policy v2, no checkpoint, no commit
    assert code != 0
    events = [json.loads(x) for x in out.read_text().splitlines()]
    assert [e["type"] for e in events if e["type"] in ("step", "published", "committed")] == []
    # The launcher names the rank that died, whether or not rank 0 wrote its own error before torchrun stopped it.
    assert events[-1]["type"] == "error" and "rank 1 killed by SIGKILL" in events[-1]["message"], events[-1]
    run = root / "runs" / RUN
    assert complete_steps(FolderBlobStore(root), RUN) == [1, 0]  # 0: after the SFT warm start
    assert not (run / "checkpoints" / "step-2").exists()
    assert json.loads((run / "policy" / "LATEST.json").read_text())["version"] == 1
    # AND the redelivered groups train once on the restart (here in one process, from the 2-rank checkpoint)
    events, _ = _single(root, [_groups(2)])
    assert [e["resumedFromStep"] for e in events if e["type"] == "ready"] == [1]
    assert [e["groupIds"] for e in events if e["type"] == "committed"] == [["e0-p2", "e0-p3"]]
    state = json.loads((run / "checkpoints" / "step-2" / "COMPLETE.json").read_text())["trainerState"]
    assert state["consumed_group_ids"] == ["e0-p0", "e0-p1", "e0-p2", "e0-p3"]


def _wait_event(path: Path, kind: str, proc, timeout=HANG_S):
    """Wait for a protocol event of type `kind` on the learner's stdout file."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for x in path.read_text(errors="replace").splitlines():
            if x.strip() and json.loads(x)["type"] == kind:
                return
        assert proc.poll() is None, f"the learner exited ({proc.returncode}) before a {kind!r} event"
        time.sleep(0.2)
    raise AssertionError(f"no {kind!r} event in {path} after {timeout} s")


def test_sigterm_checkpoints_the_trained_step_on_every_rank_and_exits_143_on_cpu(two_ranks, tmp_path):
    # GIVEN the 2-rank run after its step 1, restarted on 2 ranks with no checkpoint due before step 100
    root = tmp_path / "stopped"
    shutil.copytree(two_ranks[0], root)
    run_json = root / "runs" / RUN / "run.json"
    doc = json.loads(run_json.read_text())
    doc["config"]["trainer"]["save_every"] = 100
    run_json.write_text(json.dumps(doc))
    out, err = tmp_path / "out.jsonl", tmp_path / "err.log"
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen(_learner_cmd(root, 2), stdin=subprocess.PIPE, stdout=o, stderr=e, text=True)
    try:
        _wait_event(out, "ready", proc)
        proc.stdin.write("".join(_line(g) for g in _groups(2)))
        proc.stdin.flush()
        _wait_event(out, "step", proc)
        # WHEN the launcher gets SIGTERM, as Batch sends it on a spot reclaim (torchrun passes it to every rank)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=HANG_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    # THEN the job exits 143 (the job definition retries it as a lost host), and nothing is lost or half-kept.
    assert code == 143, err.read_text()[-4000:]
    events = [json.loads(x) for x in out.read_text().splitlines()]
    committed = [e["groupIds"] for e in events if e["type"] == "committed"]
    steps = complete_steps(FolderBlobStore(root), RUN)
    if committed:
        # Rank 0 checkpointed the trained step with rank 1's shards before torchrun's SIGKILL, 30 s after SIGTERM
        # (measured: 26 s for publish, checkpoint and exit on this 2-core machine at load average ~20).
        assert committed == [["e0-p2", "e0-p3"]] and steps[0] == 2
        marker = json.loads((root / "runs" / RUN / "checkpoints" / "step-2" / "COMPLETE.json").read_text())
        assert marker["worldSize"] == 2 and "dcp/__1_0.distcp" in marker["files"]
        assert marker["trainerState"]["consumed_group_ids"] == ["e0-p0", "e0-p1", "e0-p2", "e0-p3"]
    else:
        # A machine too slow for that is killed first: then step 2 left no checkpoint and its groups come back.
        assert (
            steps[0] == 1 and not (root / "runs" / RUN / "checkpoints" / "step-2" / "COMPLETE.json").exists()
        )
