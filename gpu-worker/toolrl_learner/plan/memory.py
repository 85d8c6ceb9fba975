"""The learner's peak memory per device, part by part, from the model's shape and the run config: does a run
fit its GPUs before it is paid for? `plan_memory` is the function; `python -m toolrl_learner plan` and
`npx toolrl plan` print it, and the learner refuses at start, with these numbers, a run that cannot fit.

What is counted (P parameters, P_t trainable, W ranks, b = 2 bytes on a GPU in bf16, else 4):
  weights     fp32 master weights: 4 P (the LoRA base too: this learner keeps it fp32), / W sharded
  gradients   fp32: 4 P_t, / W sharded
  optimizer   AdamW's two moments: 8 P_t, / W sharded; with trainer.cpu_offload these three live in host memory
  gathered    sharded only: the root unit (embedding, LM head) kept gathered, two layers gathered (the one
              running and the next), one layer's unsharded gradients: b (P_emb + P_head) + 2 b P_layer + (b + 4) P_layer
  bf16 cache  one process in bf16 (a GPU, or a CPU with bf16 units): autocast's bf16 copy of every trainable
              layer weight, saved for the backward, 2 P_layers; with gradient checkpointing one layer's, 2 P_layer
              (the one recomputed: the learner runs autocast without its cache, train/precision.py)
  reference   full fine-tuning with a KL term: the frozen reference policy, b P (/ W sharded)
  activations per token of a micro-batch (micro_batch_tokens): what each layer saves for backward
              (ACTIVATION_BYTES below), x layers; with gradient checkpointing only each layer's input is
              kept, plus one layer's activations while it is recomputed
  attention   CPU only: the packed micro-batch's [T, T] mask and the [heads, T, T] scores the CPU kernel keeps
  logits      the chunked log-prob head: about four fp32 [chunk, vocabulary] buffers (logits, softmax, their
              gradient) at the largest, chunk = min(logprob_chunk_size, micro_batch_tokens)
A fixed reserve covers the CUDA context, NCCL buffers and allocator slack (RESERVE_GB).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import LearnerConfig
from ..model.config import ModelConfig

GB = 1e9
RESERVE_GB = 2.5  # CUDA context (~0.5 GB), NCCL buffers, the caching allocator's fragmentation


def activation_bytes_per_token_layer(shape: ModelConfig, mode: str) -> float:
    """Bytes one decoder layer saves for backward per token (h hidden, a = heads x head_dim, k = the K or V
    width, i intermediate), as this learner's layer computes:

    cpu (fp32):        norms save their input and normalised output (2 x 8h), q/k/v and gate/up share their
                       input (2 x 4h), q, k, v and the rotated q, k (4a + 8k + 4a + 4k), the attention output
                       (4a), the MLP's gate, up, silu and product (16i)                 = 24h + 12a + 12k + 16i
    cuda (autocast over fp32 weights, one process): the residual stream stays fp32 (norms 2 x 8h), each norm's
                       output cast to bf16 once for the projections that share it (2 x 2h), q, k, v (2a + 4k)
                       into Flash Attention and its output (2a), the MLP in bf16 (8i)     = 20h + 4a + 4k + 8i
    sharded (bf16 parameters): the stream is bf16 (norms 2 x 6h), shared bf16 inputs (2 x 2h), attention
                       and MLP as above                                                     = 16h + 4a + 4k + 8i
    cpu_bf16 (autocast on a CPU with bf16 units): norms and their one cast as cuda (2 x 8h + 2 x 2h), q and k
                       and their rotation in bf16 (4a + 4k), attention in fp32: q, k, v and its output (8a + 8k),
                       its output cast for o_proj (2a), the MLP in bf16 (8i)              = 20h + 14a + 12k + 8i
    """
    h, i = shape.hidden_size, shape.intermediate_size
    a = shape.num_attention_heads * shape.head_dim
    k = shape.num_key_value_heads * shape.head_dim
    if mode == "cpu":
        return 24 * h + 12 * a + 12 * k + 16 * i
    if mode == "cuda":
        return 20 * h + 4 * a + 4 * k + 8 * i
    if mode == "sharded":
        return 16 * h + 4 * a + 4 * k + 8 * i
    if mode == "cpu_bf16":
        return 20 * h + 14 * a + 12 * k + 8 * i
    raise ValueError(f"mode must be cpu, cpu_bf16, cuda or sharded, got {mode!r}")


def parameter_counts(shape: ModelConfig) -> dict[str, int]:
    """P split as the plan needs it: embedding, LM head (0 when tied), one layer, all layers, total."""
    h, i, d = shape.hidden_size, shape.intermediate_size, shape.head_dim
    a, k = shape.num_attention_heads * d, shape.num_key_value_heads * d
    attn = h * a + 2 * h * k + a * h + (a + 2 * k if shape.qkv_bias else 0) + (h if shape.o_bias else 0)
    mlp = 3 * h * i + ((2 * i + h) if shape.mlp_bias else 0)
    norms = 2 * h + (2 * d if shape.qk_norm else 0)
    layer = attn + mlp + norms
    emb = shape.vocab_size * h
    head = 0 if shape.tie_word_embeddings else emb
    layers = layer * shape.num_hidden_layers
    return {
        "embedding": emb,
        "head": head,
        "layer": layer,
        "layers": layers,
        "total": emb + head + layers + h,
    }


def lora_parameters(shape: ModelConfig, rank: int, targets: tuple[str, ...]) -> int:
    """r (in + out) for every targeted projection of every layer."""
    h, i, d = shape.hidden_size, shape.intermediate_size, shape.head_dim
    a, k = shape.num_attention_heads * d, shape.num_key_value_heads * d
    dims = {
        "q_proj": (h, a),
        "k_proj": (h, k),
        "v_proj": (h, k),
        "o_proj": (a, h),
        "gate_proj": (h, i),
        "up_proj": (h, i),
        "down_proj": (i, h),
    }
    return shape.num_hidden_layers * sum(rank * sum(dims[t]) for t in targets if t in dims)


@dataclass
class MemoryPlan:
    """Bytes per device by part (`device`), and per process in host memory (`host`: CPU offload)."""

    parts: dict[str, float]
    host: dict[str, float] = field(default_factory=dict)
    gpus: int = 1
    device: str = "cuda"
    capacity: float | None = None  # bytes per device; None: unknown (no verdict)
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(self.parts.values())

    @property
    def fits(self) -> bool | None:
        return None if self.capacity is None else self.total <= self.capacity

    def summary(self) -> str:
        """One line: total against capacity, and the parts largest first."""
        parts = ", ".join(
            f"{k} {v / GB:.1f}" for k, v in sorted(self.parts.items(), key=lambda kv: -kv[1]) if v
        )
        where = (
            f"per GPU ({self.gpus} GPU{'s' if self.gpus > 1 else ''})" if self.device == "cuda" else "on CPU"
        )
        cap = f" of {self.capacity / GB:.1f} GB" if self.capacity is not None else ""
        return f"{self.total / GB:.1f} GB {where}{cap}: {parts} (GB)"

    def to_json(self) -> dict:
        return {
            "device": self.device,
            "gpus": self.gpus,
            "totalGb": round(self.total / GB, 3),
            "capacityGb": None if self.capacity is None else round(self.capacity / GB, 3),
            "fits": self.fits,
            "partsGb": {k: round(v / GB, 3) for k, v in self.parts.items()},
            "hostGb": {k: round(v / GB, 3) for k, v in self.host.items()},
            "notes": self.notes,
        }


def plan_memory(
    shape: ModelConfig,
    cfg: LearnerConfig,
    *,
    gpus: int = 1,
    device: str = "cuda",
    capacity_bytes: float | None = None,
    cpu_bf16: bool | None = None,
) -> MemoryPlan:
    """The peak memory of one learner process (one GPU, or the CPU) for this model and config. cpu_bf16: whether
    a CPU learner computes in bf16 (model.dtype bf16 where train/precision.py finds a bf16 unit faster than
    fp32); None: as this machine's CPU."""
    if gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {gpus}")
    counts = parameter_counts(shape)
    p, p_layer = counts["total"], counts["layer"]
    sharded = gpus > 1 or cfg.cpu_offload
    on_gpu = device == "cuda"
    b = 2 if (on_gpu and cfg.dtype == "bf16") else 4
    if on_gpu or cfg.dtype != "bf16":
        cpu_bf16 = False
    elif cpu_bf16 is None:
        from ..train.precision import cpu_bf16_unit

        cpu_bf16 = cpu_bf16_unit() is not None
    w = gpus if sharded else 1
    p_train = (
        lora_parameters(shape, cfg.lora_rank, cfg.lora_target_modules) if cfg.lora_rank is not None else p
    )
    if cfg.adv_estimator == "gae":
        p_train += shape.hidden_size + 1
    parts: dict[str, float] = {}
    host: dict[str, float] = {}
    state = {"weights": 4 * p / w, "gradients": 4 * p_train / w, "optimizer": 8 * p_train / w}
    (host if cfg.cpu_offload else parts).update(state)
    if cfg.cpu_offload:
        parts["weights"] = 0.0
    if sharded:
        # Every rank reads the whole fp32 model into host memory once, before fully_shard takes its shard.
        host["loading (once)"] = 4 * p
        gathered = b * (counts["embedding"] + counts["head"]) + 2 * b * p_layer
        if not cfg.use_lora:
            gathered += (b + 4) * p_layer
        parts["gathered"] = gathered
    elif ((on_gpu and b == 2) or cpu_bf16) and not cfg.use_lora:
        parts["bf16 cache"] = 2 * (p_layer if cfg.gradient_checkpointing else counts["layers"])
    if cfg.needs_reference and not cfg.use_lora:
        parts["reference"] = b * p / w
    t = cfg.micro_batch_tokens
    mode = (
        ("cpu_bf16" if cpu_bf16 else "cpu") if not on_gpu else ("sharded" if sharded and b == 2 else "cuda")
    )
    per_layer = activation_bytes_per_token_layer(shape, mode) * t
    layers = shape.num_hidden_layers
    stream = (2 if mode == "sharded" else 4) * shape.hidden_size * t  # one layer's input
    if cfg.gradient_checkpointing:
        parts["activations"] = layers * stream + per_layer
    else:
        parts["activations"] = layers * per_layer
    parts["activations"] += 4 * stream  # embedding output, final norm, the rows that reach the head
    if not on_gpu:
        parts["attention"] = t * t * (1 + 4 * shape.num_attention_heads)
    chunk = min(cfg.logprob_chunk_size, t)
    parts["logits"] = 16 * chunk * shape.vocab_size
    if on_gpu:
        parts["reserve"] = RESERVE_GB * GB
    plan = MemoryPlan(parts, host, gpus, "cuda" if on_gpu else "cpu", capacity_bytes)
    if plan.fits is False:
        plan.notes.extend(_advice(plan, cfg, gpus))
    return plan


