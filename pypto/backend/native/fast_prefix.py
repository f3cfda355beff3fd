"""Fast prefixes of block-level loops: the iterations whose range checks pass, in a loop of their
own before the general one (docs/native.md#fast-prefixes).

A block-level `scf.for` whose body is one phase (phase_codegen.py) runs, per iteration, the
phase's range function and then its fast lane loops or, when the check fails, its checked lane
loop. Both paths in one loop keep LLVM from promoting the values the phase keeps per lane across
iterations (the spill slots of gemv block/row's accumulator, [strided loops
interchanged](docs/native.md#strided-loops-interchanged)) into registers: the checked path
addresses the same slots with a run-time lane index. So the grid function first runs

    iv = lb
    while iv < ub and range(iv):   # (scf.while)
        fast lane loops at iv
        iv = iv + step

and then the loop as before, from `iv`: its first iteration recomputes the failed check (a pure
function of the same values) and takes the checked path. The iterations, their order and each
iteration's path are the same as the loop alone runs, so results, errors and their locations are
too; `iv < ub` (signed) and `iv + step` are `scf.for`'s own condition and increment (xDSL's
lowering), so the general loop starts where the prefix stopped. Only loops that carry no
block-level values (phase_codegen passes the others by). Inside the prefix the fast path
addresses every slot at a loop-invariant place, and LLVM's LICM keeps them in registers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import i1, i32, i64
from xdsl.ir import Block, Region, SSAValue

from pypto.backend.native.quick_ops import append as _add, int_constant

if TYPE_CHECKING:
    from pypto.backend.native.phases import Phase

ENABLED = True
"""Emit the fast prefix (a switch of jit.SWITCHES: off, block-level loops are one loop)."""


def emit(em: Any, fn: Any, phase: "Phase", iv: SSAValue, lb: SSAValue, ub: SSAValue,
         step: SSAValue, block: Block, g: Any) -> SSAValue:
    """Emit at `block` the fast prefix of the loop over `iv` (the kernel's induction variable)
    from `lb` to `ub` by `step` whose body is phase `phase` (phase function `fn`); the value
    the general loop starts from (`lb` itself when the switch is off)."""
    if not ENABLED:
        return lb

    def go(at: Block, x: SSAValue) -> SSAValue:
        """Whether the iteration at `x` runs in the prefix, computed at `at`."""
        em.scopes.append({iv: x})
        _, _, ok = em._range_call(fn, phase, em.call_args(fn, at, g), at, g)
        em.scopes.pop()
        passed = _add(at, arith.CmpiOp(ok, _add(at, int_constant(0, ok.type)), "ne"))
        cond = _add(at, arith.AndIOp(_add(at, arith.CmpiOp(x, ub, "slt")), passed))
        # (what the fast lane loops test again inside, stated here so that LLVM folds it
        # there: no error recorded, the block of the compiled shape)
        status = _add(at, arith.TruncIOp(_add(at, llvm.LoadOp(g.err, i64)), i32))
        facts = [_add(at, arith.CmpiOp(status, _add(at, int_constant(0, i32)), "eq"))]
        if em.shape is not None:
            facts += [_add(at, arith.CmpiOp(d, _add(at, int_constant(size, i32)), "eq"))
                      for d, size in zip(g.block_dims, em.shape)]
        for fact in facts:
            cond = _add(at, arith.AndIOp(cond, fact))
        return cond

    # if go(lb): do { fast lane loops at iv; iv += step } while go(iv): rotated by hand, so
    # that every iteration that runs stores the slots it loads (LICM promotes them then)
    body = Block(arg_types=[iv.type])
    x = body.args[0]
    em.scopes.append({iv: x})
    args = em.call_args(fn, body, g)
    checked_prologue, lo_hi, _ = em._range_call(fn, phase, args, body, g)
    fast = em.fast_lanes(phase, fn.func.sym_name.data, args, checked_prologue, lo_hi, body, g)
    em.scopes.pop()
    body.add_op(scf.IfOp(_add(body, int_constant(1, i1)), [], Region(fast),
                         Region(Block([scf.YieldOp()]))))
    nxt = _add(body, arith.AddiOp(x, step))
    body.add_op(scf.ConditionOp(go(body, nxt), nxt))
    after = Block(arg_types=[iv.type])
    after.add_op(scf.YieldOp(after.args[0]))
    then = Block()
    loop = scf.WhileOp([lb], [iv.type], Region(body), Region(after))
    then.add_op(loop)
    then.add_op(scf.YieldOp(loop.results[0]))
    other = Block([scf.YieldOp(lb)])
    prefix = scf.IfOp(go(block, lb), [iv.type], Region(then), Region(other))
    block.add_op(prefix)
    return prefix.results[0]
