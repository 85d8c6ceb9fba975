#!/usr/bin/env bash
# Regenerates data/{train,val}.parquet from the StableToolBench-style queries in data/source/queries.json
# (per-row API lists as tools, the category in extra_info); a 75/25 split with seed 0. The APIs answer from
# cache/ through `toolrl toolbench serve`. Usage: bash make-data.sh [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/data}"
"$here/../../bin/toolrl.mjs" dataset convert --from toolbench "$here/data/source/queries.json" \
  --split --train-ratio 0.75 --seed 0 \
  --out "$out/train.parquet" --val-out "$out/val.parquet"
