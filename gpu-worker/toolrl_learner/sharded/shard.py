"""FSDP2 on the policy: each decoder layer is one `fully_shard` unit (gathered for its forward and backward,
then freed), the embedding, final norm and LM head form the root unit; the reference policy and the value
head are sharded the same way. Every rank loads the full weights on CPU first (so LoRA's random init and
everything else is identical on every rank), and fully_shard moves one unit at a time to the device.

Mixed precision (a GPU with model.dtype bf16): parameters are gathered in bf16 and gradients reduced in fp32,
while the sharded parameters and AdamW's state stay fp32 (the master weights). trainer.cpu_offload keeps the
sharded parameters, gradients and optimizer state in host memory and runs the optimizer step there (FSDP2's
CPUOffloadPolicy).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from ..config import LearnerConfig
from ..train.model_work import seed_torch
from ..train.policy import Policy
from ..train.trainer import Trainer
from .comm import ShardedComm
from .world import World

if TYPE_CHECKING:
    from torch.distributed.fsdp import FSDPModule

log = logging.getLogger(__name__)


def _fsdp_units(model: nn.Module, world: World, cfg: LearnerConfig, offload: bool) -> FSDPModule:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import (
        CPUOffloadPolicy,
        FSDPModule,
        MixedPrecisionPolicy,
        OffloadPolicy,
        fully_shard,
        register_fsdp_forward_method,
    )

    mesh = init_device_mesh(world.device.type, (world.size,))
    on_gpu = world.device.type == "cuda"
    mp = (
        MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        if cfg.dtype == "bf16" and on_gpu
        else MixedPrecisionPolicy()
    )
    policy = CPUOffloadPolicy(pin_memory=on_gpu) if offload else OffloadPolicy()
    kw = {"mesh": mesh, "mp_policy": mp, "offload_policy": policy}
    layers = getattr(getattr(model, "model", None), "layers", None)
    for layer in layers if layers is not None else []:
        fully_shard(layer, **kw)
    fully_shard(model, **kw)
    if hasattr(model, "forward_hidden"):
        # The learner calls forward_hidden, not forward: FSDP's gathers must hook that method.
        register_fsdp_forward_method(model, "forward_hidden")
    for m in model.modules():
        if isinstance(m, FSDPModule):
            # Sum, not average: each rank's loss is already its share of the batch-normalised loss.
            m.set_gradient_divide_factor(1.0)
            if world.backend == "gloo":
                m.set_force_sum_reduction_for_comms(True)  # gloo has no pre-multiplied sum
    if not isinstance(model, FSDPModule):  # fully_shard swaps the module's class to an FSDPModule subclass
        raise RuntimeError(f"fully_shard left {type(model).__name__} unsharded")
    return model


def build_sharded(
    cfg: LearnerConfig, model_dir: Path, world: World, stage_cfgs: dict[str, LearnerConfig]
) -> tuple[Policy, Trainer]:
    """The policy, sharded over the world, and its trainer (the optimizer over the shards)."""
    from ..model.hf_io import load_pretrained

    seed_torch(cfg)
    base = load_pretrained(model_dir, dtype=torch.float32, device="cpu")
    policy = Policy(cfg, model_dir, world.device, base=base)
    return policy, shard_policy(policy, world, cfg, stage_cfgs)


def shard_policy(
    policy: Policy, world: World, cfg: LearnerConfig, stage_cfgs: dict[str, LearnerConfig] | None = None
) -> Trainer:
    """Shard a policy built on CPU (the same weights on every rank) and return its trainer."""
    roots = [_fsdp_units(policy.base, world, cfg, cfg.cpu_offload)]
    if policy.reference is not None:
        roots.append(_fsdp_units(policy.reference, world, cfg, offload=False))
    if policy.value_head is not None:
        roots.append(_fsdp_units(policy.value_head, world, cfg, cfg.cpu_offload))
    trainer = Trainer(cfg, policy, stage_cfgs, comm=ShardedComm(world, roots))
    log.info(
        "sharded %s over %d ranks (%s%s)",
        policy.model_dir.name,
        world.size,
        "bf16 gathers, fp32 master weights"
        if cfg.dtype == "bf16" and world.device.type == "cuda"
        else "fp32",
        ", CPU offload" if cfg.cpu_offload else "",
    )
    return trainer
