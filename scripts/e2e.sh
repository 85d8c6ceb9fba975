#!/usr/bin/env bash
# End-to-end tests against LocalStack (S3 + SQS in host mode): start it, run the e2e project, stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
started=0
if ! bash scripts/localstack.sh status >/dev/null 2>&1; then
  bash scripts/localstack.sh start
  started=1
fi
cleanup() { if [ "$started" = 1 ]; then bash scripts/localstack.sh stop; fi; }
trap cleanup EXIT
export AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL:-http://127.0.0.1:${LOCALSTACK_PORT:-4566}}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}
export AWS_REGION=${AWS_REGION:-us-east-1} AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-us-east-1}
npx vitest run --project e2e --passWithNoTests "$@"
# The learner's SQS driver and its deletion of old policy versions in S3 against the same LocalStack (skipped by
# the CPU suite, which has no endpoint).
if [ "$#" = 0 ]; then
  gpu-worker/.venv/bin/python -m pytest -q gpu-worker/tests/test_drivers_sqs.py gpu-worker/tests/test_retention_s3.py
fi
