"""Step metrics: metrics.jsonl and TensorBoard carry the reward components (read back with
TensorBoard's own EventAccumulator), event files reach a remote store on the plot's cadence (a SIGKILL
loses at most that much), and W&B logs (offline mode) without being imported when it is off."""

import json
import subprocess
import sys

import pytest
from hang import HANG_S
from remote_store import RemoteFolderStore
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.metrics import MetricsLogger
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import group, trajectory

RUN = "r-metrics"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(
        tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    )


def _scalars(tb_dir) -> dict[str, list[tuple[int, float]]]:
    acc = EventAccumulator(str(tb_dir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_reward_components_reach_jsonl_and_tensorboard_on_cpu(tiny_dir, tmp_path):
    config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"batch_prompts": 1, "micro_batch_tokens": 256},
        "logging": {"tensorboard": True},
    }
    store = FolderBlobStore(tmp_path)
    store.put_bytes(f"runs/{RUN}/run.json", json.dumps({"config": config, "totals": {}}).encode())
    s = LearnerSession(store, RUN, emit=lambda _: None, device="cpu")
    s.start()
    # rewards 0, 1, 0, 1 with components task = reward and format = 0.2, 0.4, 0.6 (absent on the 4th):
    # reward/task = 2 / 4 = 0.5 ; reward/format = (0.2 + 0.4 + 0.6) / 3 = 0.4 (the mean where present)
    components = [{"task": 0.0, "format": 0.2}, {"task": 1.0, "format": 0.4}, {"task": 0.0, "format": 0.6}]
    components.append({"task": 1.0})
    for i in range(2):
        trajs = [
            trajectory([5, 6], [[10 + i, 11 + k]], c["task"], reward_components=c)
            for k, c in enumerate(components)
        ]
        s.offer({"type": "group", "group": group(RUN, f"e0-p{i}", trajs)})
    s.finish()

    rows = [json.loads(x) for x in (tmp_path / f"runs/{RUN}/metrics/metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    batches = tmp_path / f"runs/{RUN}/metrics/batches.jsonl"
    assert [json.loads(x) for x in batches.read_text().splitlines()] == [
        {"step": 1, "policy_version": 0, "stage": None, "group_ids": ["e0-p0"]},
        {"step": 2, "policy_version": 1, "stage": None, "group_ids": ["e0-p1"]},
    ]
    for r in rows:
        assert r["reward/task"] == pytest.approx(0.5)
        assert r["reward/format"] == pytest.approx(0.4)
    scalars = _scalars(tmp_path / f"runs/{RUN}/metrics/tensorboard")
    assert {
        "reward/task",
        "reward/format",
        "reward_mean",
        "pg_loss",
        "entropy",
        "tokens_per_s",
    } <= scalars.keys()
    assert scalars["reward/format"] == [(1, pytest.approx(0.4)), (2, pytest.approx(0.4))]
    assert [v for _, v in scalars["pg_loss"]] == pytest.approx([r["pg_loss"] for r in rows], abs=1e-6)
    assert "step" not in scalars  # the x axis, not a curve


def _row(step: int) -> dict:
    return {"step": step, "reward_mean": 0.1 * step, "reward/task": 0.5, "pg_loss": -0.01 * step}


@pytest.mark.parametrize("plot_every_s", [0.0, 3600.0])
def test_event_files_reach_a_remote_store_on_the_plot_cadence_on_cpu(tmp_path, plot_every_s):
    store = RemoteFolderStore(tmp_path / "bucket")
    logger = MetricsLogger(store, RUN, tmp_path / "work", plot_every_s=plot_every_s)
    tb_remote = tmp_path / f"bucket/runs/{RUN}/metrics/tensorboard"
    logger.log(_row(1))  # the first row always refreshes the plot and the event files
    assert [s for s, _ in _scalars(tb_remote)["reward_mean"]] == [1]
    logger.log(_row(2))
    logger.log(_row(3))
    # killed here (no close): with a refresh every row nothing is lost; every hour, the rows since the first
    uploaded = [s for s, _ in _scalars(tb_remote)["reward_mean"]]
    assert uploaded == ([1, 2, 3] if plot_every_s == 0 else [1])
    logger.settle()  # the plot is drawn on a thread of its own
    assert (tmp_path / f"bucket/runs/{RUN}/metrics/reward_curve.png").is_file()
    logger.close()
    assert [s for s, _ in _scalars(tb_remote)["reward/task"]] == [1, 2, 3]
    assert len(list(tb_remote.iterdir())) == 1  # one event file, re-uploaded whole as it grows


def test_plot_shows_validation_accuracy_from_the_eval_summaries_on_cpu(tmp_path):
    store = FolderBlobStore(tmp_path)
    logger = MetricsLogger(
        store, RUN, tmp_path / "work", tensorboard=False, plot_every_s=3600, publish_every=2
    )

    def summary(v: int, acc: float) -> bytes:
        return json.dumps({"policyVersion": v, "accuracy": acc, "samplesPerPrompt": 4}).encode()

    store.put_bytes(f"runs/{RUN}/metrics/eval/v0.json", summary(0, 0.25))
    store.put_bytes(f"runs/{RUN}/metrics/eval/v8.json", summary(8, 0.875))
    store.put_bytes(f"runs/{RUN}/metrics/eval/v3.json", b'{"policyVersion": 3')  # still being written
    store.put_bytes(f"runs/{RUN}/metrics/eval/notes.txt", b"not a summary")
    # versions at the learner step that published them (publish_every 2), in step order
    assert logger._validation() == [(0, 0.25, 4), (16, 0.875, 4)]
    png = tmp_path / f"runs/{RUN}/metrics/reward_curve.png"
    logger.log(_row(1))
    logger.settle()
    without = png.stat().st_size
    store.put_bytes(f"runs/{RUN}/metrics/eval/v3.json", summary(3, 0.5))
    logger.plot()
    assert logger._validation()[1] == (6, 0.5, 4)
    assert png.stat().st_size > 1000 and png.stat().st_size != without


def test_wandb_logs_offline_and_is_imported_only_when_configured_on_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    store = FolderBlobStore(tmp_path / "root")
    logger = MetricsLogger(store, RUN, tmp_path / "work", tensorboard=False, wandb_project="toolrl-test")
    logger.log(_row(1))
    logger.log(_row(2))
    assert logger.wandb.summary["reward/task"] == 0.5 and logger.wandb.summary["pg_loss"] == -0.02
    logger.close()
    # the run's files are in the learner's scratch folder, under the run id (resume="allow" reattaches)
    (run_dir,) = (tmp_path / "work" / "wandb").glob(f"offline-run-*-{RUN}")
    assert (run_dir / f"run-{RUN}.wandb").stat().st_size > 0

    code = (
        "import sys; from pathlib import Path; from toolrl_learner.storage import FolderBlobStore\n"
        "from toolrl_learner.train.metrics import MetricsLogger\n"
        f"m = MetricsLogger(FolderBlobStore({str(tmp_path / 'r2')!r}), 'r', Path({str(tmp_path)!r}), "
        "tensorboard=False)\n"
        "m.log({'step': 1, 'reward_mean': 0.0}); m.close()\n"
        "assert 'wandb' not in sys.modules, 'wandb imported without logging.wandb'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=HANG_S)


def test_plot_command_redraws_with_a_validation_written_after_the_learner_finished_on_cpu(tmp_path):
    from toolrl_learner.train.plot_cli import main as plot_main

    store = FolderBlobStore(tmp_path)
    logger = MetricsLogger(store, RUN, tmp_path / "work", tensorboard=False)
    for step in (1, 2):
        logger.log(_row(step))
    logger.close()
    png = tmp_path / f"runs/{RUN}/metrics/reward_curve.png"
    jsonl = tmp_path / f"runs/{RUN}/metrics/metrics.jsonl"
    before, rows = png.read_bytes(), jsonl.read_text()
    store.put_bytes(
        f"runs/{RUN}/metrics/eval/v2.json", json.dumps({"accuracy": 0.5, "samplesPerPrompt": 4}).encode()
    )
    assert plot_main(["--root", str(tmp_path), "--run-id", RUN]) == 0
    assert png.read_bytes() != before  # the final validation is in it now
    assert jsonl.read_text() == rows  # the step metrics are untouched


def test_batches_jsonl_names_each_steps_groups_and_keeps_them_across_a_resume_on_cpu(tmp_path):
    store = FolderBlobStore(tmp_path)
    logger = MetricsLogger(store, RUN, tmp_path / "work", tensorboard=False)
    for step in (1, 2, 3):
        logger.log_batch(
            step, step - 1, "format" if step < 3 else None, [f"e0-p{2 * step}", f"e0-p{2 * step + 1}"]
        )
        logger.log(_row(step))
    logger.close()
    path = tmp_path / f"runs/{RUN}/metrics/batches.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert rows == [
        {"step": 1, "policy_version": 0, "stage": "format", "group_ids": ["e0-p2", "e0-p3"]},
        {"step": 2, "policy_version": 1, "stage": "format", "group_ids": ["e0-p4", "e0-p5"]},
        {"step": 3, "policy_version": 2, "stage": None, "group_ids": ["e0-p6", "e0-p7"]},
    ]
    # A learner resumed from step 2 redoes step 3: its old record goes, as its metrics row does.
    resumed = MetricsLogger(store, RUN, tmp_path / "work", resume_step=2, tensorboard=False)
    resumed.close()
    assert [json.loads(x)["step"] for x in path.read_text().splitlines()] == [1, 2]


def test_batches_jsonl_reaches_a_remote_store_every_step_on_cpu(tmp_path):
    store = RemoteFolderStore(tmp_path / "bucket")
    logger = MetricsLogger(store, RUN, tmp_path / "work", tensorboard=False)
    logger.log_batch(1, 0, None, ["e0-p0"])
    logger.log(_row(1))
    logger.flush()  # uploaded on a thread of their own
    text = store.get_bytes(f"runs/{RUN}/metrics/batches.jsonl").decode()
    assert [json.loads(x)["group_ids"] for x in text.splitlines()] == [["e0-p0"]]
    logger.close()
