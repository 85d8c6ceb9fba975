"""`python -m toolrl_learner offline --groups FILE.jsonl --root DIR --run-id ID [--config run.yaml]`:
train from a JSONL file of scored groups (one ScoredGroup, or one stdio input line, per line), for
debugging and benchmarks. Events are printed as the stdio driver prints them. A resumed run skips
the lines its checkpoint already settled (the data position)."""

from __future__ import annotations

import json
import logging
import sys
import traceback
from pathlib import Path

from .common import SignalGuard, Terminated, base_parser, setup_logging
from .stdio import LineWriter

log = logging.getLogger("toolrl_learner.offline")


def _load_config(path: str | None):
    if path is None:
        return None
    import yaml

    text = Path(path).read_text()
    return json.loads(text) if path.endswith(".json") else yaml.safe_load(text)


def main(argv: list[str]) -> int:
    p = base_parser("offline", (__doc__ or "").partition("\n")[0])
    p.add_argument("--groups", required=True, help="JSONL of scored groups")
    p.add_argument(
        "--root", required=True, help="blob store root for outputs (folder or s3://bucket[/prefix])"
    )
    p.add_argument("--config", help="run config YAML/JSON (default: runs/<id>/run.json under --root)")
    p.add_argument(
        "--repeat", type=int, default=1, help="passes over the file (group ids get a -r<k> suffix)"
    )
    args = p.parse_args(argv)
    if not args.run_id:
        p.error("--run-id is required")
    setup_logging(args.log_level)
    out = LineWriter(sys.stdout)
    sys.stdout = sys.stderr
    guard = SignalGuard()
    session = None
    try:
        from ..storage import open_store
        from ..train.session import LearnerSession

        lines = [raw for raw in Path(args.groups).read_text().splitlines() if raw.strip()]
        with guard.busy():
            session = LearnerSession(
                open_store(args.root),
                args.run_id,
                emit=out,
                workdir=args.workdir,
                max_steps=args.max_steps,
                run_config=_load_config(args.config),
                device=args.device,
            )
            session.start()
        start = session.state.data_position
        for pos in range(start, len(lines) * args.repeat):
            if session.done:
                break
            obj = json.loads(lines[pos % len(lines)])
            if "manifestKey" in obj:  # a queue message: the manifest is read from the store
                line = {**obj, "type": "group"}
            else:
                group = obj.get("group", obj)
                if args.repeat > 1:
                    group = {**group, "groupId": f"{group['groupId']}-r{pos // len(lines)}"}
                line = {"type": "group", "group": group}
            with guard.busy():
                session.lines_offered = pos + 1
                session.offer(line)
        with guard.busy():
            session.finish()
        return 0
    except Terminated:
        guard.shield()
        if session is not None and hasattr(session, "state"):
            session.interrupt()
        return 143
    except Exception as e:  # noqa: BLE001
        traceback.print_exc(file=sys.stderr)
        out({"type": "error", "message": f"{type(e).__name__}: {e}"})
        return 1
