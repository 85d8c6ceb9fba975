"""`python -m toolrl_learner export --model DIR --out BUNDLE [...]`: write (or republish) an ONNX rollout bundle.

Prints one JSON line: {"out", "version", "quantization", "variant", "layoutHash", "bytes", "weightsOnly", "seconds"}.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m toolrl_learner export", description=(__doc__ or "").partition("\n")[0]
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument("--model", help="Hugging Face model folder (config.json, safetensors, tokenizer)")
    source.add_argument(
        "--random-preset",
        help="a preset's shape (tiny --preset) with random weights, written tensor by tensor (no model folder)",
    )
    p.add_argument(
        "--adapter",
        help="a peft LoRA adapter folder (a checkpoint's adapter/) merged into the model first; without --model, "
        "its base_model_name_or_path is the model",
    )
    p.add_argument("--out", required=True, help="bundle folder to write")
    p.add_argument(
        "--version", type=int, default=0, help="policy version recorded in manifest.json (default 0)"
    )
    p.add_argument("--quantization", choices=("none", "int8", "int4"), default="none")
    p.add_argument("--block-size", type=int, default=32, help="quantisation block along K (default 32)")
    p.add_argument(
        "--accuracy-level",
        type=int,
        choices=(0, 1, 2, 3, 4),
        default=4,
        help="MatMulNBits compute precision: 4 = int8 activations (fastest on CPU), 0 = fp32 (default 4)",
    )
    p.add_argument(
        "--variant",
        choices=("standard", "contrib"),
        default="standard",
        help="graph operators (see GRAPH.md)",
    )
    p.add_argument(
        "--graph-from",
        help="previous bundle: republish only model.onnx.data for its graph (layout hash checked)",
    )
    args = p.parse_args(argv)
    if not (args.model or args.random_preset or args.adapter):
        p.error("one of the arguments --model --random-preset --adapter is required")
    if args.version < 0:
        p.error("--version must be >= 0")
    t0 = time.perf_counter()
    from .bundle import export_bundle

    try:
        if args.random_preset:
            from .random_bundle import export_random_bundle

            manifest = export_random_bundle(
                args.random_preset, args.out, args.quantization, args.block_size, args.accuracy_level
            )
        else:
            model = args.model
            if args.adapter:
                from ..model.merge import merged_folder

                model = str(merged_folder(args.adapter, args.model, Path(args.out).parent / ".merged"))
            manifest = export_bundle(
                model,
                args.out,
                args.version,
                args.quantization,
                graph_from=args.graph_from,
                block_size=args.block_size,
                accuracy_level=args.accuracy_level,
                variant=args.variant,
            )
    except (ValueError, FileNotFoundError) as e:
        p.error(str(e))
    finally:
        if args.adapter:
            shutil.rmtree(Path(args.out).parent / ".merged", ignore_errors=True)
    print(
        json.dumps(
            {
                "out": args.out,
                "version": manifest["version"],
                "quantization": manifest["quantization"],
                "variant": manifest["export"].get("variant"),
                "layoutHash": manifest["layoutHash"],
                "bytes": sum(f["bytes"] for f in manifest["files"].values()),
                "weightsOnly": args.graph_from is not None,
                "seconds": round(time.perf_counter() - t0, 2),
            }
        )
    )
    return 0
