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

Entries live as long as the kernel op (weak keys): dropping a module drops its analyses.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from xdsl.ir import Operation

T = TypeVar("T")

_CACHE: weakref.WeakKeyDictionary[Operation, dict[Hashable, Any]] = weakref.WeakKeyDictionary()


def cached(kernel: Operation, key: Hashable, compute: Callable[[], T]) -> T:
    """The analysis `key` of `kernel`, computed by `compute()` on first use."""
    entries = _CACHE.get(kernel)
    if entries is None:
        entries = _CACHE[kernel] = {}
    if key not in entries:
        entries[key] = compute()
    return entries[key]


def invalidate(root: Operation) -> None:
    """Forget every analysis of `root` and of the kernels nested in it (after an IR change)."""
    for kernel in list(_CACHE.keys()):
        if kernel is root or root.is_ancestor(kernel):
            del _CACHE[kernel]
