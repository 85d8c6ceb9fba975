"""The session loop and its drivers: the stdio protocol end to end (a real subprocess), SIGTERM
writing a checkpoint before exit, dedupe / staleness / no-signal filtering with and without refill,
the stop on planned groups, state.json and metrics, and the offline driver's data position."""

import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hang import HANG_S

from toolrl_learner.contracts import validate
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import group, trajectory

RUN = "r-drv"
REQUIRED = {"step", "policy_version", "reward_mean", "reward_std", "tool_calls_per_trajectory", "groups",
            "dropped_groups", "pg_loss", "kl", "entropy", "clip_frac", "adv_mean", "staleness_mean",
            "tokens_per_s", "step_time_s", "memory_gb"}  # fmt: skip


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(
        tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    )


def _run(root: Path, tiny_dir, planned=None, **trainer):
    config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {
            "batch_prompts": 2,
            "publish_every": 1,
            "save_every": 2,
            "micro_batch_tokens": 256,
            **trainer,
        },
        "algorithm": {"use_kl_loss": True},
        "logging": {"tensorboard": False},
    }
    (root / "runs" / RUN).mkdir(parents=True, exist_ok=True)
    (root / "runs" / RUN / "run.json").write_text(
        json.dumps({"config": config, "totals": {"groupsPlanned": planned}})
    )
    return FolderBlobStore(root)


def _g(i, version=0, rewards=(0.0, 1.0, 0.0, 1.0)):
    trajs = [trajectory([5, 6, 7], [[10 + i, 11 + k]], r, version=version) for k, r in enumerate(rewards)]
    return group(RUN, f"e0-p{i}", trajs)


def _session(store, events, **kw):
    s = LearnerSession(store, RUN, emit=events.append, device="cpu", **kw)
    s.start()
    return s


