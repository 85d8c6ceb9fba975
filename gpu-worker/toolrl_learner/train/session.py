"""The learner's life cycle, shared by every driver: load or resume, publish v0, take groups one at a
time (dedupe, then intake.py's checks), step when a batch is full, publish, checkpoint and commit, and stop
when the planned groups are all seen or max_steps is reached.

Drivers feed `offer()` (how each group is taken is session_groups.py's) and receive events through `emit`
(the stdio protocol's lines as dicts). Which group ids may have their queue messages deleted is ledger.py's;
the model's own work (build, resume, SFT, step, save) is model_work.py's, which the sharded learner replaces.
Groups the pipeline dead-lettered are counted as dropped as their records appear (dead_letters.py), and a run
that run.json says has failed (too many of them) is stopped.
"""

from __future__ import annotations

import logging
import math
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..config import LearnerConfig
from ..scored_group import ScoredGroup
from ..storage import BlobStore, keys
from .batch import group_staleness
from .checkpoint import TrainerState
from .dead_letters import DeadLetterWatch
from .ledger import GroupLedger
from .metrics import MetricsLogger
from .model_work import ModelWork
from .no_signal import NoSignalWatch
from .ordered import OrderedBatches
from .policy import Policy
from .progress import RunDoc, WarmStartProgress, read_run, write_state
from .publish import Publisher
from .retention import Retention
from .session_groups import GroupIntake
from .timing import PREFIX, PhaseTimer
from .versions import Lineage, Versions

log = logging.getLogger(__name__)
Emit = Callable[[dict[str, Any]], None]
# Builds the session's model work from its workdir and device (the sharded learner passes its own).
ModelFactory = Callable[[Path, torch.device], ModelWork]


