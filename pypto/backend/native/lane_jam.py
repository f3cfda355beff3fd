"""Rows of lanes jammed: a phase's fast lane loop runs JAM rows of lanes side by side.

A phase's fast lane loops run `ty` outside `tx` (docs/native.md#fast-phases): LLVM vectorises
the `tx` loop, so each row of lanes is one vector. A lane with a loop inside the phase (gemm
smem's `for k in range(16): acc = acc + As[ty, k] * Bs[k, tx]`) is then one chain of dependent
additions per row: the vector unit waits for each addition's latency, row after row. Running
JAM rows in one `tx` loop (an unroll-and-jam of `ty`: the inner loop calls the lane function
for `(tx, ty)`, `(tx, ty + 1)`, ... `(tx, ty + JAM - 1)`, the leftover rows one by one) gives
LLVM JAM independent chains to interleave; each lane's own operations keep their order, so its
sum is still the interpreter's, addition by addition.

Only where no order between lanes can be seen: a phase that writes no memory (its lanes only
read; their own values go to private spill slots) and whose fast lane function cannot fail
(`cannot_fail`: every access proven in range, no division by a variable, no checked cast, no
loop with a watchdog, no call). The phase codegen emits the jammed loops beside the plain
ones under a marker constant 0 (`JAM_ATTR`); `pto-simt-to-lanes` sets it to 1 once the fast
lane function is known not to fail (`resolve`), and LLVM folds the branch away.
docs/native.md#jammed-rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, func, llvm, math, scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from pypto.backend.native.fast_blocks import UNCHECKED_ATTR
from pypto.dialects import pto
from pypto.dialects.traits import memory_accesses
from pypto.backend.native.quick_ops import append as _add, i32_constant as _c, int_constant

JAM = 4
"""Rows of lanes per jammed `tx` loop: four chains hide a vector addition's latency."""

JAM_ATTR = "pto.native_jam"
"""On the marker `arith.constant` of a phase's jammed loops: the phase function's name."""

_FAILING_ARITH = (arith.DivSIOp, arith.DivUIOp, arith.RemSIOp, arith.RemUIOp,
                  arith.CeilDivSIOp, arith.CeilDivUIOp, arith.FloorDivSIOp,
                  arith.FPToSIOp, arith.FPToUIOp)


_READING = (pto.LoadOp, pto.AddPtrOp, pto.AllocLocalOp, pto.FmodOp, pto.SigmoidOp)


def candidate(ops: Sequence[Operation]) -> bool:
    """Does a phase of these ops write no memory (so its lanes' order cannot be seen)?"""
    for top in ops:
        for op in top.walk():
            if isinstance(op, func.CallOp):
                return False
            if op.name.startswith("pto.") and not op.name.startswith("pto.get_") and \
                    not isinstance(op, _READING):
                return False  # (a store, an atomic, a shuffle, printf, ...)
            if any(a.kind != "read" for a in memory_accesses(op)):
                return False
    return True


def _constant_zero(v: SSAValue) -> bool:
    owner = v.owner
    return isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr) \
        and owner.value.value.data == 0


def cannot_fail(fast: func.FuncOp) -> bool:
    """Can fast lane function `fast` only return 0 (nothing in it records an error)?"""
    for op in fast.body.walk():
        if isinstance(op, _FAILING_ARITH) or isinstance(op, math.IPowIOp):
            return False
        if isinstance(op, func.ReturnOp):
            if not all(_constant_zero(v) for v in op.operands):
                return False
            continue
        if isinstance(op, pto.LoadOp | pto.StoreOp | pto.FmaOp):
            if UNCHECKED_ATTR not in op.attributes:
                return False
            continue
        name = op.name
        if name.startswith(("arith.", "math.")) or isinstance(
                op, scf.ForOp | scf.IfOp | scf.YieldOp | pto.AddPtrOp | pto.AllocLocalOp |
                llvm.GEPOp | llvm.LoadOp | llvm.StoreOp | pto.FmodOp | pto.SigmoidOp):
            continue
        if name.startswith("pto.get_"):  # launch ids
            continue
        return False
    return True


def markers(grid: func.FuncOp) -> dict[str, list[arith.ConstantOp]]:
    """Every phase's markers in `grid`, by phase function name (one walk for all phases)."""
    found: dict[str, list[arith.ConstantOp]] = {}
    for op in grid.body.walk():
        mark = op.attributes.get(JAM_ATTR)
        if isinstance(op, arith.ConstantOp) and isinstance(mark, StringAttr):
            found.setdefault(mark.data, []).append(op)
    return found


def resolve(grid: func.FuncOp, phase: str, fast: func.FuncOp,
            found: dict[str, list[arith.ConstantOp]] | None = None) -> None:
    """Set phase `phase`'s marker in `grid` to 1 when its fast lane function cannot fail
    (`found`: `markers(grid)`, taken once for all phases instead of a walk of the grid
    function per phase, docs/native.md#compile-time)."""
    if not cannot_fail(fast):
        return
    for op in (markers(grid) if found is None else found).get(phase, []):
        one = arith.ConstantOp(IntegerAttr(1, i32))
        op.parent_block().insert_op_before(one, op)  # type: ignore[union-attr]
        op.results[0].replace_all_uses_with(one.result)
        op.detach()
        op.erase()


