"""The learner's memory allocator: jemalloc when the machine has it, preloaded by re-executing the process once.

A learner step allocates and frees the same large blocks over and over (activations, the log-prob head's chunks,
gradients). glibc's malloc maps every block above its mmap threshold (at most 32 MB) afresh, so each touch of its
pages faults and zeroes them, and the CPU learner hands freed heap pages back between phases (train/host_memory.py)
to keep its resident memory near what is live; jemalloc keeps freed extents for reuse and returns them to the OS
after a delay. The same allocations give the same numbers bit for bit; at SmolLM2-135M's shape on 2 cores a step
took 0.86-0.90x glibc's time with a lower resident peak, and the SmolLM2 example's whole command 0.91x
(BENCHMARKS.md, "The learner's allocator").

There is no jemalloc wheel on PyPI; `npm run setup` unpacks Debian's `libjemalloc2` into .cache/jemalloc (no root
needed), and a machine's own copy is used too. `TOOLRL_JEMALLOC=off` keeps glibc's malloc; `TOOLRL_JEMALLOC=PATH`
names the library.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from pathlib import Path

ENV = "TOOLRL_JEMALLOC"
# Set in the re-executed process, so a preload the dynamic loader ignored never re-executes again.
DONE = "TOOLRL_JEMALLOC_PRELOADED"
_NAME = "libjemalloc.so.2"
_REPO = Path(__file__).resolve().parents[2]
_SYSTEM_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")


def jemalloc_path(env: Mapping[str, str], repo: Path = _REPO) -> str | None:
    """The jemalloc library to preload, or None: TOOLRL_JEMALLOC's path, else setup's copy, else the system's."""
    given = env.get(ENV, "").strip()
    if given.lower() in ("off", "0", "false", "no", "glibc"):
        return None
    if given:
        if not Path(given).is_file():
            raise ValueError(f"{ENV}={given}: no such file (a path to {_NAME}, or off for glibc's malloc)")
        return str(Path(given).resolve())
    cached = sorted((repo / ".cache" / "jemalloc").glob(f"usr/lib/*/{_NAME}"))
    candidates = [*cached, *(Path(d) / _NAME for d in _SYSTEM_DIRS)]
    return next((str(p.resolve()) for p in candidates if p.is_file()), None)


def preload_env(env: Mapping[str, str], repo: Path = _REPO) -> dict[str, str] | None:
    """The environment to re-execute with so jemalloc is preloaded, or None when there is nothing to do (not Linux,
    no jemalloc, turned off, already preloaded or already re-executed once)."""
    if not sys.platform.startswith("linux") or env.get(DONE):
        return None
    lib = jemalloc_path(env, repo)
    if lib is None:
        return None
    preloaded = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p]
    if any(Path(p).name.startswith("libjemalloc") for p in preloaded):
        return None
    return {**env, "LD_PRELOAD": ":".join([lib, *preloaded]), DONE: lib}


def reexec_with_jemalloc() -> None:
    """Re-execute this interpreter with jemalloc preloaded (the same arguments, descriptors and process id); returns
    only when there is nothing to do."""
    env = preload_env(os.environ)
    if env is not None and sys.executable:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execve(sys.executable, sys.orig_argv, env)
        except OSError as e:  # then run on as we are, on the C library's malloc
            print(f"toolrl_learner: could not re-execute with jemalloc ({e})", file=sys.stderr)


def describe(env: Mapping[str, str]) -> str | None:
    """The log line that says which malloc this process runs on, or None when it runs on the C library's and nobody
    asked for jemalloc."""
    lib = env.get(DONE)
    if lib:
        if jemalloc_loaded():
            return f"malloc is jemalloc ({lib})"
        return f"{lib} did not load; malloc is the C library's"
    if jemalloc_loaded():  # the caller preloaded it, so nothing was re-executed
        return "malloc is jemalloc (preloaded by LD_PRELOAD)"
    return None


@functools.cache
def jemalloc_loaded() -> bool:
    """Whether jemalloc is mapped into this process (then it, not glibc, serves malloc)."""
    try:
        with open("/proc/self/maps") as f:
            return any("libjemalloc" in line for line in f)
    except OSError:
        return False
