"""The contiguous ramp (docs/interpreter.md, "Compile once, run on lane vectors"): a value
known to be `ramp + base` (lane k holds `base + k`: a global id in a 1-D launch, plus uniform
offsets, however it is written) is kept as its scalar `base`, and the accesses through it are
contiguous slices, bounds-checked once.

- planner: `match` decides, in the kernel's order, `Value` for each lane-affine integer or
  pointer (ids, `+`/`-` with a uniform value, `addptr`, and any arithmetic plan.py normalises
  to `ramp + uniform`; block-local ones, `local`, are the `rows` kind's), then `Load`,
  `Store`, `StoreOp` (a store computing `a op b` straight into its slice, the arithmetic
  `Fused`), `FmaAdd` (`fma(a, 1.0, c)` into the slice) and `Compare` (`ramp OP uniform`) for
  the ops that use a non-local one; inside a lane window only block-local values are affine;
- emission: each Decision's `emit` / `load` / `store` / `compare`;
- run time: `load_ramp`, `store_ramp`, `store_ramp_op` below (the generated code calls
  them as `_s_ramp.load_ramp(_ctx, ...)`) and `lanes.ramp_compare`, each checking the data
  (bounds, masks, watched memory) first and taking the general path (`ctx.lanes.load`,
  `ctx.lanes.store`) when it does not allow the slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerType
from xdsl.ir import Operation, SSAValue

from pypto.backend.interpreter.affine import poly_expr
from pypto.backend.interpreter.modes import BATCH, BLOCK, WARP
from pypto.backend.interpreter.optables import _CMP, _CMP_SIGNED, _FLIP, _STORE_UFUNCS
from pypto.backend.interpreter.strategies import base
from pypto.dialects.traits import (
    declared_accesses,
    has_tile_footprint,
    kernel_function,
    launch_id,
    offset_base,
)


@dataclass(frozen=True)
class Decision(base.Decision):
    """Base of this kind's decisions: the accesses read their address through its base."""

    def takes_base(self, op: Operation, index: int) -> bool:
        return index == lane_address_or_none(op)


@dataclass(frozen=True)
class Value(Decision):
    """The op's result is lane-affine, kept as the scalar `base` (a generated variable): lane
    k holds `base + k` of the vector's ramp or, `local`, of each block's local ids (batch
    mode: the `rows` kind). `array`: some use also needs it as an array. `promoted`: (the
    uniform part, the vector's offset) of a value normalised from another spelling."""
    base: str
    local: bool = False
    array: bool = False
    promoted: tuple[Any, str] | None = None

    def takes_base(self, op: Operation, index: int) -> bool:
        """`+`, `-` and `addptr` add a uniform value to an affine operand's base."""
        return isinstance(op, arith.AddiOp | arith.SubiOp) or offset_base(op) is not None

    def emit(self, gen: Any, op: Operation) -> None:
        res = op.results[0]
        which = launch_id(op)
        if self.promoted is not None:
            rest, offset = self.promoted
            expr = f"_wrap{_int_width(res.type)}({poly_expr(rest)} + {offset})"
        elif which is not None:  # the ids themselves
            start = "0" if self.local else \
                "_ctx.first_lane" if which == "global_id" else "_ctx.local_base"
            expr = f"_np.int32({start})"
        else:  # `a + b`, `a - b`, `addptr(a, b)`: one side affine, the other uniform
            a, b = op.operands
            sym = "-" if isinstance(op, arith.SubiOp) else "+"
            if offset_base(op) is not None:
                gen.emit(f"{gen.name(res)}_b = {gen.name(a)}_b")
            ba = gen.base(a)
            expr = f"{ba} {sym} {gen.name(b)}" if ba is not None else \
                f"{gen.name(a)} {sym} {gen.base(b)}"
        gen.emit(f"{self.base} = {expr}")
        if self.array:
            pattern = "_ctx.local_id(0)" if self.local else "_ctx.ramp"
            gen.emit(f"{gen.name(res)} = {pattern} + {self.base}")


@dataclass(frozen=True)
class Load(Decision):
    """A lane load through a ramp: `load_ramp` (`view`: may return the slice itself; None for
    the npu load, which always copies)."""
    view: bool | None = None

    def load(self, gen: Any, op: Operation, site: int) -> str:
        p = op.operands[lane_address(op)]
        view = "" if self.view is None else f", {self.view}"
        return f"_s_ramp.load_ramp(_ctx, {gen.name(p)}_b, {gen.base(p)}, _m, {site}{view})"


