"""The "tiered" backend (the default): the interpreter until native code pays for itself.

A user script sees a backend's cost as its first launch plus N launches in a fresh process
(`bench/backend_default.py`). The native backend's run time is lower on nearly every zoo
kernel, but starting it costs: importing it (xDSL's llvm dialect, the lowering, LLVM) ~0.2 s
once per process, then per kernel either its first compile (100-2500 ms) or, with the object
code in the disk cache, its load (5-50 ms). The interpreter starts at once. So "tiered", per
specialisation (one `CompiledKernel`), interprets and adds up its launches' wall time:

1. once they have taken as long as loading the object code would (`budget(cached=True)`: the
   import if not paid yet + a load), it looks the object code up in the disk cache
   (`NativeKernel(..., cached_only=True)`: the support check and the cache key, no LLVM); a hit
   runs natively from that launch on;
2. after a miss, once they have taken as long as a compile (`budget(cached=False)`), it
   compiles the kernel (which writes the disk cache) and runs natively from then on.

This is the ski-rental rule: a script pays at most about twice what the better of the two
backends would have cost it, and a script whose launches are short (most tests, most one-shot
scripts) pays nothing for the native backend — not even its import.

The switch happens in the launching thread, not in a background one: the lowering is pure
Python and would hold the GIL against the interpreter's launches (on 2 cores the suite and a
user's script would both slow down), a daemon thread killed at exit would never write the
cache, and which launch runs where would depend on the scheduler. Here it depends only on the
launches' times, and tests make it exact with `PYPTO_NATIVE_AFTER` (seconds; 0: at the first
launch, `never`) or by replacing `clock`. Either backend gives the same bits, errors and printf
lines (the interpreter is the oracle, docs/native.md#exactness), so the switch is invisible but
for speed. Instruments (race checking, validation, uninitialised-memory checks) keep a kernel
on the interpreter exactly as "auto" does. docs/native.md#choosing-a-backend,
docs/performance.md#which-backend-by-default.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from pypto.runtime.env import registered

BUDGET_ENV = "PYPTO_NATIVE_AFTER"

IMPORT_COST = 0.3
"""Seconds a process pays once to start the native backend (xDSL's llvm dialect, the lowering's
modules, LLVM): measured 0.17-0.21 s of CPU with a kernel's load, more in wall time on a loaded
machine (docs/performance.md#which-backend-by-default)."""
LOAD_COST = 0.03
"""Seconds to load one kernel's object code from the disk cache (the support check, the cache
key, the JIT's link): 5-50 ms on the zoo."""
COMPILE_COST = 0.3
"""Seconds of a typical first compile (lowering + LLVM): 100-2500 ms on the zoo, median ~0.2 s."""

clock: Callable[[], float] = time.perf_counter
"""The clock interpreted launches are timed with (tests replace it: no timing in tests)."""


_BUDGET_SETTING = registered(BUDGET_ENV)
"""`PYPTO_NATIVE_AFTER` in seconds (`inf` / `never`: never); None when unset (then `budget`
estimates the switch's cost); its `UsageError` for another value (pypto/settings.py). Read at
every launch on "tiered" (`pto.launch` reads it first, so that a bad value raises there)."""

native_after = _BUDGET_SETTING


def budget(cached: bool) -> float:
    """Seconds of interpreted launches of one specialisation after which "tiered" switches:
    `PYPTO_NATIVE_AFTER` when set, else what switching costs — the object code's load
    (`cached`) or its compile, plus the native backend's import if this process has not paid
    it yet."""
    given = _BUDGET_SETTING()
    if given is not None:
        return given
    loaded = _JIT in sys.modules
    return (0.0 if loaded else IMPORT_COST) + (LOAD_COST if cached else COMPILE_COST)


_JIT = "pypto.backend.native.jit"
"""The native backend's module whose import `IMPORT_COST` stands for."""


class Tier:
    """One specialisation's interpreted time so far and whether the disk cache missed (kept on
    its `CompiledKernel`)."""

    __slots__ = ("spent", "launches", "missed")

    def __init__(self) -> None:
        self.spent = 0.0
        self.launches = 0
        self.missed = False


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
            native.interpreter = compiled.executable  # (printf's lane vectors)
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


def tiered(compiled: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
           args: Any) -> Any:
    """One launch on "tiered": the native code to run it with, or None after running it on the
    interpreter (its wall time added to the specialisation's). Until the interpreted launches
    have taken as long as loading the object code would, nothing native is touched; then the
    disk cache is looked up (a hit runs natively); after a miss, once they have taken as long
    as a compile, the kernel is compiled."""
    state = compiled.__dict__
    native = state.get("_native")
    if native is not None:
        if not isinstance(native, Exception):
            return native
        compiled.executable.run(grid, block, args)  # unsupported: the interpreter for good
        return None
    tier = state.get("_tier")
    if tier is None:
        tier = state["_tier"] = Tier()
    given = _BUDGET_SETTING()  # `budget(cached=not tier.missed)`, inline: every interpreted
    if given is None:  # launch pays this
        given = (0.0 if _JIT in sys.modules else IMPORT_COST) + \
            (COMPILE_COST if tier.missed else LOAD_COST)
    if tier.spent >= given:
        if not tier.missed:
            native = native_code(compiled, False, cached_only=True)
            if native is not None:
                return native
            tier.missed = "_native" not in state  # (else unsupported: kept, interpreted)
        if tier.missed and tier.spent >= budget(cached=False):
            native = native_code(compiled, False)
            if native is not None:
                return native
    start = clock()
    try:
        compiled.executable.run(grid, block, args)
    finally:  # (a launch that raised took its time too)
        tier.spent += clock() - start
        tier.launches += 1
    return None
