"""Consecutive short sorting-network steps fused: `j = 2, 1` in one pass over groups of 4.

Every stage of a bitonic sort after the first ends with the steps `j = 2, 1`, each a pass
over the block's L1 buffer (pair_runs.py) whose pairs, shorter than a vector, need shuffles
(interleaved accesses). A step only pairs elements of one aligned group of `2j` lanes (`tid`
and `tid ^ j` differ in bit log2(j) only), so the steps `j = 2, 1` together only move elements
within aligned groups of 4: running, for each group, the two steps' pairs of that group, group
after group, gives each element the same values as the two passes one after the other (no step
reads what another group's pairs write). The fused pass keeps a group's elements in registers
across its 4 compare-exchanges (LLVM forwards each store to the next step's load) and loads,
shuffles and stores each element once instead of twice: 40-52 ns per block of 256 lanes
against 58-82 ns for the two passes (bitonic sort 2^20 about 5% faster). Fusing `j = 4, 2, 1`
(groups of 8) was slower than its three passes (88-108 ns against 75-109: LLVM's 8-way
interleaving shuffles cost more than the passes over the L1-resident buffer), so only
`SEQUENCES` are fused.

Taken for a block-level loop (`for step in ...: <step>; barrier()`) whose body is one phase
that pair_runs.py runs as runs of pairs (no iter args, no guards), in a kernel compiled for a
1-D block of a power-of-two number of lanes, at least 4: the loop becomes a `while` over its
induction values that, at each, computes `j` for this and the next trip (the body's
block-level values are pure arithmetic of the induction value and values from outside the
loop) and runs the fused pass when they are 2 and 1 (two trips at once), else the trip as
before (pair_runs.py, then the lane loops). Each trip's block-level values (its `j`, and
whatever else the body uses, such as a direction) are computed at that trip's induction value,
so the pairs' bodies are the kernel's ops with that trip's values. Nothing in the body can
raise (pair_exchange.py) and every access is in range (lane and partner below the block's
lanes), so the order of the pairs cannot change an error either.
docs/native.md#merged-tree-steps.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from pypto.backend.native import pair_registers, pair_runs
from pypto.backend.native.phases import Loop, Phase
from pypto.backend.native.quick_ops import append as _add

ENABLED = True
"""Fuse the short steps (False: one pass per step; for tests and measurements)."""

SEQUENCES: tuple[tuple[int, ...], ...] = ((2, 1),)
"""The runs of consecutive `j` fused, tried in this order (groups of `2 * j[0]` lanes)."""

Resolve = Callable[[SSAValue, Block, SSAValue], SSAValue]
"""`resolve(v, at, iv)`: block-uniform kernel value `v` in the grid function, computed at
`at` with the loop's induction variable standing for `iv`."""


def _c(block: Block, value: int, t: object = i32) -> SSAValue:
    op = arith.ConstantOp(IntegerAttr(value, t))  # type: ignore[arg-type]
    block.add_op(op)
    return op.result