@dataclass(frozen=True)
class Store(Decision):
    """A lane store (or fma) through a ramp: `store_ramp`."""

    def store(self, gen: Any, op: Operation, value: str, site: int) -> str:
        p = op.operands[lane_address(op)]
        return f"_s_ramp.store_ramp(_ctx, {gen.name(p)}_b, {gen.base(p)}, {value}, _m, {site})"


@dataclass(frozen=True)
class StoreOp(Decision):
    """A store of `a op b` (the op right before it, used by it alone) through a ramp: the
    result computed straight into the stored slice (`store_ramp_op`)."""

    def emit(self, gen: Any, op: Operation) -> None:
        p, value = op.operands[lane_address(op)], op.operands[0]
        owner = value.owner
        a, b = owner.operands  # type: ignore[union-attr]
        gen.emit(f"_s_ramp.store_ramp_op(_ctx, {gen.name(p)}_b, {gen.base(p)}, "
                 f"{_STORE_UFUNCS[type(owner)]}, {gen.name(a)}, {gen.name(b)}, _m, "
                 f"{gen.site(op)})")


@dataclass(frozen=True, eq=False)
class FmaAdd(Decision):
    """`fma(a, 1.0, c)` / `fma(1.0, b, c)` through a ramp: the addition `x + c` (exact: one
    rounding, as the fma's) computed into the stored slice."""
    x: SSAValue
    c: SSAValue

    def emit(self, gen: Any, op: Operation) -> None:
        p = op.operands[lane_address(op)]
        gen.emit(f"_s_ramp.store_ramp_op(_ctx, {gen.name(p)}_b, {gen.base(p)}, _np.add, "
                 f"{gen.name(self.x)}, {gen.name(self.c)}, _m, {gen.site(op)})")


@dataclass(frozen=True, eq=False)
class Compare(Decision):
    """`x OP u` with x on the ramp and u uniform (signed): `ramp OP u - base`, no array for x
    (`lanes.ramp_compare`, which skips the lanes when the outcome is the same on all)."""
    x: SSAValue
    u: SSAValue
    sym: str

    def takes_base(self, op: Operation, index: int) -> bool:
        return op.operands[index] is self.x

    def compare(self, gen: Any, op: Operation) -> str:
        return f"_ramp_cmp(_ctx.ramp, {self.sym!r}, {gen.name(self.u)}, {gen.base(self.x)})"


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """Lane-affine values first (each op sees those before it), then the accesses and
    comparisons through non-local ones."""
    value = affine_value(op, facts)
    if value is not None:
        return value
    if _is_lane_store(op) and not facts.instrumented:
        fused = _fused_store(op, facts)
        if fused is not None:
            return fused
    index = lane_address_or_none(op)
    if index is not None:
        d = base_of(facts, op.operands[index])
        if d is None or d.local or facts.in_window(op):
            return None
        if _kernel_fn(op) == "fma":
            _, a, b, c = op.operands
            if _is_const(b, 1.0):
                return FmaAdd(a, c)
            if _is_const(a, 1.0):
                return FmaAdd(b, c)
        if declared_accesses(op)[0].kind == "read":
            return Load(view=_view_flag(op))
        return Store()
    cmp = signed_compare(op, facts)
    if cmp is not None:
        x, u, sym = cmp
        if not base_of(facts, x).local and not facts.in_window(op):  # type: ignore[union-attr]
            return Compare(x, u, sym)
    return None