def _advice(plan: MemoryPlan, cfg: LearnerConfig, gpus: int) -> list[str]:
    """What would make it fit, in order of what usually helps most."""
    out = []
    state = sum(plan.parts.get(k, 0.0) for k in ("weights", "gradients", "optimizer"))
    if not cfg.use_lora and state > 0.3 * plan.total:
        out.append(
            "LoRA (model.lora) trains a fraction of the parameters: gradients and optimizer state shrink"
        )
        out.append(
            f"more GPUs (trainer.num_gpus; learner.gpus and learner.nodes on AWS) shard weights, gradients and "
            f"optimizer state: {gpus} now"
        )
    if not cfg.cpu_offload and state > 0.3 * plan.total:
        out.append("trainer.cpu_offload keeps weights, gradients and optimizer state in host memory")
    if not cfg.gradient_checkpointing and plan.parts.get("activations", 0) > 0.2 * plan.total:
        out.append("model.gradient_checkpointing keeps one layer's activations instead of all of them")
    if plan.parts.get("activations", 0) + plan.parts.get("logits", 0) > 0.2 * plan.total:
        out.append("a smaller trainer.micro_batch_tokens (or logprob_chunk_size) cuts activations and logits")
    return out


class DoesNotFit(RuntimeError):
    """The run's learner needs more memory than its device has (the message carries the plan)."""


def device_capacity(device) -> float | None:
    """Bytes of one GPU, or of this machine's RAM for a CPU learner; None when unknown."""
    import os

    import torch

    if device.type == "cuda":
        return float(torch.cuda.get_device_properties(device).total_memory)
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(shape: ModelConfig, cfg: LearnerConfig, *, gpus: int, device) -> MemoryPlan:
    """Raise DoesNotFit, with the numbers and what would help, when the plan exceeds the device."""
    kind = "cuda" if device.type == "cuda" else "cpu"
    plan = plan_memory(shape, cfg, gpus=gpus, device=kind, capacity_bytes=device_capacity(device))
    if plan.fits is False:
        advice = "; ".join(plan.notes)
        raise DoesNotFit(
            f"the learner does not fit: it needs {plan.summary()}"
            + (f". To fit: {advice}" if advice else "")
            + " (`npx toolrl plan CONFIG` plans a config before it runs)"
        )
    return plan
