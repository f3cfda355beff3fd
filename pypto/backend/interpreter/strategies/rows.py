"""Block-local rows (docs/interpreter.md, "Batch mode: block-local accesses and lane windows"):
in batch mode a vector holds whole 1-D blocks, so a value `tid + u` (the ramp kind's `Value`
with `local`: lane k of each block holds `base + k`) addresses one row of each block's copy of
an L1 buffer. An access through it is one 2-D slice (`load_rows` / `store_rows`), a store
`buf[tid + u] = buf[tid + v] op buf[tid + w]` one ufunc over three slices (`rows_op`), and a
comparison `tid OP u` one block's mask repeated (`local_cmp`, its lane window found once).

- planner: `match` decides `RowOp` (the loads and the arithmetic `Fused`), `Load`, `Store`
  and `Compare` for ops using block-local values (the ramp kind decided those values);
- emission: each Decision's `emit` / `load` / `store` / `compare`;
- run time: `load_rows`, `store_rows`, `rows_op` below (the generated code calls them as
  `_s_rows.load_rows(_ctx, ...)`), on the lane context's row geometry (`row_span`,
  `lane_window`, `local_cmp`: a lane window has its own); each checks the data (bounds,
  masks, watched memory) and takes the general path when it does not allow the slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xdsl.dialects import arith
from xdsl.ir import Operation

from pypto.backend.interpreter.optables import _ARITH_BINARY, _STORE_UFUNCS
from pypto.backend.interpreter.strategies import base, ramp
from pypto.backend.interpreter.structured import masked_copy
from pypto.backend.interpreter.strategies.ramp import (
    _is_lane_store,
    _kernel_fn,
    base_of,
    lane_address,
    lane_address_or_none,
    signed_compare,
)
from pypto.dialects.arith_semantics import DIVISIONS
from pypto.dialects.traits import declared_accesses, offset_base


Mask = Any  # None | False | np.ndarray[bool] (see lanes.py)


@dataclass(frozen=True)
class Decision(base.Decision):
    """Base of this kind's decisions: the accesses read their address through its base."""

    def takes_base(self, op: Operation, index: int) -> bool:
        return index == lane_address_or_none(op)


@dataclass(frozen=True)
class Load(Decision):
    """A lane load through a block-local value: `load_rows`."""

    def load(self, gen: Any, op: Operation, site: int) -> str:
        p = op.operands[lane_address(op)]
        return f"_s_rows.load_rows(_ctx, {gen.name(p)}_b, {gen.base(p)}, _m, {site})"


@dataclass(frozen=True)
class Store(Decision):
    """A lane store (or fma) through a block-local value: `store_rows`."""

    def store(self, gen: Any, op: Operation, value: str, site: int) -> str:
        p = op.operands[lane_address(op)]
        return f"_s_rows.store_rows(_ctx, {gen.name(p)}_b, {gen.base(p)}, {value}, _m, {site})"


@dataclass(frozen=True, eq=False)
class RowOp(Decision):
    """`store(p, load(q) op load(r))` on rows: one ufunc from the two rows of L1 into the
    stored rows (`rows_op`), the reads and the write checked in program order."""
    a: Operation
    b: Operation

    def emit(self, gen: Any, op: Operation) -> None:
        a, b = self.a, self.b
        ufunc = _STORE_UFUNCS[type(op.operands[0].owner)]
        sa, sb = gen.site(a), gen.site(b)
        block = op.parent_block()
        assert block is not None
        a_first = block.get_operation_index(a) < block.get_operation_index(b)
        p, pa, pb = (x.operands[lane_address(x)] for x in (op, a, b))
        gen.emit(f"_s_rows.rows_op(_ctx, {gen.name(p)}_b, {gen.base(p)}, {ufunc}, "
                 f"{gen.name(pa)}_b, {gen.base(pa)}, {gen.name(pb)}_b, {gen.base(pb)}, _m, "
                 f"{sa}, {sb}, {gen.site(op)}, {a_first})")


@dataclass(frozen=True, eq=False)
class Compare(Decision):
    """`tid OP u` (block-local ids, signed): the same mask in every block, built once
    (`local_cmp`) from the bound relative to the value's base."""
    x: Any
    u: Any
    sym: str

    def takes_base(self, op: Operation, index: int) -> bool:
        return op.operands[index] is self.x

    def compare(self, gen: Any, op: Operation) -> str:
        return (f"_ctx.local_cmp({self.sym!r}, "
                f"_bound32(_np.int64({gen.name(self.u)}) - {gen.base(self.x)}))")