def affine_value(op: Operation, facts: base.Facts) -> Value | None:
    """`Value` when op's result is lane-affine (see the module docstring)."""
    if not op.results or facts.fresh is None:
        return None
    res = op.results[0]
    in_window = facts.in_window(op)
    if facts.one_d and _promotable(op) and res not in facts.uniform and not in_window:
        ramp = facts.planner.ramp_base(res, facts.mode)
        if ramp is not None:
            rest, offset, local = ramp
            return Value(facts.fresh("rb"), local=local, promoted=(rest, offset))
    which = launch_id(op)
    if which in ("global_id", "local_id") and facts.one_d:
        if op.dim_index == 0 and (which == "global_id" or  # type: ignore[attr-defined]
                                  facts.mode in (BLOCK, WARP)):
            return Value(facts.fresh("rb"))
        if op.dim_index == 0 and facts.mode == BATCH:  # type: ignore[attr-defined]
            return Value(facts.fresh("rb"), local=True)
        return None
    if isinstance(op, arith.AddiOp | arith.SubiOp) or offset_base(op) is not None:
        a, b = op.operands
        da, db = base_of(facts, a), base_of(facts, b)
        if in_window and not (da is not None and da.local or db is not None and db.local):
            return None  # a window's lanes are not a ramp: only block-local ids stay affine
        if da is not None and b in facts.uniform:
            return Value(facts.fresh("rb"), local=da.local)
        if db is not None and a in facts.uniform and not isinstance(op, arith.SubiOp):
            return Value(facts.fresh("rb"), local=db.local)
    return None


def base_of(facts: base.Facts, v: SSAValue) -> Value | None:
    """The `Value` decision of `v` (None: not lane-affine)."""
    owner = v.owner
    if not isinstance(owner, Operation):
        return None
    return facts.decision(owner, Value)


def signed_compare(op: Operation, facts: base.Facts) -> tuple[SSAValue, SSAValue, str] | None:
    """For a signed integer comparison of a lane-affine value with a uniform one: (the affine
    operand, the uniform one, the predicate as `x OP u`)."""
    if not isinstance(op, arith.CmpiOp):
        return None
    pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    if pred not in _CMP_SIGNED:
        return None
    lhs, rhs = op.operands
    if base_of(facts, lhs) is not None and rhs in facts.uniform:
        return lhs, rhs, _CMP[pred]
    if base_of(facts, rhs) is not None and lhs in facts.uniform:
        return rhs, lhs, _FLIP[_CMP[pred]]
    return None


def _fused_store(op: Operation, facts: base.Facts) -> StoreOp | None:
    """A store through a non-local ramp of `a op b` computed right before it, used by it
    alone, on plain (not affine) values: `StoreOp`, the arithmetic `Fused`."""
    d = base_of(facts, op.operands[1])
    if d is None or d.local or facts.in_window(op):
        return None
    owner = op.operands[0].owner
    if type(owner) in _STORE_UFUNCS and owner.next_op is op and \
            op.operands[0].has_one_use() and \
            not any(base_of(facts, x) is not None for x in owner.operands):
        facts.add(owner, base.Fused())  # type: ignore[arg-type]
        return StoreOp()
    return None


def lane_address_or_none(op: Operation) -> int | None:
    """The address operand of a lane load, store or fma (pto's or npu's: one declared access,
    no tile footprint), or None."""
    accesses = declared_accesses(op)
    if len(accesses) != 1 or has_tile_footprint(op):
        return None
    return accesses[0].operand


def lane_address(op: Operation) -> int:
    index = lane_address_or_none(op)
    assert index is not None
    return index


_PROMOTABLE = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.ShLIOp)


def _promotable(op: Operation) -> bool:
    """An integer op whose value the planner may recognise as `lane ramp + uniform`."""
    return isinstance(op, _PROMOTABLE) or launch_id(op) in ("global_id", "local_id")


def _kernel_fn(op: Operation) -> str | None:
    fn = kernel_function(op)
    return fn.name if fn is not None else None


def _is_lane_store(op: Operation) -> bool:
    """`pto.store(ptr, value)` of one value per lane (not the bulk tile store)."""
    return _kernel_fn(op) == "store" and not has_tile_footprint(op)


def _view_flag(op: Operation) -> bool | None:
    """pto.load's view argument (None for the npu load, whose emission has none)."""
    if _kernel_fn(op) != "load":
        return None
    from pypto.backend.interpreter.strategies.alias import view_safe
    return view_safe(op.results[0])


def _is_const(v: SSAValue, value: float) -> bool:
    owner = v.owner
    return isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr) and \
        owner.value.value.data == value


def _int_width(t: Any) -> int:
    return t.width.data if isinstance(t, IntegerType) else 64


__all__ = ["Compare", "Decision", "FmaAdd", "Load", "Store", "StoreOp", "Value", "match"]


# the run-time part: what the generated code calls (`_s_ramp.load_ramp(_ctx, ...)`) ----------

