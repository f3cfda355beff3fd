"""One alias / footprint query for every pass that moves a memory operation.

`pto-double-buffer` (issuing a later iteration's load before this iteration's compute),
`npu-fuse-load-mma` (moving a copy down to the MMA it feeds), `pto-allocate-l1` and the barrier
analysis all ask the same question: *may these two accesses touch one element?* They ask it here,
the same way (as MLIR passes ask `AliasAnalysis` and the memory-effect interfaces), and every
answer that cannot be proven is "may": a pass that cannot prove a move safe does not make it.

An access's **footprint** is where it may land: a *root* (the `pto.alloc_local` it points into,
or the kernel's pointer parameter in HBM), the *start* of the access as an affine form over SSA
values (`Linear`: coefficients of opaque values plus a constant, whatever parentheses the author
wrote: `x + (k + 1) * 64 + tid` and `(x + 64 * k) + (64 + tid)` are one form), and the *extent*:
the element offsets from the start it covers (one element for a lane access; rows of a bulk copy;
`m*k` elements of an MMA operand...), or None when not known at compile time (then it may cover
the whole root).

Two footprints **may overlap** unless
- their roots are distinct `alloc_local`s, or an L1 buffer and HBM, or two kernel parameters of
  which one is marked `pto.noalias` (LLVM's `noalias`: `pto.compile` marks every pointer
  parameter whose launch tensor is passed only once; hand-written IR without the mark is treated
  as possibly aliasing, as MLIR treats function arguments); or
- they share one root and the difference of their starts is bounded (opaque values either cancel
  or are lane ids with known ranges) by an interval that no pair of their extents can bridge.

`shift` lets a caller ask about another loop iteration: `{iv: 64}` evaluates the first access
with the induction variable `iv` moved by 64 (iteration k + 1 of a loop of step 64).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Attribute, BlockArgument, Operation, OpResult, SSAValue

from pypto.analysis.ir_utils import constant_int as _const, passes_yield, yielded as _yielded
from pypto.dialects import pto
from pypto.dialects.traits import (
    Tile,
    declares_buffer,
    forwards_yield,
    fused_copy,
    is_block_collective,
    launch_id,
    memory_accesses,
    offset_base,
    tile_footprint,
)

NOALIAS = "pto.noalias"
"""Argument attribute of a kernel pointer parameter that no other parameter overlaps."""

MAX_PATTERN = 1 << 16
"""Largest extent enumerated element by element; beyond it, its bounding interval is used."""


# --------------------------------------------------------------------------------------------
# Affine forms over SSA values
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Linear:
    """`sum(coef * value) + const` over opaque SSA values (integers)."""

    coefs: frozenset[tuple[SSAValue, int]] = frozenset()
    const: int = 0

    @staticmethod
    def of(value: SSAValue) -> Linear:
        return Linear(frozenset({(value, 1)}))

    def __add__(self, other: Linear) -> Linear:
        coefs = dict(self.coefs)
        for v, c in other.coefs:
            coefs[v] = coefs.get(v, 0) + c
        return Linear(frozenset((v, c) for v, c in coefs.items() if c), self.const + other.const)

    def scaled(self, k: int) -> Linear:
        if k == 0:
            return Linear()
        return Linear(frozenset((v, c * k) for v, c in self.coefs), self.const * k)

    def __sub__(self, other: Linear) -> Linear:
        return self + other.scaled(-1)

    def coef(self, value: SSAValue) -> int:
        return dict(self.coefs).get(value, 0)


_CASTS = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp)


def linear(value: SSAValue, _depth: int = 0) -> Linear:
    """`value` as an affine form: sums, differences, products by constants and widening casts
    are looked through; anything else is an opaque term."""
    known = _const(value)
    if known is not None:
        return Linear(const=known)
    if _depth > 64 or not isinstance(value, OpResult):
        return Linear.of(value)
    op = value.op
    if isinstance(op, _CASTS):
        return linear(op.operands[0], _depth + 1)
    if isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp):
        a, b = (linear(o, _depth + 1) for o in op.operands)
        if isinstance(op, arith.AddiOp):
            return a + b
        if isinstance(op, arith.SubiOp):
            return a - b
        if not a.coefs:
            return b.scaled(a.const)
        if not b.coefs:
            return a.scaled(b.const)
    return Linear.of(value)


# --------------------------------------------------------------------------------------------
# Roots and footprints
# --------------------------------------------------------------------------------------------


def base(ptr: SSAValue) -> tuple[SSAValue | None, Linear]:
    """The root `ptr` points into (an `alloc_local` result or a kernel parameter; None if not
    known) and its element offset from the root, looking through `addptr` and stage results."""
    offset = Linear()
    for _ in range(256):
        if isinstance(ptr, BlockArgument):
            owner = ptr.block.parent_op()
            return (ptr if isinstance(owner, func.FuncOp) else None), offset
        if not isinstance(ptr, OpResult):
            return None, offset
        op = ptr.op
        if declares_buffer(op):
            return ptr, offset
        pointer = offset_base(op)
        if pointer is not None:
            offset = offset + linear(op.operands[1])
            ptr = pointer
            continue
        if op.regions and forwards_yield(op):  # a stage or pipeline: what its region yields
            inner = _yielded(op, ptr.index)
            if len(inner) != 1:
                return None, offset
            ptr = inner[0]
            continue
        return None, offset
    return None, offset


def roots(value: SSAValue, _seen: frozenset[SSAValue] = frozenset()
          ) -> frozenset[SSAValue] | None:
    """Every root `value` may point into, through `addptr`, `select`, branch, loop and stage
    results: `alloc_local` results and kernel parameters; None when one cannot be traced."""
    if value in _seen:
        return frozenset()
    seen = _seen | {value}
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op()
        if isinstance(owner, func.FuncOp):
            return frozenset({value})
        if isinstance(owner, scf.ForOp) and value.index > 0:
            return _union([roots(owner.iter_args[value.index - 1], seen),
                           *(roots(v, seen) for v in _yielded(owner, value.index - 1))])
        return None
    if not isinstance(value, OpResult):
        return None
    op = value.op
    if declares_buffer(op):
        return frozenset({value})
    base = offset_base(op)
    if base is not None:
        return roots(base, seen)
    if isinstance(op, arith.SelectOp):
        return _union([roots(v, seen) for v in op.operands[1:]])
    if passes_yield(op):
        found = _yielded(op, value.index)
        return _union([roots(v, seen) for v in found]) if found else None
    if isinstance(op, scf.ForOp):
        return _union([roots(op.iter_args[value.index], seen),
                       *(roots(v, seen) for v in _yielded(op, value.index))])
    return None


def _union(parts: list[frozenset[SSAValue] | None]) -> frozenset[SSAValue] | None:
    found: frozenset[SSAValue] = frozenset()
    for part in parts:
        if part is None:
            return None
        found |= part
    return found


def sets_may_alias(a: frozenset[SSAValue] | None, b: frozenset[SSAValue] | None) -> bool:
    """May an address into one of the roots `a` meet one into `b` (None: unknown roots)?"""
    if a is None or b is None:
        return True
    return any(roots_may_alias(x, y) for x in a for y in b)


def _noalias(root: SSAValue) -> bool:
    if not isinstance(root, BlockArgument):
        return False
    owner = root.block.parent_op()
    if not isinstance(owner, func.FuncOp) or owner.arg_attrs is None:
        return False
    attrs = owner.arg_attrs.data
    if root.index >= len(attrs):
        return False
    return NOALIAS in attrs[root.index].data


def roots_may_alias(a: SSAValue | None, b: SSAValue | None) -> bool:
    """May two roots share memory? Unknown roots may; distinct L1 buffers never do; L1 never
    meets HBM; two kernel parameters may unless one is `pto.noalias`."""
    if a is None or b is None or a is b:
        return True
    a_param, b_param = isinstance(a, BlockArgument), isinstance(b, BlockArgument)
    if a_param != b_param:
        return False  # an L1 buffer and an HBM parameter
    if not a_param:
        return False  # two alloc_locals
    return not (_noalias(a) or _noalias(b))


def mark_noalias(kernel: func.FuncOp, params: set[int]) -> None:
    """Mark the pointer parameters at `params` `pto.noalias` (see `NOALIAS`)."""
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr

    n = len(kernel.body.block.args)
    old = kernel.arg_attrs.data if kernel.arg_attrs is not None else \
        tuple(DictionaryAttr({}) for _ in range(n))
    new: list[DictionaryAttr] = []
    for i, attrs in enumerate(old):
        entries: dict[str, Attribute] = dict(attrs.data)
        if i in params:
            entries[NOALIAS] = UnitAttr()
        new.append(DictionaryAttr(entries))
    kernel.arg_attrs = ArrayAttr(new)


@dataclass(frozen=True)
class Footprint:
    """Where one access of an op may land (see the module docstring)."""

    op: Operation
    root: SSAValue | None
    start: Linear
    extent: np.ndarray | None  # element offsets from `start`; None: unknown (whole root)
    kind: str  # "read" | "write"
    space: str

    @property
    def writes(self) -> bool:
        return self.kind == "write"


def _rows(rows: int, row_elems: int, stride: int) -> np.ndarray | None:
    if rows <= 0 or row_elems <= 0 or stride < 0:
        return None
    if rows * row_elems > MAX_PATTERN:  # bounding interval: first to last element
        return np.array([0, (rows - 1) * stride + row_elems - 1], dtype=np.int64)
    starts = np.arange(rows, dtype=np.int64) * stride
    elements = (starts[:, None] + np.arange(row_elems, dtype=np.int64)[None, :]).ravel()
    if stride >= row_elems:  # rows disjoint and in order: already sorted and unique
        return elements
    return np.unique(elements)


def _elements(tile: Tile | None) -> np.ndarray | None:
    return None if tile is None else _rows(tile.rows, tile.row_len, tile.stride)


def _extent(op: Operation, operand: int) -> np.ndarray | None:
    """The element offsets a tile instruction's address operand covers (its declared tile
    footprint, sizes known at compile time), or None if unknown."""
    tiles = tile_footprint(op, _const)
    if tiles is None:
        return None
    covered = _elements(tiles.get(operand))
    fused = fused_copy(op, _const)
    if fused is not None and fused[0] == operand and covered is not None:
        copied = _elements(fused[1])  # npu.load_mma: its fused copy writes this operand too
        return None if copied is None else np.union1d(covered, copied)
    return covered


_ONE = np.zeros(1, dtype=np.int64)


def footprints(op: Operation) -> list[Footprint]:
    """Every memory access `op` makes (its declared accesses), as footprints."""
    found: list[Footprint] = []
    collective = is_block_collective(op)
    for access in memory_accesses(op):
        ptr = op.operands[access.operand]
        root, start = base(ptr)
        extent = _extent(op, access.operand) if collective else _ONE
        found.append(Footprint(op, root, start, extent, access.kind, access.space))
    return found


# --------------------------------------------------------------------------------------------
# The query
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranges:
    """Known ranges of opaque values (inclusive): lane ids from the block shape, loop counters
    from constant bounds. Values without a range must cancel for a proof."""

    block: tuple[int, int, int] | None = None
    max_lanes: int = 1024
    warp_size: int = pto.WARP_SIZE
    extra: dict[SSAValue, tuple[int, int]] = field(default_factory=dict)

    def of(self, value: SSAValue) -> tuple[int, int] | None:
        if value in self.extra:
            return self.extra[value]
        if not isinstance(value, OpResult):
            return None
        op = value.op
        lanes = self.max_lanes if self.block is None else \
            self.block[0] * self.block[1] * self.block[2]
        ident = launch_id(op)
        if ident == "local_id":
            dim = op.dim_index  # type: ignore[attr-defined]
            top = self.block[dim] if self.block is not None else self.max_lanes
            return 0, top - 1
        if ident == "lane_id":
            return 0, self.warp_size - 1
        if ident == "warp_id":
            return 0, max(0, -(-lanes // self.warp_size) - 1)
        return None


def _interval(form: Linear, ranges: Ranges) -> tuple[int, int] | None:
    lo = hi = form.const
    for value, coef in form.coefs:
        bounds = ranges.of(value)
        if bounds is None:
            return None
        a, b = coef * bounds[0], coef * bounds[1]
        lo, hi = lo + min(a, b), hi + max(a, b)
    return lo, hi


def _shifted(form: Linear, shift: Mapping[SSAValue, int]) -> Linear:
    delta = sum(form.coef(v) * s for v, s in shift.items())
    return Linear(form.coefs, form.const + delta)


def may_overlap(first: Footprint, second: Footprint, *, ranges: Ranges | None = None,
                shift: Mapping[SSAValue, int] | None = None) -> bool:
    """May `first` (evaluated with `shift` applied to its opaque values) and `second` touch a
    common element? False only when proven."""
    if first.space != second.space and "any" not in (first.space, second.space):
        return False
    if not roots_may_alias(first.root, second.root):
        return False
    if first.root is None or first.root is not second.root:
        return True  # two parameters that may alias, or an unknown root
    if first.extent is None or second.extent is None:
        return True
    start = _shifted(first.start, shift or {})
    gap = _interval(second.start - start, ranges or Ranges())
    if gap is None:
        return True
    # second's element j lands at first's offset gap + j: overlap iff gap = a - b for some
    # a in first's extent and b in second's
    lo, hi = gap
    a, b = first.extent, second.extent
    if a.size * b.size > MAX_PATTERN:
        return not (hi < a.min() - b.max() or lo > a.max() - b.min())
    diffs = (a[:, None] - b[None, :]).ravel()
    return bool(((diffs >= lo) & (diffs <= hi)).any())


def conflict(first: Footprint, second: Footprint, **kw: object) -> bool:
    """May the two accesses conflict: overlap with at least one of them writing?"""
    return (first.writes or second.writes) and may_overlap(first, second, **kw)  # type: ignore[arg-type]


__all__ = ["Footprint", "Linear", "NOALIAS", "Ranges", "base", "conflict", "footprints",
           "linear", "mark_noalias", "may_overlap", "roots", "roots_may_alias",
           "sets_may_alias"]
