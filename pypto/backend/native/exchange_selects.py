"""A compare-exchange's conditional stores as selects (branch-free sorting-network steps).

pair_exchange.py runs a sorting network's step `if tid ^ j > tid: a = s[tid]; b = s[ixj];
if up: (if a > b: s[tid] = b; s[ixj] = a) else: (...)` as one phase. Compiled as written,
each lane then branches on its data (`a > b`: on random keys a mispredicted branch every
other lane, most of the step's time). The lane owns `s[tid]` and `s[ixj]` in that phase (no
other lane the condition admits touches them: pair_exchange.py), so storing an element's
current value back is invisible, and the nested `if`s can become selects:

    s[tid] = select(up, select(a > b, b, a), select(a < b, b, a))
    s[ixj] = select(up, select(a > b, a, b), select(a < b, a, b))

Rewritten (on the native backend's own copy of the kernel, before phase splitting) only when
pair_exchange accepts the `if`, every element its nested `if`s read or write was loaded at its
top level first (so no load or store is added at an address the kernel did not already access:
no new out-of-bounds error), and the nested ops are pure arithmetic that cannot raise
(pair_exchange.py refuses divisions and casts to int), so evaluating both sides changes no
result and raises nothing. Bits: a select moves a value unchanged (NaN payloads, -0), and each
element ends with the value the last store on the lane's path gave it, as in the kernel.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import arith, func, scf
from xdsl.ir import Block, Operation, SSAValue

from pypto.analysis.uniformity import varying_values
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.pair_exchange import _l1_site, pair_exchange
from pypto.backend.native.phase_merge import one_dimensional
from pypto.dialects import pto

Loc = tuple[Operation, SSAValue]
"""An element a lane owns: (its `pto.alloc_local`, its index value)."""


class _GiveUp(Exception):
    """The `if` is not of the convertible shape: leave it as written."""


class _Converter:
    def __init__(self, anchor: Operation):
        self.anchor = anchor                      # new ops go before it (the then-yield)
        self.pointer: dict[Loc, SSAValue] = {}    # each element's address (first access)
        self.loaded: dict[Loc, SSAValue] = {}     # its value loaded at the top level
        self.stored: list[Loc] = []               # elements some path stores, in order

    def _move(self, op: Operation) -> None:
        op.detach()
        self.anchor.parent_block().insert_op_before(op, self.anchor)  # type: ignore[union-attr]

    def run(self, ops: list[Operation], cur: dict[Loc, SSAValue], top: bool) -> dict[Loc, SSAValue]:
        for op in ops:
            if isinstance(op, scf.YieldOp):
                continue
            if isinstance(op, pto.LoadOp | pto.StoreOp):
                site = _l1_site(op)
                if site is None:
                    raise _GiveUp
                loc: Loc = (site[0], site[1])
                if isinstance(op, pto.LoadOp):
                    if loc in cur:                # forwarded: no second load
                        op.results[0].replace_all_uses_with(cur[loc])
                        op.detach()
                        op.erase()
                        continue
                    if not top:                   # a load only a nested path makes
                        raise _GiveUp
                    self.pointer.setdefault(loc, op.operands[0])
                    self._move(op)
                    cur[loc] = op.results[0]
                    self.loaded[loc] = op.results[0]
                    continue
                if loc not in self.loaded:        # a store to an element never loaded
                    raise _GiveUp
                cur[loc] = op.operands[0]
                if loc not in self.stored:
                    self.stored.append(loc)
                op.detach()
                op.erase()
                continue
            if isinstance(op, scf.IfOp):
                if op.results:
                    raise _GiveUp
                branches = []
                for region in (op.true_region, op.false_region):
                    inner = list(region.blocks[0].ops) if region.blocks else []
                    branches.append(self.run(inner, dict(cur), False))
                if not join_paths(op.cond, *branches, cur, self.anchor):
                    raise _GiveUp
                op.detach()
                op.erase()
                continue
            if op.regions:
                raise _GiveUp
            self._move(op)                        # pure arithmetic (pair_exchange.py)
        return cur


def join_paths(cond: SSAValue, then_vals: dict[Any, SSAValue], else_vals: dict[Any, SSAValue],
               cur: dict[Any, SSAValue], anchor: Operation) -> bool:
    """After an `if` on `cond` whose paths left `then_vals` / `else_vals` (element -> value),
    each element's value in `cur` becomes `select(cond, then, else)` (inserted before
    `anchor`), or the common value when both paths agree; False when an element has no value
    on one path (not loaded before: the caller gives up). Shared with tree_selects.py."""
    for key in dict.fromkeys([*then_vals, *else_vals]):
        t, e = then_vals.get(key, cur.get(key)), else_vals.get(key, cur.get(key))
        if t is None or e is None:
            return False
        if t is e:
            cur[key] = t
            continue
        select = arith.SelectOp(cond, t, e)
        anchor.parent_block().insert_op_before(select, anchor)  # type: ignore[union-attr]
        cur[key] = select.result
    return True


def _convert(op: scf.IfOp) -> None:
    block: Block = op.true_region.blocks[0]
    anchor = block.last_op
    assert isinstance(anchor, scf.YieldOp)
    conv = _Converter(anchor)
    final = conv.run(list(block.ops), {}, True)
    for loc in conv.stored:
        if final[loc] is not conv.loaded[loc]:
            block.insert_op_before(pto.StoreOp(final[loc], conv.pointer[loc]), anchor)


def _storing_ifs(op: scf.IfOp) -> bool:
    return any(isinstance(o, scf.IfOp) and o is not op for o in op.walk())


def select_exchanges(kernel: func.FuncOp) -> func.FuncOp:
    """A copy of `kernel` whose compare-exchange `if`s hold selects instead of nested `if`s
    (see the module doc), or `kernel` itself when it has none. `kernel` must carry the compiled
    block (fast_blocks.BLOCK_ATTR): the proof needs a 1-D block."""
    if not one_dimensional(kernel):
        return kernel
    lanes = int(kernel.attributes[BLOCK_ATTR].data[0].value.data)  # type: ignore[attr-defined]
    varying = varying_values(kernel)
    uniform = lambda v: v not in varying  # noqa: E731
    picked = [i for i, o in enumerate(kernel.walk())
              if isinstance(o, scf.IfOp) and _storing_ifs(o) and pair_exchange(o, lanes, uniform)]
    if not picked:
        return kernel
    copy = kernel.clone()
    ops = list(copy.walk())
    for i in picked:
        target = ops[i]
        assert isinstance(target, scf.IfOp)
        trial = copy.clone()  # (a shape the converter refuses leaves the copy untouched)
        at = list(copy.walk()).index(target)
        try:
            _convert(list(trial.walk())[at])  # type: ignore[arg-type]
        except _GiveUp:
            continue
        _convert(target)
    return copy