def load_ramp(ctx: Any, buf: Any, base: Any, mask: Any, site: int, view: bool = False) -> Any:
    """Load where lane k reads element `base + k`: a contiguous slice when all lanes run.

    `view=True` (decided by codegen: no write can happen while the value is alive) returns
    the slice itself instead of a copy.
    """
    if mask is None and not buf.stride:
        base = int(base)
        size = buf.count
        if base < 0 or base + ctx.count > size:
            raise ctx.lanes.oob(buf, ctx.ramp + np.int64(base), None, site)
        if buf.watched() or ctx.inflight:
            ctx.lanes.check_read(buf, slice(base, base + ctx.count), None, site)
        chunk = buf.data[base:base + ctx.count]
        return chunk if view else chunk.copy()
    span = cut(ctx, buf, base, mask)
    if span is not None:  # a masked vector (a partial tail): the slice of lanes in bounds
        lo, hi = span
        b = int(base)
        chunk = buf.data[b + lo:b + hi]
        if lo == 0 and hi == ctx.count:
            return chunk if view else chunk.copy()
        out = np.zeros(ctx.count, dtype=buf.data.dtype)
        out[lo:hi] = chunk  # lanes outside are inactive: their value is never used
        return out
    return ctx.lanes.load(buf, ctx.ramp + np.int64(base), mask, site)

def cut(ctx: Any, buf: Any, base: Any, mask: Any) -> tuple[int, int] | None:
    """For a masked access where lane k touches element `base + k`: the lanes lo..hi-1
    whose element lies in the buffer, when every active lane is among them (else None:
    the general path runs and reports the lane out of bounds); also None when checks need
    the active lanes' indices (L1, copies in flight)."""
    if not (isinstance(mask, np.ndarray) and not buf.stride and
            not buf.watched() and not ctx.inflight):
        return None
    b = int(base)
    lo, hi = max(0, -b), min(ctx.count, buf.count - b)
    if lo >= hi or (lo and mask[:lo].any()) or (hi < ctx.count and mask[hi:].any()):
        return None
    return lo, hi

def store_ramp(ctx: Any, buf: Any, base: Any, value: Any, mask: Any, site: int) -> None:
    """Store where lane k writes element `base + k`: a slice assignment when all lanes run,
    the active lanes' elements in place for a masked vector inside the buffer, else the
    general path (which reports a lane out of bounds)."""
    if mask is None and not buf.stride:
        base = int(base)
        if base < 0 or base + ctx.count > buf.count:
            raise ctx.lanes.oob(buf, ctx.ramp + np.int64(base), None, site)
        if buf.watched() or ctx.inflight:
            ctx.lanes.check_write(buf, slice(base, base + ctx.count), None, site)
        buf.data[base:base + ctx.count] = value
        return
    span = cut(ctx, buf, base, mask)
    if span is not None:  # a masked vector: the active lanes' elements, in place
        lo, hi = span
        b = int(base)
        if isinstance(value, np.ndarray):
            value = value[lo:hi]
        np.copyto(buf.data[b + lo:b + hi], value, casting="unsafe", where=mask[lo:hi])
        return
    ctx.lanes.store(buf, ctx.ramp + np.int64(base), value, mask, site)

def store_ramp_op(ctx: Any, buf: Any, base: Any, ufunc: Any, a: Any, b: Any, mask: Any,
             site: int) -> None:
    """`store_ramp(ctx, buf, base, ufunc(a, b), ...)` with the result computed straight into the
    stored slice when every lane is active and the result already has the buffer's dtype
    (one pass over memory instead of a temporary and a copy; ufuncs handle operands that
    overlap the output as if they had been copied first)."""
    if mask is None and not buf.stride:
        data = buf.data
        dt = data.dtype  # (two arrays of the buffer's dtype: no type promotion to ask for)
        if (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype is dt and
                b.dtype is dt) or np.result_type(a, b) == dt:
            base = int(base)
            if base < 0 or base + ctx.count > buf.count:
                raise ctx.lanes.oob(buf, ctx.ramp + np.int64(base), None, site)
            if buf.watched() or ctx.inflight:
                ctx.lanes.check_write(buf, slice(base, base + ctx.count), None, site)
            ufunc(a, b, out=data[base:base + ctx.count])
            return
    store_ramp(ctx, buf, base, ufunc(a, b), mask, site)
