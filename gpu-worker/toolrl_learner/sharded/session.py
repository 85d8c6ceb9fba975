"""The sharded learner's life cycle. Rank 0 runs the usual LearnerSession and the usual driver: it alone owns
the queue (receives, dedupes, drops, deletes after the commit), run.json, state.json, metrics and the commit
record. Its session's model work is `ShardedModelWork`: before each part of it (train/model_work.py) rank 0
broadcasts a command (the step's groups included) on the command channel; the other ranks wait in `follow`
and do the same part on their shards.

    rank 0                                 ranks 1..N-1 (follow)
    build  -> shard the policy             build  -> shard the policy
    load   -> resume (DCP, resharded)      load
    sft    -> warm start, its share        sft
    step   -> its share of the batch       step   -> the same groups, their share
    gather -> full weights -> publish      gather (send their shards)
    save   -> shards + COMPLETE.json       save   (their shards)
    stop                                   exit with rank 0's code

A rank that dies breaks the next collective: rank 0 fails before it publishes or writes a marker, so the
step's groups are never committed and the queue redelivers them.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import Tensor, nn

from ..config import LearnerConfig
from ..scored_group import ScoredGroup
from ..storage import BlobStore
from ..train.checkpoint import TrainerState, complete_prefix, rewrite_marker
from ..train.model_work import ModelWork, attach_ptx, fits, local_sft_data
from ..train.policy import Policy, merged_model, resolve_model_dir
from ..train.session import LearnerSession
from ..train.trainer import Trainer
from .checkpoint import load_sharded, save_sharded
from .shard import build_sharded
from .world import World, node_first

if TYPE_CHECKING:
    from peft.tuners.lora import LoraLayer

log = logging.getLogger(__name__)


class Channel:
    """Rank 0's commands to the other ranks: (name, arguments), pickled over the gloo command group."""

    def __init__(self, world: World) -> None:
        self.world = world

    def send(self, name: str, **args: Any) -> None:
        if self.world.size > 1:
            torch.distributed.broadcast_object_list([(name, args)], src=0, group=self.world.commands)

    def receive(self) -> tuple[str, dict[str, Any]]:
        box: list[Any] = [None]
        torch.distributed.broadcast_object_list(box, src=0, group=self.world.commands)
        return box[0]


def refuse_critic(cfg: LearnerConfig, ranks: int) -> None:
    """The separate PPO critic (train/critic.py) is not sharded: its values and its update would see only
    this rank's sequences. Refused before any rank loads a model (rank 0 then releases the others)."""
    if cfg.has_critic:
        raise ValueError(
            f"critic: (PPO's separate value model, {cfg.critic_model_path!r}) is not supported by the sharded "
            f"learner ({ranks} ranks): set trainer.num_gpus: 1, or drop critic: to use the value head on the "
            "policy's trunk (algorithm.adv_estimator: gae works with both)"
        )


def _build(
    cfg: LearnerConfig, stage_cfgs: dict[str, LearnerConfig], world: World, workdir: Path, store: BlobStore
) -> tuple[Path, Policy, Trainer]:
    if cfg.num_gpus != world.size and world.leader:
        log.warning(
            "trainer.num_gpus is %d; this learner runs as %d ranks (the launcher's world size decides)",
            cfg.num_gpus,
            world.size,
        )
    with node_first(world):  # a Hub download or a tiny build happens once per node
        model_dir = resolve_model_dir(cfg.model_path, workdir, cfg.seed)
    fits(model_dir, cfg, world.size, world.device)
    policy, trainer = build_sharded(cfg, model_dir, world, stage_cfgs)
    with node_first(world):  # a download happens once per node
        attach_ptx(trainer, cfg, store, workdir)
    return model_dir, policy, trainer


def _sft_path(store: BlobStore, cfg: LearnerConfig, stage: str | None, world: World, workdir: Path) -> Path:
    with node_first(world):  # a download happens once per node
        return local_sft_data(store, cfg, stage, workdir)


