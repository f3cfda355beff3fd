"""Timing helper shared by the bench scripts (each is run as `python bench/NAME.py`, which puts
this folder on sys.path)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Seconds of the fastest of `repeat` calls, after one warm-up call (compiles and caches)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
