"""The learner dies with the process that drives it. `toolrl train` sets TOOLRL_DIE_WITH_PARENT to its pid; a
learner whose parent is killed (SIGKILL: no handler runs, no SIGTERM reaches the learner) would otherwise go on
alone: at EOF on stdin it finishes the run, publishing and checkpointing into a run that `toolrl train --resume`
starts again beside it. On Linux the kernel kills it with its parent (PR_SET_PDEATHSIG); elsewhere a thread
watches the parent's pid. Each process passes the variable on with its own pid, so torchrun's ranks die with the
launcher that dies with `toolrl train`."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

ENV = "TOOLRL_DIE_WITH_PARENT"
PR_SET_PDEATHSIG = 1
POLL_S = 0.5
_tied = False


def _prctl_pdeathsig() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    parent_gone()


def die_with_parent() -> None:
    """When TOOLRL_DIE_WITH_PARENT names this process's parent: be killed when it dies (see the module doc)."""
    global _tied
    raw = os.environ.get(ENV)
    if not raw:
        return
    os.environ[ENV] = str(os.getpid())  # this process's children die with it
    try:
        parent = int(raw)
    except ValueError:
        return
    _tied = True
    if os.getppid() != parent:  # it died already, before the kernel could be told
        parent_gone()
    if not _prctl_pdeathsig():
        threading.Thread(target=_watch, args=(parent,), daemon=True, name="lifeline").start()
    if os.getppid() != parent:  # it died while we were arranging it
        parent_gone()


def tied() -> bool:
    """Whether this process lives only as long as its parent (its parent never ends stdin on purpose then: the
    end of stdin is its death, which closes the pipe an instant before the kernel's signal arrives)."""
    return _tied


def parent_gone() -> None:
    """Die as the parent's death would have it: at once, writing nothing more."""
    os._exit(128 + signal.SIGKILL)
