"""float16 and bfloat16 fma (and int64 → bfloat16) rounded once, as pypto/exact.py.

LLVM computes a float16 `llvm.fma` in float32 and rounds twice. The interpreter's `exact.fma`
is `a * b + c` rounded once to the type. Here, before `convert-pto-to-llvm` lowers a function
(still `arith`, so bf16.py then handles the bfloat16 values), each such fma becomes:

- `p = a * b` in float64: exact (two 11- or 8-bit significands, exponents far inside float64's);
- `s = p + c` rounded *to odd* in float64: rounded to nearest, then, when TwoSum's error term is
  not zero and `s`'s last bit is even, moved one ulp toward the exact sum (the odd neighbour);
- `s` rounded to the type (float16: through float32 rounded to odd, then to nearest; bfloat16:
  bf16.py's float64 → bfloat16, the same). Rounding to odd keeps the sticky information, and
  float64 has more than p + 2 bits of either type, so the result is the exact sum rounded once
  (Boldo & Melquiond 2008, as exact.py).

An int64 → bfloat16 cast the same way: `hi` (the top 32 bits, low bits zero) and `lo` are exact
in float64, and `hi + lo` rounded to odd, then to bfloat16 (exact.py `int_to_float`).
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import BFloat16Type, Float16Type, FloatAttr, IntegerAttr, f32, f64, i64
from xdsl.ir import Attribute, Operation, SSAValue

from pypto.dialects import pto

SITE_ATTR = "pto.native_site"
"""(to_llvm.SITE_ATTR) kept when a `pto.fma` becomes a store."""


def _narrow(t: Attribute) -> bool:
    return isinstance(t, Float16Type | BFloat16Type)


def needs_rewrite(op: Operation) -> bool:
    if isinstance(op, pto.FmaOp | math.FmaOp):
        return _narrow(op.operands[-1].type)
    return isinstance(op, arith.SIToFPOp) and isinstance(op.results[0].type, BFloat16Type) \
        and op.operands[0].type == i64


class _At:
    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def __call__(self, op: Operation) -> SSAValue:
        self.anchor.parent_block().insert_op_before(op, self.anchor)
        return op.results[0]

    def f(self, v: float) -> SSAValue:
        return self(arith.ConstantOp(FloatAttr(v, f64)))

    def i(self, v: int) -> SSAValue:
        return self(arith.ConstantOp(IntegerAttr(v, i64)))


def _odd_sum(at: _At, p: SSAValue, c: SSAValue) -> SSAValue:
    """`p + c` (float64) rounded to odd (module doc)."""
    s = at(arith.AddfOp(p, c))
    bp = at(arith.SubfOp(s, c))
    err = at(arith.AddfOp(at(arith.SubfOp(p, bp)), at(arith.SubfOp(c, at(arith.SubfOp(s, bp))))))
    zero = at.f(0.0)
    inexact = at(arith.CmpfOp(err, zero, "one"))  # (false when NaN)
    finite = at(arith.CmpfOp(at(math.AbsFOp(s)), at.f(float("inf")), "olt"))
    bits = at(arith.BitcastOp(s, i64))
    even = at(arith.CmpiOp(at(arith.AndIOp(bits, at.i(1))), at.i(0), "eq"))
    fix = at(arith.AndIOp(at(arith.AndIOp(inexact, finite)), even))
    same = at(arith.CmpiOp(at(arith.CmpfOp(err, zero, "olt")), at(arith.CmpfOp(s, zero, "olt")),
                           "eq"))
    step = at(arith.SelectOp(same, at.i(1), at.i(-1)))
    moved = at(arith.AddiOp(bits, step))
    return at(arith.BitcastOp(at(arith.SelectOp(fix, moved, bits)), f64))


def rewrite_narrow_fmas(fn: Operation) -> None:
    """Every float16 / bfloat16 fma (and int64 → bfloat16 cast) of `fn` rounded once."""
    for op in [o for o in fn.walk() if needs_rewrite(o)]:
        at = _At(op)
        if isinstance(op, arith.SIToFPOp):
            x = op.operands[0]
            lo = at(arith.AndIOp(x, at.i(0xFFFFFFFF)))
            hi = at(arith.SubiOp(x, lo))
            s = _odd_sum(at, at(arith.SIToFPOp(hi, f64)), at(arith.SIToFPOp(lo, f64)))
            r = at(arith.TruncFOp(s, op.results[0].type))
            op.results[0].replace_all_uses_with(r)
            op.detach()
            op.erase()
            continue
        a, b, c = (op.a, op.b, op.c) if isinstance(op, pto.FmaOp) else op.operands
        t = c.type
        if isinstance(t, Float16Type):  # through float32 (exact): no runtime-library call
            a, b, c = (at(arith.ExtFOp(v, f32)) for v in (a, b, c))
        wide = [at(arith.ExtFOp(v, f64)) for v in (a, b, c)]
        p = at(arith.MulfOp(wide[0], wide[1]))
        r = at(arith.TruncFOp(_odd_sum(at, p, wide[2]), t))
        if isinstance(op, pto.FmaOp):
            store = pto.StoreOp(r, op.dst)
            if SITE_ATTR in op.attributes:
                store.attributes[SITE_ATTR] = op.attributes[SITE_ATTR]
            op.parent_block().insert_op_before(store, op)
        else:
            op.results[0].replace_all_uses_with(r)
        op.detach()
        op.erase()


__all__ = ["needs_rewrite", "rewrite_narrow_fmas"]
