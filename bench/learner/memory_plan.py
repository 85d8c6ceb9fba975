"""bench/learner/memory_plan.py: the learner's memory planner (gpu-worker/toolrl_learner/plan) against the
measured peak of one learner step, on CPU, at the quick-start tiny shape and at Qwen2.5-0.5B's shape (random
weights), each case in a fresh process so that its peak is its own.

    gpu-worker/.venv/bin/python bench/learner/memory_plan.py [--cases tiny-full,...] [--write]

measured: the process's peak resident memory (ru_maxrss) above its resident memory before the model was
built: weights, the step's activations and logits, gradients and AdamW state (allocated by the first step).
Each case runs with glibc's mmap threshold fixed at 64 KiB (MALLOC_MMAP_THRESHOLD_, unless set): by default glibc
raises the threshold after large frees, so later large tensors come from the heap and stay resident after they are
freed, and the peak RSS then counts memory that is no longer live (up to 2x the live peak in the LoRA cases).
planned: plan_memory(..., device="cpu").total for the same model and config. On a GPU the same script reports
torch.cuda.max_memory_allocated() against the GPU plan (`--device cuda`). --write replaces the table in the
"Learner memory plan" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "gpu-worker"))

# name -> (preset or None for the quick-start tiny model, LoRA rank or None, gradient checkpointing, tokens in
# the micro-batch, log-prob chunk)
CASES = {
    "tiny-full": (None, None, False, 2048, 2048),
    "tiny-full-ckpt": (None, None, True, 2048, 2048),
    "0.5b-lora": ("qwen2.5-0.5b", 16, False, 1024, 256),
    "0.5b-lora-ckpt": ("qwen2.5-0.5b", 16, True, 1024, 256),
    "0.5b-full": ("qwen2.5-0.5b", None, False, 512, 256),
}
BEGIN, END = "<!-- memory-plan:begin -->", "<!-- memory-plan:end -->"


def _rss() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(name: str, device: str) -> dict:
    import torch

    from toolrl_learner.config import LearnerConfig
    from toolrl_learner.model.modeling import CausalLM, init_weights, skip_init
    from toolrl_learner.model.tiny import TinySpec, spec_config
    from toolrl_learner.plan.memory import plan_memory
    from toolrl_learner.train.policy import Policy
    from toolrl_learner.train.synthetic import random_group
    from toolrl_learner.train.trainer import Trainer

    preset, rank, ckpt, tokens, chunk = CASES[name]
    spec = TinySpec.from_preset(preset) if preset else TinySpec()
    shape, _, _ = spec_config(spec)
    cfg = LearnerConfig(
        model_path=preset or "tiny",
        dtype="fp32" if device == "cpu" else "bf16",
        micro_batch_tokens=tokens,
        logprob_chunk_size=chunk,
        gradient_checkpointing=ckpt,
        lora_rank=rank,
        lora_alpha=None if rank is None else 2 * rank,
        batch_prompts=1,
    )
    dev = torch.device(device)
    # one group of 4 sequences filling the micro-batch: prompt 16 + 2 turns + one tool result of 8 tokens
    g = 4
    response = (tokens // g - 24) // 2
    groups = [
        random_group(
            "r",
            "e0-p0",
            vocab=shape.vocab_size,
            g=g,
            response_len=response,
            tool_len=8,
            seed=0,
        )
    ]
    before = _rss()
    with skip_init():
        model = CausalLM(shape)
    init_weights(model, 0)
    policy = Policy(cfg, REPO, dev, base=model.to(dev))
    trainer = Trainer(cfg, policy)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    trainer.step(groups, 0)
    if device == "cuda":
        measured = torch.cuda.max_memory_allocated()
    else:
        measured = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    plan = plan_memory(shape, cfg, gpus=1, device=device)
    return {
        "case": name,
        "tokens": tokens,
        "plannedGb": plan.total / 1e9,
        "measuredGb": measured / 1e9,
        "ratio": plan.total / measured,
        "parts": {k: round(v / 1e9, 3) for k, v in plan.parts.items()},
    }


def table(rows: list[dict], device: str) -> str:
    out = [
        f"`gpu-worker/.venv/bin/python bench/learner/memory_plan.py` ({device}; planned / measured peak; "
        f"MALLOC_MMAP_THRESHOLD_={os.environ.get('MALLOC_MMAP_THRESHOLD_', '65536')}):",
        "",
        "| case | micro-batch tokens | planned GB | measured GB | planned / measured | largest planned parts (GB) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        top = ", ".join(f"{k} {v}" for k, v in sorted(r["parts"].items(), key=lambda kv: -kv[1])[:3])
        out.append(
            f"| {r['case']} | {r['tokens']} | {r['plannedGb']:.2f} | {r['measuredGb']:.2f} | {r['ratio']:.2f} | {top} |"
        )
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--device", default="cpu")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--write", action="store_true", help="replace the table in BENCHMARKS.md")
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.device)))
        return 0
    rows = []
    for name in args.cases.split(","):
        print(f"[memory_plan] {name} ...", file=sys.stderr, flush=True)
        r = subprocess.run(
            [sys.executable, __file__, "--child", name, "--device", args.device],
            env={**os.environ, "MALLOC_MMAP_THRESHOLD_": os.environ.get("MALLOC_MMAP_THRESHOLD_", "65536")},
            capture_output=True,
            text=True,
            check=False,
        )
        if r.returncode != 0:
            print(r.stderr[-3000:], file=sys.stderr)
            return 1
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(f"[memory_plan] {json.dumps(rows[-1])}", file=sys.stderr, flush=True)
    text = table(rows, args.device)
    print(text)
    if args.write:
        path = REPO / "BENCHMARKS.md"
        doc = path.read_text()
        if BEGIN not in doc:
            raise SystemExit(f"{path} has no {BEGIN} ... {END} block to replace")
        head, rest = doc.split(BEGIN, 1)
        path.write_text(head + BEGIN + "\n" + text + "\n" + END + rest.split(END, 1)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
