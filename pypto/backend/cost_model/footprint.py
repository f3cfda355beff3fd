"""Footprints: the bytes of each tensor a launch touches, from its accesses' address ranges.

The L2 rule (launch.py) needs, per tensor argument, how many of its bytes the launch touches
at least once (they reach HBM once; what is moved beyond that is a repeat that may hit in L2)
and how many a wave touches. A tensor's allocation size says neither: rows of A the kernel
never reads must change nothing (docs/cost-model.md#footprints-not-tensor-sizes).

`Footprints` collects byte intervals per tensor (parameter index) and measures their union
(NumPy: sort by start, merge). They come from:

* lane loads, stores, fmas and atomics on HBM: each traced block's lowest and highest
  touched element per address (the cost trace, trace.py); for blocks the class plan did not
  trace (classes.py), the representative's interval shifted by where the block's lane 0
  points relative to the representative's (`lane_shift`, the plan's own evaluation);
* bulk copies (and fused loads): every row of every execution in every block, from the
  run-time values of their address, size, rows and stride (`CopyRecorder`, an instrument of
  the one executor run; a run whose blocks are classed without tracing runs the launch with
  it when the kernel copies to or from HBM).

A tensor one of whose accesses cannot be measured (an operand the recorder did not see)
keeps the old bound: the smaller of its size and what was moved of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.ir import BlockArgument, Operation, SSAValue

from pypto.analysis.ir_utils import constant_int
from pypto.backend.interpreter.instruments import Instrument, OpTable
from pypto.dialects.traits import declared_accesses, element_bytes, tile_footprint


class Footprints:
    """Byte intervals touched per tensor; tensors marked unknown have no footprint."""

    def __init__(self) -> None:
        self.lo: dict[int, list[np.ndarray]] = {}
        self.hi: dict[int, list[np.ndarray]] = {}
        self.unknown: set[int] = set()

    def add(self, tensor: int | None, lo: Any, hi: Any) -> None:
        """Bytes [lo, hi) of `tensor` (arrays or ints, one interval per element)."""
        if tensor is None:
            return
        self.lo.setdefault(tensor, []).append(np.asarray(lo, dtype=np.int64).reshape(-1))
        self.hi.setdefault(tensor, []).append(np.asarray(hi, dtype=np.int64).reshape(-1))

    def forget(self, tensor: int | None) -> None:
        """`tensor` has an access that could not be measured: no footprint for it."""
        if tensor is not None:
            self.unknown.add(tensor)

    def bytes(self, sector: int = 1) -> dict[int, int]:
        """Per measured tensor, the bytes of the union of its intervals, each widened to
        whole `sector`s (memory moves whole sectors: `[cost.memory] sector_bytes`)."""
        out = {}
        for t, los in self.lo.items():
            if t in self.unknown:
                continue
            lo = np.concatenate(los) // sector * sector
            hi = -(-np.concatenate(self.hi[t]) // sector) * sector
            out[t] = union_bytes(lo, hi)
        return out


def union_runs(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals [lo, hi) as disjoint runs (starts, ends), in order."""
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if lo.size == 0:
        return lo, hi
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    # an interval starts a new run when it begins past everything before it
    new = np.ones(lo.size, dtype=bool)
    new[1:] = lo[1:] > reach[:-1]
    # a run ends where the next one starts (or at the last interval): its reach there
    last = np.ones(lo.size, dtype=bool)
    last[:-1] = new[1:]
    return lo[new], reach[last]


def union_bytes(lo: np.ndarray, hi: np.ndarray) -> int:
    """Length of the union of the intervals [lo, hi)."""
    starts, ends = union_runs(lo, hi)
    return int((ends - starts).sum())