def gather_rollout_model(policy: Policy) -> nn.Module | None:
    """Every rank: all-gather the full fp32 weights to rank 0's host memory; rank 0 gets a plain CausalLM
    with LoRA merged (W + scaling * B A, as peft merges), the others None."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    # A full state dict of a module holds tensors only (the declared ValueType also covers optimizer state).
    full = cast(
        "dict[str, Tensor]",
        get_model_state_dict(policy.base, options=StateDictOptions(full_state_dict=True, cpu_offload=True)),
    )
    if torch.distributed.get_rank() != 0:
        return None
    state: dict[str, Tensor] = {}
    for name, t in full.items():
        if ".lora_" in name:
            continue
        if name.endswith(".base_layer.weight") and policy.peft is not None:
            layer = name.removesuffix(".base_layer.weight")
            module = cast("LoraLayer", policy.base.get_submodule(layer))  # a .base_layer is peft's LoRA layer
            w = t.float()
            for a in module.active_adapters:
                lora_a, lora_b = full[f"{layer}.lora_A.{a}.weight"], full[f"{layer}.lora_B.{a}.weight"]
                w = w + (lora_b.float() @ lora_a.float()) * module.scaling[a]
            state[f"{layer}.weight"] = w
        else:
            state[name.replace(".base_layer.", ".")] = t.float()
    return merged_model(policy.base.config, state)


class ShardedModelWork(ModelWork):
    """Rank 0's model work: each part done by every rank, the others told first on the command channel."""

    def __init__(self, store: BlobStore, run_id: str, workdir: Path, world: World) -> None:
        super().__init__(store, run_id, workdir, world.device)
        self.world = world
        self.channel = Channel(world)

    def build(self, cfg: LearnerConfig, stage_cfgs: dict[str, LearnerConfig]) -> Path:
        refuse_critic(cfg, self.world.size)
        self.channel.send("build", cfg=cfg, stage_cfgs=stage_cfgs, workdir=str(self.workdir))
        model_dir, self.policy, self.trainer = _build(cfg, stage_cfgs, self.world, self.workdir, self.store)
        return model_dir

    def load_checkpoint(self) -> tuple[TrainerState, dict[str, Any] | None] | None:
        self.channel.send("load")
        state = load_sharded(self.store, self.run_id, self.policy, self.trainer, self.world, self.workdir)
        return None if state is None else (state, None)  # the optimizer state is loaded already

    def sft_path(self, cfg: LearnerConfig, stage: str | None) -> Path:
        self.channel.send("sft", cfg=cfg, stage=stage)
        return _sft_path(self.store, cfg, stage, self.world, self.workdir)

    def train_step(self, step: int, groups: Sequence[ScoredGroup], policy_version: int) -> dict[str, float]:
        log.info("step %d: %d groups on %d ranks", step, len(groups), self.world.size)
        self.channel.send("step", groups=groups, version=policy_version, total_steps=self.trainer.total_steps)
        return super().train_step(step, groups, policy_version)

    def rollout_model(self) -> nn.Module:
        self.channel.send("gather")
        model = gather_rollout_model(self.policy)
        if model is None:
            raise RuntimeError("rank 0 got no merged rollout model")
        return model

    def save_checkpoint(self, state: TrainerState, *, keep: int, weights_unchanged: bool) -> None:
        prefix = complete_prefix(self.store, self.run_id, state.step)
        if weights_unchanged and prefix is not None and rewrite_marker(self.store, prefix, state):
            return  # the same shards, more settled group ids: rank 0 alone rewrites the marker
        self.channel.send("save")
        save_sharded(self.store, self.run_id, self.policy, self.trainer, state, self.world, self.workdir)

    def close(self, exit_code: int) -> None:
        try:
            self.channel.send("stop", exit_code=exit_code)
        except Exception as e:  # noqa: BLE001 - a rank is gone; torchrun stops the others
            log.warning("could not tell the other ranks to stop: %s", e)


def follow(store: BlobStore, run_id: str, world: World) -> int:
    """Ranks 1..N-1: do what rank 0 says until it says stop; returns rank 0's exit code."""
    from ..train.sft import run_sft

    built: tuple[Policy, Trainer] | None = None
    workdir = Path(".")
    while True:
        name, args = Channel(world).receive()
        if name == "build":
            workdir = Path(args["workdir"])
            workdir.mkdir(parents=True, exist_ok=True)
            _, policy, trainer = _build(args["cfg"], args["stage_cfgs"], world, workdir, store)
            built = (policy, trainer)
        elif name == "stop":
            return int(args["exit_code"])
        elif name not in ("load", "sft", "step", "gather", "save"):
            raise RuntimeError(f"unknown command {name!r} from rank 0")
        elif built is None:
            raise RuntimeError(f"{name!r} from rank 0 before build")
        else:
            policy, trainer = built
            if name == "load":
                load_sharded(store, run_id, policy, trainer, world, workdir)
            elif name == "sft":
                path = _sft_path(store, args["cfg"], args["stage"], world, workdir)
                run_sft(policy, args["cfg"], path, comm=trainer.comm)
                if args["stage"] is None:
                    policy.reference_from_current()
            elif name == "step":
                trainer.total_steps = args["total_steps"]
                trainer.step(args["groups"], args["version"])
            elif name == "gather":
                gather_rollout_model(policy)
            else:  # save
                save_sharded(store, run_id, policy, trainer, TrainerState(), world, workdir)


def run_follower(root: str, run_id: str, world: World) -> int:
    """A follower rank's whole life. SIGTERM (a spot interruption reaches every rank) is left to rank 0,
    which checkpoints with this rank's help and then says stop; torchrun kills what outlives that."""
    from ..storage import open_store

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: log.info("rank %d: %s; rank 0 decides", world.rank, signum))
    try:
        return follow(open_store(root), run_id, world)
    except Exception:
        log.exception("rank %d failed", world.rank)
        return 1


def open_session(store: BlobStore, run_id: str, world: World, **kw: Any) -> LearnerSession:
    """The session for rank 0: sharded under torchrun, else the single-process one."""
    if world.sharded:
        return LearnerSession(
            store,
            run_id,
            device=str(world.device),
            model=lambda workdir, _device: ShardedModelWork(store, run_id, workdir, world),
            **kw,
        )
    return LearnerSession(store, run_id, device=str(world.device), **kw)
