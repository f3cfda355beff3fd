"""glibc malloc settings for the interpreter's large temporaries.

Every lane vector computes with arrays of 0.5-1 MB (2^16-2^17 lanes) and frees them all when it
is done. With glibc's default, dynamic thresholds the freed memory at the top of the heap is
given back to the kernel as soon as it exceeds twice the largest block recently freed, and
arrays above the mmap threshold get fresh mappings; the next lane vector then touches fresh
pages again: thousands of page faults per launch (measured on the 1024² transpose: up to ~8000
faults, 25 ms -> 40 ms per launch), and how many depends on what the process allocated before.
Fixed thresholds (arrays up to 32 MiB from the heap, up to 256 MiB of free heap kept) make
repeated launches reuse warm memory. The cost: the process keeps up to that much freed memory.

Applied once, when the first kernel is made executable; `PYPTO_MALLOC_TUNING=0` leaves malloc
alone, and so does any MALLOC_*_ environment setting of the user's. Only glibc has `mallopt`.
"""

from __future__ import annotations

import ctypes
import os
import sys

MMAP_THRESHOLD = 32 << 20
"""Allocations up to this many bytes come from the heap (glibc's dynamic maximum)."""

TRIM_THRESHOLD = 256 << 20
"""Free memory at the top of the heap kept for reuse before any is returned to the system."""

_M_TRIM_THRESHOLD = -1  # glibc malloc.h
_M_MMAP_THRESHOLD = -3
_USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                  "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES")

_state: dict[str, bool] = {}


def tune_malloc() -> bool:
    """Set the thresholds (once per process); True when they are in effect."""
    if "applied" not in _state:
        _state["applied"] = _apply()
    return _state["applied"]


def _apply() -> bool:
    if os.environ.get("PYPTO_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    if any(name in os.environ for name in _USER_SETTINGS):
        return False  # the user tuned malloc: theirs stands
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only (musl has no mallopt)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and \
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1


__all__ = ["tune_malloc"]
