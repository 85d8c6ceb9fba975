"""`python -m toolrl_learner plan CONFIG [--gpus N] [--gpu-memory-gb G] [--json]`: whether the learner of a run
config fits its GPUs, part by part (plan/memory.py). Exit 0 when it fits (or no capacity is given), 3 when
it does not. `npx toolrl plan` runs this with the environment's GPUs filled in."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..config import LearnerConfig
from .memory import GB, plan_memory
from .shapes import model_shape

NOT_FITTING = 3


def _load(path: str) -> dict:
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    if path.endswith((".yaml", ".yml")):
        import yaml

        return yaml.safe_load(text)
    return json.loads(text)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m toolrl_learner plan", description=(__doc__ or "").partition("\n")[0]
    )
    p.add_argument("config", help="run config (YAML, or JSON; - reads JSON from stdin)")
    p.add_argument("--base-dir", help="folder model.path is relative to (default: the config's)")
    p.add_argument("--gpus", type=int, help="GPUs (default: trainer.num_gpus)")
    p.add_argument(
        "--gpu-memory-gb", type=float, help="memory of one GPU in GB (1e9 bytes); omit for no verdict"
    )
    p.add_argument("--cpu", action="store_true", help="plan the CPU learner (fp32, host memory) instead")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    args = p.parse_args(argv)
    run = _load(args.config)
    cfg = LearnerConfig.from_run_config(run)
    base = (
        Path(args.base_dir) if args.base_dir else (Path(args.config).parent if args.config != "-" else None)
    )
    shape = model_shape(cfg.model_path, base)
    gpus = args.gpus or cfg.num_gpus
    capacity = args.gpu_memory_gb * GB if args.gpu_memory_gb else None
    plan = plan_memory(shape, cfg, gpus=gpus, device="cpu" if args.cpu else "cuda", capacity_bytes=capacity)
    if args.json:
        print(json.dumps(plan.to_json()))
    else:
        print(
            f"model {cfg.model_path}: {_describe(shape)}; {'LoRA r=' + str(cfg.lora_rank) if cfg.use_lora else 'full fine-tuning'}"
        )
        print(f"learner peak {plan.summary()}")
        if plan.host:
            print(
                "host memory per process: " + ", ".join(f"{k} {v / GB:.1f} GB" for k, v in plan.host.items())
            )
        if plan.fits is not None:
            print("fits" if plan.fits else "does NOT fit")
        for note in plan.notes:
            print(f"  - {note}")
    return NOT_FITTING if plan.fits is False else 0


def _describe(shape) -> str:
    from .memory import parameter_counts

    n = parameter_counts(shape)["total"]
    return f"{n / 1e9:.2f}B parameters, {shape.num_hidden_layers} layers, hidden {shape.hidden_size}, vocab {shape.vocab_size}"
