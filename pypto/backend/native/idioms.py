"""Loop idioms a lane function computes in one LLVM instruction instead of a loop.

LLVM recognises few idioms in loops whose trip count is a constant it then unrolls: a
population count written as the sum of a value's bits (`count += (x >> k) & 1` for k in a
constant range) stays 32 shift / and / add steps per element, where one `ctpop` (one `vpopcnt`
per 16 lanes on AVX-512) gives the same integer. `pto-simt-to-lanes` calls `rewrite_idioms` on
every lane function (docs/native.md#idioms).

The rewrite is exact: for `0 <= lo <= hi <= w` (w the width of the integer type), bit 0 of
`x >> k` is bit k of x for an arithmetic or a logical shift, so the loop adds the bits
`lo..hi-1` of x to the initial count with wrapping additions, which is `init + ctpop(x & mask)`
in the same wrapping arithmetic.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, llvm, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import BlockArgument, Operation, SSAValue


def _constant(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _other(op: Operation, v: SSAValue) -> SSAValue | None:
    """The operand of binary `op` that is not `v` (None when `v` is not an operand)."""
    a, b = op.operands
    if a is v:
        return b
    if b is v:
        return a
    return None


def _popcount_source(loop: scf.ForOp) -> tuple[SSAValue, int, int] | None:
    """(x, lo, hi) when `loop` is `for k in [lo, hi): count += (x >> k) & 1` (x defined
    outside the loop, one carried count of x's type, k that type or extended to it,
    `0 <= lo <= hi <= width`), else None."""
    lo, hi, step = (_constant(v) for v in (loop.lb, loop.ub, loop.step))
    if lo is None or hi is None or step != 1 or len(loop.iter_args) != 1:
        return None
    t = loop.iter_args[0].type
    if not isinstance(t, IntegerType) or not 0 <= lo <= hi <= t.width.data:
        return None
    body = loop.body.block
    iv, count = body.args
    ops = [op for op in body.ops if not isinstance(op, arith.ConstantOp)]
    if len(ops) == 5 and isinstance(ops[0], arith.ExtSIOp | arith.ExtUIOp) and \
            ops[0].operands[0] is iv:  # (a wider x shifted by the extended counter)
        iv = ops.pop(0).results[0]
    if len(ops) != 4 or iv.type != t:
        return None
    shift, mask, add, yield_op = ops
    if not isinstance(shift, arith.ShRSIOp | arith.ShRUIOp) or shift.operands[1] is not iv:
        return None
    x = shift.operands[0]
    inside = x.block is body if isinstance(x, BlockArgument) else \
        x.owner.parent_block() is body  # type: ignore[union-attr]
    if x.type != t or inside:
        return None
    if not isinstance(mask, arith.AndIOp):
        return None
    one = _other(mask, shift.results[0])
    if one is None or _constant(one) != 1:
        return None
    if not isinstance(add, arith.AddiOp) or _other(add, count) is not mask.results[0]:
        return None
    if not isinstance(yield_op, scf.YieldOp) or list(yield_op.operands) != [add.results[0]]:
        return None
    return x, lo, hi


def rewrite_idioms(fn: func.FuncOp) -> int:
    """Replace the population-count loops of `fn` by `init + ctpop(x & mask)`; returns how
    many it replaced."""
    done = 0
    for loop in [op for op in fn.walk() if isinstance(op, scf.ForOp)]:
        found = _popcount_source(loop)
        if found is None:
            continue
        x, lo, hi = found
        t = x.type
        assert isinstance(t, IntegerType)
        width = t.width.data
        bits = ((1 << (hi - lo)) - 1) << lo
        if bits >= 1 << (width - 1):  # as the signed value of the type
            bits -= 1 << width
        mask = arith.ConstantOp(IntegerAttr(bits, t))
        masked = arith.AndIOp(x, mask.result)
        count = llvm.CallIntrinsicOp(f"llvm.ctpop.i{width}", [masked.result], [t])
        total = arith.AddiOp(loop.iter_args[0], count.results[0])
        block = loop.parent_block()
        assert block is not None
        block.insert_ops_before([mask, masked, count, total], loop)
        loop.results[0].replace_all_uses_with(total.result)
        loop.detach()
        loop.erase()
        done += 1
    return done