def jammed_or(block: Block, phase: str | None, plain: Callable[[Block], None],
              call: Callable[[Block, SSAValue, SSAValue, SSAValue], SSAValue],
              lo_hi: tuple[SSAValue, SSAValue], dims: Sequence[SSAValue],
              shape: tuple[int, int, int], err: SSAValue, launch_rows: bool = False) -> None:
    """At `block`: when the launch's block is `shape` (the compiled one) with all its x lanes
    in `lo_hi` (and, for a `phase` given, its marker is set: 0 until `resolve`), the lanes
    `tz`, then rows `ty` (JAM at a time for a `phase`, the leftover rows one by one; else one
    by one: the interpreter's lane order), `tx` innermost, each loop's trip count a constant
    (`launch_rows`: only the x loop's; rows and layers, and the launch's compared dims, from
    the launch: a tile store's row copies, docs/native.md#tile-stores)
    (so LLVM's vector of `tx` lanes is the whole row: nothing hoisted out of a loop that runs
    once); `call(block, tx, ty, tz)` returns a lane's status. Else `plain(block)`."""
    go = _c(block, 1)
    jam_rows = 1
    if phase is not None:
        marker = arith.ConstantOp(IntegerAttr(0, i32))
        marker.attributes[JAM_ATTR] = StringAttr(phase)
        block.add_op(marker)
        go = _add(block, arith.CmpiOp(marker.result, _c(block, 0), "ne"))
        jam_rows = JAM
    else:
        go = _add(block, arith.CmpiOp(go, go, "eq"))
    compared = 1 if launch_rows else 3
    for have, want in ((lo_hi[0], 0), (lo_hi[1], shape[0]), *zip(dims[:compared], shape)):
        go = _add(block, arith.AndIOp(go, _add(block, arith.CmpiOp(have, _c(block, want),
                                                                   "eq"))))
    jam, other = Block(), Block()
    plain(other)
    other.add_op(scf.YieldOp())
    lo, hi, by, bz = _c(jam, 0), _c(jam, shape[0]), _c(jam, shape[1]), _c(jam, shape[2])
    if launch_rows:  # (rows and layers from the launch: only the x loop's count a constant)
        by, bz = dims[1], dims[2]
    status = _add(jam, arith.TruncIOp(_add(jam, llvm.LoadOp(err, i64)), i32))
    run = Block()

    def loop(outer: Block, start: SSAValue, end: SSAValue, step: int,
             body: Callable[[Block, SSAValue], SSAValue]) -> scf.WhileOp:
        """`for t = start; t + step <= end and status == 0; t += step`: its results are t and
        the status after."""
        before = Block(arg_types=[i32, i32])
        t, st = before.args
        last = _add(before, arith.AddiOp(t, _c(before, step - 1)))
        go = _add(before, arith.AndIOp(_add(before, arith.CmpiOp(last, end, "slt")),
                                      _add(before, arith.CmpiOp(st, _c(before, 0), "eq"))))
        before.add_op(scf.ConditionOp(go, t, st))
        after = Block(arg_types=[i32, i32])
        result = body(after, after.args[0])
        after.add_op(scf.YieldOp(_add(after, arith.AddiOp(after.args[0], _c(after, step))),
                                 result))
        w = scf.WhileOp([start, _c(outer, 0)], [i32, i32], Region(before), Region(after))
        outer.add_op(w)
        return w

    def zbody(zb: Block, tz: SSAValue) -> SSAValue:
        def rows(count: int) -> Callable[[Block, SSAValue], SSAValue]:
            def ybody(yb: Block, ty: SSAValue) -> SSAValue:
                def xbody(xb: Block, tx: SSAValue) -> SSAValue:
                    st = call(xb, tx, ty, tz)
                    for j in range(1, count):
                        row = _add(xb, arith.AddiOp(ty, _c(xb, j)))
                        st = _add(xb, arith.OrIOp(st, call(xb, tx, row, tz)))
                    return st
                return loop(yb, lo, hi, 1, xbody).results[1]
            return ybody
        # the jammed rows, then the leftover ones: `while` results are (next row, status)
        jammed = loop(zb, _c(zb, 0), by, jam_rows, rows(jam_rows))
        left = Block()
        rest = loop(left, jammed.results[0], by, 1, rows(1)).results[1]
        left.add_op(scf.YieldOp(rest))
        ok = _add(zb, arith.CmpiOp(jammed.results[1], _c(zb, 0), "eq"))
        return _add(zb, scf.IfOp(ok, [i32], Region(left),
                                 Region(_yield_block(jammed.results[1]))))

    loop(run, _c(run, 0), bz, 1, zbody)
    run.add_op(scf.YieldOp())
    jam.add_op(scf.IfOp(_add(jam, arith.CmpiOp(status, _c(jam, 0), "eq")), [], Region(run),
                        None))
    jam.add_op(scf.YieldOp())
    block.add_op(scf.IfOp(go, [], Region(jam), Region(other)))


def _yield_block(v: SSAValue) -> Block:
    b = Block()
    b.add_op(scf.YieldOp(v))
    return b
