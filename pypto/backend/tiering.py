"""The "tiered" backend: native code when it is already paid for, the interpreter until it is.

A user script sees a backend's cost as its first launch plus N launches in a fresh process.
The native backend's run time is lower on nearly every zoo kernel, but its first compile
(lowering + LLVM) costs 100-2500 ms while the interpreter starts at once; with the object code
in the disk cache a native start costs 5-50 ms. So "tiered", per specialisation (one
`CompiledKernel`):

1. at its first launch, looks the kernel's object code up in the disk cache
   (`NativeKernel(..., cached_only=True)`: the support check and the cache key, no LLVM); found,
   it runs natively from this launch on;
2. otherwise it runs the interpreter and adds up the wall time of the interpreted launches;
   once they have taken `PYPTO_NATIVE_AFTER` seconds (default `DEFAULT_BUDGET`), it compiles
   the kernel (which writes the disk cache) and runs natively from that launch on. This is the
   ski-rental rule: a script never pays more than about twice the better of the two backends
   for it (interpreting for as long as a compile costs, then compiling).

The compile runs in the launching thread, not in a background one: the lowering is pure Python
and would hold the GIL against the interpreter's launches (on 2 cores the suite and a user's
script would both slow down), a daemon thread killed at exit would never write the cache, and
which launch runs where would depend on timing. Here it depends only on the launches' times,
and a test makes it exact with `PYPTO_NATIVE_AFTER=0` (compile at the first launch) or `inf`
(never), or by replacing `clock`. Either backend gives the same bits, errors and printf lines
(the interpreter is the oracle, docs/native.md#exactness), so the switch is invisible but for
speed. Instruments (race checking, validation, uninitialised-memory checks) keep a kernel on
the interpreter exactly as "auto" does. docs/native.md#choosing-a-backend,
docs/performance.md#which-backend-by-default.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

BUDGET_ENV = "PYPTO_NATIVE_AFTER"
DEFAULT_BUDGET = 0.2
"""Seconds of interpreted launches of one specialisation after which "tiered" compiles it:
about a typical first compile (docs/performance.md#which-backend-by-default)."""

clock: Callable[[], float] = time.perf_counter
"""The clock interpreted launches are timed with (tests replace it: no timing in tests)."""


def budget() -> float:
    """`PYPTO_NATIVE_AFTER` in seconds (`inf` or `never`: interpret until the cache has the
    object code); unset or not a number >= 0: `DEFAULT_BUDGET`."""
    raw = os.environ.get(BUDGET_ENV)
    if raw is None:
        return DEFAULT_BUDGET
    word = raw.strip().lower()
    if word == "never":
        return math.inf
    try:
        value = float(word)
    except ValueError:
        return DEFAULT_BUDGET
    return value if value >= 0 else DEFAULT_BUDGET


class Tier:
    """One specialisation's interpreted time so far (kept on its `CompiledKernel`)."""

    __slots__ = ("spent", "launches")

    def __init__(self) -> None:
        self.spent = 0.0
        self.launches = 0


def native_code(compiled: Any, required: bool, *, cached_only: bool = False) -> Any:
    """The compiled kernel's native code, made at most once and kept on it (one per
    specialisation), or None when it is unsupported and not `required` (then the reason is
    kept and raised for `required`). `cached_only`: None as well when the disk cache does not
    have the object code (nothing is kept: a later call compiles)."""
    native = compiled.__dict__.get("_native")
    if native is None:
        from pypto.backend.native.jit import NativeKernel, NativeUnsupported, NotCached

        try:
            native = NativeKernel(compiled.func, compiled.name, compiled.block,
                                  cached_only=cached_only)
        except NotCached:
            return None
        except NativeUnsupported as exc:
            native = exc
        compiled.__dict__["_native"] = native
    if isinstance(native, Exception):
        if required:
            raise native
        return None
    return native


def tiered_native(compiled: Any) -> Any:
    """The native code "tiered" runs this launch with, or None: interpret it (and time it with
    `interpret`)."""
    state = compiled.__dict__
    native = state.get("_native")
    if native is not None:
        return None if isinstance(native, Exception) else native
    tier = state.get("_tier")
    if tier is None:  # the first launch: is the object code on disk already?
        tier = state["_tier"] = Tier()
        native = native_code(compiled, False, cached_only=True)
        if native is not None or "_native" in state:
            return native
    if tier.spent >= budget():
        return native_code(compiled, False)
    return None


def interpret(compiled: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
              args: Any) -> None:
    """Run one launch on the interpreter, adding its wall time to the specialisation's."""
    tier = compiled.__dict__.get("_tier")
    start = clock()
    compiled.executable.run(grid, block, args)
    if tier is not None:
        tier.spent += clock() - start
        tier.launches += 1