def match(op: Operation, facts: base.Facts) -> Decision | None:
    index = lane_address_or_none(op)
    if index is not None:
        d = base_of(facts, op.operands[index])
        if d is None or not d.local:
            return None
        if _is_lane_store(op) and not facts.instrumented:
            loads = row_operands(op, lambda load: (
                (dl := base_of(facts, load.operands[0])) is not None and dl.local))
            if loads is not None:
                facts.add(op.operands[0].owner, base.Fused())  # type: ignore[arg-type]
                for load in loads:
                    facts.add(load, base.Fused())
                return RowOp(*loads)
        if _kernel_fn(op) == "fma" or lane_writes(op):
            return Store()
        return Load()
    cmp = signed_compare(op, facts)
    if cmp is not None and base_of(facts, cmp[0]).local:  # type: ignore[union-attr]
        return Compare(*cmp)
    return None


def lane_writes(op: Operation) -> bool:
    """Is the lane access `op` a store (its one declared access writes)?"""
    return declared_accesses(op)[0].kind == "write"


def row_operands(store: Operation, qualifies: Any) -> tuple[Operation, Operation] | None:
    """For `store(p, load(q) op load(r))` where both loads `qualify` (block-local addresses;
    planned accesses for the planned-view kind's `PlanOp`), each intermediate value has no
    other use and nothing between the first load and the store touches memory: the two
    loads, which then run at the store as one ufunc."""
    value = store.operands[0]  # a lane store: (value, address)
    owner = value.owner
    if type(owner) not in _STORE_UFUNCS or owner.next_op is not store or \
            not value.has_one_use():
        return None
    loads = []
    for v in owner.operands:  # type: ignore[union-attr]
        load = v.owner
        if not (isinstance(load, Operation) and _kernel_fn(load) == "load" and
                qualifies(load) and v.has_one_use() and
                load.parent_block() is store.parent_block()):
            return None
        loads.append(load)
    first = min(loads, key=lambda o: o.parent_block().get_operation_index(o))
    op = first.next_op
    while op is not owner:
        if op is None or op.regions or op.name in DIVISIONS or \
                not (op in loads or type(op) in _ARITH_BINARY or offset_base(op) is not None
                     or isinstance(op, arith.ConstantOp | arith.CmpiOp | arith.CmpfOp)):
            return None  # only the two loads and pure arithmetic that cannot fail
        op = op.next_op
    return loads[0], loads[1]


# the run-time part: what the generated code calls (`_s_rows.load_rows(_ctx, ...)`) -------

def rows_inflight(ctx: Any, buf: Any, lo: int, hi: int, active: Any, site: int,
                  write: bool) -> None:
    """The in-flight copy checks of a row access (columns lo..hi of every block's copy,
    `active`: (blocks, columns) mask or None): copies' L1 regions are block-local bytes,
    so the columns any block touches are checked once, as the general path would check
    every lane (its report names no lane)."""
    cols = np.arange(lo, hi, dtype=np.int64) if active is None else \
        lo + np.flatnonzero(active.any(axis=0))
    if cols.size:
        if write:
            ctx.lanes.check_write(buf, cols, None, site, race=False)
        else:
            ctx.lanes.check_read(buf, cols, None, site, race=False)

