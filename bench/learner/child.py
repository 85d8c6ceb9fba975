"""One variant of bench/learner/run.py in its own process: build the model, run a warm-up step and the timed
steps, measure the peak memory the steps add, and (when asked) save the gradients the first step left.

A variant of ours is a spec: `default` or '+'-joined settings over the learner's defaults:
    fp32 | bf16       model.dtype (bf16, the default, is autocast over fp32 master weights where the device has
                      bf16 units: a GPU, or a CPU with AVX512-BF16 / AMX; else fp32)
    ckpt              gradient checkpointing
    lora<r>           LoRA of rank r (alpha 2r) on every projection
    attn=<backend>    packed attention backend (model/attention.py)
    chunk=<rows>      log-prob chunk rows (trainer.logprob_chunk_size)
    mbt=<tokens>      micro-batch token budget (trainer.micro_batch_tokens)
    keep=<MiB>        largest [tokens x vocabulary] log-softmax the log-prob head keeps for its backward
                      instead of recomputing it (model/logprobs.py SAVE_BYTES; keep=0 always recomputes; with ckpt
                      the head always recomputes, as the learner does under gradient checkpointing)
    jemalloc          the variant's process runs with jemalloc preloaded, as the learner's training commands do
                      (toolrl_learner/allocator.py); every other variant, and the reference, on the C library's malloc
and, to measure what each of the learner's CPU choices gives, each undone on its own:
    attn-bf16         attention in the autocast dtype on a CPU (model/attention.py CPU_FP32_ATTENTION off)
    tree-mask         a shared-prefix unit as one masked attention row (attention.py SPLIT_SHARED_PREFIX off)
    adam-foreach      AdamW's default (foreach) update instead of the fused one
"""

from __future__ import annotations

import os
import random
import resource
import time
from pathlib import Path

from shapes import PEAK_FLOPS, hf_config, model_flops


def parse_spec(spec: str, args) -> dict:
    """The settings a spec changes, over the command line's."""
    out: dict = {
        "dtype": "bf16",
        "grad_ckpt": args.grad_ckpt,
        "lora_rank": None,
        "attention": "auto",
        "chunk": args.chunk,
        "micro_batch_tokens": args.micro_batch_tokens,
        "keep_mib": None,
        "undo": [],
        "jemalloc": False,
    }
    for part in spec.split("+"):
        if part in ("", "default"):
            continue
        if part in ("fp32", "bf16"):
            out["dtype"] = part
        elif part == "ckpt":
            out["grad_ckpt"] = True
        elif part == "jemalloc":
            out["jemalloc"] = True
        elif part in ("attn-bf16", "tree-mask", "adam-foreach"):
            out["undo"].append(part)
        elif part.startswith("lora") and part[4:].isdigit():
            out["lora_rank"] = int(part[4:])
        elif "=" in part:
            key, _, value = part.partition("=")
            names = {"attn": "attention", "chunk": "chunk", "mbt": "micro_batch_tokens", "keep": "keep_mib"}
            if key not in names:
                raise SystemExit(f"bench/learner: unknown setting {key!r} in variant {spec!r}")
            out[names[key]] = value if key == "attn" else int(value)
        else:
            raise SystemExit(f"bench/learner: unknown setting {part!r} in variant {spec!r} (see child.py)")
    return out


def _undo(choices: list[str]) -> None:
    """Turn off the learner's CPU choices named (the spec's attn-bf16, tree-mask, adam-foreach) in this process."""
    from toolrl_learner.model import attention
    from toolrl_learner.train import trainer

    if "attn-bf16" in choices:
        attention.CPU_FP32_ATTENTION = False
    if "tree-mask" in choices:
        attention.SPLIT_SHARED_PREFIX = False
    if "adam-foreach" in choices:
        build = trainer.build_optimizer

        def foreach(named, lr, wd):
            opt = build(named, lr, wd)
            for group in opt.param_groups:
                group["fused"], group["foreach"] = None, True
            opt.defaults["fused"] = None
            return opt

        trainer.build_optimizer = foreach


