"""bench/learner/dedup.py: what `trainer.dedup_samples` saves on a real run's batches.

    gpu-worker/.venv/bin/python bench/learner/dedup.py RUN_DIR [--from-step S --steps K --rounds R] [--threads N]

1. Counts, for every batch the run trained (its stored groups, in feeder order), the tokens the transformer runs
   on as the learner packs them on a CPU (each group's prompt once) without and with deduplication of a group's
   repeated samples: no model is needed, the numbers are the data's.
2. With `--from-step S`, replays steps S+1..S+K from the run's checkpoint S (bench/learner/replay_step.py, each
   replay in its own process, after one uncounted replay that brings the model's files into the page cache)
   without and with deduplication, R rounds alternating which goes first, and prints the ratio of their forward +
   backward seconds (`speedup_compute`) and of the whole replay processes' CPU seconds (`speedup_replay_cpu`:
   loading the model included, so it understates the step's), and how far their losses and gradient norms are
   apart (rounding: the two sum the copies' gradients in another order).

RUN_DIR: a deterministic run's folder (runs/<runId>, e.g. of examples/smollm2/run.yaml) with its groups/ and, for
the replay, checkpoints/step-S. Needs the learner's environment (gpu-worker/.venv).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from toolrl_learner.algos.advantages import has_signal
from toolrl_learner.config import LearnerConfig
from toolrl_learner.train.batch import LearnerBatch
from toolrl_learner.train.packing import pack_batch

HERE = Path(__file__).resolve().parent


def batches(run_dir: Path) -> list[list[dict]]:
    """The run's training batches in feeder order (a deterministic run: batch t is positions [t*b, (t+1)*b)), less
    the groups the learner dropped for having no signal (algorithm.filter_groups)."""
    config = json.loads((run_dir / "run.json").read_text())["config"]
    cfg = LearnerConfig.from_run_config(config)
    b = int(config["trainer"]["batch_prompts"])
    by_pos = {}
    for f in (run_dir / "groups").glob("*.json"):
        g = json.loads(f.read_text())
        if g.get("position") is not None:
            by_pos[g["position"]] = g
    out = []
    t = 0
    while all(p in by_pos for p in range(t * b, (t + 1) * b)):
        kept = [by_pos[p] for p in range(t * b, (t + 1) * b)]
        if cfg.filter_groups:
            kept = [
                g for g in kept if has_signal([x["reward"] for x in g["trajectories"]], cfg.group_relative)
            ]
        out.append(kept)
        t += 1
    return out


def count(run_dir: Path, budget: int) -> dict:
    rows = []
    for step, groups in enumerate(batches(run_dir), start=1):
        if not groups:
            continue
        batch = LearnerBatch.from_groups(groups, 0)
        packed = {
            dedup: sum(mb.num_tokens for mb in pack_batch(batch, budget, share_prefix=True, dedup=dedup))
            for dedup in (False, True)
        }
        rows.append(
            {"step": step, "tokens": sum(batch.lengths), "packed": packed[False], "dedup": packed[True]}
        )
    total = {k: sum(r[k] for r in rows) for k in ("tokens", "packed", "dedup")}
    return {"steps": rows, "total": total, "saved": 1 - total["dedup"] / total["packed"] if rows else 0.0}


def replay(run_dir: Path, start: int, steps: int, dedup: bool, threads: int) -> tuple[list[dict], float]:
    """The replayed steps' rows, and the child's CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, str(HERE / "replay_step.py"), str(run_dir), out, "--from-step", str(start)]
        cmd += ["--steps", str(steps), "--dedup", "on" if dedup else "off"]
        if threads:
            cmd += ["--threads", str(threads)]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")], cpu


def compute_s(rows: list[dict]) -> float:
    return sum(r["timing_s/forward"] + r["timing_s/backward"] for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--budget", type=int, help="micro-batch token budget (default: the run's)")
    ap.add_argument("--from-step", type=int, help="replay from this checkpoint (default: count only)")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    config = json.loads((a.run_dir / "run.json").read_text())["config"]
    budget = a.budget or int(config["trainer"].get("micro_batch_tokens", 8192))
    counted = count(a.run_dir, budget)
    for r in counted["steps"]:
        print(json.dumps(r))
    t = counted["total"]
    print(
        f"{len(counted['steps'])} steps: {t['tokens']} tokens, packed {t['packed']} without deduplication, "
        f"{t['dedup']} with it: {counted['saved']:.1%} fewer"
    )
    if a.from_step is None:
        return
    # One replay first, not counted: the first process to run the model faults its mapped weights in from disk.
    replay(a.run_dir, a.from_step, 1, False, a.threads)
    results = []
    for r in range(a.rounds):
        pair = {}
        for dedup in (False, True) if r % 2 == 0 else (True, False):
            rows, cpu = replay(a.run_dir, a.from_step, a.steps, dedup, a.threads)
            pair[dedup] = {"rows": rows, "compute_s": compute_s(rows), "cpu_s": cpu}
        off, on = pair[False], pair[True]
        result = {
            "round": r,
            "packed_tokens": [sum(x["packed_tokens"] for x in p["rows"]) for p in (off, on)],
            "compute_s": [round(off["compute_s"], 1), round(on["compute_s"], 1)],
            "speedup_compute": off["compute_s"] / on["compute_s"],
            "speedup_replay_cpu": off["cpu_s"] / on["cpu_s"],
            "grad_norm": [[x["grad_norm"] for x in p["rows"]] for p in (off, on)],
            "pg_loss_diff": max(
                abs(x["pg_loss"] - y["pg_loss"]) for x, y in zip(off["rows"], on["rows"], strict=True)
            ),
        }
        results.append(result)
        print(json.dumps(result))
    speed = sorted(x["speedup_compute"] for x in results)
    print(
        f"steps {a.from_step + 1}-{a.from_step + a.steps}, {a.rounds} rounds: forward + backward "
        f"{speed[0]:.2f}x to {speed[-1]:.2f}x faster with deduplication"
    )


if __name__ == "__main__":
    main()
