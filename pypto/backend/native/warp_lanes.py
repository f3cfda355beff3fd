"""Warp by warp lane loops of constant trip count for phases that read the warp and lane ids.

A phase's fast lane loop runs x over the block's lanes (phase_codegen.py); inside, the lane
function computes `warp_id = x / 32` and `lane_id = x % 32` (simt_to_lanes.py). LLVM's loop
vectoriser sees neither as a linear function of x, so an access such as warp_reverse's
`buf[warp * 32 + 31 - lane]` — a fixed permutation inside each warp — becomes a vector gather
per 8 or 16 lanes (docs/native.md#warp-lanes).

For a launch of the compiled 1-D block shape (`lanes` a multiple of 32), `emit` runs such a
phase's fast lanes as

    for w in range(lanes // 32):
        for l in range(32):          # a constant trip count: LLVM unrolls it whole
            lane(x = w * 32 + l)

the same lanes in the same order (x ascending), so nothing but the loop's shape changes. Once
the 32 lanes are unrolled, `(32 w + l) / 32` folds to `w` and `(32 w + l) % 32` to `l` (the low
five bits of `32 w` are known zero), every address is `32 w` plus a constant, and the SLP
vectoriser turns the warp's 32 loads into vector loads and a permutation. Other launches, and
phases that guard x (`tid < s`: their lanes are not whole warps) or do not read the ids, keep
their loops.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import UnitAttr, i1, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from pypto.backend.native.phase_merge import LANE_ID, WARP_ID, _Forms, _plus
from pypto.backend.native.quick_ops import append as _add, i32_constant as _c, int_constant
from pypto.dialects import pto

WARP = pto.WARP_SIZE
MARK = "pto.native_warp_lanes"
"""On the `scf.if` choosing between the warp by warp loops and the others."""
LaneCall = Callable[[Block, SSAValue], SSAValue]
"""Builds, in a block, the call of the fast lane function at lane x; returns its status."""


def permutes_warps(ops: list[Operation], uniform: Callable[[SSAValue], bool]) -> bool:
    """Does a load or store of the phase's `ops` address memory at an offset whose linear form
    (phase_merge.py) has the warp or lane id in another combination than `warp * 32 + lane`
    (which is x: a contiguous access LLVM vectorises as it is), or in a part the forms do not
    read (`lane ^ k`)?"""
    forms = _Forms(uniform)
    for op in (o for top in ops for o in top.walk()):
        if not isinstance(op, pto.LoadOp | pto.StoreOp):
            continue
        offset: dict[object, int] = {}
        p = op.ptr
        while isinstance(p.owner, pto.AddPtrOp):
            f = forms.of(p.owner.offset)
            if f is None and _reads_ids(p.owner.offset):
                return True  # (`lane ^ k`: not a form, a permutation all the same)
            offset = _plus(offset, f or {})
            p = p.owner.ptr
        if offset.get(WARP_ID, 0) != WARP * offset.get(LANE_ID, 0):
            return True  # (`31 - lane`, `lane ^ k` beside `warp * 32`, ...)
    return False


def _reads_ids(value: SSAValue, depth: int = 8) -> bool:
    """Is `value` computed (within `depth` ops) from the warp or lane id?"""
    op = value.owner
    if not isinstance(op, Operation) or depth == 0:
        return False
    if isinstance(op, pto.GetWarpIdOp | pto.GetLaneIdOp):
        return True
    return any(_reads_ids(v, depth - 1) for v in op.operands)


def applies(shape: tuple[int, int, int] | None) -> bool:
    """Is the compiled block shape 1-D whole warps?"""
    return shape is not None and shape[1:] == (1, 1) and shape[0] % WARP == 0 and shape[0] > 0


def status_loop(outer: Block, start: SSAValue, end: SSAValue,
                body: Callable[[Block, SSAValue], SSAValue]) -> SSAValue:
    """`for t in [start, end)` while the status `body` returns stays 0, at the end of `outer`;
    its final status (the lane loops' shape: phase_codegen.py and the warp by warp loops)."""
    before = Block(arg_types=[i32, i32])
    t, st = before.args
    go = _add(before, arith.AndIOp(_add(before, arith.CmpiOp(t, end, "slt")),
                                  _add(before, arith.CmpiOp(st, _c(before, 0), "eq"))))
    before.add_op(scf.ConditionOp(go, t, st))
    after = Block(arg_types=[i32, i32])
    result = body(after, after.args[0])
    after.add_op(scf.YieldOp(_add(after, arith.AddiOp(after.args[0], _c(after, 1))), result))
    w = scf.WhileOp([start, _c(outer, 0)], [i32, i32], Region(before), Region(after))
    outer.add_op(w)
    return w.results[1]


def emit(block: Block, block_dims: list[SSAValue], shape: tuple[int, int, int],
         err: SSAValue, lane_call: LaneCall, otherwise: Callable[[Block], None]) -> None:
    """At the end of `block`: the warp by warp loops (module doc) when the launch's block
    dimensions are `shape`, else `otherwise`'s loops; nothing runs once an error is recorded
    at `err`."""
    go = _add(block, int_constant(1, i1))
    for dim, size in zip(block_dims, shape):
        go = _add(block, arith.AndIOp(go, _add(block, arith.CmpiOp(dim, _c(block, size), "eq"))))
    known, other = Block(), Block()
    status = _add(known, arith.TruncIOp(_add(known, llvm.LoadOp(err, i64)), i32))
    run = Block()

    def warp(wb: Block, w: SSAValue) -> SSAValue:
        base = _add(wb, arith.MuliOp(w, _c(wb, WARP)))
        return status_loop(wb, _c(wb, 0), _c(wb, WARP),
                     lambda lb, lane: lane_call(lb, _add(lb, arith.AddiOp(base, lane))))

    status_loop(run, _c(run, 0), _c(run, shape[0] // WARP), warp)
    run.add_op(scf.YieldOp())
    known.add_op(scf.IfOp(_add(known, arith.CmpiOp(status, _c(known, 0), "eq")), [],
                          Region(run), None))
    known.add_op(scf.YieldOp())
    otherwise(other)
    other.add_op(scf.YieldOp())
    choice = scf.IfOp(go, [], Region(known), Region(other))
    choice.attributes[MARK] = UnitAttr()
    block.add_op(choice)


def keep_plain(region: Region) -> None:
    """In `region` (a phase's lanes that test their guards: full_phases.py keeps the warp by
    warp loops for the full lane function, whose lanes have no branch), the other loops
    only: unrolled, each lane's guard would stay a branch, and the copies cost compile time
    (warp_reverse's first compile 256 -> 355 ms with both)."""
    for op in list(region.walk()):
        if isinstance(op, scf.IfOp) and MARK in op.attributes:
            block = op.parent_block()
            assert block is not None
            plain = op.false_region.blocks[0]
            for inner in list(plain.ops):
                if isinstance(inner, scf.YieldOp):
                    break
                inner.detach()
                block.insert_op_before(inner, op)
            op.detach()
            op.erase()
