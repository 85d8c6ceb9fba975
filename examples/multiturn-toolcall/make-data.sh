#!/usr/bin/env bash
# Regenerates data/{train,val}.parquet from the first seed's chat lines in data/source/conversations.jsonl:
# the `toolcall` prompt template, a 75/25 split with seed 0. Usage: bash make-data.sh [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/data}"
"$here/../../bin/toolrl.mjs" dataset convert --from jsonl "$here/data/source/conversations.jsonl" \
  --prompt-type toolcall --split --train-ratio 0.75 --seed 0 \
  --out "$out/train.parquet" --val-out "$out/val.parquet"
