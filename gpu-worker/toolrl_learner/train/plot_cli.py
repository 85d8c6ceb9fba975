"""`python -m toolrl_learner plot --root DIR --run-id ID [--publish-every N]`: redraws a run's
`metrics/reward_curve.png` from its metrics.jsonl and validation summaries. The learner draws it as it trains, but
the final validation is written after the learner has finished; the embedded runtime calls this once the run has
completed so the plot ends with it."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from ..storage import FolderBlobStore
from .metrics import MetricsLogger


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m toolrl_learner plot", description=__doc__)
    p.add_argument("--root", required=True, help="the folder store's root (the workdir holding runs/)")
    p.add_argument("--run-id", required=True)
    p.add_argument("--publish-every", type=int, default=1, help="learner steps per policy version")
    a = p.parse_args(argv)
    store = FolderBlobStore(Path(a.root))
    with tempfile.TemporaryDirectory() as work:
        # Every logged step is kept (resume_step beyond the last); nothing is logged, so nothing is appended.
        m = MetricsLogger(
            store, a.run_id, Path(work), resume_step=2**62, tensorboard=False, publish_every=a.publish_every
        )
        m.plot()
    return 0
