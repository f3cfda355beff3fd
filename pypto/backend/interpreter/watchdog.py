"""The watchdog: a loop that never ends is a `KernelError` at its line, not a hang.

A kernel that loops forever hangs a device; the interpreter stops it instead, by two limits
(docs/runtime.md#the-watchdog):

- **trips**: a `while` loop (an `scf.while`) that runs more than `PYPTO_MAX_TRIPS` trips in
  one launch (default `DEFAULT_MAX_TRIPS`, reached in about 4 s by an empty infinite loop on
  one core; read when the loop starts, so a test or a program may change it at any time);
- **time**: `timeout=` seconds given to `pto.launch` / `kernel[grid, block](..., timeout=)` or
  `pto.sync(timeout=)` (the runtime opens a `time_limit` around the work it runs); the running
  `while` loop checks the clock every `CLOCK_EVERY` trips.

Both errors name the loop's Python line (the generated code passes the loop's op site).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

MAX_TRIPS_ENV = "PYPTO_MAX_TRIPS"
DEFAULT_MAX_TRIPS = 1_000_000
"""About 4 s of an empty `while True` at the interpreter's ~4 us per trip: well under the 5 s a
user waits before suspecting a hang, and far above what a terminating kernel loop runs (a SIMT
`while` of a million trips would take seconds in the interpreter anyway)."""

CLOCK_EVERY = 4096
"""Trips between two reads of the clock under a time limit (a power of two: a mask test)."""

_deadline: list[tuple[float, float]] = []
"""(deadline on `time.monotonic()`, the seconds asked) of the open `time_limit`s, innermost last."""


def max_trips() -> int:
    """`PYPTO_MAX_TRIPS` (a positive int), else the default; read at every loop start (its
    `UsageError` for another value: pypto/settings.py)."""
    raw = os.environ.get(MAX_TRIPS_ENV)
    if not raw:
        return DEFAULT_MAX_TRIPS
    from pypto.settings import SETTINGS

    return SETTINGS[MAX_TRIPS_ENV].value(raw, DEFAULT_MAX_TRIPS)  # type: ignore[no-any-return]


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Run the body under a limit of `seconds` (None: no new limit); nested limits keep the
    earliest deadline."""
    if seconds is None:
        yield
        return
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        from pypto.errors import UsageError

        raise UsageError(f"timeout must be a positive number of seconds (or None), got "
                         f"{seconds!r}")
    deadline = time.monotonic() + float(seconds)
    if _deadline and _deadline[-1][0] < deadline:
        _deadline.append(_deadline[-1])
    else:
        _deadline.append((deadline, float(seconds)))
    try:
        yield
    finally:
        _deadline.pop()


def check_clock(ctx: Any, site: int) -> None:
    """Called by a `while` loop every `CLOCK_EVERY` trips: raise when a time limit ran out."""
    if _deadline and time.monotonic() > _deadline[-1][0]:
        seconds = _deadline[-1][1]
        raise ctx.fail(f"this loop was still running when the time limit of {seconds:g} s ran "
                       f"out (timeout= of pto.launch / pto.sync); check that its condition "
                       f"changes, or give a longer timeout", site)


def too_many_trips(ctx: Any, site: int, limit: int) -> Exception:
    return ctx.fail(f"this loop has run {limit:,} trips without ending on some lane; check "
                    f"that its condition changes (the interpreter stops a loop after "
                    f"{MAX_TRIPS_ENV}={limit} trips in one launch; set it higher for a loop "
                    f"that really runs longer)", site)