def _rss_gb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) so the peak read later is the steps' own; False where refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_gb(reset: bool) -> float:
    if reset:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run_child(args, seqs_fn) -> dict:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from steps import run_ours, run_reference

    device = args.device
    weights = Path(args.weights) if args.weights else None
    cfg = hf_config(args.shape, weights)
    seqs = seqs_fn(cfg["vocab_size"])
    rng = random.Random(args.seed + 1)
    rewards = [float(rng.random() < 0.5) for _ in seqs]
    torch.manual_seed(args.seed)
    cuda = device.startswith("cuda")
    if args.variant == "ours":
        settings = parse_spec(args.spec, args)
        for k in ("grad_ckpt", "chunk", "micro_batch_tokens"):
            setattr(args, k, settings[k])
        args.dtype, args.lora_rank, args.attention = (
            settings["dtype"],
            settings["lora_rank"],
            settings["attention"],
        )
        if settings["keep_mib"] is not None:
            from toolrl_learner.model import logprobs

            defaults = list(logprobs.token_logprobs.__defaults__ or ())
            defaults[-1] = settings["keep_mib"] * 2**20  # save_bytes, the last keyword
            logprobs.token_logprobs.__defaults__ = tuple(defaults)
        _undo(settings["undo"])
        from toolrl_learner.allocator import jemalloc_loaded

        if settings["jemalloc"] != jemalloc_loaded():
            raise SystemExit(
                f"bench/learner: variant {args.spec!r} but jemalloc loaded is {jemalloc_loaded()}"
            )
        build = run_ours
    else:
        build = run_reference
    try:
        step, model, autocast = build(args, cfg, seqs, rewards, device, weights)
        rss_before = _rss_gb()
        reset = _reset_peak()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        first_loss, first_logp = step()  # warm-up (allocates optimizer state, autotunes kernels)
        if cuda:
            torch.cuda.synchronize()
            # what stays between steps: weights, gradients, optimizer state (16 bytes a parameter in both)
            resident = torch.cuda.memory_allocated()
        warmup_peak = _peak_rss_gb(reset)
        if args.grads_out:
            _save_grads(model, args.grads_out)  # its serialisation buffer is not the step's: out of the peak
            reset = _reset_peak()
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            step()
        if cuda:
            torch.cuda.synchronize()
        elapsed = (time.perf_counter() - t0) / args.steps
        cpu_s = (time.process_time() - c0) / args.steps
    except torch.OutOfMemoryError as e:
        return {"variant": args.variant, "shape": args.shape, "oom": str(e).splitlines()[0]}
    tokens = sum(len(ids) for ids, _ in seqs)
    out = {
        "variant": args.variant,
        "shape": args.shape,
        "weights": str(weights) if weights else "random",
        "compute_dtype": "bf16" if autocast is not None or cuda else "fp32",
        "step_s": elapsed,
        "tokens_per_s": tokens / elapsed,
        # Tokens per CPU-second (all threads): what a loaded machine distorts least (other processes' time is not
        # counted); with --threads 1 it is the work itself, with more it includes threads waiting for each other.
        "tokens_per_cpu_s": tokens / cpu_s,
        "first_loss": first_loss,
        # mean log-prob of the sampled tokens under the starting weights (the loss that depends on the model;
        # the on-policy pg_loss is -mean(advantage) whatever the model computes)
        "first_logprob_mean": first_logp,
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
        # peak RSS of the steps above the process before them (imports and weights differ between the variants):
        # gradients, AdamW state, activations, logits, temporaries
        out["peak_gb"] = max(warmup_peak, _peak_rss_gb(reset)) - rss_before
        out["resident_before_gb"] = rss_before
        out["device"] = "cpu"
    return out


def _save_grads(model, path: str) -> None:
    """The first step's gradients (after clipping, before the next step clears them), fp32, by parameter name."""
    import torch
    from safetensors.torch import save_file

    grads = {
        n: p.grad.detach().to("cpu", torch.float32).contiguous()
        for n, p in model.named_parameters()
        if p.grad is not None
    }
    save_file(grads, path)


def compare_grads(ours_path: str, ref_path: str) -> dict:
    """How far ours' gradients are from the reference's: relative L2 error and cosine over all parameters, and the
    worst tensor's relative error (among tensors holding at least 0.1% of the gradient's norm)."""
    from safetensors.torch import load_file

    ours, ref = load_file(ours_path), load_file(ref_path)
    if set(ours) != set(ref):
        return {"grads": f"not comparable: {len(set(ours) ^ set(ref))} parameter names differ"}
    diff2 = ref2 = ours2 = dot = 0.0
    worst, worst_name = 0.0, ""
    per = {}
    for name, r in ref.items():
        o = ours[name].double()
        r = r.double()
        d2, n2 = float((o - r).pow(2).sum()), float(r.pow(2).sum())
        diff2, ref2, ours2, dot = (
            diff2 + d2,
            ref2 + n2,
            ours2 + float(o.pow(2).sum()),
            dot + float((o * r).sum()),
        )
        per[name] = (d2, n2)
    for name, (d2, n2) in per.items():
        if n2 >= 1e-6 * ref2 and (d2 / n2) ** 0.5 > worst:
            worst, worst_name = (d2 / n2) ** 0.5, name
    return {
        "grad_rel_err": (diff2 / ref2) ** 0.5 if ref2 else float("nan"),
        "grad_cos": dot / ((ours2 * ref2) ** 0.5) if ours2 and ref2 else float("nan"),
        "grad_norm_ratio": (ours2 / ref2) ** 0.5 if ref2 else float("nan"),
        "grad_worst_tensor_rel_err": worst,
        "grad_worst_tensor": worst_name,
    }
