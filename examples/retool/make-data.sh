#!/usr/bin/env bash
# Regenerates data/{train,val}.parquet from the AIME-style problems in data/source/math.jsonl, wrapped in the
# `retool` prompt template (MindSpeed-RL's qwen_retool); a 75/25 split with seed 0. Usage: bash make-data.sh [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/data}"
"$here/../../bin/toolrl.mjs" dataset convert --from math "$here/data/source/math.jsonl" \
  --data-source retool/aime-style --prompt-type retool --split --train-ratio 0.75 --seed 0 \
  --out "$out/train.parquet" --val-out "$out/val.parquet"
