"""bench/learner: one learner step against a plain reference step written here, on the same random weights
and the same sequences, each variant in a fresh child process (so peak memory is its own).

ours       toolrl's Trainer.step: sequences packed into micro-batches by a token budget (no padding),
           log-probs of the sampled tokens only, in chunks (never [tokens x vocab] logits), bf16 autocast
           over fp32 master weights, fused AdamW.
reference  what a plain PyTorch/transformers step does: Hugging Face Qwen2ForCausalLM (SDPA attention),
           right-padded [B, L] micro-batches, full [B, L, V] logits, log_softmax + gather, the same
           on-policy GRPO token-mean loss, bf16 autocast over fp32 weights, fused AdamW.

    python3 bench/learner/run.py                   # GPU: Qwen2.5-0.5B and 1.5B shapes; CPU: a tiny shape
    python3 bench/learner/run.py --shapes qwen2.5-1.5b --steps 5

Needs only torch, transformers and safetensors (the machine's python3, no venv) and the repo's files.
Prints one JSON summary on stdout (progress on stderr). On a CPU only the ratios mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "gpu-worker"))

SHAPES = {
    # Qwen2.5 dimensions (config.json of the released checkpoints), random weights.
    "qwen2.5-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                         num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "qwen2.5-1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                         num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    # CPU: small layers, a real-sized vocabulary so the logits matter as they do at scale.
    "tiny": dict(hidden_size=128, intermediate_size=384, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=32768, tie_word_embeddings=True),
    # The quickstart's model (model.path: tiny): its learner steps are ~15k tokens of 150-250-token sequences.
    "quickstart": dict(hidden_size=128, intermediate_size=384, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, vocab_size=1024, tie_word_embeddings=True),
}  # fmt: skip
# Dense bf16 tensor-core peak (FLOP/s) by device name.
PEAK_FLOPS = {
    "H100": 989.4e12,
    "H200": 989.4e12,
    "A100": 312e12,
    "L40S": 362e12,
    "A10G": 125e12,
}


def hf_config(shape: str) -> dict:
    d = SHAPES[shape]
    return {
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        **d,
        "head_dim": d["hidden_size"] // d["num_attention_heads"],
        "rms_norm_eps": 1e-6,
        "rope_theta": 1_000_000.0,
        "max_position_embeddings": 32768,
        "hidden_act": "silu",
        "attention_dropout": 0.0,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "use_sliding_window": False,
    }


def make_sequences(
    n: int,
    min_len: int,
    max_len: int,
    vocab: int,
    response_frac: float,
    seed: int,
    group_size: int = 1,
    shared_prompts: bool = False,
):
    """n (token ids, number of trailing sampled tokens) with lengths uniform in [min_len, max_len]. With
    shared_prompts, the sequences of each group of group_size begin with the same prompt (its first sequence's),
    as a GRPO group's samples do, and differ in their sampled tokens."""
    rng = random.Random(seed)
    out = []
    prompt: list[int] = []
    for k in range(n):
        length = rng.randint(min_len, max_len)
        n_resp = max(1, int(length * response_frac))
        ids = [rng.randrange(2, vocab) for _ in range(length)]
        if shared_prompts:
            if k % group_size == 0:
                prompt = ids[: length - n_resp]
            ids = prompt + ids[length - n_resp :]
        out.append((ids, n_resp))
    return out


def model_flops(cfg: dict, seqs, train: bool = True) -> float:
    """FLOPs a training step needs: 6 x matmul params per token (all tokens), 6 x V x H per sampled token
    (the LM head is needed only where there is a loss), causal attention 6 x layers x H x (L/2) per token."""
    h, i, nl, v = (
        cfg["hidden_size"],
        cfg["intermediate_size"],
        cfg["num_hidden_layers"],
        cfg["vocab_size"],
    )
    kv = cfg["num_key_value_heads"] * (h // cfg["num_attention_heads"])
    per_layer = h * h * 2 + h * kv * 2 + 3 * h * i  # q, o, k, v, gate/up/down
    total = 0.0
    for ids, n_resp in seqs:
        length = len(ids)
        total += 6 * nl * per_layer * length + 6 * v * h * n_resp + 6 * nl * h * length * length / 2
    return total


def _rss_gb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30


def child(args) -> dict:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from steps import run_ours, run_reference  # bench/learner/steps.py (the script's folder is on sys.path)

    device = args.device
    cfg = hf_config(args.shape)
    seqs = make_sequences(
        args.seqs,
        args.min_len,
        args.max_len,
        cfg["vocab_size"],
        args.response_frac,
        args.seed,
        args.group_size,
        args.shared_prompts,
    )
    rng = random.Random(args.seed + 1)
    rewards = [float(rng.random() < 0.5) for _ in seqs]
    torch.manual_seed(args.seed)
    cuda = device.startswith("cuda")
    build = run_ours if args.variant == "ours" else run_reference
    try:
        step = build(args, cfg, seqs, rewards, device)
        rss_before = _rss_gb()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        first_loss = step()  # warm-up (allocates optimizer state, autotunes kernels)
        if cuda:
            torch.cuda.synchronize()
            # what stays between steps: weights, gradients, optimizer state (16 bytes a parameter in both)
            resident = torch.cuda.memory_allocated()
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            step()
        if cuda:
            torch.cuda.synchronize()
        elapsed = (time.perf_counter() - t0) / args.steps
        cpu_s = (time.process_time() - c0) / args.steps
    except torch.OutOfMemoryError as e:
        return {
            "variant": args.variant,
            "shape": args.shape,
            "oom": str(e).splitlines()[0],
        }
    tokens = sum(len(ids) for ids, _ in seqs)
    out = {
        "variant": args.variant,
        "shape": args.shape,
        "step_s": elapsed,
        "tokens_per_s": tokens / elapsed,
        # Tokens per CPU-second (all threads): what a loaded machine distorts least (other processes' time is not
        # counted); with --threads 1 it is the work itself, with more it includes threads waiting for each other.
        "tokens_per_cpu_s": tokens / cpu_s,
        "first_loss": first_loss,
        "flops_per_step": model_flops(cfg, seqs),
    }
    if cuda:
        out["peak_gb"] = torch.cuda.max_memory_allocated() / 2**30
        # the part the step's implementation controls: activations, logits, temporaries
        out["working_gb"] = (torch.cuda.max_memory_allocated() - resident) / 2**30
        name = torch.cuda.get_device_name()
        peak = next((v for k, v in PEAK_FLOPS.items() if k in name), None)
        out["device"] = name
        out["mfu"] = out["flops_per_step"] / elapsed / peak if peak else None
    else:
        # peak RSS of the steps above the process before them (imports and weights differ between the variants)
        out["peak_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20 - rss_before
        out["device"] = "cpu"
    return out


def _public(r: dict) -> dict:
    return {
        k: (round(v, 4) if isinstance(v, float) else v)
        for k, v in r.items()
        if k not in ("variant", "shape", "ckpt", "attention")
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    p.add_argument("--shapes", help="comma-separated: qwen2.5-0.5b, qwen2.5-1.5b, tiny")
    p.add_argument("--steps", type=int, default=None, help="timed steps after one warm-up")
    p.add_argument(
        "--seqs",
        type=int,
        default=None,
        help="sequences per step (groups of --group-size)",
    )
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument(
        "--shared-prompts",
        action="store_true",
        help="the sequences of a group share their prompt, as GRPO samples do (ours shares it off CUDA)",
    )
    p.add_argument("--min-len", type=int, default=None)
    p.add_argument("--max-len", type=int, default=None)
    p.add_argument(
        "--response-frac",
        type=float,
        default=0.6,
        help="sampled share of each sequence (the rest: prompt, tool results)",
    )
    p.add_argument(
        "--micro-batch-tokens",
        type=int,
        default=None,
        help="ours: token budget per packed micro-batch",
    )
    p.add_argument(
        "--ref-micro-seqs",
        type=int,
        default=None,
        help="reference: sequences per padded micro-batch",
    )
    p.add_argument("--chunk", type=int, default=None, help="ours: rows of logits per chunk")
    p.add_argument("--grad-ckpt", action="store_true", help="ours: gradient checkpointing")
    p.add_argument(
        "--attention",
        default="auto",
        help="ours: packed attention backend(s), comma-separated, each a variant: auto, padded, per_seq, sdpa",
    )
    p.add_argument(
        "--threads", type=int, default=None, help="torch intra-op threads in both (default: torch's)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variant", choices=("ours", "ref"), help=argparse.SUPPRESS)
    p.add_argument("--shape", help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.variant:
        print(json.dumps(child(args)))
        return 0

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    gpu = device.startswith("cuda")
    shapes = (args.shapes or ("qwen2.5-0.5b,qwen2.5-1.5b" if gpu else "tiny")).split(",")
    # GPU: 64 sequences of 512-4096 tokens (~146k per step); the reference pads 2 length-sorted sequences per
    # micro-batch (<= 8k slots), ours packs 8k-token micro-batches. CPU: 16 sequences of 64-256 tokens, 4 per
    # padded micro-batch against 1k-token packs. The logits chunk keeps the same share of a micro-batch.
    defaults = (
        dict(
            steps=3,
            seqs=64,
            min_len=512,
            max_len=4096,
            micro_batch_tokens=8192,
            ref_micro_seqs=2,
            chunk=2048,
        )
        if gpu
        else dict(
            steps=2,
            seqs=16,
            min_len=64,
            max_len=256,
            micro_batch_tokens=1024,
            ref_micro_seqs=4,
            chunk=256,
        )
    )
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    # GPU: ours also with gradient checkpointing (an option of the learner; the reference has none).
    backends = args.attention.split(",")
    variants = [("ref", False, "auto")] + [("ours", False, a) for a in backends]
    variants += [("ours", True, backends[0])] if gpu or args.grad_ckpt else []
    results = []
    for shape in shapes:
        for variant, ckpt, attention in variants:
            cmd = [
                sys.executable,
                __file__,
                "--variant",
                variant,
                "--shape",
                shape,
                "--device",
                device,
            ]
            for k in ("steps", "seqs", "group_size", "min_len", "max_len", "response_frac", "micro_batch_tokens",
                      "ref_micro_seqs", "chunk", "seed"):  # fmt: skip
                cmd += [f"--{k.replace('_', '-')}", str(getattr(args, k))]
            cmd += ["--attention", attention]
            if args.shared_prompts:
                cmd += ["--shared-prompts"]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            if ckpt:
                cmd.append("--grad-ckpt")
            print(
                f"bench/learner: {shape} {variant}{f' [{attention}]' if variant == 'ours' else ''}"
                f"{' +grad-ckpt' if ckpt else ''} ...",
                file=sys.stderr,
                flush=True,
            )
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                results.append(
                    {
                        "variant": variant,
                        "ckpt": ckpt,
                        "shape": shape,
                        "error": proc.stderr.strip().splitlines()[-1:],
                    }
                )
                continue
            results.append(
                {**json.loads(proc.stdout.strip().splitlines()[-1]), "ckpt": ckpt, "attention": attention}
            )
    summary = {
        "device": device,
        "settings": {k: getattr(args, k) for k in (*defaults, "threads")},
        "shapes": {},
    }
    for shape in shapes:
        ref = next(r for r in results if r["shape"] == shape and r["variant"] == "ref")
        s = {"reference": _public(ref)} if gpu else {"note": "CPU: ratios only"}
        for ours in (r for r in results if r["shape"] == shape and r["variant"] == "ours"):
            name = ("ours+grad_ckpt" if ours["ckpt"] else "ours") + (
                f"[{ours['attention']}]" if len(backends) > 1 else ""
            )
            o = {}
            if "tokens_per_s" in ours and "tokens_per_s" in ref:
                o["speedup"] = round(ours["tokens_per_s"] / ref["tokens_per_s"], 2)
                o["speedup_cpu_time"] = round(ours["tokens_per_cpu_s"] / ref["tokens_per_cpu_s"], 2)
                o["peak_memory_ratio"] = round(ours["peak_gb"] / ref["peak_gb"], 3)
                if "working_gb" in ours and "working_gb" in ref:
                    o["working_memory_ratio"] = round(ours["working_gb"] / ref["working_gb"], 3)
                o["loss_diff"] = abs(ours["first_loss"] - ref["first_loss"])
            if gpu:
                o.update(_public(ours))
            s[name] = o
        summary["shapes"][shape] = s
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