def emit(item: Loop, shape: tuple[int, ...] | None, uniform: Callable[[SSAValue], bool],
         resolve: Resolve, body: Callable[[Block, SSAValue], None], block: Block,
         block_dims: list[SSAValue]) -> bool:
    """Emit block-level loop `item` with its short steps fused (see the module doc) into
    `block` and return True, or return False (nothing emitted) when it is not such a loop.
    `body(at, iv)`: the loop body's usual code at `at` for induction value `iv`."""
    op = item.op
    lanes = shape[0] if shape is not None and all(d == 1 for d in shape[1:]) else None
    if not ENABLED or lanes is None or lanes < max(2 * q[0] for q in SEQUENCES) or lanes & (lanes - 1) or \
            op.iter_args or item.lane or item.guards or len(item.body) != 1 or \
            not isinstance(item.body[0], Phase):
        return False
    phase = item.body[0]
    step = pair_runs._step(phase.ops, phase.guards, phase.copies, lanes, uniform)
    if step is None:
        return False
    iv = op.body.block.args[0]
    lb, ub, st = (resolve(v, block, iv) for v in (op.lb, op.ub, op.step))
    c1 = _c(block, 1)
    bx, by, bz = block_dims
    shaped = _add(block, arith.AndIOp(
        _add(block, arith.CmpiOp(bx, _c(block, lanes), "eq")),
        _add(block, arith.AndIOp(_add(block, arith.CmpiOp(by, c1, "eq")),
                                 _add(block, arith.CmpiOp(bz, c1, "eq"))))))
    before = Block(arg_types=[i32])
    before.add_op(scf.ConditionOp(_add(before, arith.CmpiOp(before.args[0], ub, "slt")),
                                  before.args[0]))
    after = Block(arg_types=[i32])
    it = after.args[0]
    left = _add(after, arith.SubiOp(_add(after, arith.ExtSIOp(ub, i64)),
                                    _add(after, arith.ExtSIOp(it, i64))))  # trips left * st
    wide_st = _add(after, arith.ExtSIOp(st, i64))
    sequences = [(q, pair_registers.fused_pass) for q in pair_registers.sequences(step, lanes)] + \
        [(q, _fused_pass) for q in SEQUENCES]
    _choose(after, step, sequences, it, st, wide_st, left, shaped, lanes, resolve, body,
            op.body.block.args[0])
    while_op = scf.WhileOp([lb], [i32], Region(before), Region(after))
    block.add_op(while_op)
    return True


Pass = Callable[[Block, pair_runs._Step, tuple[int, ...], list[SSAValue], int, Resolve], None]
"""A fused pass's emitter: `(at, step, seq, ivs, lanes, resolve)`."""


def _choose(at: Block, step: pair_runs._Step, sequences: list[tuple[tuple[int, ...], Pass]],
            it: SSAValue,
            st: SSAValue, wide_st: SSAValue, left: SSAValue, shaped: SSAValue, lanes: int,
            resolve: Resolve, body: Callable[[Block, SSAValue], None], iv: SSAValue) -> None:
    """At `at` (the while's body): the first sequence whose `j` values the next trips have
    runs fused, else one trip as usual; then yield the next induction value."""
    if not sequences:
        body(at, it)
        at.add_op(scf.YieldOp(_add(at, arith.AddiOp(it, st))))
        return
    seq, fused_pass = sequences[0]
    ivs = [it]
    for _ in seq[1:]:
        ivs.append(_add(at, arith.AddiOp(ivs[-1], st)))  # (past the end: only compared)
    ok = _add(at, arith.AndIOp(shaped, _add(at, arith.CmpiOp(
        left, _add(at, arith.MuliOp(wide_st, _c(at, len(seq) - 1, i64))), "sgt"))))
    for k, want in zip(ivs, seq):
        j = resolve(step.j, at, k)
        ok = _add(at, arith.AndIOp(ok, _add(at, arith.CmpiOp(j, _c(at, want), "eq"))))
    fused, other = Block(), Block()
    if_op = scf.IfOp(ok, [i32], Region(fused), Region(other))
    at.add_op(if_op)
    fused_pass(fused, step, seq, ivs, lanes, resolve)
    fused.add_op(scf.YieldOp(_add(fused, arith.AddiOp(ivs[-1], st))))
    _choose(other, step, sequences[1:], it, st, wide_st, left, shaped, lanes, resolve, body,
            iv)
    at.add_op(scf.YieldOp(if_op.results[0]))


def _fused_pass(at: Block, step: pair_runs._Step, seq: tuple[int, ...], ivs: list[SSAValue],
                lanes: int, resolve: Resolve) -> None:
    """for q in range(0, lanes, group): each trip's pairs within lanes [q, q + group), trip
    after trip; each trip's block-level values computed at its induction value."""
    group = 2 * seq[0]
    outsides = [{v: resolve(v, at, k) for v in step.order if step.how[v] == "uniform"}
                for k in ivs]
    loop_body = Block(arg_types=[i32])
    q = loop_body.args[0]
    for run, outside in zip(seq, outsides):
        for c in range(group):
            if c & run == 0:
                pair_runs._body(loop_body, step, outside, q, _c(loop_body, c), run, keep=False)
    loop_body.add_op(scf.YieldOp())
    at.add_op(scf.ForOp(_c(at, 0), _c(at, lanes), _c(at, group), [], Region(loop_body)))
