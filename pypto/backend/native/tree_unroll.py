"""Block-level loops of a few trips unrolled, their carried integers made constants.

A reduction tree is written as a block-level loop whose carried value is the step's stride
(`s = BLOCK // 2; for _ in range(LOG2): if tid < s: buf[tid] += buf[tid + s]; barrier(); s //= 2`).
Compiled as written, every trip calls the phase's range check and runs its lane loops with `s`
a run-time value: LLVM vectorises a loop of unknown length (a main vector loop, an epilogue,
a scalar remainder that tests the guard per lane) and a warp tree's `lane < s` steps of 16, 8,
..., 1 lanes spend most of their time in that machinery (docs/native.md#unrolled-trees).

`unroll_block_loops` unrolls, on a copy of the kernel the native backend compiles, each
`scf.for` that

- has constant bounds and at most `MAX_TRIPS` trips,
- holds a `pto.barrier` or `pto.barrier_block` (a loop at block level: its trips are phases,
  docs/native.md#phases), and no `printf` (whose order keys count trips),
- carries integers (at least one) whose value on every trip is known at compile time: each
  starts as a constant and the next trip's value is computed from the carried values, the
  counter and constants by integer `arith` ops (`pypto.dialects.arith_semantics`, the
  interpreter's semantics; a division by zero leaves the loop as it is),

and whose unrolled size stays under `MAX_OPS`, when every trip's carried integers are at most
the warp size (32) in magnitude: a warp tree (`lane < s`, s = 16 .. 1; a carried value may
start as the result of an earlier loop of constant trips, as in block_sum_warp_tail). A block
tree's wider steps
gain nothing from a constant stride, and unrolling its short tail was measured to cost more
than it gives: each unrolled trip is a set of phase functions to analyse and compile
(block_sum's first compile 0.4 -> 1.7 s, its load from the disk cache 14 -> 50 ms, for 0.33 ->
0.22 ms a launch). Trip `k`'s body is a copy with the counter and the carried values replaced
by constants, so each step's guard, offsets and lane bounds are
constants LLVM folds: a step's lanes become a constant-length (fully vectorised or unrolled)
loop. Exact: unrolling a loop of constant trip count runs the same operations in the same
order; the copies keep their source locations, so errors name the same line.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import Operation, SSAValue

from pypto.dialects import pto
from pypto.dialects.arith_semantics import DIVISIONS, INT_BINARY

MAX_TRIPS = 16
"""Trips of the longest loop unrolled (a tree over a block of 2^16 lanes)."""

MAX_OPS = 1500
"""Ops (the loop body's, nested included, times the trips) of the largest unrolled loop."""


def _dtype(t: Any) -> Any:
    if isinstance(t, IntegerType) and t.width.data in (32, 64):
        return np.dtype(f"int{t.width.data}")
    return None


def _constant(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr) and \
            _dtype(value.type) is not None:
        return op.value.value.data
    return None


def _evaluate(value: SSAValue, known: dict[SSAValue, Any]) -> Any:
    """`value` as a NumPy integer, from `known` values, constants and integer `arith` ops
    (None when it depends on anything else, or divides by zero)."""
    if value in known:
        return known[value]
    const = _constant(value)
    dtype = _dtype(value.type)
    if const is not None:
        return dtype.type(const)
    op = value.owner
    if isinstance(op, scf.ForOp) and dtype is not None:  # a loop's result: its last value
        trips = _trips(op)
        return None if trips is None else trips[-1][1 + value.index]  # type: ignore
    if not isinstance(op, Operation) or op.name not in INT_BINARY or dtype is None:
        return None
    a, b = (_evaluate(v, known) for v in op.operands)
    if a is None or b is None or (op.name in DIVISIONS and b == 0):
        return None
    with np.errstate(all="ignore"):
        result = dtype.type(INT_BINARY[op.name](np.asarray(a, dtype), np.asarray(b, dtype)))
    known[value] = result
    return result


def _trips(loop: scf.ForOp) -> list[list[Any]] | None:
    """The counter and carried values of every trip, or None when one is not a constant."""
    lb, ub, step = (_constant(v) for v in (loop.lb, loop.ub, loop.step))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    count = max(0, -(-(ub - lb) // step))
    if count > MAX_TRIPS:
        return None
    body = loop.body.block
    dtype = _dtype(body.args[0].type)
    values = [_evaluate(v, {}) for v in loop.iter_args]
    if dtype is None or any(v is None for v in values):
        return None
    out = []
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    for k in range(count):
        counter = dtype.type(lb + k * step)
        out.append([counter, *values])
        known = dict(zip(body.args, [counter, *values]))
        values = [_evaluate(v, known) for v in yield_op.operands]
        if any(v is None for v in values):
            return None
    out.append([None, *values])  # (the loop's results)
    return out


def _unrollable(loop: scf.ForOp) -> list[list[Any]] | None:
    ops = list(loop.body.walk())
    if not any(isinstance(op, pto.BarrierOp | pto.BarrierBlockOp) for op in ops) or \
            any(isinstance(op, pto.PrintfOp) for op in ops):
        return None
    if not loop.iter_args:
        return None  # (no stride to make constant: a loop interchange_strided_loops put a
        # barrier in, say, whose unrolled HBM offsets lane_independence.py would not follow)
    trips = _trips(loop)
    if trips is None or _first_short(trips) != 0 or len(ops) * (len(trips) - 1) > MAX_OPS:
        return None
    return trips


def _materialise(value: Any, like: SSAValue, before: Operation) -> SSAValue:
    const = arith.ConstantOp(IntegerAttr(int(value), like.type))
    before.parent_block().insert_op_before(const, before)  # type: ignore[union-attr]
    return const.result


def _first_short(trips: list[list[Any]]) -> int:
    """The first trip from which on every trip's carried integers are at most the warp size
    in magnitude (the steps constant_lanes.py gives constant lane ranges); len(trips) - 1
    when the last trip's are not. Only a loop all of whose trips are short is unrolled."""
    k = len(trips) - 1
    while k > 0 and all(abs(int(v)) <= pto.WARP_SIZE for v in trips[k - 1][1:]):
        k -= 1
    return k


def _unroll(loop: scf.ForOp, trips: list[list[Any]]) -> None:
    body = loop.body.block
    for values in trips[:-1]:
        mapper: dict[SSAValue, SSAValue] = {
            arg: _materialise(v, arg, loop) for arg, v in zip(body.args, values)}
        for op in body.ops:
            if isinstance(op, scf.YieldOp):
                break
            loop.parent_block().insert_op_before(op.clone(mapper), loop)  # type: ignore
    for result, value in zip(loop.results, trips[-1][1:]):
        result.replace_all_uses_with(_materialise(value, result, loop))
    loop.detach()
    loop.erase()


def unroll_block_loops(kernel: func.FuncOp) -> func.FuncOp:
    """A copy of `kernel` with its qualifying loops unrolled (see the module doc), or `kernel`
    itself when none qualifies. Outer loops first: an inner loop of an unrolled loop is
    copied, and each copy is considered in turn."""
    if not any(isinstance(op, scf.ForOp) and _unrollable(op) for op in kernel.walk()):
        return kernel
    copy = kernel.clone()
    changed = True
    while changed:
        changed = False
        for op in copy.walk():
            if isinstance(op, scf.ForOp):
                trips = _unrollable(op)
                if trips is not None:
                    _unroll(op, trips)
                    changed = True
                    break
    return copy