def load_rows(ctx: Any, buf: Any, base: Any, mask: Mask, site: int) -> Any:
    """Load where lane k of each block reads element `base + k` of its block's copy of an
    L1 buffer (batch mode: block-local ids plus a uniform offset, as `buf + tid + s`): a
    2-D slice with one row per block instead of a gather."""
    if not ctx.row_runs:  # a warp window: the general path on the window's ids
        return ctx.lanes.load(buf, ctx.local_id(0) + np.int64(base), mask, site)
    cols = ctx.row_span(buf, base, mask)
    if cols is None:
        if not buf.stride and ctx.local_base == 0 and ctx.count == ctx.block_lanes:
            return ramp.load_ramp(ctx, buf, base, mask, site)  # one block: the ramp itself
        width = ctx.row_width
        lo = int(base) + ctx.local_base
        if buf.space == "global" and not ctx.inflight and \
                mask is not False and ctx.count % width == 0 and 0 <= lo and \
                lo + width <= buf.count:
            # HBM: every block reads the same elements (as gamma[c0 + tid])
            return np.tile(buf.data[lo:lo + width], ctx.count // width)
        return ctx.lanes.load(buf, ctx.local_id(0) + np.int64(base), mask, site)
    lo, hi, active = cols
    base = int(base)
    if buf.shadow is not None:
        ctx.races.race_rows(buf, base, lo, hi, active, site, write=False)
    if ctx.inflight:
        rows_inflight(ctx, buf, lo, hi, active, site, write=False)
    rows = buf.grid()[:, lo:hi]
    width = ctx.row_width
    if hi - lo == width:
        return rows.reshape(-1)  # a copy: the rows are not contiguous in the arena
    out = np.zeros((rows.shape[0], width), dtype=buf.data.dtype)
    j = lo - base - ctx.local_base  # lanes outside are inactive: their value is unused
    out[:, j:j + hi - lo] = rows
    return out.reshape(-1)

def rows_op(ctx: Any, dst: Any, base: Any, ufunc: Any, a: Any, base_a: Any, b: Any,
            base_b: Any, mask: Mask, site_a: int, site_b: int, site: int,
            a_first: bool = True) -> None:
    """`store_rows(dst, base, ufunc(load_rows(a, base_a), load_rows(b, base_b)))` computed
    straight from the two rows into the stored rows, one pass without temporaries (ufuncs
    handle operands that overlap the output as if copied first); the two reads and the
    write are checked in program order (`a_first`: a's load comes before b's). Anything
    unusual (fast paths off, a mask with holes,
    a row out of bounds, another result type) takes the three steps."""
    ca, cb, cd = (ctx.row_span(a, base_a, mask), ctx.row_span(b, base_b, mask),
                  ctx.row_span(dst, base, mask))
    if ca is None or cb is None or cd is None or ca[2] is not None or \
            cb[2] is not None or cd[2] is not None or \
            np.result_type(a.data.dtype, b.data.dtype) != dst.data.dtype:
        if a_first:
            va = load_rows(ctx, a, base_a, mask, site_a)
            vb = load_rows(ctx, b, base_b, mask, site_b)
        else:
            vb = load_rows(ctx, b, base_b, mask, site_b)
            va = load_rows(ctx, a, base_a, mask, site_a)
        store_rows(ctx, dst, base, ufunc(va, vb), mask, site)
        return
    reads = ((a, base_a, ca, site_a, False), (b, base_b, cb, site_b, False))
    for buf, at, cols, s, write in (reads if a_first else reads[::-1]) + \
            ((dst, base, cd, site, True),):
        if buf.shadow is not None:
            ctx.races.race_rows(buf, int(at), cols[0], cols[1], None, s, write=write)
        if ctx.inflight:
            rows_inflight(ctx, buf, cols[0], cols[1], None, s, write=write)
    ufunc(a.grid()[:, ca[0]:ca[1]], b.grid()[:, cb[0]:cb[1]],
          out=dst.grid()[:, cd[0]:cd[1]])

def store_rows(ctx: Any, buf: Any, base: Any, value: Any, mask: Mask, site: int) -> None:
    """Store where lane k of each block writes element `base + k` of its block's copy (see
    `load_rows`): one 2-D slice assignment, masked lanes left untouched."""
    if not ctx.row_runs:  # a warp window: the general path on the window's ids
        ctx.lanes.store(buf, ctx.local_id(0) + np.int64(base), value, mask, site)
        return
    cols = ctx.row_span(buf, base, mask)
    if cols is None:
        if not buf.stride and ctx.local_base == 0 and ctx.count == ctx.block_lanes:
            ramp.store_ramp(ctx, buf, base, value, mask, site)
            return
        ctx.lanes.store(buf, ctx.local_id(0) + np.int64(base), value, mask, site)
        return
    lo, hi, active = cols
    base = int(base)
    if buf.shadow is not None:
        ctx.races.race_rows(buf, base, lo, hi, active, site, write=True)
    if ctx.inflight:
        rows_inflight(ctx, buf, lo, hi, active, site, write=True)
    rows = buf.grid()[:, lo:hi]
    if isinstance(value, np.ndarray):
        j = lo - base - ctx.local_base
        value = value.reshape(-1, ctx.row_width)[:, j:j + hi - lo]
    if active is None:
        rows[...] = value
    else:
        masked_copy(rows, value, active)
