"""Python operators on per-lane values: how each lowers to `arith` / `math` / `pto` ops, and
how compile-time operands fold. Tables keyed by the `ast` operator class, used by lowering.py.

Integer `//` and `%` and float `//` and `%` follow Python (floor division; `%` with the sign of
the divisor), which takes a few ops each.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from pypto import dtypes
from pypto.dialects import pto

if TYPE_CHECKING:
    from pypto.frontend.lowering import KernelLowering


def _int_floordiv(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    return self.emit(arith.FloorDivSIOp(a, b)).results[0]


def _int_mod(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    """Python's `%` (result has the sign of the divisor): remsi, then fix up the sign."""
    t = a.type
    rem = self.emit(arith.RemSIOp(a, b)).results[0]
    zero = self.constant(0, t)
    nonzero = self.emit(arith.CmpiOp(rem, zero, "ne")).results[0]
    rem_neg = self.emit(arith.CmpiOp(rem, zero, "slt")).results[0]
    div_neg = self.emit(arith.CmpiOp(b, zero, "slt")).results[0]
    signs_differ = self.emit(arith.XOrIOp(rem_neg, div_neg)).results[0]
    fix = self.emit(arith.AndIOp(nonzero, signs_differ)).results[0]
    adjusted = self.emit(arith.AddiOp(rem, b)).results[0]
    return self.emit(arith.SelectOp(fix, adjusted, rem)).results[0]


def _float_divmod(self: KernelLowering, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Python's float `(a // b, a % b)`, as NumPy's `npy_divmod`: exact fmod, then fix-ups.

    float16/bfloat16 are computed in float32 and rounded back, as NumPy does for half.
    """
    from xdsl.dialects import math

    t = a.type
    narrow = t.bitwidth < 32
    if narrow:
        f32 = dtypes.float32.mlir()
        a = self.emit(arith.ExtFOp(a, f32)).results[0]
        b = self.emit(arith.ExtFOp(b, f32)).results[0]
    ft = a.type
    e = lambda op: self.emit(op).results[0]  # noqa: E731
    zero, one, half = (self.constant(v, ft) for v in (0.0, 1.0, 0.5))
    mod = e(pto.FmodOp(a, b))
    div = e(arith.DivfOp(e(arith.SubfOp(a, mod)), b))
    mod_nonzero = e(arith.CmpfOp(mod, zero, "une"))
    signs_differ = e(arith.XOrIOp(e(arith.CmpfOp(b, zero, "olt")),
                                  e(arith.CmpfOp(mod, zero, "olt"))))
    fix = e(arith.AndIOp(mod_nonzero, signs_differ))
    mod = e(arith.SelectOp(fix, e(arith.AddfOp(mod, b)), mod))
    div = e(arith.SelectOp(fix, e(arith.SubfOp(div, one)), div))
    mod = e(arith.SelectOp(mod_nonzero, mod, e(math.CopySignOp(zero, b))))
    floor = e(math.FloorOp(div))
    round_up = e(arith.CmpfOp(e(arith.SubfOp(div, floor)), half, "ogt"))
    floor = e(arith.SelectOp(round_up, e(arith.AddfOp(floor, one)), floor))
    div_nonzero = e(arith.CmpfOp(div, zero, "une"))
    floor = e(arith.SelectOp(div_nonzero, floor,
                             e(math.CopySignOp(zero, e(arith.DivfOp(a, b))))))
    b_zero = e(arith.CmpfOp(b, zero, "oeq"))
    floor = e(arith.SelectOp(b_zero, e(arith.DivfOp(a, b)), floor))  # x // 0.0: inf/nan
    if narrow:
        floor = e(arith.TruncFOp(floor, t))
        mod = e(arith.TruncFOp(mod, t))
    return floor, mod


def _float_floordiv(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    return _float_divmod(self, a, b)[0]


def _float_mod(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    return _float_divmod(self, a, b)[1]


def _float_pow(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    from xdsl.dialects import math

    return self.emit(math.PowFOp(a, b)).results[0]


def _int_pow(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    from xdsl.dialects import math

    return self.emit(math.IPowIOp(a, b)).results[0]


def _simple(op_cls: type[Operation]) -> Callable[[KernelLowering, SSAValue, SSAValue], SSAValue]:
    return lambda self, a, b: self.emit(op_cls(a, b)).results[0]


def _int_truediv(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    raise self.error("'/' on integers is not defined in kernels; use '//' for integer division "
                     "or pto.cast() the operands to a float type")


_INT_BINARY = {
    ast.Add: _simple(arith.AddiOp),
    ast.Sub: _simple(arith.SubiOp),
    ast.Mult: _simple(arith.MuliOp),
    ast.FloorDiv: _int_floordiv,
    ast.Mod: _int_mod,
    ast.Div: _int_truediv,
    ast.Pow: _int_pow,
    ast.BitAnd: _simple(arith.AndIOp),
    ast.BitOr: _simple(arith.OrIOp),
    ast.BitXor: _simple(arith.XOrIOp),
    ast.LShift: _simple(arith.ShLIOp),
    ast.RShift: _simple(arith.ShRSIOp),
}
_FLOAT_BINARY = {
    ast.Add: _simple(arith.AddfOp),
    ast.Sub: _simple(arith.SubfOp),
    ast.Mult: _simple(arith.MulfOp),
    ast.Div: _simple(arith.DivfOp),
    ast.FloorDiv: _float_floordiv,
    ast.Mod: _float_mod,
    ast.Pow: _float_pow,
}
_BOOL_BINARY = {
    ast.BitAnd: _simple(arith.AndIOp),
    ast.BitOr: _simple(arith.OrIOp),
    ast.BitXor: _simple(arith.XOrIOp),
}

_OP_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
              ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
              ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@"}

_PY_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a ** b, ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b, ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
}
_PY_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: lambda a: -a, ast.UAdd: lambda a: +a, ast.Not: lambda a: not a,
    ast.Invert: lambda a: ~a,
}
_PY_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
}
_CMPI = {ast.Lt: "slt", ast.LtE: "sle", ast.Gt: "sgt", ast.GtE: "sge", ast.Eq: "eq",
         ast.NotEq: "ne"}
_CMPI_BOOL = {ast.Lt: "ult", ast.LtE: "ule", ast.Gt: "ugt", ast.GtE: "uge", ast.Eq: "eq",
              ast.NotEq: "ne"}
_CMPF = {ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge", ast.Eq: "oeq",
         ast.NotEq: "une"}
