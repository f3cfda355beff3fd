"""Code generation of a block-level `while` (while_phases.py) in the grid function.

The grid's `scf.while` carries the loop's uniform values and a trip counter (i64). Its
condition region runs the condition's phases, copies the lane values the condition passes
(and, for a lane-dependent condition, the lane's new active flag) into their slots, then
decides: the uniform condition itself, or whether any lane of the block is still active (a
reduction over the active flags). Every trip first counts against the interpreter's watchdog:
trip `k` (from 1) fails when `k > PYPTO_MAX_TRIPS` (err[LIMIT_SLOT]), and every CLOCK_EVERY
trips the `timeout=` flag is read — the error record compiled lane code writes for its own
loops (to_llvm.py), so the runtime reports it the same way. docs/native.md#while-loops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, i1, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from pypto.backend.native.phases import Phase
from pypto.backend.native.while_phases import BarrierCheck, While
from pypto.dialects import pto
from pypto.backend.native.quick_ops import append as _add

if TYPE_CHECKING:
    from pypto.backend.native.phase_codegen import _Emitter, _Grid

WATCHDOG_ATTR = "pto.native_watchdog"
"""On an `scf.while` of the kernel: its watchdog site (its index among the kernel's `while`
loops in walk order, the runtime's table of loop locations), kept by the clones phase
functions are made of."""
_WATCHDOG = 2      # to_llvm.WATCHDOG (not imported: to_llvm imports this backend's passes)
_TIME_LIMIT = 5    # to_llvm.TIME_LIMIT
_LIMIT_SLOT = 10   # to_llvm.LIMIT_SLOT
_EXPIRED_SLOT = 11  # to_llvm.EXPIRED_SLOT
_CLOCK_EVERY = 4096  # to_llvm.CLOCK_EVERY


def number_loops(kernel: Operation) -> None:
    """Give each `scf.while` of `kernel` its watchdog site (`WATCHDOG_ATTR`)."""
    site = 0
    for op in kernel.walk():
        if isinstance(op, scf.WhileOp):
            op.attributes[WATCHDOG_ATTR] = IntegerAttr(site, i64)
            site += 1


def _c(block: Block, value: int, t: IntegerType = i32) -> SSAValue:
    return _add(block, arith.ConstantOp(IntegerAttr(value, t)))


def _flag(value: bool) -> SSAValue:
    """A detached i1 constant (phase functions recompute it where a copy needs it)."""
    return arith.ConstantOp(IntegerAttr(int(value), i1)).result


def emit(em: "_Emitter", item: While, block: Block, g: "_Grid") -> None:
    """The grid code of `item` at the end of `block`."""
    op = item.op
    before, after = op.before_region.block, op.after_region.block
    condition = before.last_op
    assert isinstance(condition, scf.ConditionOp)
    yield_op = after.last_op
    token = lambda v: isinstance(v.type, _token_type())  # noqa: E731
    ub = [i for i, a in enumerate(before.args) if i not in item.lane_before and not token(a)]
    ua = [i for i, a in enumerate(after.args) if i not in item.lane_after and not token(a)]

    entry = [(op.arguments[i], before.args[i]) for i in item.lane_before]
    if item.divergent:
        assert item.active is not None
        if item.guards:  # lanes the guards leave out are never active
            em._phase(Phase((), [], [(_flag(False), item.active)]), block, g)
        entry.append((_flag(True), item.active))
    if entry:
        em._phase(Phase(item.guards, [], entry), block, g)
    inits = [em.gresolve(op.arguments[i], block, g) for i in ub]

    # the condition region
    bb = Block(arg_types=[*(before.args[i].type for i in ub), i64])
    em.scopes.append({before.args[i]: bb.args[k] for k, i in enumerate(ub)})
    trips = bb.args[-1]
    ok = _watchdog(bb, trips, op, g)
    em._emit(item.before, bb, g)
    copies = [(condition.args[i], after.args[i]) for i in item.lane_after]
    if item.divergent:
        copies.append((condition.condition, item.active))
    if copies:
        em._phase(Phase(item.inner, [], copies), bb, g)
    if item.divergent:
        go = _any_active(em, bb, g, em.slot(item.active))  # type: ignore[arg-type]
    else:
        go = em.gresolve(condition.condition, bb, g)
    status = _add(bb, arith.TruncIOp(_add(bb, llvm.LoadOp(g.err, i64)), i32))
    clean = _add(bb, arith.CmpiOp(status, _c(bb, 0), "eq"))
    go = _add(bb, arith.AndIOp(_add(bb, arith.AndIOp(go, ok)), clean))
    carried = [em.gresolve(condition.args[i], bb, g) for i in ua]
    bb.add_op(scf.ConditionOp(go, *carried, trips))
    em.scopes.pop()

    # the body
    ab = Block(arg_types=[*(after.args[i].type for i in ua), i64])
    em.scopes.append({after.args[i]: ab.args[k] for k, i in enumerate(ua)})
    body = list(item.body)
    back = [(yield_op.operands[i], before.args[i]) for i in item.lane_before]
    last = body[-1] if body else None
    if back and isinstance(last, Phase) and last.guards == item.inner:
        body[-1] = Phase(last.guards, last.ops, [*last.copies, *back])  # (as a `for`'s)
        back = []
    em._emit(body, ab, g)
    if back:
        em._phase(Phase(item.inner, [], back), ab, g)
    yields = [em.gresolve(yield_op.operands[i], ab, g) for i in ub]
    next_trip = _add(ab, arith.AddiOp(ab.args[-1], _c(ab, 1, i64)))
    ab.add_op(scf.YieldOp(*yields, next_trip))
    em.scopes.pop()

    new = scf.WhileOp([*inits, _c(block, 0, i64)],
                      [*(after.args[i].type for i in ua), i64], Region(bb), Region(ab))
    block.add_op(new)
    for k, i in enumerate(ua):
        em.scopes[-1][op.results[i]] = new.results[k]


def _token_type() -> type:
    return pto.TokenType


def _store_err(block: Block, err: SSAValue, index: int, value: SSAValue) -> None:
    where = _add(block, llvm.GEPOp.from_mixed_indices(err, [index], i64))
    block.add_op(llvm.StoreOp(value, where))


def _watchdog(bb: Block, trips: SSAValue, op: scf.WhileOp, g: "_Grid") -> SSAValue:
    """i1: trip `trips + 1` may run (below the limit, the time limit not out); otherwise the
    error record (code, the loop's site, lane (0, 0, 0); the block is already recorded)."""
    limit = _add(bb, llvm.LoadOp(_add(bb, llvm.GEPOp.from_mixed_indices(
        g.err, [_LIMIT_SLOT], i64)), i64))
    below = _add(bb, arith.CmpiOp(trips, limit, "ult"))
    due = _add(bb, arith.CmpiOp(_add(bb, arith.AndIOp(trips, _c(bb, _CLOCK_EVERY - 1, i64))),
                                _c(bb, 0, i64), "eq"))
    check = Block()
    check.add_op(llvm.InlineAsmOp("", "~{memory}", [], has_side_effects=True))  # (the flag
    expired = _add(check, llvm.LoadOp(_add(check, llvm.GEPOp.from_mixed_indices(  # is read
        g.err, [_EXPIRED_SLOT], i64)), i64))                                  # each time)
    check.add_op(scf.YieldOp(_add(check, arith.CmpiOp(expired, _c(check, 0, i64), "ne"))))
    skip = Block()
    skip.add_op(scf.YieldOp(_c(skip, 0, i1)))
    late = _add(bb, scf.IfOp(due, [i1], Region(check), Region(skip)))
    ok = _add(bb, arith.AndIOp(below, _add(bb, arith.XOrIOp(late, _c(bb, 1, i1)))))
    fail = Block()
    site = op.attributes.get(WATCHDOG_ATTR)
    number = site.value.data if isinstance(site, IntegerAttr) else 0
    code = _add(fail, arith.SelectOp(below, _c(fail, _TIME_LIMIT, i64), _c(fail, _WATCHDOG, i64)))
    _store_err(fail, g.err, 0, code)
    _store_err(fail, g.err, 1, _c(fail, number, i64))
    _store_err(fail, g.err, 2, _c(fail, 0, i64))
    _store_err(fail, g.err, 3, _c(fail, -1, i64))
    for index in (7, 8, 9):
        _store_err(fail, g.err, index, _c(fail, 0, i64))
    fail.add_op(scf.YieldOp())
    bb.add_op(scf.IfOp(_add(bb, arith.XOrIOp(ok, _c(bb, 1, i1))), [], Region(fail), None))
    return ok


def _any_active(em: "_Emitter", bb: Block, g: "_Grid", slot: int) -> SSAValue:
    """i1: is some lane's active flag (spill slot `slot`, one byte per lane) set?"""
    bx, by, bz = g.block_dims
    lanes = _add(bb, arith.MuliOp(_add(bb, arith.MuliOp(bx, by)), bz))
    row = _add(bb, arith.ExtSIOp(_add(bb, arith.MuliOp(_c(bb, slot), lanes)), i64))
    base = _add(bb, llvm.GEPOp.from_mixed_indices(g.spill, [row], i64))
    loop = Block(arg_types=[i32, i1])
    lane, seen = loop.args
    wide = _add(loop, arith.ExtSIOp(lane, i64))
    flag = _add(loop, llvm.LoadOp(_add(loop, llvm.GEPOp.from_mixed_indices(base, [wide], i1)),
                                  i1))
    loop.add_op(scf.YieldOp(_add(loop, arith.OrIOp(seen, flag))))
    found = scf.ForOp(_c(bb, 0), lanes, _c(bb, 1), [_c(bb, 0, i1)], Region(loop))
    bb.add_op(found)
    return found.results[0]


DEADLOCK = 8
"""Error code of a `pto.barrier()` some lanes of a warp miss (site: the barrier's index among
the kernel's `pto.barrier` ops in walk order; the lane: the first of the first such warp that
misses it, as the interpreter names it)."""


def barrier_sites(kernel: Operation) -> list[Operation]:
    """The kernel's `pto.barrier` ops in walk order (site `i` of DEADLOCK is op `i`)."""
    return [op for op in kernel.walk() if isinstance(op, pto.BarrierOp)]


def check_barrier(em: "_Emitter", item: BarrierCheck, block: Block, g: "_Grid") -> None:
    """Mark the lanes that reach `item.op` (a phase with no guard clears every lane's mark, one
    under the guards sets it), then scan the block's warps: a warp with some lanes marked and
    some not is the interpreter's deadlock (lanes.py `barrier_warp`)."""
    em._phase(Phase((), [], [(_flag(False), item.reached)]), block, g)
    em._phase(Phase(item.guards, [], [(_flag(True), item.reached)]), block, g)
    bx, by, bz = g.block_dims
    lanes = _add(block, arith.MuliOp(_add(block, arith.MuliOp(bx, by)), bz))
    row = _add(block, arith.ExtSIOp(_add(block, arith.MuliOp(_c(block, em.slot(item.reached)),
                                                             lanes)), i64))
    base = _add(block, llvm.GEPOp.from_mixed_indices(g.spill, [row], i64))
    loop = Block(arg_types=[i32, i32, i32, i32])  # lane; marked in its warp, first unmarked
    lane, count, miss, found = loop.args           # lane of the warp (-1), the answer (-1)
    b = loop
    none = _c(b, -1)
    flag = _add(b, llvm.LoadOp(_add(b, llvm.GEPOp.from_mixed_indices(
        base, [_add(b, arith.ExtSIOp(lane, i64))], i1)), i1))
    count2 = _add(b, arith.AddiOp(count, _add(b, arith.ExtUIOp(flag, i32))))
    first = _add(b, arith.AndIOp(_add(b, arith.CmpiOp(miss, _c(b, 0), "slt")),
                                 _add(b, arith.XOrIOp(flag, _c(b, 1, i1)))))
    miss2 = _add(b, arith.SelectOp(first, lane, miss))
    within = _add(b, arith.RemUIOp(lane, _c(b, pto.WARP_SIZE)))
    last = _add(b, arith.OrIOp(_add(b, arith.CmpiOp(within, _c(b, pto.WARP_SIZE - 1), "eq")),
                               _add(b, arith.CmpiOp(_add(b, arith.AddiOp(lane, _c(b, 1))),
                                                    lanes, "eq"))))
    size = _add(b, arith.AddiOp(within, _c(b, 1)))
    split = _add(b, arith.AndIOp(last, _add(b, arith.AndIOp(
        _add(b, arith.CmpiOp(count2, _c(b, 0), "sgt")),
        _add(b, arith.CmpiOp(count2, size, "slt"))))))
    take = _add(b, arith.AndIOp(split, _add(b, arith.CmpiOp(found, _c(b, 0), "slt"))))
    b.add_op(scf.YieldOp(_add(b, arith.SelectOp(last, _c(b, 0), count2)),
                         _add(b, arith.SelectOp(last, none, miss2)),
                         _add(b, arith.SelectOp(take, miss2, found))))
    scan = scf.ForOp(_c(block, 0), lanes, _c(block, 1),
                     [_c(block, 0), _c(block, -1), _c(block, -1)], Region(loop))
    block.add_op(scan)
    missing = scan.results[2]
    fail = Block()
    site = barrier_sites(em.plan.kernel).index(item.op)
    _store_err(fail, g.err, 0, _c(fail, DEADLOCK, i64))
    _store_err(fail, g.err, 1, _c(fail, site, i64))
    _store_err(fail, g.err, 2, _c(fail, 0, i64))
    _store_err(fail, g.err, 3, _c(fail, -1, i64))
    x = _add(fail, arith.RemUIOp(missing, bx))
    rest = _add(fail, arith.DivUIOp(missing, bx))
    for index, coord in ((7, x), (8, _add(fail, arith.RemUIOp(rest, by))),
                         (9, _add(fail, arith.DivUIOp(rest, by)))):
        _store_err(fail, g.err, index, _add(fail, arith.ExtSIOp(coord, i64)))
    fail.add_op(scf.YieldOp())
    status = _add(block, arith.TruncIOp(_add(block, llvm.LoadOp(g.err, i64)), i32))
    clean = _add(block, arith.CmpiOp(status, _c(block, 0), "eq"))  # (an earlier error: the
    split = _add(block, arith.CmpiOp(missing, _c(block, 0), "sge"))  # marks are stale)
    block.add_op(scf.IfOp(_add(block, arith.AndIOp(clean, split)), [], Region(fail), None))
