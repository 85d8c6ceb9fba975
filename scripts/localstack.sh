#!/usr/bin/env bash
# LocalStack for the end-to-end tests: `setup` builds .localstack/venv from test/e2e/localstack.lock,
# `start` runs it in host mode (S3 and SQS, STS for the account id, CloudFormation and IAM to deploy the
# synthesized template; 127.0.0.1:4566) and waits for health, `stop` ends it,
# `deploy ENV` creates (or updates) an environment on it from the CDK app's template, `destroy ENV` deletes it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.localstack
venv=$dir/venv
lock=test/e2e/localstack.lock
port=${LOCALSTACK_PORT:-4566}
pidfile=$dir/pid-$port
log=$dir/localstack-$port.log

find_python() {
  local c
  for c in "${TOOLRL_LOCALSTACK_PYTHON:-}" python3.14 python3.13; do
    [ -n "$c" ] || continue
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; then
      command -v "$c"; return 0
    fi
  done
  for c in "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.1[3-9]*/bin/python3; do
    [ -x "$c" ] && { echo "$c"; return 0; }
  done
  return 1
}

setup() {
  local want py
  want=$(sha256sum "$lock" | cut -d' ' -f1)
  [ "$(cat "$venv/.lock.sha256" 2>/dev/null)" = "$want" ] && return 0
  py=$(find_python) || {
    echo "localstack: LocalStack 4.14.0 needs Python >= 3.13 and none was found (set TOOLRL_LOCALSTACK_PYTHON)" >&2
    exit 1
  }
  echo "localstack: creating $venv with $py"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q uv==0.13.9
  VIRTUAL_ENV=$PWD/$venv "$venv/bin/uv" pip sync -q "$lock"
  echo "$want" > "$venv/.lock.sha256"
}

healthy() {
  curl -sf "http://127.0.0.1:$port/_localstack/health" 2>/dev/null \
    | grep -q '"s3": "\(running\|available\)".*"sqs": "\(running\|available\)"\|"sqs": "\(running\|available\)".*"s3": "\(running\|available\)"'
}

start() {
  setup
  if healthy; then echo "localstack: already running on $port"; return 0; fi
  mkdir -p "$dir"
  echo "localstack: starting in host mode on 127.0.0.1:$port (log: $log)"
  mkdir -p "$dir/state-$port"
  SERVICES=s3,sqs,sts,cloudformation,iam EAGER_SERVICE_LOADING=1 GATEWAY_LISTEN=127.0.0.1:$port \
    LOCALSTACK_HOST=127.0.0.1:$port SQS_ENDPOINT_STRATEGY=path DNS_ADDRESS=0 \
    SKIP_SSL_CERT_DOWNLOAD=1 DISABLE_EVENTS=1 PERSISTENCE=0 LOCALSTACK_VOLUME_DIR="$PWD/$dir/state-$port" \
    setsid "$venv/bin/python" -m localstack.runtime.main >"$log" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  for _ in $(seq 1 120); do
    if healthy; then echo "localstack: ready"; return 0; fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then break; fi
    sleep 0.5
  done
  echo "localstack: did not become healthy; last log lines:" >&2
  tail -n 30 "$log" >&2 || true
  exit 1
}

stop() {
  if [ -f "$pidfile" ]; then
    local pid
    pid=$(cat "$pidfile")
    kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
    # Wait for it to go, so a `start` right after does not find the old one still answering.
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    rm -f "$pidfile"
  fi
}

# Deploys or deletes environment ENV's stack (bucket, queues + DLQs, upload notifications) through LocalStack's
# CloudFormation, from the synthesized CDK app (infra/bin/localstack.ts).
stack() {
  [ -n "${2:-}" ] || { echo "usage: $0 $1 ENV" >&2; exit 2; }
  healthy || { echo "localstack: not running on $port (bash $0 start)" >&2; exit 1; }
  AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL:-http://127.0.0.1:$port} AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} \
    AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test} AWS_REGION=${AWS_REGION:-us-east-1} \
    node --disable-warning=NodeVersionSupportWarning --import tsx infra/bin/localstack.ts "$1" "$2"
}

case "${1:-}" in
  setup) setup ;;
  start) start ;;
  stop) stop ;;
  status) healthy && echo running || { echo stopped; exit 1; } ;;
  deploy|destroy) stack "$1" "${2:-}" ;;
  *) echo "usage: $0 setup|start|stop|status|deploy ENV|destroy ENV" >&2; exit 2 ;;
esac
