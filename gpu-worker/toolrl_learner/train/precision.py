"""The learner's compute dtype for `model.dtype` on a device: bf16 is autocast over fp32 master weights where the
device's bf16 units are faster than its fp32 ones (a GPU; a CPU with AMX-BF16, or with AVX512-BF16 on an AMD core;
detected at run time), fp32 elsewhere.

On a CPU without bf16 units PyTorch emulates bf16 matrix products with conversions around fp32 ones, no faster than
fp32; on the AMD EPYC here (AVX512-BF16) a bf16 [4096 x 576] x [576 x 1536] product takes 0.45x the CPU time of the
fp32 one. On an Intel Xeon with AVX512-BF16 whose AMX a hypervisor hides (family 6 model 207) the same product took
1.56x the fp32 one's CPU time and the whole SmolLM2-135M learner step 1.53x (BENCHMARKS.md "Learner"), likely
because Intel issues bf16 dot products on one port and fp32 FMAs on two. So on an Intel core with AVX512-BF16 and no AMX the learner
computes in fp32 (Cooper Lake, the other such core, is taken to be alike; not measured). The gradients stay within
the tolerances gpu-worker/tests/test_precision_on_cpu.py states of the fp32 step's.
"""

from __future__ import annotations

import contextlib

import torch

# torch.cpu.get_capabilities() flags of x86 bf16 matrix units (ARM's bf16 is not measured here: fp32 there).
CPU_BF16_FLAGS = {"amx_bf16": "AMX-BF16", "avx512_bf16": "AVX512-BF16"}


def _capabilities() -> dict[str, object]:
    try:
        return dict(torch.cpu.get_capabilities())
    except (AttributeError, RuntimeError):  # an older torch: no run-time detection, so no bf16
        return {}


def _intel_without_amx(caps: dict[str, object]) -> bool:
    """AVX512-BF16 on an Intel core without AMX-BF16, where bf16 products are slower than fp32 ones."""
    name = str(caps.get("cpu_name") or "")
    return bool(caps.get("avx512_bf16")) and not caps.get("amx_bf16") and name.startswith("Intel")


def cpu_bf16_unit() -> str | None:
    """The CPU's bf16 matrix unit the learner computes on, by name ("AMX-BF16", "AVX512-BF16"), or None when it has
    none or only one slower than its fp32 units (AVX512-BF16 on an Intel core without AMX)."""
    caps = _capabilities()
    if _intel_without_amx(caps):
        return None
    return next((name for flag, name in CPU_BF16_FLAGS.items() if caps.get(flag)), None)


def autocast_dtype(dtype: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype of the learner's forward for model.dtype on device; None: plain fp32."""
    if dtype == "fp32":
        return None
    if dtype != "bf16":
        raise ValueError(f"model.dtype must be bf16 or fp32, got {dtype!r}")
    if device.type == "cuda":
        return torch.bfloat16
    if device.type == "cpu" and cpu_bf16_unit() is not None:
        return torch.bfloat16
    return None


def describe(dtype: str, device: torch.device) -> str:
    """What model.dtype means on this device, for the learner's log."""
    chosen = autocast_dtype(dtype, device)
    if chosen is None and dtype == "bf16":
        why = (
            "this Intel CPU's AVX512-BF16 without AMX is slower than its fp32 units"
            if _intel_without_amx(_capabilities())
            else "this CPU has no bf16 matrix unit"
        )
        return f"model.dtype bf16 on {device.type}: computing in fp32 ({why})"
    if chosen is None:
        return "model.dtype fp32: computing in fp32"
    unit = f" ({cpu_bf16_unit()})" if device.type == "cpu" else ""
    return f"model.dtype bf16 on {device.type}{unit}: bf16 autocast over fp32 master weights"


def autocast(device: torch.device, dtype: torch.dtype | None) -> contextlib.AbstractContextManager[object]:
    """The learner's forward context for an autocast dtype (None: plain fp32), without autocast's weight-cast cache.

    The cache keeps every weight's bf16 copy until the context exits, so that a weight used again casts once; the
    learner's forward uses each weight once, so the cache saves no cast and only holds the copies. Without it a copy
    lives as long as autograd keeps it: the same casts and numbers, and where autograd keeps none (gradient
    checkpointing, whose recompute takes the same setting; the no-grad forwards of pi_old and the reference) the
    copies of all layers never exist at once (0.2 GB at SmolLM2-135M, BENCHMARKS.md "Learner")."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype, cache_enabled=False)
