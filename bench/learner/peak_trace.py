"""bench/learner/peak_trace.py: where in a learner step the CPU peak memory sits. One variant of ours (a
bench/learner spec, child.py) at one shape runs two steps (the first allocates AdamW's state) while a thread samples,
every half millisecond, the process's resident memory (/proc/self/statm) and what glibc's malloc holds live
(mallinfo2: in use plus mmapped blocks), each sample labelled by the phase of the step it falls in: the trainer's
phases (pack, forward, backward, optimizer; forward and backward numbered by micro-batch) and, inside them, the
log-prob head (":logprobs"). Prints, per phase, the peaks above the memory before the first step (GB), as
[resident, live]: resident minus live is what malloc keeps of freed memory, plus file pages the weights map.

    gpu-worker/.venv/bin/python bench/learner/peak_trace.py --shape smollm2-135m --spec bf16+ckpt [--threads N]

Sizes as bench/learner/run.py's on a CPU for the shape (smollm2-135m: two groups of 8 sharing a prompt, 2,048-token
packs, its real weights when installed). Linux with glibc only. Timings are not its business (the sampler costs).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import random
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import CPU_DEFAULTS, CPU_SHAPE_DEFAULTS, make_sequences  # noqa: E402 (beside this script)
from shapes import hf_config, real_weights  # noqa: E402


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]  # fmt: skip


class Sampler:
    """Peak resident and live bytes by label, sampled on a thread."""

    def __init__(self) -> None:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        self._mallinfo = libc.mallinfo2
        self._page = os.sysconf("SC_PAGE_SIZE")
        self.label = "before"
        self.peaks: dict[str, tuple[int, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def resident(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self._page

    def live(self) -> int:
        m = self._mallinfo()
        return m.uordblks + m.hblkhd

    def _run(self) -> None:
        while not self._stop.is_set():
            r, m, k = self.resident(), self.live(), self.label
            a, b = self.peaks.get(k, (0, 0))
            self.peaks[k] = (max(a, r), max(b, m))
            time.sleep(0.0005)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _label_phases(sampler: Sampler, step_index: list[int]) -> None:
    """Label the samples by the trainer's phases and the log-prob head inside them."""
    from toolrl_learner.model import logprobs
    from toolrl_learner.train import timing

    phase = timing.PhaseTimer.phase
    micro = [0]

    @contextlib.contextmanager
    def labelled(self, name):
        if name == "forward":
            micro[0] += 1
        if name == "pack":
            micro[0] = 0
        before = sampler.label
        sampler.label = f"step{step_index[0]}/{name}" + (
            f"#{micro[0]}" if name in ("forward", "backward") else ""
        )
        try:
            with phase(self, name):
                yield
        finally:
            sampler.label = before

    timing.PhaseTimer.phase = labelled
    head = logprobs._ChunkedLogprobs

    def wrap(fn):
        def inner(ctx, *args):
            before = sampler.label
            sampler.label = before + ":logprobs"
            try:
                return fn(ctx, *args)
            finally:
                sampler.label = before

        return staticmethod(inner)

    head.forward, head.backward = wrap(head.forward), wrap(head.backward)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="smollm2-135m")
    p.add_argument("--spec", default="bf16+ckpt", help="ours' variant (bench/learner/child.py)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    import torch
    from child import _undo, parse_spec
    from steps import run_ours

    if args.threads:
        torch.set_num_threads(args.threads)
    sizes = {**CPU_DEFAULTS, **CPU_SHAPE_DEFAULTS.get(args.shape, {})}
    weights = real_weights(args.shape)
    cfg = hf_config(args.shape, weights)
    seqs = make_sequences(
        sizes["seqs"], sizes["min_len"], sizes["max_len"], cfg["vocab_size"], sizes["response_frac"], args.seed, 8,
        sizes["shared_prompts"],
    )  # fmt: skip
    rng = random.Random(args.seed + 1)
    rewards = [float(rng.random() < 0.5) for _ in seqs]
    opts = argparse.Namespace(
        seed=args.seed, group_size=8, chunk=sizes["chunk"], micro_batch_tokens=sizes["micro_batch_tokens"],
        grad_ckpt=False,
    )  # fmt: skip
    spec = parse_spec(args.spec, opts)
    opts.grad_ckpt, opts.chunk, opts.micro_batch_tokens = (
        spec["grad_ckpt"],
        spec["chunk"],
        spec["micro_batch_tokens"],
    )
    opts.dtype, opts.lora_rank, opts.attention = spec["dtype"], spec["lora_rank"], spec["attention"]
    _undo(spec["undo"])
    torch.manual_seed(args.seed)
    sampler = Sampler()
    step_index = [0]
    _label_phases(sampler, step_index)
    step, _, _ = run_ours(opts, cfg, seqs, rewards, "cpu", weights)
    base_resident, base_live = sampler.resident(), sampler.live()
    sampler.start()
    for i in range(2):
        step_index[0] = i
        sampler.label = f"step{i}/other"
        step()
    sampler.stop()
    gb = 2**30
    peaks = {
        k: [round((r - base_resident) / gb, 3), round((m - base_live) / gb, 3)]
        for k, (r, m) in sampler.peaks.items()
        if k != "before"
    }
    top = max(peaks, key=lambda k: peaks[k][0])
    top_live = max(peaks, key=lambda k: peaks[k][1])
    out = {
        "shape": args.shape,
        "spec": args.spec,
        "weights": str(weights) if weights else "random",
        "before_gb": {"resident": round(base_resident / gb, 3), "live": round(base_live / gb, 3)},
        "peak_resident_in": top,
        "peak_live_in": top_live,
        "peaks_above_before_gb [resident, live]": peaks,
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
