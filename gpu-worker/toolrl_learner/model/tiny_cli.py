"""`python -m toolrl_learner tiny --out DIR [options]`: write a tiny random-weight model folder (HF format + tokenizer).

Prints one JSON line: {"out", "modelType", "numParameters", "vocabSize", "seconds"}.
"""

from __future__ import annotations

import argparse
import json
import time


def main(argv: list[str]) -> int:
    from .tiny import PRESETS, TinySpec

    d = TinySpec()
    p = argparse.ArgumentParser(
        prog="python -m toolrl_learner tiny", description=(__doc__ or "").partition("\n")[0]
    )
    p.add_argument("--out", required=True, help="output folder (created; existing model files are replaced)")
    p.add_argument(
        "--preset", choices=sorted(PRESETS), help="real Qwen2.5 dimensions and vocabulary, random weights"
    )
    p.add_argument("--arch", choices=("llama", "qwen2", "qwen3"), default=None, help=f"default {d.arch}")
    p.add_argument("--hidden-size", type=int)
    p.add_argument("--intermediate-size", type=int, help="default 3 x hidden size")
    p.add_argument("--layers", type=int, dest="num_layers")
    p.add_argument("--heads", type=int, dest="num_heads")
    p.add_argument("--kv-heads", type=int, dest="num_kv_heads")
    p.add_argument("--head-dim", type=int, help="default hidden size / heads")
    p.add_argument(
        "--vocab", type=int, dest="vocab_size", help=f"tokenizer vocabulary (default {d.vocab_size})"
    )
    tie = p.add_mutually_exclusive_group()
    tie.add_argument("--tie", action="store_const", const=True, dest="tie_word_embeddings")
    tie.add_argument("--untie", action="store_const", const=False, dest="tie_word_embeddings")
    p.add_argument("--rope-theta", type=float)
    p.add_argument("--seed", type=int)
    p.add_argument("--init-std", type=float, help=f"std of the random weights (default {d.init_std})")
    p.add_argument(
        "--dtype", choices=("float32", "bfloat16"), help="safetensors dtype (fp32; bf16 for presets)"
    )
    args = vars(p.parse_args(argv))
    out, preset = args.pop("out"), args.pop("preset")
    options = {k: v for k, v in args.items() if v is not None}
    try:
        spec = TinySpec.from_preset(preset, **options) if preset else TinySpec(**options)
    except (TypeError, ValueError) as e:
        p.error(str(e))
    t0 = time.perf_counter()
    from .config import ModelConfig
    from .tiny import build_tiny

    try:
        path = build_tiny(out, spec)
    except (ValueError, FileNotFoundError) as e:
        p.error(str(e))
    cfg = ModelConfig.from_file(path)
    print(
        json.dumps(
            {
                "out": str(path),
                "modelType": cfg.model_type,
                "numParameters": cfg.num_parameters(),
                "vocabSize": cfg.vocab_size,
                "seconds": round(time.perf_counter() - t0, 2),
            }
        )
    )
    return 0
