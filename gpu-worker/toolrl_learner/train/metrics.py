"""Step metrics: `metrics/metrics.jsonl` (one JSON object per step), `metrics/batches.jsonl` (which groups each
step trained, and their curriculum stage: what `toolrl view` filters trajectories by), TensorBoard event files,
W&B when configured, and `metrics/reward_curve.png` (the reward and, below it, validation accuracy from the pipeline's
`metrics/eval/v<N>.json` summaries), refreshed as training goes.

On S3 the JSONL files are uploaded every step, on a thread of their own (a step's two uploads held its feeder and
checkpoint up: 140 ms a step on a busy LocalStack; nothing downstream reads them as the run goes, and `flush`,
`settle` and `close` wait for them), the plot and the event files every `plot_every_s` seconds and at close, so a
killed learner (SIGKILL, no close) loses at most that much of its TensorBoard curves. The
periodic plot is drawn on a thread of its own: drawing it (and importing matplotlib the first time, ~2 s) on
the step's path held a quickstart's learner step up by up to 2.2 s, 10% of its RL stage."""

from __future__ import annotations

import json
import logging
import math
import shutil
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..storage import BlobNotFound, BlobStore, keys

log = logging.getLogger(__name__)
JSONL = "metrics.jsonl"
BATCHES = "batches.jsonl"
PLOT = "reward_curve.png"


