#!/usr/bin/env bash
# Regenerates data/{train,val}.parquet from the AIME-style problems in data/source/aime-style.jsonl (the
# gneubig/aime-1983-2024 columns the seed loads: ID, Question, Answer), wrapped in this example's own prompt
# template prompt.yaml; a 75/25 split with seed 0. Usage: bash make-data.sh [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/data}"
"$here/../../bin/toolrl.mjs" dataset convert --from math "$here/data/source/aime-style.jsonl" \
  --data-source toolgrpo/aime-style --prompt-type "$here/prompt.yaml" --split --train-ratio 0.75 --seed 0 \
  --out "$out/train.parquet" --val-out "$out/val.parquet"
