"""Integer `**` (`math.ipowi`) and bool → float casts in the llvm dialect (`convert-pto-to-llvm`).

`x ** y` on int32 / int64 is the interpreter's `np.power`: repeated multiplication, wrapping
(docs/language.md#exact-semantics). Products modulo 2^width do not depend on the order of the
multiplications, so square-and-multiply over the exponent's bits gives NumPy's bits; it is
unrolled over every bit (31 or 63 steps of a select), branch-free, so the lane loop stays
vectorisable. A negative exponent on a lane is the interpreter's error, "integer '**' with a
negative exponent; cast to a float type first", at the op's location (error code NEG_EXPONENT);
the support check refuses a negative constant exponent (then the interpreter reports it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import IntegerAttr, IntegerType, i32, i64
from xdsl.ir import Operation, SSAValue

if TYPE_CHECKING:
    from pypto.backend.native.to_llvm import _FunctionLowering

NEG_EXPONENT = 7
"""The error record's code for a negative integer exponent."""
MESSAGE = "integer '**' with a negative exponent; cast to a float type first"
"""The interpreter's message (pypto/backend/interpreter/lanes.py `int_pow`)."""


def constant_exponent(op: Operation) -> int | None:
    """The exponent of a `math.ipowi` when it is a constant."""
    c = op.operands[1].owner
    if isinstance(c, arith.ConstantOp) and isinstance(c.value, IntegerAttr):
        return c.value.value.data
    return None


def lower_ipowi(lowering: _FunctionLowering, op: math.IPowIOp) -> None:
    a, b = op.operands
    t = a.type
    assert isinstance(t, IntegerType)
    before = lowering._before
    known = constant_exponent(op)
    if known is None or known < 0:
        zero = lowering._const(0, t)
        ok = before(op, zero, llvm.ICmpOp(b, zero.result, IntegerAttr(5, i64)))  # sge
        lowering._fail_unless(op, ok, NEG_EXPONENT, lowering._site(op), None, -1)
    width = t.width.data
    result: SSAValue = before(op, lowering._const(1, t))
    base: SSAValue = a
    zero_t = before(op, lowering._const(0, t))
    for bit in range(width - 1):  # the exponent is >= 0: its sign bit is clear
        mask = before(op, lowering._const(1 << bit, t))
        set_ = before(op, llvm.AndOp(b, mask))
        on = before(op, llvm.ICmpOp(set_, zero_t, IntegerAttr(1, i64)))  # ne
        times = before(op, llvm.MulOp(result, base))
        result = before(op, llvm.SelectOp(on, times, result))
        if bit < width - 2:
            base = before(op, llvm.MulOp(base, base))
    op.results[0].replace_all_uses_with(result)
    op.detach()
    op.erase()


def lower_uitofp(lowering: _FunctionLowering, op: arith.UIToFPOp) -> None:
    """A bool → float cast (the frontend's `pto.cast(b, float)`): True is 1.0, False 0.0
    (the support check accepts `arith.uitofp` from i1 only)."""
    wide = llvm.ZExtOp(op.operands[0], i32)
    lowering._replace(op, wide, llvm.SIToFPOp(wide.results[0], op.results[0].type))
