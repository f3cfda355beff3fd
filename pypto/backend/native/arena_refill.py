"""The L1 arena's refill, left out where no read can see it (docs/native.md#the-l1-arena).

Before every block the grid function copies the poisoned template over the block's arena
(phase_codegen.py), as the interpreter gives each block fresh L1 holding its poison (NaN,
0x7FBADBAD). For a kernel whose blocks overwrite their buffers before reading them that copy
is never seen, yet it is a `memcpy` per block: 2 KiB for argmin block's two buffers, about a
third of its launch (perf, 2026-12-05). `refill_ranges` gives the arena words a launch of the
compiled 1-D block shape must still refill; the grid function refills only those when the
launch has that shape, else the whole arena as before.

A buffer's elements need no refill when

- the first op of the kernel (in program order) that touches the buffer is a `pto.store` at
  the top level of the kernel's body (every lane runs it: the frontend makes early returns
  `if`s), at offset `x + c` (`c` a constant, x the lane's `local_id(0)`, or `warp * 32 +
  lane`): in a 1-D block of `lanes` lanes it writes elements `[c, c + lanes)` before any
  lane reads the buffer (the phase plan never puts an L1 read after an L1 write in one phase:
  docs/native.md#phases) — those elements need no refill; and
- when every later read of the buffer is a `pto.load` whose offset, a linear form in x, the
  warp and lane ids, constants and uniform values of known range (phase_merge.py), stays in
  `[c, c + lanes)` for every lane of the block, the rest of the buffer is never read either.

Any other use of the buffer (an atomic, a copy, a tile instruction, a pointer passed on) reads
anything: then only the first store's elements are left out. A pointer to L1 that is not a
chain of `pto.addptr` from a `pto.alloc_local` (a `select` of two, a loop-carried one) leaves
the whole refill as it is. Buffers may share arena bytes (`pto-allocate-l1` reuses space): a
byte is left out only when every buffer covering it leaves it out.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from pypto.backend.native.phase_merge import LANE_ID, ONE, WARP, WARP_ID, X, _Forms, _value_range
from pypto.backend.native.phases import allocs, arena_layout, arena_words
from pypto.dialects import pto


ENABLED = True
"""Off: every block refills the whole arena (for measuring)."""


class _Unknown(Exception):
    """An L1 pointer not traced to its buffer: keep the whole refill."""


def _is_l1(value: SSAValue) -> bool:
    return getattr(value.type, "space", None) == "local"


def _span(form: dict[object, int], lanes: int) -> tuple[int, int] | None:
    """[lo, hi] of an offset form over the lanes of a 1-D block of `lanes` lanes, or None."""
    x = np.arange(lanes, dtype=np.int64)
    lane_part = np.zeros(lanes, dtype=np.int64)
    lo = hi = 0
    for key, c in form.items():
        if key is ONE:
            lo, hi = lo + c, hi + c
        elif key == X:
            lane_part += c * x
        elif key == WARP_ID:
            lane_part += c * (x // WARP)
        elif key == LANE_ID:
            lane_part += c * (x % WARP)
        elif isinstance(key, tuple):
            return None  # (a uniform times x)
        else:
            r = _value_range(key)
            if r is None:
                return None
            lo, hi = lo + min(c * r[0], c * r[1]), hi + max(c * r[0], c * r[1])
    return lo + int(lane_part.min()), hi + int(lane_part.max())


def _skipped(kernel: func.FuncOp, lanes: int,
             uniform: Callable[[SSAValue], bool]) -> dict[Operation, tuple[int, int]]:
    """{alloc: [start, end) elements a block of the compiled shape writes before reading}."""
    forms = _Forms(uniform)
    base: dict[SSAValue, Operation] = {}
    first: dict[Operation, tuple[int, int] | None] = {}  # (None: no elements left out)
    reads_inside: dict[Operation, bool] = {}
    entry = kernel.body.block
    for op in kernel.walk():
        if isinstance(op, pto.AllocLocalOp):
            base[op.result] = op
            continue
        touched = []
        for v in op.operands:
            if _is_l1(v):
                if v not in base:
                    raise _Unknown
                touched.append(base[v])
        if isinstance(op, pto.AddPtrOp):
            if op.ptr in base:
                base[op.result] = base[op.ptr]  # (an offset, not an access)
            continue
        for r in op.results:
            if _is_l1(r):
                raise _Unknown  # (a pointer made otherwise: select, loop-carried, ...)
        for alloc in dict.fromkeys(touched):
            if alloc not in first:  # its first access
                first[alloc] = None
                if isinstance(op, pto.StoreOp) and op.parent_block() is entry and \
                        not _is_l1(op.value):
                    at = forms.address(op.ptr)
                    if at is not None and at[0] is alloc and set(at[1]) <= {X, ONE} and \
                            at[1].get(X) == 1:
                        c = at[1].get(ONE, 0)
                        first[alloc] = (c, c + lanes)
                        reads_inside[alloc] = True
                continue
            if first[alloc] is None or isinstance(op, pto.StoreOp) and not _is_l1(op.value):
                continue  # (a write: what it leaves is what a read sees, in both backends)
            inside = False
            if isinstance(op, pto.LoadOp):
                at = forms.address(op.ptr)
                span = _span(at[1], lanes) if at is not None and at[0] is alloc else None
                lo, hi = first[alloc]  # type: ignore[misc]
                inside = span is not None and lo <= span[0] and span[1] < hi
            reads_inside[alloc] = reads_inside[alloc] and inside
    out = {}
    for alloc, span in first.items():
        if span is not None:
            count = alloc.result.type.size  # type: ignore[attr-defined]
            out[alloc] = (0, count) if reads_inside[alloc] else span
    return out


def refill_ranges(kernel: func.FuncOp, lanes: int,
                  uniform: Callable[[SSAValue], bool]) -> list[tuple[int, int]] | None:
    """The arena's word ranges `[a, b)` a block of a launch of `lanes` lanes in 1-D (the
    compiled shape) must refill, or None when that is the whole arena (see the module doc)."""
    layout = arena_layout(kernel)
    words = arena_words(layout)
    if not words or not ENABLED:
        return None
    try:
        skipped = _skipped(kernel, lanes, uniform)
    except _Unknown:
        return None
    if not skipped:
        return None
    need = np.zeros(words * 8, dtype=bool)  # (bytes some buffer needs refilled)
    for op, buf in zip(allocs(kernel), layout):
        span = skipped.get(op)
        size = buf.dtype.itemsize
        lo, hi = (max(0, span[0]), min(buf.count, span[1])) if span else (0, 0)
        mine = np.ones(buf.end - buf.offset, dtype=bool)
        if lo < hi:
            mine[lo * size:hi * size] = False
        need[buf.offset:buf.end] |= mine
    word_need = need.reshape(words, 8).any(axis=1)
    if word_need.all():
        return None
    ranges: list[tuple[int, int]] = []
    for w in np.flatnonzero(word_need):
        if ranges and ranges[-1][1] == w:
            ranges[-1] = (ranges[-1][0], int(w) + 1)
        else:
            ranges.append((int(w), int(w) + 1))
    return ranges
