"""`python -m toolrl_bfcl serve [--cache-states N]` (the environment process),
`python -m toolrl_bfcl export --out DIR [--categories ...] [--ids ...] [--limit N]` (BFCL entries for conversion) and
`python -m toolrl_bfcl prepare` (raw entries on stdin, one JSON object a line, prepared as BFCL's loader does on stdout)."""

import argparse
import json
import sys


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolrl_bfcl")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the JSON-lines protocol on stdin/stdout")
    serve.add_argument(
        "--cache-states",
        type=int,
        default=256,
        help="live states kept between calls (0: replay)",
    )
    export = sub.add_parser("export", help="write BFCL entries and ground truth in BFCL's file layout")
    export.add_argument("--out", required=True)
    export.add_argument("--categories", default="multi_turn_base")
    export.add_argument("--ids", default="", help="comma-separated entry ids (default: all)")
    export.add_argument("--limit", type=int, default=None, help="first N entries of each category")
    sub.add_parser(
        "prepare",
        help="raw entries (JSON lines on stdin) with their classes' function docs, as BFCL's loader prepares them",
    )
    args = parser.parse_args(argv)
    if args.command == "serve":
        from .server import serve as run

        return run(args.cache_states)
    if args.command == "prepare":
        from .prepare import prepare

        entries = [json.loads(line) for line in sys.stdin if line.strip()]
        try:
            prepared = prepare(entries)
        except ValueError as err:
            print(f"toolrl_bfcl prepare: {err}", file=sys.stderr)
            return 2
        sys.stdout.writelines(json.dumps(e, ensure_ascii=False) + "\n" for e in prepared)
        return 0
    from .export import export as run_export

    ids = {i.strip() for i in args.ids.split(",") if i.strip()} or None
    try:
        written = run_export(
            [c.strip() for c in args.categories.split(",") if c.strip()],
            args.out,
            ids,
            args.limit,
        )
    except ValueError as err:
        print(f"toolrl_bfcl export: {err}", file=sys.stderr)
        return 2
    print(json.dumps(written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
