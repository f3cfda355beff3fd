"""A sorting network's compare-exchange step as loops over runs of pairs, in the grid function.

pair_exchange.py makes a step `ixj = tid ^ j; if ixj > tid: ...` one phase, and
exchange_selects.py makes it branch-free; compiled as a phase it is still a lane loop over
every lane of the block, each lane testing `ixj > tid` and computing its partner `tid ^ j`,
which LLVM cannot vectorise (a xor is not an affine address). When `j` is a power of two
`2^m`, `tid ^ j > tid` holds exactly for the lanes whose bit m is clear, and for them
`tid ^ j == tid + j`: the admitted lanes are the runs `[r, r + j)` for `r` a multiple of
`2j`, each run's partners the run `[r + j, r + 2j)`. So the step is

    for r in range(0, lanes, 2 * j):
        for i in range(j):              # lane r + i, partner r + i + j
            <the if's body>

The body's loads and stores are at two contiguous runs of the buffer: LLVM vectorises the
inner loop along the run (compares and selects of vectors) when it stays a loop (runs of 4
pairs or more: `KEEP_RUNS`, `keep_run_loops`), and the loop over runs with interleaved
accesses when the run is written out (runs of 1 and 2 pairs: `UNROLLED_BELOW`). `j` is a
block-level value known only at run time, so the grid function dispatches on it: one loop
nest per power of two `j < lanes` with `j` a constant there (constant trip counts), and the
phase's usual lane
loops (phase_codegen.py) for every other `j` (not a power of two, or partners outside the
block: the out-of-range error stays the lane loops' own) or another block shape.

Why this is the interpreter's result: the admitted lanes own disjoint pairs (pair_exchange.py),
so any order of the lanes gives the lockstep result, and each iteration runs exactly the lanes'
ops (the kernel's own compares, selects and stores, cloned: the same bits, NaN and -0
included). The accesses need no check: `lanes` is a multiple of `2j`, so the lane and its
partner are below `lanes`, and every buffer the step touches holds at least `lanes` elements
(pair_exchange.py). Nothing in the body can raise (pair_exchange.py refuses divisions, casts
to int, HBM accesses), so no error order is at stake.

Taken when the phase is such an `if` (with only pure ops before it, no guards and no values
handed to later phases), the kernel was compiled for a 1-D block (`pto.native_block`) whose
lanes are a power of two, and the if's operands from outside it are the lane id, `tid ^ j`,
block-uniform values or pure arithmetic of those. docs/native.md#merged-tree-steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import IntegerAttr, UnitAttr, i32
from xdsl.ir import Block, Operation, Region, SSAValue

from pypto.backend.native.fast_blocks import NSW_ATTR, UNCHECKED_ATTR
from pypto.backend.native.pair_exchange import _RAISING, _is_tid, _pair_condition, \
    _same_value, _xor_of_tid, pair_exchange
from pypto.backend.native.phases import _floating
from pypto.dialects import pto
from pypto.dialects.traits import launch_id
from pypto.backend.native.quick_ops import KEEP_LOOP_MARKER, append as _add, i32_constant as _c

ENABLED = True
"""Run pair-exchange steps as runs of pairs (False: the lane loops only; for tests)."""

MIN_LANES = 4
"""Blocks of fewer lanes keep the lane loops (a run of pairs would hold one or two lanes)."""

KEEP_RUNS = True
"""Keep each run's loop (`llvm.loop.unroll.disable`, see `keep_run_loops`): LLVM vectorises
it along the run. Unrolled, short runs made the loop over runs innermost, which LLVM
vectorised across runs with gathers and scatters (False: LLVM's choice; for measurements)."""

UNROLLED_BELOW = 4
"""Runs shorter than this many pairs are written out in the loop over runs (no loop of
their own), which LLVM vectorises with interleaved accesses. Measured per step and block of
256 lanes (float32): a kept loop of 2 pairs 125 ns (not vectorised), written out 37 ns; runs
of 4 kept 27 ns, written out 58 ns; bitonic sort 2^20: 5.0 ms (runs of 2 kept) -> 3.4 ms."""

MARKER = KEEP_LOOP_MARKER
"""The intrinsic call marking a kept run loop's body until `keep_run_loops` removes it."""


class _Step:
    """A phase found to be a pair-exchange step: its `if`, `j`, and how each value the if
    uses from outside it is computed (`lane`, `partner`, `uniform`, or `clone`)."""

    def __init__(self, op: scf.IfOp, j: SSAValue, uniform: Callable[[SSAValue], bool]):
        self.op = op
        self.j = j
        self.uniform = uniform
        self.how: dict[SSAValue, str] = {}
        self.order: list[SSAValue] = []  # outside values, operands before their users

    def classify(self, v: SSAValue) -> bool:
        """Can `v` (used by the if, defined outside it) be computed in the loop nest?"""
        if v in self.how:
            return True
        if _is_tid(v):
            kind = "lane"
        elif (x := _xor_of_tid(v, self.uniform)) is not None and _same_value(x, self.j):
            kind = "partner"
        elif self.uniform(v):
            kind = "uniform"
        else:
            o = v.owner
            if not isinstance(o, Operation) or o.regions or launch_id(o) is not None or \
                    o.dialect_name() not in ("arith", "math") or o.name in _RAISING:
                return False
            if not all(self.classify(x) for x in o.operands):
                return False
            kind = "clone"
        self.how[v] = kind
        self.order.append(v)
        return True


def _step(phase_ops: list[Operation], guards: tuple, copies: list, lanes: int | None,
          uniform: Callable[[SSAValue], bool]) -> _Step | None:
    """The phase as a pair-exchange step this module runs as runs of pairs, else None."""
    if not ENABLED or guards or copies or not phase_ops or lanes is None or \
            lanes < MIN_LANES or lanes & (lanes - 1):
        return None
    op = phase_ops[-1]
    if not isinstance(op, scf.IfOp) or not pair_exchange(op, lanes, uniform):
        return None
    if not all(_floating(before) for before in phase_ops[:-1]):
        return None  # (pure ops only, recomputed by whoever uses them: none is spilled)
    j = _pair_condition(op.cond, uniform)
    assert j is not None  # (pair_exchange checked it)
    step = _Step(op, j, uniform)
    inside = {r for o in op.walk() for r in o.results} | \
        {a for o in op.walk() for r in o.regions for b in r.blocks for a in b.args}
    for o in op.walk():
        if o is op:
            continue
        for v in o.operands:
            if v not in inside and not step.classify(v):
                return None
    return step


def emit(phase_ops: list[Operation], guards: tuple, copies: list, shape: tuple[int, ...] | None,
         uniform: Callable[[SSAValue], bool], resolve: Callable[[SSAValue, Block], SSAValue],
         block: Block, block_dims: list[SSAValue]) -> Block | None:
    """When the phase is a pair-exchange step (see the module doc): add to `block` the
    dispatch on `j` and the loop nests, and return the block where the phase's usual lane
    loops go (run for any other `j` or block shape); else None (nothing added).
    `resolve(v, at)`: a block-uniform kernel value in the grid function, computed at `at`."""
    lanes = shape[0] if shape is not None and all(d == 1 for d in shape[1:]) else None
    step = _step(phase_ops, guards, copies, lanes, uniform)
    if step is None:
        return None
    assert lanes is not None
    j = resolve(step.j, block)
    outside = {v: resolve(v, block) for v in step.order if step.how[v] == "uniform"}
    c0, c1 = _c(block, 0), _c(block, 1)
    bx, by, bz = block_dims
    shaped = _add(block, arith.AndIOp(
        _add(block, arith.CmpiOp(bx, _c(block, lanes), "eq")),
        _add(block, arith.AndIOp(_add(block, arith.CmpiOp(by, c1, "eq")),
                                 _add(block, arith.CmpiOp(bz, c1, "eq"))))))
    power = _add(block, arith.AndIOp(  # 0 < j < lanes, j a power of two
        _add(block, arith.AndIOp(_add(block, arith.CmpiOp(j, c0, "sgt")),
                                 _add(block, arith.CmpiOp(j, _c(block, lanes), "slt")))),
        _add(block, arith.CmpiOp(_add(block, arith.AndIOp(
            j, _add(block, arith.SubiOp(j, c1)))), c0, "eq"))))
    runs, other = Block(), Block()
    block.add_op(scf.IfOp(_add(block, arith.AndIOp(shaped, power)), [], Region(runs),
                          Region(other)))
    _dispatch(runs, step, j, outside, lanes, 1)
    runs.add_op(scf.YieldOp())
    return other


def _dispatch(block: Block, step: _Step, j: SSAValue, outside: dict[SSAValue, SSAValue],
              lanes: int, run: int) -> None:
    """`if j == run: nest(run) else: (the next power of two)`; the last one unconditionally
    (j is a power of two below `lanes` here)."""
    if 2 * run >= lanes:
        _nest(block, step, outside, lanes, run)
        return
    this, rest = Block(), Block()
    block.add_op(scf.IfOp(_add(block, arith.CmpiOp(j, _c(block, run), "eq")), [],
                          Region(this), Region(rest)))
    _nest(this, step, outside, lanes, run)
    this.add_op(scf.YieldOp())
    _dispatch(rest, step, j, outside, lanes, 2 * run)
    rest.add_op(scf.YieldOp())


def _nest(block: Block, step: _Step, outside: dict[SSAValue, SSAValue], lanes: int,
          run: int) -> None:
    """for r in range(0, lanes, 2 run): for i in range(run): the body for lane r + i.
    Runs shorter than `UNROLLED_BELOW` pairs are written out (the body `run` times per r)."""
    outer = Block(arg_types=[i32])
    r = outer.args[0]
    if run < UNROLLED_BELOW:
        for i in range(run):
            _body(outer, step, outside, r, _c(outer, i), run, keep=False)
    else:
        inner = Block(arg_types=[i32])
        _body(inner, step, outside, r, inner.args[0], run, keep=KEEP_RUNS)
        inner.add_op(scf.YieldOp())
        outer.add_op(scf.ForOp(_c(outer, 0), _c(outer, run), _c(outer, 1), [],
                               Region(inner)))
    outer.add_op(scf.YieldOp())
    block.add_op(scf.ForOp(_c(block, 0), _c(block, lanes), _c(block, 2 * run), [],
                           Region(outer)))


def _body(at: Block, step: _Step, outside: dict[SSAValue, SSAValue], r: SSAValue,
          i: SSAValue, run: int, keep: bool) -> None:
    """The if's body for lane `r + i` (partner `r + i + run`), its accesses unchecked; `keep`:
    the marker `keep_run_loops` looks for."""
    lane = arith.AddiOp(r, i)
    lane.attributes[NSW_ATTR] = UnitAttr()  # (< lanes: consecutive addresses for LLVM)
    at.add_op(lane)
    partner = arith.AddiOp(lane.result, _c(at, run))
    partner.attributes[NSW_ATTR] = UnitAttr()
    at.add_op(partner)
    if keep:
        at.add_op(llvm.CallIntrinsicOp(MARKER, [], []))
    mapper: dict[SSAValue, SSAValue] = dict(outside)
    for v in step.order:
        kind = step.how[v]
        if kind == "lane":
            mapper[v] = lane.result
        elif kind == "partner":
            mapper[v] = partner.result
        elif kind == "clone" and v not in mapper:
            o = v.owner
            assert isinstance(o, Operation)
            clone = o.clone(value_mapper=mapper)
            at.add_op(clone)
            mapper.update(zip(o.results, clone.results))
    for o in list(step.op.true_region.blocks[0].ops):
        if isinstance(o, scf.YieldOp):
            continue
        clone = o.clone(value_mapper=mapper)
        at.add_op(clone)
        mapper.update(zip(o.results, clone.results))
        for c in clone.walk():
            if isinstance(c, pto.LoadOp | pto.StoreOp):  # the lane's pair: below `lanes`
                c.attributes[UNCHECKED_ATTR] = UnitAttr()


def keep_run_loops(module: Any) -> None:
    """Keep the run loops as loops (llvmlite `module`, before
    LLVM's optimisations): `llvm.loop.unroll.disable` on the innermost loop around each
    marker call, and the markers removed. Unrolled (a run of 8 or 16 pairs is short enough to
    be unrolled whole), the loop over runs became the innermost loop and LLVM vectorised it
    across runs, with gathers and scatters: 210 ns a step and block of 256 lanes, against 9 ns
    for a run loop vectorised along the run (docs/native.md#merged-tree-steps)."""
    from llvmlite import ir

    from pypto.backend.native.numpy_math import _innermost_loops

    node = None
    for fn in module.functions:
        marked = {b for b in fn.blocks for i in b.instructions
                  if isinstance(i, ir.CallInstr) and getattr(i.callee, "name", "") == MARKER}
        if not marked:
            continue
        if node is None:
            node = _loop_node(module)
        for latch in _innermost_loops(fn, marked):
            latch.terminator.set_metadata("llvm.loop", node)
        for b in marked:
            b.instructions[:] = [i for i in b.instructions if not (
                isinstance(i, ir.CallInstr) and getattr(i.callee, "name", "") == MARKER)]


def _loop_node(module: Any) -> Any:
    """A distinct `llvm.loop` node with `llvm.loop.unroll.disable`."""
    from llvmlite import ir

    from pypto.backend.native.numpy_math import loop_node

    return loop_node(module, [module.add_metadata(
        [ir.MetaDataString(module, "llvm.loop.unroll.disable")])])
