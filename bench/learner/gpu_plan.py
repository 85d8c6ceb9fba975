"""bench/learner/gpu_plan.py: the learner's GPU measurements in one run, written as one table.

    python3 bench/learner/gpu_plan.py [--out-dir DIR] [--deadline S] [--write]   # on a machine with a GPU
    python3 bench/learner/gpu_plan.py --dry-run                                  # anywhere: what it would run

Steps, each a child process with its own time limit:
  1. tests     the learner tests that need CUDA (varlen flash attention against SDPA)
  2. learner   bench/learner/run.py on one GPU at SmolLM2-135M, Qwen2.5-0.5B and Qwen2.5-1.5B shapes: toolrl's step
               (and with gradient checkpointing) against the plain Hugging Face step; MFU, peak and working memory
  3. plan      bench/learner/memory_plan.py --device cuda: the memory planner against the measured GPU peak
  4. sharded   bench/learner/sharded.py: the sharded learner (FSDP2 over NCCL) at 1 rank and at every GPU of the
               machine (one GPU: 1 rank only, which still runs the NCCL path), Qwen2.5-1.5B shape

Writes DIR/gpu-plan.json (every step's output) and DIR/gpu-plan.md (the table) after every step, so a run cut short
keeps what it measured. A later run with the same DIR keeps the steps that succeeded and runs the others (--fresh:
all again), so with --deadline (seconds: no step starts, or runs, past it) the plan fits commands of limited length:
run it again until the table has no "not run". --write also puts the table into BENCHMARKS.md between the gpu-plan
markers. Needs torch, transformers, safetensors (and pytest for step 1) in the python it runs with.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SHAPES = ("smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b")
SHARDED_SHAPE = "qwen2.5-1.5b"
BEGIN, END = "<!-- gpu-plan:begin -->", "<!-- gpu-plan:end -->"


def steps(python: str, gpus: int, shapes: tuple[str, ...]) -> list[tuple[str, list[str], int]]:
    """(name, command, time limit in seconds) of every step, in order."""
    out = [
        (
            "tests",
            [python, "-m", "pytest", "-q", "gpu-worker/tests/test_model_on_cpu.py", "-k", "cuda"],
            240,
        )
    ]
    for shape in shapes:
        cmd = [
            python,
            "bench/learner/run.py",
            "--device",
            "cuda",
            "--shapes",
            shape,
            "--ours",
            "default,ckpt",
        ]
        out.append((f"learner {shape}", cmd, 600))
    out.append(("plan", [python, "bench/learner/memory_plan.py", "--device", "cuda"], 480))
    sharded = [python, "bench/learner/sharded.py", "--device", "cuda", "--shape", SHARDED_SHAPE]
    out.append((f"sharded {SHARDED_SHAPE}", [*sharded, "--gpus", str(max(1, gpus))], 600))
    return out


def _fmt(v, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def table(results: dict, device: str) -> str:
    """The markdown table of a run's results (steps not run or failed show as such)."""
    lines = [
        f"`python3 bench/learner/gpu_plan.py` on {device}:",
        "",
        "| shape | variant | tokens/s | MFU | peak GB | working GB | speed-up vs HF step | peak memory vs HF step |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for shape in SHAPES:
        r = results.get(f"learner {shape}")
        s = (r or {}).get("json", {}).get("shapes", {}).get(shape)
        if s is None:
            lines.append(f"| {shape} | - | {_status(r)} | | | | | |")
            continue
        ref = s.get("reference", {})
        lines.append(
            f"| {shape} | Hugging Face step | {_fmt(ref.get('tokens_per_s'), ',.0f')} | {_fmt(ref.get('mfu'), '.1%')} "
            f"| {_fmt(ref.get('peak_gb'))} | {_fmt(ref.get('working_gb'))} | 1.00x | 1.00 |"
        )
        for name, o in s.items():
            if not name.startswith("ours"):
                continue
            if "speedup" not in o:
                lines.append(f"| {shape} | {name} | {o.get('oom') or o.get('error') or 'failed'} | | | | | |")
                continue
            lines.append(
                f"| {shape} | {name} | {_fmt(o.get('tokens_per_s'), ',.0f')} | {_fmt(o.get('mfu'), '.1%')} "
                f"| {_fmt(o.get('peak_gb'))} | {_fmt(o.get('working_gb'))} | {o['speedup']:.2f}x "
                f"| {o['peak_memory_ratio']:.2f} |"
            )
    sharded = results.get(f"sharded {SHARDED_SHAPE}")
    sj = (sharded or {}).get("json")
    lines += [
        "",
        "| sharded learner (FSDP2, NCCL) | ranks | tokens/s | MFU | peak GB | speed-up over 1 rank |",
    ]
    lines.append("|---|---|---|---|---|---|")
    if sj is None:
        lines.append(f"| {SHARDED_SHAPE} | - | {_status(sharded)} | | | |")
    else:
        for key in ("one", "many"):
            r = sj.get(key)
            if r is None or (key == "many" and r.get("ranks") == 1):
                continue
            speed = f"{sj['speedup']:.2f}x" if key == "many" else "1.00x"
            lines.append(
                f"| {SHARDED_SHAPE} | {r['ranks']} | {_fmt(r.get('tokens_per_s'), ',.0f')} | {_fmt(r.get('mfu'), '.1%')} "
                f"| {_fmt(r.get('peak_gb'))} | {speed} |"
            )
    plan = results.get("plan")
    if plan and plan.get("rc") == 0:
        lines += ["", plan["stdout"].strip()]
    tests = results.get("tests")
    lines += ["", f"CUDA tests: {_status(tests) if tests else 'not run'}."]
    return "\n".join(lines)


def _status(r: dict | None) -> str:
    if r is None:
        return "not run"
    if r.get("rc") == 0:
        return (r.get("stdout") or "").strip().splitlines()[-1:][0] if r.get("stdout") else "passed"
    return f"failed (exit {r.get('rc')}{', time limit' if r.get('timed_out') else ''})"


def _run(name: str, cmd: list[str], limit: int) -> dict:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=limit, check=False)
        rc, out, err, timed_out = p.returncode, p.stdout, p.stderr, False
    except subprocess.TimeoutExpired as e:
        rc, timed_out = 124, True
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
    r = {
        "cmd": shlex.join(cmd),
        "rc": rc,
        "timed_out": timed_out,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    r["stdout"], r["stderr_tail"] = out[-20000:], err[-4000:]
    if name.startswith(("learner", "sharded")) and rc == 0:
        try:
            r["json"] = json.loads(out[out.index("{") :]) if name.startswith("learner") else _last_json(out)
        except ValueError:
            r["json"] = None
    return r


def _last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def _check_flags(cmd: list[str]) -> list[str]:
    """The flags cmd passes that its script's --help does not list (empty: all known)."""
    script = next((c for c in cmd if c.startswith("bench/") and c.endswith(".py")), None)
    if script is None:
        return []
    helptext = subprocess.run(
        [sys.executable, script, "--help"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout
    return [c for c in cmd if c.startswith("--") and c not in helptext]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", default=".", help="where gpu-plan.json and gpu-plan.md go")
    p.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    p.add_argument(
        "--skip", default="", help="comma-separated step names to skip: tests, learner, plan, sharded"
    )
    p.add_argument("--write", action="store_true", help="also replace the gpu-plan block of BENCHMARKS.md")
    p.add_argument("--deadline", type=float, default=None, help="seconds: start (and run) no step past this")
    p.add_argument(
        "--fresh", action="store_true", help="run every step again, not only those without a result"
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the steps (and check their flags); run nothing"
    )
    args = p.parse_args()
    shapes = tuple(s for s in args.shapes.split(",") if s)
    bad = [s for s in shapes if s not in SHAPES]
    if bad:
        p.error(f"unknown shape(s) {', '.join(bad)}; of {', '.join(SHAPES)}")
    skip = {s for s in args.skip.split(",") if s}
    if args.dry_run:
        plan = [s for s in steps(sys.executable, 2, shapes) if s[0].split()[0] not in skip]
        unknown = {name: _check_flags(cmd) for name, cmd, _ in plan}
        for name, cmd, limit in plan:
            print(f"{name}: {shlex.join(cmd)}  (limit {limit} s)")
        print(f"would write {Path(args.out_dir) / 'gpu-plan.json'} and gpu-plan.md:\n")
        print(table({}, "<the GPU>"))
        bad_flags = {k: v for k, v in unknown.items() if v}
        if bad_flags:
            print(f"gpu_plan: flags the scripts do not take: {bad_flags}", file=sys.stderr)
            return 1
        return 0

    import torch

    if not torch.cuda.is_available():
        print("gpu_plan: no CUDA device here (run with --dry-run to see the steps)", file=sys.stderr)
        return 2
    gpus = torch.cuda.device_count()
    device = f"{gpus} x {torch.cuda.get_device_name()} (torch {torch.__version__})"
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = out_dir / "gpu-plan.json"
    results: dict = {"device": device}
    if saved.is_file() and not args.fresh:
        before = json.loads(saved.read_text())
        if before.get("device") == device:  # the same machine: keep what succeeded
            results.update({k: v for k, v in before.items() if isinstance(v, dict) and v.get("rc") == 0})
    t0 = time.perf_counter()
    for name, cmd, limit in steps(sys.executable, gpus, shapes):
        if name.split()[0] in skip or name in results:
            continue
        left = None if args.deadline is None else args.deadline - (time.perf_counter() - t0)
        if left is not None and left < 30:
            print(f"gpu_plan: {name}: not started (--deadline)", file=sys.stderr)
            continue
        print(f"gpu_plan: {name}: {shlex.join(cmd)}", file=sys.stderr, flush=True)
        results[name] = _run(name, cmd, int(limit if left is None else min(limit, left)))
        print(
            f"gpu_plan: {name}: exit {results[name]['rc']} in {results[name]['seconds']} s", file=sys.stderr
        )
        saved.write_text(json.dumps(results, indent=1))
        (out_dir / "gpu-plan.md").write_text(table(results, device) + "\n")
    text = table(results, device)
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