def test_filters_dedupe_and_commit_on_cpu(tiny_dir, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="toolrl_learner.train.session_groups")
    store = _run(tmp_path, tiny_dir)
    events = []
    s = _session(store, events)
    s.offer({"type": "group", "group": _g(0)})
    s.offer({"type": "group", "group": _g(0)})  # a redelivery while buffered
    s.offer({"type": "group", "group": _g(1, rewards=(1.0, 1.0, 1.0, 1.0))})  # no signal
    # refill off: 2 arrivals make a batch; one had no signal -> a step on the other
    steps = [e for e in events if e["type"] == "step"]
    assert (
        len(steps) == 1 and steps[0]["metrics"]["groups"] == 1 and steps[0]["metrics"]["dropped_groups"] == 1
    )
    s.offer({"type": "group", "group": _g(2, version=0)})  # v0 is now 1 behind v1: within max_staleness 1
    s.offer({"type": "group", "group": _g(3)})
    assert [e["step"] for e in events if e["type"] == "step"] == [1, 2]
    s.offer({"type": "group", "group": _g(4, version=0)})  # policy is v2 now: 2 behind -> stale
    dropped = [(e["groupId"], e["reason"]) for e in events if e["type"] == "dropped"]
    assert dropped == [("e0-p0", "duplicate"), ("e0-p1", "no_signal"), ("e0-p4", "stale")]
    # The learner's log names each drop on record and why (a duplicate is not one)
    assert [m for m in caplog.messages if m.startswith("dropped group")] == [
        "dropped group e0-p1 (no_signal): all rewards equal",
        "dropped group e0-p4 (stale): oldest sampled token (v0) is 2 versions behind v2",
    ]
    committed = [e for e in events if e["type"] == "committed"]
    assert committed == [{"type": "committed", "step": 2, "groupIds": ["e0-p1", "e0-p0", "e0-p2", "e0-p3"]}]
    s.offer(
        {"type": "group", "group": _g(0)}
    )  # redelivered after its commit: a duplicate, settled at the next commit
    s.finish()
    assert events[-3] == {"type": "committed", "step": 2, "groupIds": ["e0-p4", "e0-p0"]}
    assert events[-1] == {"type": "done"}
    state = json.loads(store.get_bytes(f"runs/{RUN}/learner/state.json"))
    validate("learner-state", state)
    # Each write of state.json is announced with what it says (the embedded runtime's stand-in for its S3
    # notification): after each drop and each step, and the final one before `done`.
    assert events[-2] == {"type": "state", "state": state}
    step_states = [e["state"] for e in events if e["type"] == "state" and not e["state"]["done"]]
    # (step, consumed, dropped): at start, the no-signal drop, steps 1 and 2, the stale drop
    assert [(x["step"], x["groupsConsumed"], x["groupsDropped"]) for x in step_states] == [
        (0, 0, 0),
        (0, 0, 1),
        (1, 1, 1),
        (2, 3, 1),
        (2, 3, 2),
    ]
    assert (state["step"], state["groupsConsumed"], state["groupsDropped"], state["done"]) == (2, 3, 2, True)
    rows = [json.loads(x) for x in (tmp_path / f"runs/{RUN}/metrics/metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and REQUIRED <= rows[0].keys()
    assert (tmp_path / f"runs/{RUN}/metrics/reward_curve.png").stat().st_size > 1000
    latest = json.loads(store.get_bytes(f"runs/{RUN}/policy/LATEST.json"))
    manifest = store.get_bytes(latest["prefix"] + "manifest.json")
    assert latest == {
        "version": 2,
        "prefix": f"runs/{RUN}/policy/v2/",
        "sha256": hashlib.sha256(manifest).hexdigest(),
    }


def test_drops_are_on_record_without_a_step_on_cpu(tiny_dir, tmp_path):
    # Every group in flight without signal: no step comes, yet state.json must count each drop, or the feeder
    # (which tops up from those counts) never sends another group and the run stalls.
    store = _run(tmp_path, tiny_dir)
    events = []
    s = _session(store, events)
    for i in range(3):
        s.offer({"type": "group", "group": _g(i, rewards=(-1.0, -1.0, -1.0, -1.0))})
        state = json.loads(store.get_bytes(f"runs/{RUN}/learner/state.json"))
        assert (state["step"], state["groupsConsumed"], state["groupsDropped"]) == (0, 0, i + 1)
        assert events[-1] == {"type": "state", "state": state}
    assert not [e for e in events if e["type"] == "step"]


def test_refill_waits_for_groups_with_signal_on_cpu(tiny_dir, tmp_path):
    store = _run(tmp_path, tiny_dir)
    config = json.loads(store.get_bytes(f"runs/{RUN}/run.json"))["config"]
    config["algorithm"]["refill_filtered_groups"] = True
    events = []
    s = _session(store, events, run_config=config)
    s.offer({"type": "group", "group": _g(0)})
    s.offer({"type": "group", "group": _g(1, rewards=(0.5, 0.5, 0.5, 0.5))})
    assert not [e for e in events if e["type"] == "step"]  # DAPO: keep sampling until the batch is full
    s.offer({"type": "group", "group": _g(2)})
    (step,) = [e for e in events if e["type"] == "step"]
    assert step["metrics"]["groups"] == 2


def test_stops_when_planned_groups_are_seen_and_at_max_steps_on_cpu(tiny_dir, tmp_path):
    store = _run(tmp_path / "a", tiny_dir, planned=3)
    events = []
    s = _session(store, events)
    for i in range(3):
        s.offer({"type": "group", "group": _g(i)})
    # 3 planned: a full batch of 2, then the last group trained as a partial batch
    assert s.done and [e["metrics"]["groups"] for e in events if e["type"] == "step"] == [2, 1]
    kinds = [e["type"] for e in events if e["type"] != "state"]
    assert kinds[-2:] == ["committed", "done"] and events[-2]["state"]["done"]  # the final state, then done
    store = _run(tmp_path / "b", tiny_dir)
    events = []
    s = _session(store, events, max_steps=1)
    s.offer({"type": "group", "group": _g(0)})
    s.offer({"type": "group", "group": _g(1)})
    kinds = [e["type"] for e in events if e["type"] != "state"]
    assert s.done and kinds[-3:] == ["published", "committed", "done"] and events[-2]["type"] == "state"


def test_group_refs_are_read_and_checked_on_cpu(tiny_dir, tmp_path):
    store = _run(tmp_path, tiny_dir)
    events = []
    s = _session(store, events)
    refs = {}
    for i in (0, 1):
        raw = json.dumps(_g(i)).encode()
        key = f"runs/{RUN}/groups/e0-p{i}.json"
        store.put_bytes(key, raw)
        refs[i] = {"type": "group", "schemaVersion": 1, "runId": RUN, "groupId": f"e0-p{i}", "manifestKey": key,
                   "sha256": hashlib.sha256(raw).hexdigest()}  # fmt: skip
    s.offer({**refs[1], "sha256": "0" * 64})
    s.offer({**refs[1], "groupId": "e0-p9", "manifestKey": "runs/x/none.json"})
    bad = _g(5)
    bad["trajectories"][1]["lossMask"] = bad["trajectories"][1]["lossMask"][:-1]
    s.offer({"type": "group", "group": bad})
    other = _g(6)
    other["runId"] = "another-run"
    s.offer({"type": "group", "group": other})
    invalid = [(e["groupId"], e["reason"], e["message"]) for e in events if e["type"] == "dropped"]
    assert [(gid, reason) for gid, reason, _ in invalid] == [
        ("e0-p1", "invalid"),
        ("e0-p9", "invalid"),
        ("e0-p5", "invalid"),
        ("e0-p6", "invalid"),
    ]
    assert "sha256" in invalid[0][2] and "not found" in invalid[1][2]
    assert "trajectories/1/lossMask: has 4 entries, tokenIds 5" in invalid[2][2]
    assert "belongs to run another-run" in invalid[3][2]
    # this run's planned groups that can never train count as dropped (so the run can end); another run's do not
    assert s.state.groups_dropped == 3 and s.state.dropped_group_ids == ["e0-p1", "e0-p9", "e0-p5"]
    s.offer(refs[0])
    assert [g["groupId"] for g in s.buffer] == ["e0-p0"]


def _proc(root, *extra):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "toolrl_learner", "stdio", "--root", str(root), "--run-id", RUN, *extra]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


def _read_until(proc, kind):
    lines = []
    for raw in proc.stdout:
        msg = json.loads(raw)
        validate("learner-stdio-out", msg)  # every line the runtime reads follows the protocol
        lines.append(msg)
        if msg["type"] == kind:
            return lines
    raise AssertionError(f"no {kind!r} line; got {lines}")


def test_stdio_protocol_and_sigterm_checkpoint_on_cpu(tiny_dir, tmp_path):
    _run(tmp_path, tiny_dir, save_every=100)
    p = _proc(tmp_path)
    assert _read_until(p, "ready")[-1] == {"type": "ready", "policyVersion": 0, "resumedFromStep": None}
    p.stdin.write("not json\n" + json.dumps({"type": "group", "group": _g(0)}) + "\n")
    p.stdin.write(json.dumps({"type": "group", "group": _g(1)}) + "\n")
    p.stdin.flush()
    lines = _read_until(p, "step")
    assert (
        lines[0]["type"] == "dropped"
        and lines[0]["reason"] == "invalid"
        and "not JSON" in lines[0]["message"]
    )
    _read_until(p, "published")
    p.stdin.write(json.dumps({"type": "group", "group": _g(2)}) + "\n")  # buffered, never trained
    p.stdin.flush()
    p.send_signal(signal.SIGTERM)
    lines = _read_until(p, "committed")
    assert lines[-1] == {"type": "committed", "step": 1, "groupIds": ["e0-p0", "e0-p1"]}
    assert p.wait(timeout=HANG_S) == 143
    marker = json.loads((tmp_path / f"runs/{RUN}/checkpoints/step-1/COMPLETE.json").read_text())
    assert marker["trainerState"]["consumed_group_ids"] == ["e0-p0", "e0-p1"]


def test_offline_driver_resumes_from_its_data_position_on_cpu(tiny_dir, tmp_path, capsys):
    from toolrl_learner.drivers import offline

    store = _run(tmp_path, tiny_dir, max_staleness=10)
    data = tmp_path / "groups.jsonl"
    data.write_text("".join(json.dumps(_g(i)) + "\n" for i in range(5)))
    args = ["--groups", str(data), "--root", str(tmp_path), "--run-id", RUN, "--device", "cpu"]
    stdout = sys.stdout
    try:
        assert offline.main([*args, "--max-steps", "2"]) == 0
        sys.stdout = stdout
        first = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert [m["step"] for m in first if m["type"] == "step"] == [1, 2]
        assert offline.main(args) == 0
        sys.stdout = stdout
        second = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    finally:
        sys.stdout = stdout
    ready = [m for m in second if m["type"] != "state"][0]  # (a state write before `ready` is announced too)
    assert ready["type"] == "ready" and ready["resumedFromStep"] == 2
    # lines 0-3 were settled at step 2: only line 4 is read again, no duplicates
    assert not [m for m in second if m["type"] == "dropped"]
    assert [m["metrics"]["groups"] for m in second if m["type"] == "step"] == [1]
    state = json.loads(store.get_bytes(f"runs/{RUN}/learner/state.json"))
    assert state["groupsConsumed"] == 5 and state["done"]


def test_stdio_says_what_it_waits_for_on_cpu(tiny_dir, tmp_path):
    _run(tmp_path, tiny_dir, planned=4)
    p = _proc(tmp_path)
    p.stdin.write(json.dumps({"type": "group", "group": _g(0)}) + "\n")  # half of the first batch
    p.stdin.flush()
    # an idle tick may come before the line is read (a loaded machine): such a `waiting` says it has read none
    while (waiting := _read_until(p, "waiting")[-1])["linesRead"] == 0:
        assert waiting["waitingFor"].startswith("step 1, 0 of 2 groups")
    assert waiting == {
        "type": "waiting",
        "waitingFor": "step 1, 1 of 2 groups of the next batch in (0 of 4 planned groups settled)",
        "linesRead": 1,
    }
    p.stdin.close()  # not tied to a parent: EOF finishes the run
    assert _read_until(p, "done")[-1] == {"type": "done"}
    assert p.wait(timeout=HANG_S) == 0


def test_a_learner_tied_to_its_parent_dies_with_it_and_finishes_nothing_on_cpu(tiny_dir, tmp_path):
    # GIVEN a learner started, as toolrl train starts it, by a parent it is tied to (TOOLRL_DIE_WITH_PARENT)
    _run(tmp_path, tiny_dir, planned=4)
    learner = [sys.executable, "-m", "toolrl_learner", "stdio", "--root", str(tmp_path), "--run-id", RUN]
    parent_code = (
        "import os, subprocess, sys\n"
        f"p = subprocess.Popen({learner!r}, stdin=subprocess.PIPE,"
        " env={**os.environ, 'OMP_NUM_THREADS': '1', 'TOOLRL_DIE_WITH_PARENT': str(os.getpid())})\n"
        "p.stdin.write(sys.stdin.readline().encode()); p.stdin.flush()\n"
        "p.wait()\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    parent.stdin.write(json.dumps({"type": "group", "group": _g(0)}) + "\n")  # half a batch, buffered
    parent.stdin.flush()
    _read_until(parent, "waiting")  # the learner's lines come through the parent's stdout

    # WHEN the parent is killed (no handler runs in it)
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=HANG_S)

    # THEN the learner ends without finishing the run: no `done`, no step, no checkpoint past step 0
    rest = [json.loads(raw) for raw in parent.stdout]  # EOF once the learner, the last writer, is gone
    assert [m["type"] for m in rest if m["type"] in ("done", "step", "published", "committed")] == []
    assert not (tmp_path / "runs" / RUN / "checkpoints").exists() or not any(
        (tmp_path / "runs" / RUN / "checkpoints").glob("step-[1-9]*")
    )
    assert json.loads((tmp_path / "runs" / RUN / "learner" / "state.json").read_text())["done"] is False
