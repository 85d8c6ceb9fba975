"""bench/learner/sharded.py: the sharded learner (FSDP2 under torchrun, gpu-worker/toolrl_learner/sharded) at 1 and at N
ranks on the same batch: tokens/s per step, the speed-up N ranks give over one, and MFU on GPUs.

    gpu-worker/.venv/bin/python bench/learner/sharded.py --gpus 8 --shape qwen2.5-1.5b          # 8 GPUs, NCCL
    gpu-worker/.venv/bin/python bench/learner/sharded.py --gpus 2 --shape tiny --device cpu     # CPU ranks, gloo

Each rank count runs in its own torchrun; every rank builds the same random weights (seeded) and the step is the
learner's own (Trainer.step with the sharded split). MFU = the step's FLOPs (bench/learner/run.py's count) /
step time / (N x the GPU's dense bf16 peak). On a CPU the ranks share the machine's cores: only the fact that
the step runs, and its cost there, mean anything. Prints one JSON summary on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "gpu-worker"))
sys.path.insert(0, str(HERE))


def worker(args) -> None:
    import torch
    from run import make_sequences  # bench/learner/run.py
    from shapes import PEAK_FLOPS, hf_config, model_flops  # bench/learner/shapes.py

    from toolrl_learner.config import LearnerConfig
    from toolrl_learner.model.config import ModelConfig
    from toolrl_learner.model.modeling import CausalLM, init_weights, skip_init
    from toolrl_learner.sharded.shard import shard_policy
    from toolrl_learner.sharded.world import init_world, shutdown
    from toolrl_learner.train.policy import Policy
    from toolrl_learner.train.synthetic import group, trajectory

    world = init_world(args.device)
    hf = hf_config(args.shape)
    shape = ModelConfig.from_hf(hf)
    seqs = make_sequences(args.seqs, args.min_len, args.max_len, hf["vocab_size"], 0.6, seed=0)
    groups = []
    for i in range(0, len(seqs), args.group_size):
        trajs = [
            trajectory(ids[: len(ids) - n], [ids[len(ids) - n :]], float(j % 2))
            for j, (ids, n) in enumerate(seqs[i : i + args.group_size])
        ]
        groups.append(group("bench", f"e0-p{i}", trajs))
    cfg = LearnerConfig(
        model_path=args.shape,
        dtype="bf16" if world.device.type == "cuda" else "fp32",
        micro_batch_tokens=args.micro_batch_tokens,
        gradient_checkpointing=args.grad_ckpt,
        lr=1e-6,
        batch_prompts=len(groups),
    )
    with skip_init():
        model = CausalLM(shape)
    init_weights(model, 0)
    policy = Policy(cfg, REPO, world.device, base=model)
    trainer = shard_policy(policy, world, cfg)
    trainer.step(groups, 0)  # warm-up: optimizer state, kernels
    if world.device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        trainer.step(groups, 0)
    if world.device.type == "cuda":
        torch.cuda.synchronize()
    step_s = (time.perf_counter() - t0) / args.steps
    if world.leader:
        tokens = sum(len(ids) for ids, _ in seqs)
        out = {"ranks": world.size, "step_s": step_s, "tokens_per_s": tokens / step_s}
        if world.device.type == "cuda":
            name = torch.cuda.get_device_name()
            peak = next((v for k, v in PEAK_FLOPS.items() if k in name), None)
            out["device"] = name
            out["mfu"] = model_flops(hf, seqs) / step_s / (peak * world.size) if peak else None
            out["peak_gb"] = torch.cuda.max_memory_allocated() / 2**30
        print(json.dumps(out), flush=True)
    shutdown(world)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", type=int, default=2, help="N: the ranks compared with one")
    p.add_argument(
        "--shape",
        default="tiny",
        help="a shape of bench/learner/shapes.py: qwen2.5-0.5b, qwen2.5-1.5b, smollm2-135m, tiny",
    )
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--seqs", type=int, default=None)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--min-len", type=int, default=None)
    p.add_argument("--max-len", type=int, default=None)
    p.add_argument("--micro-batch-tokens", type=int, default=8192)
    p.add_argument("--grad-ckpt", action="store_true")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    gpu = args.device != "cpu" and _cuda()
    args.seqs = args.seqs or (64 if gpu else 16)
    args.min_len = args.min_len or (512 if gpu else 64)
    args.max_len = args.max_len or (4096 if gpu else 256)
    if args.worker:
        worker(args)
        return 0
    results = []
    for n in (
        (1, args.gpus) if args.gpus > 1 else (1,)
    ):  # one GPU: the sharded path at 1 rank (NCCL all the same)
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}", __file__,
               "--worker", *sys.argv[1:]]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // n))}
        print(f"[bench/learner/sharded] {n} rank(s) ...", file=sys.stderr, flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if r.returncode != 0:
            print(r.stderr[-4000:], file=sys.stderr)
            return 1
        results.append(json.loads(r.stdout.strip().splitlines()[-1]))
    one, many = results[0], results[-1]
    summary = {
        "shape": args.shape,
        "one": one,
        "many": many,
        "speedup": many["tokens_per_s"] / one["tokens_per_s"],
    }
    print(json.dumps(summary))
    return 0


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    sys.exit(main())
