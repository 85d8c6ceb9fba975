"""bench/learner: one learner step against a plain reference step written here, on the same weights and the
same sequences, each variant in a fresh child process (so peak memory is its own).

ours       toolrl's Trainer.step: sequences packed into micro-batches by a token budget (no padding; on a CPU a
           group's samples share their prompt), log-probs of the sampled tokens only, in chunks (never
           [tokens x vocab] logits), bf16 autocast over fp32 master weights where the device's bf16 units are faster
           (a GPU, a CPU with AMX or with AVX512-BF16 on an AMD core; fp32 elsewhere), AdamW.
reference  what a plain PyTorch/transformers step does: Hugging Face's model class for the shape
           (Qwen2ForCausalLM, LlamaForCausalLM; SDPA attention), right-padded [B, L] micro-batches, full
           [B, L, V] logits, log_softmax + gather, the same on-policy GRPO token-mean loss, AdamW; bf16 autocast
           over fp32 weights on a GPU, fp32 on a CPU.

    python3 bench/learner/run.py                   # GPU: Qwen2.5-0.5B and 1.5B shapes; CPU: a tiny shape
    python3 bench/learner/run.py --shapes qwen2.5-1.5b --steps 5
    python3 bench/learner/run.py --shapes smollm2-135m --ours default,fp32,bf16+ckpt   # variants: child.py
    python3 bench/learner/run.py --shapes smollm2-135m --ours default,jemalloc         # the learner's allocator

`smollm2-135m` uses SmolLM2-135M-Instruct's real weights when they are installed (shapes.real_weights; or
--weights DIR), random weights of its shape otherwise: speed and memory do not depend on the values.
Needs only torch, transformers and safetensors (the machine's python3, no venv) and the repo's files.
Prints one JSON summary on stdout (progress on stderr). On a CPU only the ratios mean anything. Each ours variant
is also checked against the reference: the mean log-prob of the sampled tokens under the starting weights
(`logprob_diff`) and, on a CPU (or with --compare-grads), the first step's gradients over every parameter
(`grad_rel_err`, `grad_cos`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "gpu-worker"))

from shapes import SHAPES, real_weights  # noqa: E402 (bench/learner/shapes.py, beside this script)


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


# Sizes of a step by device (and shape): sequences, their lengths, the reference's padded micro-batch (sequences)
# and ours' packs (tokens), the log-prob chunk rows.
GPU_DEFAULTS = dict(
    steps=3, seqs=64, min_len=512, max_len=4096, response_frac=0.6, shared_prompts=False, micro_batch_tokens=8192,
    ref_micro_seqs=2, chunk=2048,
)  # fmt: skip
CPU_DEFAULTS = dict(
    steps=2, seqs=16, min_len=64, max_len=256, response_frac=0.6, shared_prompts=False, micro_batch_tokens=1024,
    ref_micro_seqs=4, chunk=256,
)  # fmt: skip
CPU_SHAPE_DEFAULTS = {
    # Two GRPO groups of 8 shaped as examples/smollm2's (a ~300-token prompt with the tool's schema, ~100-140
    # sampled tokens each, ~6.4k tokens a step), its 2,048-token packs; the reference pads 4 length-sorted sequences
    # a micro-batch (~1.9k slots).
    "smollm2-135m": dict(
        min_len=320, max_len=480, response_frac=0.3, shared_prompts=True, micro_batch_tokens=2048
    ),
}


def _public(r: dict) -> dict:
    return {
        k: (round(v, 4) if isinstance(v, float) else v)
        for k, v in r.items()
        if k not in ("variant", "shape", "spec", "grads_file")
    }


def _sequences(args):
    def make(vocab: int):
        return make_sequences(
            args.seqs, args.min_len, args.max_len, vocab, args.response_frac, args.seed, args.group_size,
            args.shared_prompts,
        )  # fmt: skip

    return make


def _child(args) -> int:
    from child import run_child  # bench/learner/child.py

    print(json.dumps(run_child(args, _sequences(args))))
    return 0


def _child_env(spec: str) -> dict[str, str]:
    """A variant's environment: the C library's malloc, or jemalloc preloaded for a `jemalloc` variant."""
    from toolrl_learner import allocator

    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", allocator.DONE)}
    env["PYTHONUNBUFFERED"] = "1"
    if "jemalloc" not in spec.split("+"):
        return env
    preload = allocator.preload_env(env)
    if preload is None:
        raise SystemExit(
            "bench/learner: no jemalloc for the `jemalloc` variant (npm run setup, or TOOLRL_JEMALLOC)"
        )
    return preload


def _compare(ours: dict, ref: dict, gpu: bool) -> dict:
    from child import compare_grads

    o: dict = {}
    if "tokens_per_s" not in ours or "tokens_per_s" not in ref:
        return {k: v for k, v in ours.items() if k in ("oom", "error")}
    o["speedup"] = round(ours["tokens_per_s"] / ref["tokens_per_s"], 2)
    o["speedup_cpu_time"] = round(ours["tokens_per_cpu_s"] / ref["tokens_per_cpu_s"], 2)
    o["peak_memory_ratio"] = round(ours["peak_gb"] / ref["peak_gb"], 3)
    if "working_gb" in ours and "working_gb" in ref:
        o["working_memory_ratio"] = round(ours["working_gb"] / ref["working_gb"], 3)
    o["compute_dtype"] = ours["compute_dtype"]
    o["loss_diff"] = abs(ours["first_loss"] - ref["first_loss"])
    o["logprob_diff"] = abs(ours["first_logprob_mean"] - ref["first_logprob_mean"])
    if ours.get("grads_file") and ref.get("grads_file"):
        o.update(
            {
                k: (float(f"{v:.3g}") if isinstance(v, float) else v)
                for k, v in compare_grads(ours["grads_file"], ref["grads_file"]).items()
            }
        )
    if gpu:
        o.update(_public(ours))
    else:
        o["peak_gb"] = round(ours["peak_gb"], 3)
    return o


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    p.add_argument("--shapes", help=f"comma-separated: {', '.join(SHAPES)}")
    p.add_argument("--steps", type=int, default=None, help="timed steps after one warm-up")
    p.add_argument("--seqs", type=int, default=None, help="sequences per step (groups of --group-size)")
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument(
        "--shared-prompts",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the sequences of a group share their prompt, as GRPO samples do (ours shares it off CUDA); "
        "default: on for smollm2-135m on a CPU",
    )
    p.add_argument("--min-len", type=int, default=None)
    p.add_argument("--max-len", type=int, default=None)
    p.add_argument(
        "--response-frac",
        type=float,
        default=None,
        help="sampled share of each sequence (the rest: prompt, tools); default 0.6, 0.3 for smollm2-135m on a CPU",
    )
    p.add_argument(
        "--micro-batch-tokens", type=int, default=None, help="ours: token budget per packed micro-batch"
    )
    p.add_argument(
        "--ref-micro-seqs", type=int, default=None, help="reference: sequences per padded micro-batch"
    )
    p.add_argument("--chunk", type=int, default=None, help="ours: rows of logits per chunk")
    p.add_argument(
        "--grad-ckpt", action="store_true", help="ours: also a variant with gradient checkpointing"
    )
    p.add_argument(
        "--attention",
        default="auto",
        help="ours: packed attention backend(s), comma-separated, each a variant: auto, padded, per_seq, sdpa",
    )
    p.add_argument(
        "--ours",
        default=None,
        help="ours' variants, comma-separated specs (child.py: default, fp32, bf16, ckpt, lora16, chunk=N, mbt=N, "
        "keep=MiB, attn=NAME, '+'-joined); replaces --attention and --grad-ckpt",
    )
    p.add_argument(
        "--weights", default=None, help="a model folder whose weights (and shape) both variants load"
    )
    p.add_argument(
        "--compare-grads",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compare each ours variant's first-step gradients with the reference's (default: on a CPU)",
    )
    p.add_argument(
        "--threads", type=int, default=None, help="torch intra-op threads in both (default: torch's)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variant", choices=("ours", "ref"), help=argparse.SUPPRESS)
    p.add_argument("--shape", help=argparse.SUPPRESS)
    p.add_argument("--spec", default="default", help=argparse.SUPPRESS)
    p.add_argument("--grads-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.variant:
        return _child(args)

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    gpu = device.startswith("cuda")
    shapes = (args.shapes or ("qwen2.5-0.5b,qwen2.5-1.5b" if gpu else "tiny")).split(",")
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        p.error(f"unknown shape(s) {', '.join(unknown)}; one of {', '.join(SHAPES)}")
    if args.ours:
        specs = args.ours.split(",")
    else:
        specs = [f"attn={a}" if a != "auto" else "default" for a in args.attention.split(",")]
        specs += ["ckpt" if specs[0] == "default" else f"{specs[0]}+ckpt"] if gpu or args.grad_ckpt else []
    compare_grads = (not gpu) if args.compare_grads is None else args.compare_grads
    results = []
    summary: dict = {"device": device, "shapes": {}}
    for shape in shapes:
        sizes = {
            **(GPU_DEFAULTS if gpu else CPU_DEFAULTS),
            **({} if gpu else CPU_SHAPE_DEFAULTS.get(shape, {})),
        }
        settings = argparse.Namespace(**vars(args))
        for k, v in sizes.items():
            if getattr(settings, k) is None:
                setattr(settings, k, v)
        weights = Path(args.weights) if args.weights else real_weights(shape)
        tmp = tempfile.TemporaryDirectory(prefix="bench-learner-grads-")
        results = []
        for variant, spec in [("ref", "default"), *(("ours", s) for s in specs)]:
            cmd = [sys.executable, __file__, "--variant", variant, "--shape", shape, "--device", device,
                   "--spec", spec]  # fmt: skip
            for k in ("steps", "seqs", "group_size", "min_len", "max_len", "response_frac", "micro_batch_tokens",
                      "ref_micro_seqs", "chunk", "seed"):  # fmt: skip
                cmd += [f"--{k.replace('_', '-')}", str(getattr(settings, k))]
            if settings.shared_prompts:
                cmd += ["--shared-prompts"]
            if settings.threads:
                cmd += ["--threads", str(settings.threads)]
            if weights is not None:
                cmd += ["--weights", str(weights)]
            grads = None
            if compare_grads and "lora" not in spec:  # LoRA's trainable parameters are not the reference's
                grads = str(Path(tmp.name) / f"{variant}-{len(results)}.safetensors")
                cmd += ["--grads-out", grads]
            label = "reference" if variant == "ref" else f"ours[{spec}]"
            print(f"bench/learner: {shape} {label} ...", file=sys.stderr, flush=True)
            proc = subprocess.run(cmd, capture_output=True, text=True, env=_child_env(spec), check=False)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                results.append(
                    {"variant": variant, "spec": spec, "error": proc.stderr.strip().splitlines()[-1:]}
                )
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"bench/learner: {shape} {label}: {json.dumps(r)}", file=sys.stderr, flush=True)
            results.append({**r, "spec": spec, "grads_file": grads})
        ref = results[0]
        s: dict = {
            "weights": str(weights) if weights else "random",
            "settings": {k: getattr(settings, k) for k in (*sizes, "threads")},
        }
        s["reference"] = (
            _public(ref) if gpu or "error" in ref else {"peak_gb": round(ref.get("peak_gb", 0), 3)}
        )
        if not gpu:
            s["note"] = "CPU: ratios only (the machine's load moves wall-clock; tokens per CPU-second less)"
        for ours in results[1:]:
            name = "ours" if ours["spec"] == "default" else f"ours[{ours['spec']}]"
            s[name] = _compare(ours, ref, gpu) if "error" not in ours else {"error": ours["error"]}
        summary["shapes"][shape] = s
        tmp.cleanup()
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
