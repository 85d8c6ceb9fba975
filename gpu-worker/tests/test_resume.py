"""Resume equivalence through the real stdio driver: 4 steps straight, and 2 steps + SIGKILL (with a
third step trained but not committed) + resume + the rest, give the same weights and the same consumed
group ids. The killed process's uncommitted group is redelivered and trained again; a redelivered
committed one is dropped as a duplicate."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import torch
from hang import HANG_S
from safetensors.torch import load_file

from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.train.synthetic import random_group

RUN = "r-resume"


def _setup(root: Path, groups, model_dir: Path) -> None:
    run_dir = root / "runs" / RUN
    run_dir.mkdir(parents=True)
    config = {
        "model": {"path": str(model_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        # one group per step, a checkpoint every 2 steps, one publish (v0) besides the final one
        "trainer": {"batch_prompts": 1, "save_every": 2, "publish_every": 100, "lr": 1e-3, "max_staleness": 10,
                    "micro_batch_tokens": 64},
        "algorithm": {"clip_ratio_c": 3.0},
        "logging": {"tensorboard": False},
    }  # fmt: skip
    (run_dir / "run.json").write_text(
        json.dumps({"config": config, "totals": {"groupsPlanned": len(groups)}})
    )


def _line(g):
    return json.dumps({"type": "group", "group": g}) + "\n"


class Learner:
    """A `python -m toolrl_learner stdio` subprocess and the lines it printed."""

    def __init__(self, root: Path) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        cmd = [
            sys.executable,
            "-m",
            "toolrl_learner",
            "stdio",
            "--root",
            str(root),
            "--run-id",
            RUN,
            "--device",
            "cpu",
        ]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.lines: list[dict] = []

    def send(self, text: str) -> None:
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def wait_for(self, pred) -> dict:
        for raw in self.proc.stdout:
            msg = json.loads(raw)
            self.lines.append(msg)
            assert msg["type"] != "error", msg
            if pred(msg):
                return msg
        raise AssertionError(
            f"learner exited ({self.proc.wait()}) before the expected line; saw {self.lines}"
        )

    def finish(self) -> None:
        self.proc.stdin.close()
        self.wait_for(lambda m: m["type"] == "done")
        assert self.proc.wait(timeout=HANG_S) == 0


def _final(root: Path):
    ckpts = root / "runs" / RUN / "checkpoints"
    step = max(int(p.name.split("-")[1]) for p in ckpts.glob("step-*") if (p / "COMPLETE.json").is_file())
    marker = json.loads((ckpts / f"step-{step}" / "COMPLETE.json").read_text())
    return (
        step,
        marker["trainerState"],
        load_file(str(ckpts / f"step-{step}" / "model" / "model.safetensors")),
    )


def test_kill_and_resume_equals_straight_run_on_cpu(tmp_path):
    model_dir = build_tiny(
        tmp_path / "model", TinySpec(hidden_size=32, num_layers=2, num_heads=2, num_kv_heads=1)
    )
    groups = [
        random_group(RUN, f"e0-p{i}", vocab=900, g=4, response_len=10, tool_len=4, seed=i) for i in range(4)
    ]

    straight = tmp_path / "straight"
    _setup(straight, groups, model_dir)
    a = Learner(straight)
    a.wait_for(lambda m: m["type"] == "ready")
    a.send("".join(_line(g) for g in groups))
    a.finish()

    resumed = tmp_path / "resumed"
    _setup(resumed, groups, model_dir)
    b = Learner(resumed)
    assert b.wait_for(lambda m: m["type"] == "ready")["resumedFromStep"] is None
    b.send("".join(_line(g) for g in groups[:3]))
    committed = b.wait_for(lambda m: m["type"] == "committed")
    assert committed == {"type": "committed", "step": 2, "groupIds": ["e0-p0", "e0-p1"]}
    b.wait_for(lambda m: m["type"] == "step" and m["step"] == 3)  # trained, not committed
    b.proc.send_signal(signal.SIGKILL)
    b.proc.wait(timeout=HANG_S)

    c = Learner(resumed)
    assert c.wait_for(lambda m: m["type"] == "ready")["resumedFromStep"] == 2
    c.send(_line(groups[1]) + _line(groups[2]) + _line(groups[3]))  # p1: redelivered after its commit
    dup = c.wait_for(lambda m: m["type"] == "dropped")
    assert dup == {"type": "dropped", "groupId": "e0-p1", "reason": "duplicate"}
    c.finish()
    steps = [m["step"] for m in c.lines if m["type"] == "step"]
    assert steps == [3, 4]

    step_a, state_a, weights_a = _final(straight)
    step_c, state_c, weights_c = _final(resumed)
    assert step_a == step_c == 4
    assert (
        state_a["consumed_group_ids"] == state_c["consumed_group_ids"] == ["e0-p0", "e0-p1", "e0-p2", "e0-p3"]
    )
    assert state_a["groups_consumed"] == state_c["groups_consumed"] == 4
    assert weights_a.keys() == weights_c.keys()
    for name in weights_a:
        assert torch.equal(weights_a[name], weights_c[name]), name
    # and training did move them away from the initial weights
    init = load_file(str(model_dir / "model.safetensors"))
    assert any(not torch.equal(init[n].float(), weights_a[n]) for n in init)