class LearnerSession(GroupIntake):
    def __init__(
        self,
        store: BlobStore,
        run_id: str,
        *,
        emit: Emit,
        workdir: Path | None = None,
        max_steps: int | None = None,
        run_config: dict[str, Any] | None = None,
        device: str | None = None,
        model: ModelFactory | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.emit = emit
        self.max_steps_flag = max_steps
        self._run_config = run_config
        local_run = store.local_path(keys.run_json(run_id))
        default_work = (
            Path(local_run).parent / "learner" / "work"
            if local_run is not None
            else Path(tempfile.gettempdir()) / f"toolrl-learner-{run_id}"
        )
        self.workdir = Path(workdir) if workdir else default_work
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model = (model or (lambda w, d: ModelWork(store, run_id, w, d)))(self.workdir, self.device)
        self.done = False
        self.metrics: MetricsLogger | None = None
        self.buffer: list[ScoredGroup] = []
        self.batch_arrivals = 0
        self.last_published_step = -1
        self.last_checkpoint_step = -1
        self.groups_planned: int | None = None
        self.run_failed: str | None = None  # run.json's reason once it says `failed`
        self.failure: str | None = None  # why this learner stops the run (no batch trained: no_signal.py)
        self.gen_offered = 0  # refill_filtered_groups: groups offered since the last batch boundary
        self.dead_letters = DeadLetterWatch(store, run_id)
        self._totals_read_at = 0.0
        self.lines_offered = 0  # the offline driver's position in its file
        self.ordered: OrderedBatches | None = None  # trainer.deterministic: batches by feeder position
        self.timer = PhaseTimer()  # drivers add their own phases (waiting for input, parsing it)
        self.retention: Retention | None = None  # trainer.keep_policy_versions: needed
        # The policy version of the newest complete checkpoint (where a resume starts).
        self.checkpoint_version = 0

    # -- start ------------------------------------------------------------------------------------------

    def _read_run(self) -> RunDoc | None:
        self._totals_read_at = time.monotonic()
        run = read_run(self.store, self.run_id)
        if run is not None:
            self.groups_planned = run.groups_planned
            if run.failed is not None:
                self.run_failed = run.failed
        return run

    def start(self) -> dict[str, Any]:
        """Load or resume, publish a version if none exists for these weights; returns the `ready` line."""
        run = self._read_run()
        config = self._run_config if self._run_config is not None else (run.config if run else None)
        resolved = run.resolved if run is not None and self._run_config is None else None
        if config is None:
            raise ValueError(
                f"{keys.run_json(self.run_id)}: missing, or without a resolved `config`; pass a config"
            )
        cfg = LearnerConfig.from_run_config(config)
        if self.max_steps_flag is not None:
            cfg = cfg.replace(max_steps=self.max_steps_flag)
        self.stage_cfgs = {
            n: c.replace(max_steps=cfg.max_steps) for n, c in cfg.stage_configs(config, resolved).items()
        }
        self.stage_sft = LearnerConfig.stages_with_own_sft(config)
        self.cfg = cfg
        self.no_signal = NoSignalWatch(cfg.batch_prompts, cfg.max_num_gen_batches)
        model_dir = self.model.build(cfg, self.stage_cfgs)
        self.model.trainer.total_steps = self._total_steps()
        self.publisher = Publisher(
            self.store,
            self.run_id,
            self.workdir,
            model_dir,
            cfg.rollout_quantization,
            cfg.rollout_quantization_block_size,
        )

        resumed = self.model.load_checkpoint()
        resumed_from = None
        if resumed is not None:
            self.state, optimizer_state = resumed
            if optimizer_state is not None:
                self.model.trainer.load_state_dict(optimizer_state)
            resumed_from = self.state.step
            self.last_checkpoint_step = self.state.step
        else:
            self.state = TrainerState()
        self.checkpoint_version = self.state.policy_version
        if cfg.keep_policy_versions == "needed":
            self.retention = Retention(
                self.store,
                self.run_id,
                eval_every=cfg.eval_every,
                max_staleness=max([cfg.max_staleness, *(c.max_staleness for c in self.stage_cfgs.values())]),
                deterministic=cfg.deterministic,
            )
        self.ledger = GroupLedger(self.state)
        self.lines_offered = self.state.data_position
        if cfg.deterministic:
            self.ordered = OrderedBatches(
                cfg.batch_prompts, self.state.batches_settled, list(self.state.batch_versions)
            )
        self.metrics = MetricsLogger(
            self.store,
            self.run_id,
            self.workdir,
            resume_step=self.state.step,
            tensorboard=cfg.tensorboard,
            wandb_project=cfg.wandb_project,
            wandb_entity=cfg.wandb_entity,
            publish_every=cfg.publish_every,
        )

        weights_changed = False
        # `trainer.sft.steps: 0` (demonstrations for ptx_coef alone) is no warm start: nothing to train or commit.
        if cfg.sft_data and cfg.sft_steps and not self.state.sft_done:
            self._run_sft(cfg)
            self.state.sft_done = True
            weights_changed = True
        self.versions = Versions(self.publisher, Lineage.from_json(self.state.lineage))
        published = self.state.published_step
        self.last_published_step = self.state.step if published is None else published
        # After a crash LATEST may be past these weights: replayed or republished (versions.py).
        with self.timer.phase("publish"):
            version, pointer = self.versions.resume(
                self.model.rollout_model,
                self.state.policy_version,
                deterministic=cfg.deterministic,
                weights_changed=weights_changed,
            )
        if pointer is not None:
            self._published(version, pointer)
        self.no_signal.start_version = self.state.policy_version  # older groups in flight: the backlog
        if self.ordered is not None and not self.ordered.versions:
            # the version that samples the first 1 + max_staleness batches
            self.ordered.versions = [self.state.policy_version]
        if weights_changed and resumed is None:
            self._commit()  # a step-0 checkpoint, so a restart does not redo the SFT
        elif resumed is not None and self.state.lineage != self.versions.lineage.to_json():
            self._commit()  # the checkpoint's marker records the republished version, so a second crash knows it
        self._write_state()
        self._sweep_versions()
        ready = {"type": "ready", "policyVersion": self.state.policy_version, "resumedFromStep": resumed_from}
        self.timer = PhaseTimer()  # the first step row's phases start here, after loading and the warm start
        self.emit(ready)
        if self._should_stop():
            self.finish()
        return ready

    def _metrics(self) -> MetricsLogger:
        if self.metrics is None:
            raise RuntimeError("the session has not started (call start() first)")
        return self.metrics

    @property
    def policy(self) -> Policy:
        return self.model.policy

    def close(self, exit_code: int) -> None:
        """The driver is about to exit with exit_code (the sharded leader releases the other ranks)."""
        self.model.close(exit_code)

    def _total_steps(self) -> int | None:
        if self.cfg.max_steps:
            return self.cfg.max_steps
        if self.groups_planned:
            return math.ceil(self.groups_planned / self.cfg.batch_prompts)
        return None

    def _run_sft(self, cfg: LearnerConfig, stage: str | None = None) -> None:
        progress = WarmStartProgress(self.store, self.run_id, stage, cfg.progress_interval_s)

        def on_step(m: dict[str, float]) -> None:
            self.emit(
                {"type": "sft", "step": int(m["sft_step"]), "steps": cfg.sft_steps, "loss": m["sft_loss"]}
            )
            progress.step(int(m["sft_step"]), cfg.sft_steps, m["sft_loss"])

        self.model.sft(cfg, stage, on_step)

    def _stage_sft(self, stage: str) -> None:
        """A curriculum stage's own `trainer.sft` (a format stage), before the stage's first batch trains;
        then published and checkpointed like the warm start, so a restart neither redoes nor loses it."""
        self._run_sft(self.stage_cfgs[stage], stage)
        self.state.sft_done_stages.append(stage)
        self._publish(self.state.policy_version + 1)
        self.last_checkpoint_step = -1  # new weights at the same step: write them, not only the marker
        self._commit()

    # -- step, publish, commit --------------------------------------------------------------------------

    def step(self) -> None:
        stage = (
            self.buffer[0].get("stage") if self.buffer else None
        )  # the batch's config (Trainer.config_for)
        if stage in self.stage_sft and stage not in self.state.sft_done_stages:
            self._stage_sft(stage)  # before the batch leaves the buffer: the checkpoint re-reads it on resume
        groups, self.buffer, self.batch_arrivals, self.gen_offered = self.buffer, [], 0, 0
        if not groups:
            self._empty_batch()
            if self.ordered is not None:  # a released batch whose groups were all dropped
                self.ordered.settle(self.state.policy_version)
                self._write_state()
            return
        version_before = self.state.policy_version
        t0 = time.perf_counter()
        metrics = self.model.train_step(self.state.step + 1, groups, version_before)
        # After a republish, staleness counts along the learner's lineage (versions.py), as its drops do.
        if self.versions.lineage.anchors:
            ages = [group_staleness(g, version_before, self.versions.lineage) for g in groups]
            metrics = {**metrics, "staleness_mean": sum(ages) / len(ages), "staleness_max": float(max(ages))}
        inner = self.model.trainer.last_phases
        for k, v in inner.items():
            self.timer.add(k.removeprefix(PREFIX), v)
        self.timer.add("step_rest", max(0.0, time.perf_counter() - t0 - sum(inner.values())))
        st = self.state
        st.step += 1
        self.ledger.trained([g["groupId"] for g in groups])
        st.reward_mean = metrics["reward_mean"]
        row = {
            "step": st.step,
            "policy_version": version_before,
            "groups": len(groups),
            "dropped_groups": self.ledger.dropped_since_step,
            "groups_consumed": st.groups_consumed,
            "groups_dropped": st.groups_dropped,
            "duplicate_groups": self.ledger.duplicates,
            **self.no_signal.trained(),
            **metrics,
            **self.timer.take(),
        }
        if self.device.type != "cuda":
            row["memory_gb"] = (
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            )  # peak RSS (KiB -> GiB)
        self.ledger.dropped_since_step = 0
        with self.timer.phase("metrics"):
            self._metrics().log_batch(st.step, version_before, stage, [g["groupId"] for g in groups])
            self._metrics().log(row)  # the JSONL line, TensorBoard, and every so often the reward plot
        self.emit({"type": "step", "step": st.step, "metrics": row})
        if st.step % self.cfg.publish_every == 0:
            self._publish(st.policy_version + 1)
        if self.ordered is not None:
            # Settled with the version after it, before a checkpoint at this step records the count: a checkpoint
            # that counted one batch fewer than it trained sent a resumed learner waiting for groups it had
            # trained already, whose messages were deleted (a hang).
            self.ordered.settle(st.policy_version)
        # The checkpoint (on its steps) before state.json, so a state.json that shows a checkpoint step shows a durable
        # one (test/e2e/learner-kill.test.ts kills the learner once state.json shows step 1 and expects the restart
        # to resume from it).
        if st.step % self.cfg.save_every == 0:
            with self.timer.phase("checkpoint"):
                self._commit()
        with self.timer.phase("state"):
            self._write_state()
        with self.timer.phase("publish"):
            self._sweep_versions()
        if self.model.trainer.total_steps is None:
            self._read_run()
            self.model.trainer.total_steps = self._total_steps()

    def _publish(self, version: int) -> None:
        with self.timer.phase("publish"):
            version, pointer = self.versions.publish(self.model.rollout_model, version)
        if pointer is not None:
            self._published(version, pointer)
        else:  # replayed after a restart: out already (versions.py)
            self.state.policy_version = version
            self.last_published_step = self.state.step

    def _published(self, version: int, pointer: dict[str, Any]) -> None:
        self.state.policy_version = version
        self.last_published_step = self.state.step
        if self.retention is not None:
            self.retention.published(version)
        self.emit({"type": "published", **pointer})

    def _sweep_versions(self) -> None:
        """trainer.keep_policy_versions: needed: delete the published versions nothing can need any more
        (retention.py); after the state file, so the feeder hears of the step first."""
        if self.retention is not None:
            self.retention.sweep(
                latest=max(self.state.policy_version, self.versions.replay_to),
                checkpoint=self.checkpoint_version,
                pinned=self.state.checkpoint_versions,
            )

    def _commit(self) -> None:
        """Checkpoint, then tell the driver which groups' messages may now be deleted."""
        # Buffered groups are the last ones offered and are not trained yet: a resume re-reads them.
        self.state.data_position = max(0, self.lines_offered - len(self.buffer))
        self.state.published_step = self.last_published_step
        self.state.lineage = self.versions.lineage.to_json()
        if self.ordered is not None:
            self.state.batches_settled = self.ordered.settled
            self.state.batch_versions = list(self.ordered.versions)
        if self.state.policy_version not in self.state.checkpoint_versions:
            self.state.checkpoint_versions.append(self.state.policy_version)
        self.model.save_checkpoint(
            self.state,
            keep=self.cfg.keep_checkpoints,
            weights_unchanged=self.last_checkpoint_step == self.state.step,
        )
        self.last_checkpoint_step = self.state.step
        self.checkpoint_version = self.state.policy_version
        ids = self.ledger.commit()
        self.emit({"type": "committed", "step": self.state.step, "groupIds": ids})

    def _write_state(self) -> None:
        doc = write_state(
            self.store, self.run_id, self.state, done=self.done, ordered=self.ordered, failed=self.failure
        )
        # What the state file's S3 notification is on AWS: the embedded runtime wakes the feeder on it, after the
        # consumed counts are on record (a `published` line comes before them, and a top-up then would see none).
        self.emit({"type": "state", "state": doc})

    # -- the end ----------------------------------------------------------------------------------------

    def finish(self) -> None:
        """Train what is buffered, publish the final weights, checkpoint, say done. For a run that has failed
        meanwhile, only keep what is trained (a checkpoint) and say done: no more steps for a dead run."""
        if self.done:
            return
        if self.run_failed is None and self.failure is None and self.state.step == 0 and self.groups_planned:
            if not self.buffer:
                # No step, and none to come: completing would report a run that learned nothing as done.
                self.failure = self.no_signal.never_trained(self.groups_planned)
        if self.run_failed is not None or self.failure is not None:
            log.warning("run %s has failed; stopping: %s", self.run_id, self.run_failed or self.failure)
            self.interrupt()
            self.done = True
            self._write_state()
            self.emit({"type": "done"})
            return
        if self.buffer and not (self.cfg.max_steps is not None and self.state.step >= self.cfg.max_steps):
            self.step()
        if self.last_published_step != self.state.step:
            self._publish(self.state.policy_version + 1)
        if self.last_checkpoint_step != self.state.step or self.ledger.pending:
            self._commit()
        self._sweep_versions()
        self.done = True
        self._metrics().flush()  # the last rows are in the store before the run is said done
        self._write_state()
        self._metrics().close()
        self.emit({"type": "done"})

    def interrupt(self) -> None:
        """SIGTERM (spot interruption): checkpoint what has been trained; buffered groups stay uncommitted
        (never trained, they are redelivered)."""
        if self.done or self.metrics is None:  # not started yet: nothing to save
            return
        trained = self.state.step > 0 and self.last_checkpoint_step != self.state.step
        if trained or self.ledger.pending:
            self._commit()
        self._write_state()
        self.metrics.close()
