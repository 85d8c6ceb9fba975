#!/usr/bin/env bash
# Regenerates data/{train,val}.parquet from the NQ/HotpotQA-style questions in data/source/qa.jsonl (answerable
# from the built-in sample corpus), wrapped in the `search` prompt template (Search-R1's); a 75/25 split with
# seed 0. Usage: bash make-data.sh [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/data}"
"$here/../../bin/toolrl.mjs" dataset convert --from qa "$here/data/source/qa.jsonl" \
  --prompt-type search --split --train-ratio 0.75 --seed 0 \
  --out "$out/train.parquet" --val-out "$out/val.parquet"