def _clean(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


class MetricsLogger:
    def __init__(
        self,
        store: BlobStore,
        run_id: str,
        workdir: Path,
        *,
        resume_step: int = 0,
        tensorboard: bool = True,
        wandb_project: str | None = None,
        wandb_entity: str | None = None,
        plot_every_s: float = 10.0,
        publish_every: int = 1,
    ) -> None:
        self.store, self.run_id = store, run_id
        self.prefix = keys.metrics(run_id)
        local = store.local_path(self.prefix + JSONL)
        self.remote = local is None
        self.dir = Path(local).parent if local is not None else Path(workdir) / "metrics"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rows: list[dict[str, Any]] = self._load_rows(JSONL, resume_step)
        self.batches: list[dict[str, Any]] = self._load_rows(BATCHES, resume_step)
        self._write_jsonl(JSONL, self.rows)
        self._write_jsonl(BATCHES, self.batches)
        self.plot_every_s = plot_every_s
        self.publish_every = publish_every
        self._last_plot = -math.inf  # the first row refreshes at once
        self._plotter: threading.Thread | None = None
        # Background uploads of the JSONL files: one thread, so a file's uploads land in order; a file already
        # waiting for its upload is not queued again (the upload reads it when it runs: the newest rows).
        self._file_lock = (
            threading.Lock()
        )  # an append and an upload's read of the same file do not interleave
        self._uploader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metrics-upload")
        self._queued: set[str] = set()
        self._uploads: list[Future[None]] = []
        self.tb = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            # purge_step hides events of steps redone after a resume.
            self.tb = SummaryWriter(log_dir=str(self.dir / "tensorboard"), purge_step=resume_step + 1)
        self.wandb = None
        if wandb_project:
            try:
                import wandb  # imported only here: runs without W&B never load it
            except ImportError as e:
                raise RuntimeError(
                    "logging.wandb is set but the wandb package is not installed in this Python "
                    "(it is in gpu-worker/requirements.lock: `npm run setup`, or `pip install wandb`)"
                ) from e
            # wandb's run files go to the learner's scratch folder, not the cwd (read-only in the image)
            # nor the store; WANDB_API_KEY / WANDB_MODE come from the environment as usual.
            self.wandb = wandb.init(
                project=wandb_project, entity=wandb_entity, id=run_id, resume="allow", dir=str(workdir)
            )

    def _load_rows(self, name: str, resume_step: int) -> list[dict[str, Any]]:
        """Rows of steps up to the resumed one (later ones are redone and would be duplicated)."""
        try:
            if self.remote:
                self.store.get_file(self.prefix + name, self.dir / name)
            text = (self.dir / name).read_text()
        except (BlobNotFound, FileNotFoundError):
            return []
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [r for r in rows if r.get("step", 0) <= resume_step]

    def _write_jsonl(self, name: str, rows: list[dict[str, Any]]) -> None:
        tmp = self.dir / (".tmp-" + name)  # the TS folder store skips .tmp- files
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        tmp.replace(self.dir / name)

    def log_batch(self, step: int, policy_version: int, stage: str | None, group_ids: list[str]) -> None:
        """The groups step `step` trained (in batch order) and the curriculum stage whose config trained them."""
        row = {"step": step, "policy_version": policy_version, "stage": stage, "group_ids": group_ids}
        self.batches.append(row)
        with self._file_lock, open(self.dir / BATCHES, "a") as f:
            f.write(json.dumps(row) + "\n")
        self._upload_later(BATCHES)

    def _upload_later(self, name: str) -> None:
        if not self.remote:
            return
        with self._file_lock:
            if name in self._queued:
                return
            self._queued.add(name)
        self._uploads = [f for f in self._uploads if not f.done()]
        self._uploads.append(self._uploader.submit(self._upload, name))

    def _upload(self, name: str) -> None:
        with self._file_lock:
            self._queued.discard(name)
            data = (self.dir / name).read_bytes()
        try:
            self.store.put_bytes(self.prefix + name, data)
        except Exception as e:  # noqa: BLE001 - the file is uploaded whole: the next upload carries these rows
            log.warning("uploading %s failed (the next step's upload carries its rows): %s", name, e)

    def flush(self) -> None:
        """Waits for the JSONL files' uploads under way: what is logged so far is in the store."""
        for f in list(self._uploads):
            f.result()

    def log(self, metrics: dict[str, Any]) -> None:
        row = {k: _clean(v) for k, v in metrics.items()}
        self.rows.append(row)
        with self._file_lock, open(self.dir / JSONL, "a") as f:
            f.write(json.dumps(row) + "\n")
        step = int(row["step"])
        if self.tb is not None:
            for k, v in row.items():
                if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool):
                    self.tb.add_scalar(k, v, step)
            self.tb.flush()
        if self.wandb is not None:
            # commit: the row is the whole step (with only `step`, W&B holds it back until the next one)
            self.wandb.log({k: v for k, v in row.items() if k != "step"}, step=step, commit=True)
        if time.monotonic() - self._last_plot >= self.plot_every_s:
            self._last_plot = time.monotonic()
            self._upload_tensorboard()
            if self._plotter is None or not self._plotter.is_alive():
                rows = list(self.rows)
                self._plotter = threading.Thread(
                    target=self._refresh, args=(rows,), name="metrics-plot", daemon=True
                )
                self._plotter.start()
        self._upload_later(JSONL)

    def _refresh(self, rows: list[dict[str, Any]]) -> None:
        try:
            self.plot(rows)
        except Exception:  # a plot is not worth a learner step
            log.exception("refreshing the reward plot failed")

    def settle(self) -> None:
        """Waits for a plot being drawn in the background to be written, and for the JSONL files' uploads."""
        if self._plotter is not None:
            self._plotter.join()
        self.flush()

    def _upload_tensorboard(self) -> None:
        """Copy the event files (flushed after every row) to the store; a folder store holds them already."""
        if not self.remote or self.tb is None:
            return
        for f in sorted((self.dir / "tensorboard").glob("events.out.tfevents.*")):
            self.store.put_file(self.prefix + "tensorboard/" + f.name, f)

    def _validation(self) -> list[tuple[int, float, int]]:
        """(learner step that published the version, accuracy, samples per prompt) of each validation summary the
        pipeline has written so far; a summary it is still writing or cannot parse is left for the next plot."""
        out = []
        for key in self.store.list(keys.eval_summaries(self.run_id)):
            version = keys.parse_eval_summary(self.run_id, key)
            if version is None:
                continue
            try:
                summary = json.loads(self.store.get_bytes(key))
                acc = float(summary["accuracy"])
            except (BlobNotFound, ValueError, KeyError, TypeError):
                continue
            if math.isfinite(acc):
                k = int(summary.get("samplesPerPrompt") or 1)
                out.append((version * self.publish_every, acc, k))
        return sorted(out)

    def plot(self, rows: list[dict[str, Any]] | None = None) -> None:
        """Reward mean +- std and tool calls per trajectory against the step; validation accuracy below."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = [r for r in (self.rows if rows is None else rows) if r.get("reward_mean") is not None]
        if not rows:
            return
        val = self._validation()
        steps = [r["step"] for r in rows]
        mean = [r["reward_mean"] for r in rows]
        std = [r.get("reward_std") or 0.0 for r in rows]
        fig, (ax, axv) = plt.subplots(
            2, 1, figsize=(7, 6), dpi=100, sharex=True, gridspec_kw={"height_ratios": [3, 2]}
        )
        ax.plot(steps, mean, color="tab:blue", label="reward mean (train)")
        ax.fill_between(
            steps,
            [m - s for m, s in zip(mean, std, strict=True)],
            [m + s for m, s in zip(mean, std, strict=True)],
            alpha=0.2,
        )
        ax.set_ylabel("reward")
        ax2 = ax.twinx()
        ax2.plot(
            steps, [r.get("tool_calls_per_trajectory") or 0.0 for r in rows], color="tab:orange", alpha=0.7
        )
        ax2.set_ylabel("tool calls / trajectory", color="tab:orange")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left")
        if val:
            k = val[-1][2]
            axv.plot(
                [s for s, _, _ in val],
                [100 * a for _, a, _ in val],
                marker="o",
                color="tab:green",
                label=f"validation accuracy (mean@{k})" if k > 1 else "validation accuracy",
            )
            axv.legend(loc="lower right")
        else:
            axv.text(0.5, 0.5, "no validation yet", ha="center", va="center", transform=axv.transAxes)
        axv.set_ylim(0, 100)
        axv.set_ylabel("accuracy (%)")
        axv.set_xlabel("learner step")
        axv.grid(alpha=0.3)
        fig.tight_layout()
        tmp = self.dir / (".tmp-" + PLOT)
        fig.savefig(tmp)
        plt.close(fig)
        tmp.replace(self.dir / PLOT)
        if self.remote:
            self.store.put_file(self.prefix + PLOT, self.dir / PLOT)

    def close(self) -> None:
        self.settle()
        self.plot()
        if self.tb is not None:
            self.tb.close()
            self._upload_tensorboard()
        if self.wandb is not None:
            self.wandb.finish()
        self._uploader.shutdown(wait=True)
        if self.remote:
            shutil.rmtree(self.dir, ignore_errors=True)
