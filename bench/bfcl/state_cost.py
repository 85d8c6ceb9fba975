"""Cost of one BFCL call under three ways to have the episode's state, measured in this one process over the
ground-truth call sequences of BFCL's multi-turn entries (run by bench/bfcl/replay.ts with the BFCL environment):

  replay    rebuild from initial_config by replaying the k calls before, then run call k (what a cold
            serverless invocation does)
  snapshot  load the state pickled after call k-1 from a file, run call k, pickle and write the new state (a
            blob-store snapshot, minus the network: S3 adds a GET and a PUT per call)
  live      run call k on the instances kept in memory (a warm process with the state cached)

Prints one JSON object: per mode the mean ms per call, by history length, and per trajectory.
"""

import json
import os
import pickle
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import bfcl_eval
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

from toolrl_bfcl.envs import Entry, new_token, release, run_calls

DATA = Path(bfcl_eval.__file__).parent / "data"


def entries(category: str):
    with open(DATA / f"BFCL_v4_{category}.json") as f:
        questions = [json.loads(line) for line in f]
    with open(DATA / "possible_answer" / f"BFCL_v4_{category}.json") as f:
        truths = {t["id"]: t["ground_truth"] for t in map(json.loads, f)}
    for q in questions:
        entry = Entry(q["id"], q["initial_config"], tuple(q["involved_classes"]))
        yield entry, [c for t in truths[q["id"]] for c in t]


def inject(entry: Entry, token: str, instances: dict) -> None:
    """Puts restored instances where BFCL's executor looks for the live ones of `token`."""
    for class_name, instance in instances.items():
        name = re.sub(r"[-./:]", "_", f"{token}_{entry.id}_{class_name}_instance")
        vars(multi_turn_utils)[name] = instance


def main(limit: int) -> int:
    times = {"replay": [], "snapshot": [], "live": []}  # (k, ms)
    per_trajectory = {"replay": [], "snapshot": [], "live": []}
    snapshot_bytes = []
    lengths = []
    scratch = Path(tempfile.mkdtemp(prefix="bfcl-snap-"))
    for category in ("multi_turn_base", "multi_turn_long_context"):
        for n, (entry, calls) in enumerate(entries(category)):
            if n >= limit:
                break
            totals = dict.fromkeys(times, 0.0)
            lengths.append(len(calls))
            live = new_token()
            _, instances = run_calls(entry, live, [])
            blob = scratch / "state.pkl"
            blob.write_bytes(pickle.dumps(instances))
            for k, call in enumerate(calls):
                t0 = time.perf_counter()
                token = new_token()
                run_calls(entry, token, calls[:k])
                run_calls(entry, token, [call])
                release(token)
                t1 = time.perf_counter()
                token = new_token()
                inject(entry, token, pickle.loads(blob.read_bytes()))
                _, restored = run_calls(entry, token, [call])
                data = pickle.dumps(restored)
                blob.write_bytes(data)
                release(token)
                t2 = time.perf_counter()
                run_calls(entry, live, [call])
                t3 = time.perf_counter()
                for mode, ms in (
                    ("replay", t1 - t0),
                    ("snapshot", t2 - t1),
                    ("live", t3 - t2),
                ):
                    times[mode].append((k, 1000 * ms))
                    totals[mode] += 1000 * ms
                snapshot_bytes.append(len(data))
            release(live)
            for mode in times:
                per_trajectory[mode].append(totals[mode])
    os.remove(scratch / "state.pkl")
    os.rmdir(scratch)

    def bucket(lo, hi):
        return {m: statistics.fmean([ms for k, ms in v if lo <= k <= hi] or [0.0]) for m, v in times.items()}

    print(
        json.dumps(
            {
                "calls": len(times["live"]),
                "trajectories": len(per_trajectory["live"]),
                "meanMsPerCall": {m: statistics.fmean(ms for _, ms in v) for m, v in times.items()},
                "byHistory": {
                    "0-2": bucket(0, 2),
                    "3-5": bucket(3, 5),
                    "6-9": bucket(6, 9),
                    "10+": bucket(10, 10**6),
                },
                "meanMsPerTrajectory": {m: statistics.fmean(v) for m, v in per_trajectory.items()},
                "callsPerTrajectory": {
                    "mean": statistics.fmean(lengths),
                    "max": max(lengths),
                },
                "snapshotBytes": {
                    "mean": statistics.fmean(snapshot_bytes),
                    "max": max(snapshot_bytes),
                },
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
