"""The CPU learner's resident memory: freed heap pages handed back to the OS between the phases of a step.

glibc's malloc serves an allocation of up to 32 MB (its mmap threshold rises to the largest block freed) from its
heaps, and keeps the pages of what is freed there: after a forward the process holds its temporaries' pages, free
but resident, while the backward allocates its own, so its resident peak counts memory that is no longer live
(0.16 GB above 0.99 GB live in a 6-layer SmolLM2-shaped step, more at 30 layers). `malloc_trim(0)` returns every
free page to the OS (a few milliseconds a call at 135M); the learner calls it before each micro-batch's forward and
backward and before the optimizer step, on a CPU. Nothing else changes: the same allocations, the same numbers.
Where there is no glibc (musl, macOS), or jemalloc serves malloc (allocator.py; it returns freed pages itself), it
does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable

from ..allocator import jemalloc_loaded


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    fn = getattr(libc, "malloc_trim", None)  # glibc's; musl has none
    if fn is None:
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


def release_free_pages() -> bool:
    """Hand the heap's free pages back to the OS; False where this C library cannot (nothing done)."""
    fn = _malloc_trim()
    if fn is None or jemalloc_loaded():
        return False
    fn(0)
    return True