def lane_spans(value: Any, mask: Any, count: int, block_lanes: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(blocks, lowest, highest element offset) of the active lanes of each block of a lane
    vector that has one (`value`: one offset per lane, or one for all; `blocks`: indices in
    the vector); None when no lane is active or the shape is not one per lane."""
    offsets = np.asarray(value, dtype=np.int64).reshape(-1)
    if offsets.size == 1:
        offsets = np.broadcast_to(offsets, (count,))
    if offsets.size != count or count % block_lanes or mask is False:
        return None
    n = count // block_lanes
    rows = offsets.reshape(n, block_lanes)
    if mask is None:
        return np.arange(n, dtype=np.int64), rows.min(axis=1), rows.max(axis=1)
    active = np.broadcast_to(np.asarray(mask, dtype=bool).reshape(-1), (count,)).reshape(
        n, block_lanes)
    big = np.iinfo(np.int64).max
    lo = np.where(active, rows, big).min(axis=1)
    hi = np.where(active, rows, -big).max(axis=1)
    some = active.any(axis=1)
    if not some.any():
        return None
    return np.flatnonzero(some), lo[some], hi[some]


def _global_copy(op: Operation) -> tuple[int, SSAValue] | None:
    """(operand index, address) of the HBM side of a bulk copy or fused load, else None."""
    if tile_footprint(op, constant_int) is None:
        return None
    for access in declared_accesses(op):
        if access.space == "global":
            return access.operand, op.operands[access.operand]
    return None


def _wanted(table: OpTable) -> tuple[dict[int, int], set[SSAValue]]:
    """(copy op id -> operand index of its HBM side, the SSA values the copies read)."""
    copies: dict[int, int] = {}
    values: set[SSAValue] = set()
    for info in table:
        found = _global_copy(info.op)
        if found is None:
            continue
        copies[info.id] = found[0]
        values.update(info.op.operands)
    return copies, values


def has_global_copies(table: OpTable) -> bool:
    return bool(table.derived("footprint-copies", _wanted)[0])


class CopyRecorder(Instrument):
    """Records every bulk copy's HBM rows, per block, into `footprints` (see the module
    docstring). `args`: the launch's arguments (integers a copy's size or stride may be)."""

    def __init__(self, args: Sequence[Any], footprints: Footprints) -> None:
        self.args = args
        self.footprints = footprints
        self._copies: dict[int, int] = {}
        self._producers: dict[int, SSAValue] = {}
        self._seen: dict[SSAValue, Any] = {}

    def begin(self, table: OpTable, grid: tuple[int, int, int],
              block: tuple[int, int, int]) -> None:
        super().begin(table, grid, block)
        self._copies, values = table.derived("footprint-copies", _wanted)
        self._producers = {table.id_of(v.owner): v for v in values
                           if isinstance(v.owner, Operation) and v.owner in table._ids}
        self._seen = {}

    def after(self, op_id: int, ctx: Any, mask: Any, value: Any) -> None:
        produced = self._producers.get(op_id)
        if produced is not None:
            self._seen[produced] = value
        side = self._copies.get(op_id)
        if side is not None and mask is not False:
            self._record(self.table[op_id].op, side, ctx)

    def _value(self, v: SSAValue, n: int, bl: int) -> np.ndarray | None:
        """`v` per block of the vector (n blocks of bl lanes), or None if not known."""
        known = constant_int(v)
        if known is not None:
            return np.full(n, known, dtype=np.int64)
        if isinstance(v, BlockArgument) and isinstance(v.block.parent_op(), func.FuncOp):
            arg = self.args[v.index] if v.index < len(self.args) else None
            if isinstance(arg, bool | int | np.integer):
                return np.full(n, int(arg), dtype=np.int64)
            return np.zeros(n, dtype=np.int64)  # a tensor parameter: its base, offset 0
        seen = self._seen.get(v)
        if seen is None:
            return None
        a = np.asarray(seen)
        if a.dtype.kind not in "iub":
            return None
        a = a.astype(np.int64).reshape(-1)
        if a.size == 1:
            return np.full(n, int(a[0]), dtype=np.int64)
        if a.size == n * bl:
            return a.reshape(n, bl)[:, 0]
        return None

    def _record(self, op: Operation, side: int, ctx: Any) -> None:
        from pypto.backend.cost_model.facts import tensor_of

        bl = ctx.block_lanes
        n = max(1, ctx.count // bl)
        address = op.operands[side]
        tensor = tensor_of(address)
        values: dict[SSAValue, np.ndarray | None] = {}

        def value_of(v: SSAValue) -> int | None:
            got = values.setdefault(v, self._value(v, n, bl))
            if got is None or not (got == got[0]).all():
                return None  # (a size or stride that differs between blocks: per block below)
            return int(got[0])

        tile = tile_footprint(op, value_of).get(side)
        base = self._value(address, n, bl)
        if tile is None or base is None:
            self.footprints.forget(tensor)
            return
        elem = element_bytes(address)
        rows = np.arange(max(0, tile.rows), dtype=np.int64) * tile.stride
        lo = (base[:, None] + rows[None, :]) * elem
        self.footprints.add(tensor, lo, lo + tile.row_len * elem)


def lane_runs(spans: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]], table: Any,
              plan: Sequence[tuple[int, list[int]]] | None,
              shifts: dict[SSAValue, np.ndarray] | None
              ) -> dict[int | None, tuple[np.ndarray, np.ndarray]]:
    """`lane_footprints`, merged per tensor into disjoint byte runs (a few, however many
    blocks: a class plan's result is cached with it, run.py)."""
    found = Footprints()
    lane_footprints(spans, table, plan, shifts, found)
    return {t: union_runs(np.concatenate(found.lo[t]), np.concatenate(found.hi[t]))
            for t in found.lo}


def lane_footprints(spans: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]],
                    table: Any, plan: Sequence[tuple[int, list[int]]] | None,
                    shifts: dict[SSAValue, np.ndarray] | None,
                    footprints: Footprints) -> None:
    """Add the lane accesses' intervals: `spans[op id of an address]` = (traced blocks,
    lowest, highest element offset). With `plan` (the class plan's representatives and their
    members, only the representatives traced) and `shifts` (per block, where lane 0 of a
    block-dependent address points), each member touches its representative's interval
    shifted by its lane 0's shift."""
    from pypto.backend.cost_model.facts import tensor_of

    for op_id, (blocks, lo, hi) in spans.items():
        value = table[op_id].op.results[0]
        tensor = tensor_of(value)
        elem = element_bytes(value)
        if plan is None:
            footprints.add(tensor, lo * elem, (hi + 1) * elem)
            continue
        shift = (shifts or {}).get(value)
        where = {int(b): k for k, b in enumerate(blocks)}
        for rep, members in plan:
            if rep not in where:
                continue
            k = where[rep]
            if shift is None:  # the same address in every block of the launch
                footprints.add(tensor, lo[k] * elem, (hi[k] + 1) * elem)
                continue
            move = shift[np.asarray(members, dtype=np.int64)] - shift[rep]
            footprints.add(tensor, (lo[k] + move) * elem, (hi[k] + 1 + move) * elem)
