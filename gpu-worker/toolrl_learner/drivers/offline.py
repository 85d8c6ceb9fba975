"""`python -m toolrl_learner offline --groups FILE.jsonl --root DIR --run-id ID [--config run.yaml]`:
train from a JSONL file of scored groups (one ScoredGroup, or one stdio input line, per line), for
debugging and benchmarks. Events are printed as the stdio driver prints them. A resumed run skips
the lines its checkpoint already settled (the data position)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import SignalGuard, base_parser, drive, parse_args, protocol_stdout

if TYPE_CHECKING:
    from ..train.session import LearnerSession

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
    args = parse_args(p, argv)
    out = protocol_stdout()
    lines: list[str] = []

    def open_session() -> LearnerSession:
        from ..storage import open_store
        from ..train.session import LearnerSession

        lines.extend(raw for raw in Path(args.groups).read_text().splitlines() if raw.strip())
        return LearnerSession(
            open_store(args.root),
            args.run_id,
            emit=out,
            workdir=args.workdir,
            max_steps=args.max_steps,
            run_config=_load_config(args.config),
            device=args.device,
        )

    def feed(session: LearnerSession, guard: SignalGuard) -> None:
        for pos in range(session.state.data_position, len(lines) * args.repeat):
            if session.done:
                break
            with guard.busy():
                session.lines_offered = pos + 1
                session.offer(_line(json.loads(lines[pos % len(lines)]), pos // len(lines), args.repeat))

    return drive(out, open_session, feed)


def _line(obj: dict[str, Any], rep: int, repeat: int) -> dict[str, Any]:
    """A file line as the session's input line: a queue message (its manifest is read from the store), or a
    group inline (bare, or as a stdio `group` line), its id suffixed with the pass when the file repeats."""
    if "manifestKey" in obj:
        return {**obj, "type": "group"}
    group = obj.get("group", obj)
    if repeat > 1:
        group = {**group, "groupId": f"{group['groupId']}-r{rep}"}
    return {"type": "group", "group": group}
