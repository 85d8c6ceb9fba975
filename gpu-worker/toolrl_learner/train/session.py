"""The learner's life cycle, shared by every driver: load or resume, publish v0, take groups one at a
time (dedupe, staleness, no-signal filter), step when a batch is full, publish, checkpoint and commit,
and stop when the planned groups are all seen or max_steps is reached.

Drivers feed `offer()` and receive events through `emit` (the stdio protocol's lines as dicts). A group
id is "settled" once a committed checkpoint records it (trained or dropped); only then may its queue
message be deleted, so a crash redelivers exactly the groups whose effect was lost. Groups the pipeline
dead-lettered are counted as dropped as their records appear (dead_letters.py), and a run that run.json says
has failed (too many of them) is stopped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import resource
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from ..config import LearnerConfig
from ..contracts import ContractError, validate
from ..scored_group import ScoredGroup
from ..storage import BlobNotFound, BlobStore, keys
from .batch import group_staleness
from .checkpoint import TrainerState, load_latest_checkpoint, save_checkpoint
from .dead_letters import DeadLetterWatch
from .group_check import check_scored_group
from .metrics import MetricsLogger
from .ordered import OrderedBatches
from .policy import Policy, resolve_model_dir
from .publish import Publisher
from .timing import PREFIX, PhaseTimer
from .trainer import Trainer

log = logging.getLogger(__name__)
Emit = Callable[[dict[str, Any]], None]


def has_signal(group: ScoredGroup, cfg: LearnerConfig) -> bool:
    """False when the estimator can get no advantage out of the group: all rewards equal (DAPO's filter),
    or a single sample for a group-relative estimator (no baseline)."""
    rewards = [t["reward"] for t in group["trajectories"]]
    if len(rewards) < 2:
        return not cfg.group_relative
    return max(rewards) - min(rewards) > 1e-9


def fits(model_dir: Path, cfg: LearnerConfig, gpus: int, device: torch.device) -> None:
    """Refuse before loading the weights, with the memory plan's numbers, a learner that cannot fit."""
    from ..model.config import ModelConfig
    from ..plan.memory import check_fits

    plan = check_fits(ModelConfig.from_file(model_dir), cfg, gpus=gpus, device=device)
    log.info("memory plan: %s", plan.summary())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class LearnerSession:
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
        self.done = False
        self.metrics: MetricsLogger | None = None
        self.buffer: list[ScoredGroup] = []
        self.batch_arrivals = 0
        self.pending_commit: list[str] = []  # ids settled since the last checkpoint
        self.in_flight: set[str] = set()  # ids buffered or trained but not yet committed
        self.dropped_since_step = 0
        self.duplicates = 0
        self.last_published_step = -1
        self.last_checkpoint_step = -1
        self.groups_planned: int | None = None
        self.run_failed: str | None = None  # run.json's reason once it says `failed`
        self.dead_letters = DeadLetterWatch(store, run_id)
        self._totals_read_at = 0.0
        self.lines_offered = 0  # the offline driver's position in its file
        self.ordered: OrderedBatches | None = None  # trainer.deterministic: batches by feeder position
        self.timer = PhaseTimer()  # drivers add their own phases (waiting for input, parsing it)

    # -- start ------------------------------------------------------------------------------------------

    def _read_run(self) -> dict[str, Any] | None:
        self._totals_read_at = time.monotonic()
        try:
            run = json.loads(self.store.get_bytes(keys.run_json(self.run_id)))
        except BlobNotFound:
            return None
        planned = (run.get("totals") or {}).get("groupsPlanned")
        self.groups_planned = int(planned) if planned is not None else None
        if run.get("status") == "failed":
            self.run_failed = run.get("reason") or "the run failed"
        return run

    def start(self) -> dict[str, Any]:
        """Load or resume, publish a version if none exists for these weights; returns the `ready` line."""
        run = self._read_run()
        config = self._run_config if self._run_config is not None else (run or {}).get("config")
        if config is None:
            raise ValueError(
                f"{keys.run_json(self.run_id)}: missing, or without a resolved `config`; pass a config"
            )
        cfg = LearnerConfig.from_run_config(config)
        if self.max_steps_flag is not None:
            cfg = cfg.replace(max_steps=self.max_steps_flag)
        self.stage_cfgs = {
            n: c.replace(max_steps=cfg.max_steps) for n, c in cfg.stage_configs(config).items()
        }
        self.stage_sft = LearnerConfig.stages_with_own_sft(config)
        self.cfg = cfg
        model_dir = self._build(cfg)
        self.trainer.total_steps = self._total_steps()
        self.publisher = Publisher(
            self.store,
            self.run_id,
            self.workdir,
            model_dir,
            cfg.rollout_quantization,
            cfg.rollout_quantization_block_size,
        )

        resumed = self._load_checkpoint()
        resumed_from = None
        if resumed is not None:
            self.state, optimizer_state = resumed
            if optimizer_state is not None:
                self.trainer.load_state_dict(optimizer_state)
            resumed_from = self.state.step
            self.last_checkpoint_step = self.state.step
        else:
            self.state = TrainerState()
        self.settled = set(self.state.consumed_group_ids) | set(self.state.dropped_group_ids)
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

        latest = self.publisher.latest()
        weights_changed = False
        if cfg.sft_data and not self.state.sft_done:
            self._run_sft(cfg)
            self.state.sft_done = True
            weights_changed = True
        if latest is None:
            self._publish(self.state.policy_version)  # v0 of a fresh run
        elif latest["version"] != self.state.policy_version or weights_changed:
            # LATEST holds weights this learner no longer has (steps lost in a crash, or pre-SFT weights):
            # these weights go out as the next version, so rollouts follow the learner; versions are never rewritten.
            self._publish(max(latest["version"], self.state.policy_version) + 1)
        self.last_published_step = self.state.step
        if self.ordered is not None and not self.ordered.versions:
            # the version that samples the first 1 + max_staleness batches
            self.ordered.versions = [self.state.policy_version]
        if weights_changed and resumed is None:
            self._commit()  # a step-0 checkpoint, so a restart does not redo the SFT
        self._write_state()
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

    # -- what the sharded learner (dist/session.py) does on every rank -----------------------------------

    def _build(self, cfg: LearnerConfig) -> Path:
        """The policy and its trainer; returns the model folder."""
        if cfg.num_gpus > 1:
            log.warning(
                "trainer.num_gpus is %d but this learner is one process: start it with "
                "`python -m toolrl_learner launch --nproc-per-node %d ...` (toolrl train and the AWS job do)",
                cfg.num_gpus,
                cfg.num_gpus,
            )
        torch.manual_seed(cfg.seed)
        model_dir = resolve_model_dir(cfg.model_path, self.workdir, cfg.seed)
        fits(model_dir, cfg, 1, self.device)
        self.policy = Policy(cfg, model_dir, self.device)
        critic = None
        if cfg.critic_model_path is not None:
            from .critic import Critic

            critic_dir = resolve_model_dir(cfg.critic_model_path, self.workdir)
            critic = Critic(cfg, critic_dir, self.device, self.policy.autocast_dtype)
        self.trainer = Trainer(cfg, self.policy, self.stage_cfgs, critic=critic)
        return model_dir

    def _load_checkpoint(self) -> tuple[TrainerState, dict[str, Any] | None] | None:
        return load_latest_checkpoint(
            self.store,
            self.run_id,
            self.policy,
            self.workdir,
            critic=self.trainer.critic,
            trainer=self.trainer,
        )

    def _train_step(self, groups: Sequence[ScoredGroup], policy_version: int) -> dict[str, float]:
        return self.trainer.step(groups, policy_version)

    def _rollout_model(self) -> torch.nn.Module:
        return self.policy.rollout_model()

    def _save_checkpoint(self, weights_unchanged: bool) -> None:
        save_checkpoint(
            self.store,
            self.run_id,
            self.policy,
            self.trainer.state_dict(),
            self.state,
            self.workdir,
            keep=self.cfg.keep_checkpoints,
            weights_unchanged=weights_unchanged,
            critic=self.trainer.critic,
        )

    def close(self, exit_code: int) -> None:
        """The driver is about to exit with exit_code (the sharded leader releases the other ranks)."""

    def _total_steps(self) -> int | None:
        if self.cfg.max_steps:
            return self.cfg.max_steps
        if self.groups_planned:
            return math.ceil(self.groups_planned / self.cfg.batch_prompts)
        return None

    def _run_sft(self, cfg: LearnerConfig, stage: str | None = None) -> None:
        from .sft import run_sft

        path = self._sft_path(cfg, stage)
        what = f"stage {stage!r} SFT" if stage else "SFT warm start"
        log.info("%s: %d steps on %s", what, cfg.sft_steps, cfg.sft_data)

        def on_step(m: dict[str, float]) -> None:
            log.info("sft %s", json.dumps(m))
            self.emit(
                {"type": "sft", "step": int(m["sft_step"]), "steps": cfg.sft_steps, "loss": m["sft_loss"]}
            )

        run_sft(self.policy, cfg, path, on_step=on_step, comm=self.trainer.comm)

    def _sft_path(self, cfg: LearnerConfig, stage: str | None) -> Path:
        from .sft import local_sft_data

        where = f"stages[{stage}].overrides.trainer.sft.data" if stage else "trainer.sft.data"
        if cfg.sft_data is None:
            raise ValueError(f"{where}: no SFT data to train on")
        return local_sft_data(self.store, cfg.sft_data, self.workdir, where)

    def _stage_sft(self, stage: str) -> None:
        """A curriculum stage's own `trainer.sft` (a format stage), before the stage's first batch trains;
        then published and checkpointed like the warm start, so a restart neither redoes nor loses it."""
        self._run_sft(self.stage_cfgs[stage], stage)
        self.state.sft_done_stages.append(stage)
        self._publish(self.state.policy_version + 1)
        self.last_checkpoint_step = -1  # new weights at the same step: write them, not only the marker
        self._commit()

    # -- groups -----------------------------------------------------------------------------------------

    def resolve(self, line: dict[str, Any]) -> ScoredGroup:
        """A ScoredGroup from an inline group or a queue message (manifest read, sha256 checked, validated)."""
        if "group" in line:
            group = line["group"]
        else:
            validate("scored-group-message", {k: v for k, v in line.items() if k != "type"})
            raw = self.store.get_bytes(line["manifestKey"])
            digest = hashlib.sha256(raw).hexdigest()
            if digest != line["sha256"]:
                raise ContractError(f"{line['manifestKey']}: sha256 {digest} != message's {line['sha256']}")
            group = json.loads(raw)
            if group.get("groupId") != line["groupId"]:
                raise ContractError(
                    f"{line['manifestKey']}: groupId {group.get('groupId')!r} != {line['groupId']!r}"
                )
        scored = check_scored_group(group)
        if scored["runId"] != self.run_id:
            raise ContractError(
                f"group {scored['groupId']} belongs to run {scored['runId']}, not {self.run_id}"
            )
        return scored

    def offer(self, line: dict[str, Any]) -> None:
        """Take one group (inline or by reference); may run a step, publish, checkpoint and finish."""
        if self.done:
            return
        group_id = line.get("groupId") or (line.get("group") or {}).get("groupId") or "?"
        run_id = line.get("runId") or (line.get("group") or {}).get("runId")
        try:
            with self.timer.phase("receive"):
                group = self.resolve(line)
        except (ContractError, BlobNotFound, ValueError, KeyError) as e:
            reason = f"manifest {e} not found" if isinstance(e, BlobNotFound) else str(e)
            log.warning("dropping invalid group %s: %s", group_id, reason)
            self.emit({"type": "dropped", "groupId": group_id, "reason": "invalid", "message": reason})
            if run_id == self.run_id and group_id != "?" and group_id not in self.settled | self.in_flight:
                # One of this run's planned groups that can never be trained: counted, so the run can end.
                self._record_drop(group_id)
                self.dead_letters.record_refused(group_id, f"learner: {reason}")
                if self.ordered is not None:
                    self._place_ordered(line.get("position"), group_id, None)
                    return
            self.tick()
            return
        gid = group["groupId"]
        if gid in self.state.dead_lettered_group_ids:
            # Counted as dropped when a stage dead-lettered it; it came after all (a DLQ redrive sent it back).
            self._revive(gid)
        if gid in self.settled or gid in self.in_flight:
            self.duplicates += 1
            self.emit({"type": "dropped", "groupId": gid, "reason": "duplicate"})
            if gid in self.settled:
                self.pending_commit.append(gid)
            return
        if self.ordered is not None:
            self.in_flight.add(gid)
            self._place_ordered(group.get("position"), gid, group)
            return
        staleness = group_staleness(group, self.state.policy_version)
        if staleness > self.cfg.max_staleness:
            msg = f"oldest sampled token is {staleness} versions behind v{self.state.policy_version}"
            self._drop(gid, "stale", msg)
        elif self.cfg.filter_groups and not has_signal(group, self.cfg):
            self._drop(
                gid, "no_signal", "all rewards equal" if len(group["trajectories"]) > 1 else "a group of one"
            )
            if not self.cfg.refill_filtered_groups:
                self.batch_arrivals += 1
        else:
            self.buffer.append(group)
            self.in_flight.add(gid)
            self.batch_arrivals += 1
        if len(self.buffer) >= self.cfg.batch_prompts or self.batch_arrivals >= self.cfg.batch_prompts:
            self.step()
        if self._should_stop():
            self.finish()

    def _place_ordered(self, position: int | None, gid: str, group: ScoredGroup | None) -> None:
        """Deterministic runs: hold the group at its position; train every batch that is now complete, in order."""
        assert self.ordered is not None
        if position is None:
            raise ValueError(
                f"trainer.deterministic: group {gid} carries no feeder position, so its batch cannot be known "
                "(was it issued by a feeder of an older version?)"
            )
        self.ordered.add(int(position), group)
        while not self.done and (arrivals := self.ordered.release(self.groups_planned)) is not None:
            for a in arrivals:
                g = a.group
                if g is None:
                    continue  # dropped on arrival (unreadable), counted then
                # Judged at release, against the version the batch is trained by, so arrival order cannot matter.
                staleness = group_staleness(g, self.state.policy_version)
                if staleness > self.cfg.max_staleness:
                    msg = f"oldest sampled token is {staleness} versions behind v{self.state.policy_version}"
                    self._drop(g["groupId"], "stale", msg)
                elif self.cfg.filter_groups and not has_signal(g, self.cfg):
                    one = len(g["trajectories"]) == 1
                    self._drop(g["groupId"], "no_signal", "a group of one" if one else "all rewards equal")
                else:
                    self.buffer.append(g)
            self.step()
            self.ordered.settle(self.state.policy_version)
            self._write_state()
            if self._should_stop():
                break
        if self._should_stop():
            self.finish()

    def _drop(self, gid: str, reason: str, message: str) -> None:
        self.pending_commit.append(gid)
        self.emit({"type": "dropped", "groupId": gid, "reason": reason, "message": message})
        self._record_drop(gid)

    def _record_drop(self, gid: str) -> None:
        self.state.groups_dropped += 1
        self.state.dropped_group_ids.append(gid)
        self.dropped_since_step += 1
        self.in_flight.add(gid)
        # The feeder keeps at most batch_prompts x (1 + max_staleness) groups in flight, counting consumed and
        # dropped ones from state.json: a drop not on record there leaves its slot taken, and when every group in
        # flight is dropped (no signal, stale) no step comes to write it, so nothing more is fed and the run stalls.
        self._write_state()

    def _revive(self, gid: str) -> None:
        st = self.state
        st.dead_lettered_group_ids.remove(gid)
        if gid in st.dropped_group_ids:
            st.dropped_group_ids.remove(gid)
            st.groups_dropped -= 1
        self.settled.discard(gid)
        self.in_flight.discard(gid)
        self.pending_commit = [g for g in self.pending_commit if g != gid]
        log.info("group %s was dead-lettered and has arrived after all: training it", gid)

    def _poll_dead_letters(self) -> None:
        known = self.settled | self.in_flight | {g["groupId"] for g in self.buffer}
        for gid, reason in self.dead_letters.new_train_groups(known):
            self.state.dead_lettered_group_ids.append(gid)
            self._drop(gid, "dead_lettered", reason)

    # -- step, publish, commit --------------------------------------------------------------------------

    def step(self) -> None:
        stage = (
            self.buffer[0].get("stage") if self.buffer else None
        )  # the batch's config (Trainer.config_for)
        if stage in self.stage_sft and stage not in self.state.sft_done_stages:
            self._stage_sft(stage)  # before the batch leaves the buffer: the checkpoint re-reads it on resume
        groups, self.buffer, self.batch_arrivals = self.buffer, [], 0
        if not groups:
            return
        version_before = self.state.policy_version
        t0 = time.perf_counter()
        metrics = self._train_step(groups, version_before)
        inner = self.trainer.last_phases
        for k, v in inner.items():
            self.timer.add(k.removeprefix(PREFIX), v)
        self.timer.add("step_rest", max(0.0, time.perf_counter() - t0 - sum(inner.values())))
        st = self.state
        st.step += 1
        st.groups_consumed += len(groups)
        st.consumed_group_ids.extend(g["groupId"] for g in groups)
        st.reward_mean = metrics["reward_mean"]
        self.pending_commit.extend(g["groupId"] for g in groups)
        row = {
            "step": st.step,
            "policy_version": version_before,
            "groups": len(groups),
            "dropped_groups": self.dropped_since_step,
            "groups_consumed": st.groups_consumed,
            "groups_dropped": st.groups_dropped,
            "duplicate_groups": self.duplicates,
            **metrics,
            **self.timer.take(),
        }
        if self.device.type != "cuda":
            row["memory_gb"] = (
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            )  # peak RSS (KiB -> GiB)
        self.dropped_since_step = 0
        with self.timer.phase("metrics"):
            self._metrics().log(row)  # the JSONL line, TensorBoard, and every so often the reward plot
        self.emit({"type": "step", "step": st.step, "metrics": row})
        if st.step % self.cfg.publish_every == 0:
            self._publish(st.policy_version + 1)
        if st.step % self.cfg.save_every == 0:
            with self.timer.phase("checkpoint"):
                self._commit()
        with self.timer.phase("state"):
            self._write_state()
        if self.trainer.total_steps is None:
            self._read_run()
            self.trainer.total_steps = self._total_steps()

    def _publish(self, version: int) -> None:
        with self.timer.phase("publish"):
            pointer = self.publisher.publish(self._rollout_model(), version)
        self.state.policy_version = version
        self.last_published_step = self.state.step
        self.emit({"type": "published", **pointer})

    def _commit(self) -> None:
        """Checkpoint, then tell the driver which groups' messages may now be deleted."""
        # Buffered groups are the last ones offered and are not trained yet: a resume re-reads them.
        self.state.data_position = max(0, self.lines_offered - len(self.buffer))
        if self.ordered is not None:
            self.state.batches_settled = self.ordered.settled
            self.state.batch_versions = list(self.ordered.versions)
        self._save_checkpoint(weights_unchanged=self.last_checkpoint_step == self.state.step)
        self.last_checkpoint_step = self.state.step
        ids, self.pending_commit = self.pending_commit, []
        self.settled.update(ids)
        self.in_flight.difference_update(ids)
        self.emit({"type": "committed", "step": self.state.step, "groupIds": ids})

    def _write_state(self) -> None:
        st = self.state
        doc = {
            "step": st.step,
            "policyVersion": st.policy_version,
            "groupsConsumed": st.groups_consumed,
            "groupsDropped": st.groups_dropped,
            "rewardMean": st.reward_mean,
            "done": self.done,
            "updatedAt": _now(),
        }
        if self.ordered is not None and self.ordered.versions:
            doc["batches"] = self.ordered.state()
        validate("learner-state", doc)
        self.store.put_bytes(keys.learner_state(self.run_id), (json.dumps(doc) + "\n").encode())
        # What the state file's S3 notification is on AWS: the embedded runtime wakes the feeder on it, after the
        # consumed counts are on record (a `published` line comes before them, and a top-up then would see none).
        self.emit({"type": "state", "state": doc})

    def _should_stop(self) -> bool:
        if self.cfg.max_steps is not None and self.state.step >= self.cfg.max_steps:
            return True
        if time.monotonic() - self._totals_read_at > 5:
            self._read_run()
        if self.run_failed is not None:
            return True
        if self.dead_letters.due():
            self._poll_dead_letters()
        # Buffered groups count: finish() trains them, so the last partial batch is not waited for forever.
        seen = self.state.groups_consumed + self.state.groups_dropped + len(self.buffer)
        return self.groups_planned is not None and seen >= self.groups_planned

    def tick(self) -> None:
        """Between inputs (idle polls): finish once the planned groups are all seen (totals may come late)."""
        if not self.done and self._should_stop():
            self.finish()

    # -- the end ----------------------------------------------------------------------------------------

    def finish(self) -> None:
        """Train what is buffered, publish the final weights, checkpoint, say done. For a run that has failed
        meanwhile, only keep what is trained (a checkpoint) and say done: no more steps for a dead run."""
        if self.done:
            return
        if self.run_failed is not None:
            log.warning("run %s has failed; stopping: %s", self.run_id, self.run_failed)
            self.interrupt()
            self.done = True
            self._write_state()
            self.emit({"type": "done"})
            return
        if self.buffer and not (self.cfg.max_steps is not None and self.state.step >= self.cfg.max_steps):
            self.step()
        if self.last_published_step != self.state.step:
            self._publish(self.state.policy_version + 1)
        if self.last_checkpoint_step != self.state.step or self.pending_commit:
            self._commit()
        self.done = True
        self._write_state()
        self._metrics().close()
        self.emit({"type": "done"})

    def interrupt(self) -> None:
        """SIGTERM (spot interruption): checkpoint what has been trained; buffered groups stay uncommitted
        (never trained, they are redelivered)."""
        if self.done or self.metrics is None:  # not started yet: nothing to save
            return
        trained = self.state.step > 0 and self.last_checkpoint_step != self.state.step
        if trained or self.pending_commit:
            self._commit()
        self._write_state()
        self.metrics.close()
