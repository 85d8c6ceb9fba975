"""The session's work on the model, in one process: build the policy (and critic) and its trainer, resume
them from a checkpoint, run an SFT warm start, train a step, hand out the weights to publish, save them.
The sharded learner (sharded/session.py) does each of these on every rank instead; the session's life cycle
(session.py) is the same for both."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from ..config import LearnerConfig
from ..scored_group import ScoredGroup
from ..storage import BlobStore
from .checkpoint import TrainerState, load_latest_checkpoint, save_checkpoint
from .policy import Policy, resolve_model_dir
from .trainer import Trainer

log = logging.getLogger(__name__)


def fits(model_dir: Path, cfg: LearnerConfig, gpus: int, device: torch.device) -> None:
    """Refuse before loading the weights, with the memory plan's numbers, a learner that cannot fit."""
    from ..model.config import ModelConfig
    from ..plan.memory import check_fits

    plan = check_fits(ModelConfig.from_file(model_dir), cfg, gpus=gpus, device=device)
    log.info("memory plan: %s", plan.summary())


def seed_torch(cfg: LearnerConfig) -> None:
    """The learner's seed, and under `trainer.deterministic` PyTorch's deterministic kernels (as TRL's
    full_determinism does): our own paths avoid the kernels that sum in thread order (model/attention.py), and this
    catches those of the libraries beneath them. An op with no deterministic kernel warns instead of failing."""
    torch.manual_seed(cfg.seed)
    if cfg.deterministic:
        # cuBLAS repeats only with a fixed workspace; read when its first handle is made, so set it first.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(cfg.deterministic, warn_only=True)


def local_sft_data(store: BlobStore, cfg: LearnerConfig, stage: str | None, workdir: Path) -> Path:
    """cfg's SFT data as a local file: the run's warm start (stage None) or a curriculum stage's own; errors
    name the config path they come from."""
    from .sft import local_sft_data

    where = f"stages[{stage}].overrides.trainer.sft.data" if stage else "trainer.sft.data"
    if cfg.sft_data is None:
        raise ValueError(f"{where}: no SFT data to train on")
    return local_sft_data(store, cfg.sft_data, workdir, where)


def attach_ptx(trainer: Trainer, cfg: LearnerConfig, store: BlobStore, workdir: Path) -> None:
    """The demonstrations trainer.sft.ptx_coef trains on during RL, when it is set: the run's, else those of the
    first curriculum stage that sets it (every stage with a coefficient draws from them)."""
    from .sft import ptx_demonstrations

    src = next((c for c in (cfg, *trainer.stage_cfgs.values()) if c.sft_ptx_coef), None)
    if src is not None:
        trainer.ptx = ptx_demonstrations(trainer.policy, src, store, workdir)
        log.info("ptx: %d demonstrations a step, coefficient %g", trainer.ptx.batch_size, src.sft_ptx_coef)


class ModelWork:
    """One process's model: `build` first, then any of the others."""

    policy: Policy
    trainer: Trainer

    def __init__(self, store: BlobStore, run_id: str, workdir: Path, device: torch.device) -> None:
        self.store, self.run_id, self.workdir, self.device = store, run_id, workdir, device

    def build(self, cfg: LearnerConfig, stage_cfgs: dict[str, LearnerConfig]) -> Path:
        """The policy and its trainer; returns the model folder."""
        if cfg.num_gpus > 1:
            log.warning(
                "trainer.num_gpus is %d but this learner is one process: start it with "
                "`python -m toolrl_learner launch --nproc-per-node %d ...` (toolrl train and the AWS job do)",
                cfg.num_gpus,
                cfg.num_gpus,
            )
        seed_torch(cfg)
        model_dir = resolve_model_dir(cfg.model_path, self.workdir, cfg.seed)
        fits(model_dir, cfg, 1, self.device)
        self.policy = Policy(cfg, model_dir, self.device)
        critic = None
        if cfg.critic_model_path is not None:
            from .critic import Critic

            critic_dir = resolve_model_dir(cfg.critic_model_path, self.workdir)
            critic = Critic(cfg, critic_dir, self.device, self.policy.autocast_dtype)
        self.trainer = Trainer(cfg, self.policy, stage_cfgs, critic=critic)
        attach_ptx(self.trainer, cfg, self.store, self.workdir)
        return model_dir

    def load_checkpoint(self) -> tuple[TrainerState, dict[str, Any] | None] | None:
        """The latest committed checkpoint's state (weights loaded) and optimizer state; None for a fresh run."""
        return load_latest_checkpoint(
            self.store,
            self.run_id,
            self.policy,
            self.workdir,
            critic=self.trainer.critic,
            trainer=self.trainer,
        )

    def sft(self, cfg: LearnerConfig, stage: str | None, on_step: Callable[[dict[str, float]], None]) -> None:
        """The warm start (stage None) or a curriculum stage's own SFT, on cfg's `trainer.sft`."""
        from .sft import run_sft

        path = self.sft_path(cfg, stage)
        what = f"stage {stage!r} SFT" if stage else "SFT warm start"
        log.info("%s: %d steps on %s", what, cfg.sft_steps, cfg.sft_data)

        def logged(m: dict[str, float]) -> None:
            log.info("sft %s", json.dumps(m))
            on_step(m)

        run_sft(self.policy, cfg, path, on_step=logged, comm=self.trainer.comm)
        if stage is None:
            self.policy.reference_from_current()

    def sft_path(self, cfg: LearnerConfig, stage: str | None) -> Path:
        return local_sft_data(self.store, cfg, stage, self.workdir)

    def train_step(self, step: int, groups: Sequence[ScoredGroup], policy_version: int) -> dict[str, float]:
        """Learner step number `step` (for logs) on `groups`, sampled by policy `policy_version` or older."""
        return self.trainer.step(groups, policy_version)

    def rollout_model(self) -> torch.nn.Module:
        """The weights the rollout samples with (LoRA merged), to publish."""
        return self.policy.rollout_model()

    def save_checkpoint(self, state: TrainerState, *, keep: int, weights_unchanged: bool) -> None:
        save_checkpoint(
            self.store,
            self.run_id,
            self.policy,
            self.trainer.state_dict(),
            state,
            self.workdir,
            keep=keep,
            weights_unchanged=weights_unchanged,
            critic=self.trainer.critic,
        )

    def close(self, exit_code: int) -> None:
        """The driver is about to exit with exit_code (the sharded leader releases the other ranks)."""
