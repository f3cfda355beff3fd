"""Block-local rows (docs/interpreter.md, "Batch mode: block-local accesses and lane windows"):
in batch mode a vector holds whole 1-D blocks, so a value `tid + u` (the ramp kind's `Value`
with `local`: lane k of each block holds `base + k`) addresses one row of each block's copy of
an L1 buffer. An access through it is one 2-D slice (`load_rows` / `store_rows`), a store
`buf[tid + u] = buf[tid + v] op buf[tid + w]` one ufunc over three slices (`rows_op`), and a
comparison `tid OP u` one block's mask repeated (`local_cmp`, its lane window found once).

- planner: `match` decides `RowOp` (the loads and the arithmetic `Fused`), `Load`, `Store`
  and `Compare` for ops using block-local values (the ramp kind decided those values);
- emission: each Decision's `emit` / `load` / `store` / `compare`;
- run time: `StructuredAccess` (structured.py), which checks the data (bounds, masks, watched
  memory) and takes the general path when it does not allow the slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith
from xdsl.ir import Operation

from pypto.backend.interpreter.optables import _ARITH_BINARY, _STORE_UFUNCS
from pypto.backend.interpreter.strategies import base
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
        return f"_ctx.load_rows({gen.name(p)}_b, {gen.base(p)}, _m, {site})"


@dataclass(frozen=True)
class Store(Decision):
    """A lane store (or fma) through a block-local value: `store_rows`."""

    def store(self, gen: Any, op: Operation, value: str, site: int) -> str:
        p = op.operands[lane_address(op)]
        return f"_ctx.store_rows({gen.name(p)}_b, {gen.base(p)}, {value}, _m, {site})"


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
        gen.emit(f"_ctx.rows_op({gen.name(p)}_b, {gen.base(p)}, {ufunc}, "
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
