"""Analyses shared by the compiler, the passes and the interpreter, computed once per kernel.

`pto.compile()` asks the same questions of a kernel several times: the frontend's uniformity
check, `pto-verify-barriers`, the interpreter's choice of execution mode and its code generator
all need the lane-varying values (`uniformity.varying_values`), and the barrier passes share one
`LaneModel` (lane roots, token instances). Each is computed on first use and kept here, keyed by
the kernel op, until the IR changes (MLIR's analysis manager, reduced to what pypto needs):

- `run_pipeline` calls `invalidate(module)` after every pass that does not declare
  `preserves_analyses = True` (the verifiers, which only read the IR);
- code that edits a kernel outside a pass pipeline calls `invalidate` itself. Edits that add or
  remove barriers only (what `pto-insert-barriers` does) change no value, so the cached values
  stay right while that pass runs.

Where the entries live, and why (docs/reliability.md#threads): on the kernel op itself (an
attribute of the Python object), not in a process-wide table. A process-wide weak dictionary
had two faults. `invalidate` had to iterate it to find the kernels under its root, and a
second thread compiling another kernel meanwhile added an entry: `RuntimeError: dictionary
changed size during iteration`. And an analysis that refers to its kernel (a `LaneModel`
does) kept its weak key alive for ever: every compiled block kernel leaked. Now:

- `invalidate(root)` stamps `root` with a new number from a process-wide counter (atomic:
  `itertools.count`); nothing is iterated, and it costs the same however many kernels exist;
- an entry remembers the newest stamp on its kernel and the kernel's ancestors when it was
  computed; `cached` recomputes when that has changed (a pass invalidated the module, or the
  kernel itself), so invalidating a module still drops the analyses of every kernel in it;
- the entries die with their kernel (a cycle through an analysis is ordinary garbage).

Two threads asking for the same analysis of one kernel (a compiled kernel shared through the
compile cache, profiled from both) may both compute it; each gets a correct value and one is
kept. Only the thread compiling a module changes its IR, so only it invalidates it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from xdsl.ir import Operation

T = TypeVar("T")

_ENTRIES = "_pypto_analyses"
"""Attribute of a kernel op: (stamp when computed, {key: analysis})."""
_STAMP = "_pypto_invalidated"
"""Attribute of an op: the number of the last `invalidate` of it (absent: never)."""
_STAMPS = itertools.count(1)


def _newest_stamp(op: Operation) -> int:
    """The newest invalidation of `op` or of an op that contains it (0: none)."""
    newest = 0
    node: Operation | None = op
    while node is not None:
        stamp = node.__dict__.get(_STAMP, 0)
        if stamp > newest:
            newest = stamp
        node = node.parent_op()
    return newest


def cached(kernel: Operation, key: Hashable, compute: Callable[[], T]) -> T:
    """The analysis `key` of `kernel`, computed by `compute()` on first use."""
    stamp = _newest_stamp(kernel)
    found = kernel.__dict__.get(_ENTRIES)
    if found is None or found[0] != stamp:
        found = (stamp, {})
        kernel.__dict__[_ENTRIES] = found  # one tuple, replaced whole
    entries = found[1]
    if key in entries:
        return entries[key]
    value = compute()
    return entries.setdefault(key, value)


def invalidate(root: Operation) -> None:
    """Forget every analysis of `root` and of the kernels nested in it (after an IR change)."""
    root.__dict__[_STAMP] = next(_STAMPS)


def cached_keys(kernel: Operation) -> list[Hashable]:
    """The analyses of `kernel` that are current (tests look at what is kept)."""
    found = kernel.__dict__.get(_ENTRIES)
    if found is None or found[0] != _newest_stamp(kernel):
        return []
    return list(found[1])
