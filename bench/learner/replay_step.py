"""bench/learner/replay_step.py: train one learner step of a finished or running run again, in a fresh process,
from the run's checkpoint and the groups the run stored for that step, and print the step's metrics. Replaying a
step several times (with other threads, OMP_WAIT_POLICY, load beside it) and comparing `grad_norm` with the run's
own row of metrics/metrics.jsonl is how examples/smollm2/README.md tells whether a step is repeatable. With
`--steps K` it trains K steps in a row from checkpoint S and prints each one's row; `weights` is a hash of the
trainable weights after the step, bit for bit, so two replays that agree on a gradient norm can still be told apart.

    gpu-worker/.venv/bin/python bench/learner/replay_step.py RUN_DIR OUT_DIR --from-step S [--steps K] [--threads N]
        [--dedup on|off] [--share-batch-prefix on|off]

`--dedup` replays with `trainer.dedup_samples` set (bench/learner/dedup.py compares the two), `--share-batch-prefix`
with `trainer.share_batch_prefix`.

RUN_DIR: a run folder (runs/<runId>) of a deterministic run (`trainer.deterministic`, so batch S + 1 is the groups
at feeder positions [S * batch_prompts, (S + 1) * batch_prompts)), holding checkpoints/step-S (the run keeps step-0
until retention removes it: copy it while the run goes on) and groups/. OUT_DIR is replaced. Needs the learner's
environment (gpu-worker/.venv).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

import torch

from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.session import LearnerSession


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument(
        "--from-step", type=int, required=True, help="the checkpoint to start from (replays S + 1)"
    )
    ap.add_argument("--steps", type=int, default=1, help="steps to train in a row (default 1)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own)")
    ap.add_argument("--dedup", choices=("on", "off"), help="set trainer.dedup_samples (default: the run's)")
    ap.add_argument(
        "--share-batch-prefix",
        choices=("on", "off"),
        help="set trainer.share_batch_prefix (default: the run's)",
    )
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    src, start = a.run_dir, a.from_step
    ckpt = src / "checkpoints" / f"step-{start}"
    if not ckpt.is_dir():
        raise SystemExit(
            f"{ckpt}: no such checkpoint (retention keeps only some steps; copy it while the run goes on)"
        )
    config = json.loads((src / "run.json").read_text())["config"]
    if not config.get("trainer", {}).get("deterministic"):
        raise SystemExit(f"{src}: not a deterministic run, so its batches are not known by position")
    b = int(config["trainer"]["batch_prompts"])
    groups = {}
    for f in (src / "groups").glob("*.json"):
        g = json.loads(f.read_text())
        if g.get("position") is not None and start * b <= g["position"] < (start + a.steps) * b:
            groups[g["position"]] = g
    missing = [p for p in range(start * b, (start + a.steps) * b) if p not in groups]
    if missing:
        raise SystemExit(f"{src / 'groups'}: no group at feeder positions {missing}")

    run_id = src.name
    if a.out_dir.exists():
        shutil.rmtree(a.out_dir)
    dst = a.out_dir / "runs" / run_id
    dst.mkdir(parents=True)
    run_json = json.loads((src / "run.json").read_text())
    if a.dedup is not None:
        run_json["config"]["trainer"]["dedup_samples"] = a.dedup == "on"
    if a.share_batch_prefix is not None:
        run_json["config"]["trainer"]["share_batch_prefix"] = a.share_batch_prefix == "on"
    (dst / "run.json").write_text(json.dumps(run_json))
    shutil.copytree(ckpt, dst / "checkpoints" / ckpt.name)
    session = LearnerSession(
        FolderBlobStore(a.out_dir), run_id, emit=lambda _line: None, device="cpu", max_steps=start + a.steps
    )
    session.start()
    weights = {}
    for p in range(start * b, (start + a.steps) * b):
        session.offer({"group": groups[p]})  # the batch's last group trains its step
        if (p + 1) % b == 0:
            digest = hashlib.sha256()
            for _name, w in session.model.policy.named_trainable_parameters():
                digest.update(w.detach().float().cpu().contiguous().numpy().tobytes())
            weights[p // b + 1] = digest.hexdigest()[:16]
    rows = [json.loads(line) for line in (dst / "metrics" / "metrics.jsonl").read_text().splitlines()]
    keep = ("grad_norm", "pg_loss", "entropy", "tokens", "packed_tokens", "groups", "step_time_s")
    keep += ("timing_s/forward", "timing_s/backward", "timing_s/optimizer")
    for step in range(start + 1, start + a.steps + 1):
        row = next(r for r in rows if r.get("step") == step and "grad_norm" in r and "sft_step" not in r)
        print(
            json.dumps(
                {
                    "step": step,
                    "threads": torch.get_num_threads(),
                    **{k: row[k] for k in keep if k in row},
                    "weights": weights.get(step),
                }
            )
        )


if __name__ == "__main__":
    main()
