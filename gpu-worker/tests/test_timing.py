"""The learner's wall-clock by phase: PhaseTimer's accounting (a fake clock, exact), and the step rows a session
writes carrying `timing_s/*` for the phases of each step and what happened since the previous row."""

import json
import time

from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import group, trajectory
from toolrl_learner.train.timing import PhaseTimer

RUN = "r-timing"


def test_phases_add_up_and_the_rest_is_other():
    now = [10.0]
    timer = PhaseTimer(clock=lambda: now[0])
    with timer.phase("wait"):
        now[0] += 2.0
    now[0] += 0.5  # unclaimed
    with timer.phase("forward"):
        now[0] += 1.0
    timer.add("wait", 0.25)
    # 2 + 0.25 s waiting, 1 s forward, and 3.5 - 3 = 0.5 s... minus the added 0.25: other = 3.5 - 3.25 = 0.25
    assert timer.take() == {"timing_s/wait": 2.25, "timing_s/forward": 1.0, "timing_s/other": 0.25}
    now[0] += 4.0
    assert timer.take() == {"timing_s/other": 4.0}  # a take starts the next interval


def test_step_rows_carry_the_phases_of_the_step_and_of_the_time_since_the_last_row_on_cpu(tmp_path):
    tiny = build_tiny(tmp_path / "tiny", TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1))
    config = {
        "model": {"path": str(tiny), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"batch_prompts": 1, "micro_batch_tokens": 256, "max_staleness": 10, "save_every": 100},
        "logging": {"tensorboard": False},
    }
    store = FolderBlobStore(tmp_path / "bucket")
    store.put_bytes(f"runs/{RUN}/run.json", json.dumps({"config": config, "totals": {}}).encode())
    events = []
    s = LearnerSession(store, RUN, emit=events.append, device="cpu")
    s.start()
    t0 = time.perf_counter()
    for i in range(2):
        trajs = [trajectory([5, 6], [[10 + i, 11 + k]], float(k % 2)) for k in range(4)]
        s.offer({"type": "group", "group": group(RUN, f"e0-p{i}", trajs)})
    wall = time.perf_counter() - t0
    rows = [e["metrics"] for e in events if e["type"] == "step"]
    assert len(rows) == 2
    for r in rows:
        for phase in ("receive", "pack", "forward", "backward", "optimizer", "step_rest", "other"):
            assert r[f"timing_s/{phase}"] >= 0, phase
        assert r["timing_s/forward"] > 0 and r["timing_s/backward"] > 0
    # Step 1's publish and state write happen after its row: they are in row 2.
    assert (
        "timing_s/publish" not in rows[0]
        and rows[1]["timing_s/publish"] > 0
        and rows[1]["timing_s/state"] > 0
    )
    # The rows cover disjoint intervals inside the measured one.
    assert sum(v for r in rows for k, v in r.items() if k.startswith("timing_s/")) <= wall
    on_disk = [
        json.loads(line)
        for line in (tmp_path / f"bucket/runs/{RUN}/metrics/metrics.jsonl").read_text().splitlines()
    ]
    assert [r["timing_s/forward"] for r in on_disk] == [r["timing_s/forward"] for r in rows]
