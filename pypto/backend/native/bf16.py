"""bfloat16 in compiled code: values are their 16 bits (i16), arithmetic is float32's.

xDSL 0.74's translation to LLVM IR has no bfloat type, so before `convert-pto-to-llvm` lowers
a function, `widen_bf16` rewrites it (still `arith` / `math` / `pto`) so that no bf16 value is
left: loads, stores, selects and block arguments carry the bits as i16, and every operation is
the interpreter's (pypto/exact.py: ml_dtypes' bfloat16 arithmetic computes in float32 and rounds
once, exact since float32 has more than 2p + 2 bits):

- bf16 → float32 is exact: the bits shifted up 16 (then `extf` to float64 where needed);
- float32 → bf16 rounds to nearest even (`bits + 0x7FFF + lsb`, the top 16 bits); a NaN becomes
  the quiet NaN of its sign, 0x7FC0 / 0xFFC0, as ml_dtypes;
- float64 → bf16 (casts, and the functions evaluated in float64: exp, ..., rsqrt, `**`) rounds to
  odd in float32 first, then to nearest even: rounded once (exact.py `_f64_to_bf16`);
- `-x`, `abs(x)`, `copysign` are bit operations (the payload of a NaN kept, as ml_dtypes).

A bfloat16 fma and an int64 → bfloat16 cast are rounded once by narrow_fma.py first. A bfloat16
atomic (`add`, `max`, `min`, `exch`) becomes a load, the combination, a store (`_atomic`). In a
kernel with phases, spill slots and phase-function arguments of bfloat16 carry the bits too
(`llvm.getelementptr` / `load` / `store` on i16, the function types retyped). Refused by the
support check: nothing of bfloat16 (a scalar parameter is its bits in the launch's argument
slot, `bf16_bits`).
"""

from __future__ import annotations

from xdsl.dialects import arith, func, llvm, math
from xdsl.dialects.builtin import (BFloat16Type, FloatAttr, FunctionType, IntegerAttr,
                                   IntegerType, f32, f64, i1, i16, i32)
import numpy as np
from xdsl.ir import Attribute, Operation, SSAValue

from pypto.backend.native.numpy_math import ufunc_of
from pypto.dialects import pto
from pypto.dialects.traits import atomic_update

BF16 = BFloat16Type()
_IN_F64 = (math.RsqrtOp, math.PowFOp)
"""Evaluated in float64 by the interpreter and rounded once (with the `ufunc_of` functions)."""
_BITWISE = (arith.NegfOp, math.AbsFOp, math.CopySignOp)


def has_bf16(fn: Operation) -> bool:
    if isinstance(fn, func.FuncOp) and BF16 in fn.function_type.inputs.data:
        return True  # (a range function may take a bf16 uniform it does not use)
    return any(v.type == BF16 for op in fn.walk() for v in (*op.operands, *op.results))


class _Rewriter:
    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def emit(self, op: Operation) -> SSAValue:
        self.anchor.parent_block().insert_op_before(op, self.anchor)
        return op.results[0]

    def const(self, v: int, t: Attribute) -> SSAValue:
        return self.emit(arith.ConstantOp(IntegerAttr(v, t)))

    def to_f32(self, bits: SSAValue) -> SSAValue:
        wide = self.emit(arith.ExtUIOp(bits, i32))
        up = self.emit(arith.ShLIOp(wide, self.const(16, i32)))
        return self.emit(arith.BitcastOp(up, f32))

    def to_wide(self, bits: SSAValue, t: Attribute) -> SSAValue:
        x = self.to_f32(bits)
        return x if t == f32 else self.emit(arith.ExtFOp(x, t))

    def from_f32(self, x: SSAValue) -> SSAValue:
        bits = self.emit(arith.BitcastOp(x, i32))
        hi = self.emit(arith.ShRUIOp(bits, self.const(16, i32)))
        lsb = self.emit(arith.AndIOp(hi, self.const(1, i32)))
        bias = self.emit(arith.AddiOp(self.const(0x7FFF, i32), lsb))
        rounded = self.emit(arith.ShRUIOp(self.emit(arith.AddiOp(bits, bias)),
                                          self.const(16, i32)))
        sign = self.emit(arith.AndIOp(hi, self.const(0x8000, i32)))
        quiet = self.emit(arith.OrIOp(sign, self.const(0x7FC0, i32)))
        nan = self.emit(arith.CmpfOp(x, x, "uno"))
        pick = self.emit(arith.SelectOp(nan, quiet, rounded))
        return self.emit(arith.TruncIOp(pick, i16))

    def from_f64(self, x: SSAValue) -> SSAValue:
        """Round to odd in float32 (truncate, last bit set when inexact), then from_f32."""
        near = self.emit(arith.TruncFOp(x, f32))
        back = self.emit(arith.ExtFOp(near, f64))
        inexact = self.emit(arith.CmpfOp(back, x, "one"))
        bits = self.emit(arith.BitcastOp(near, i32))
        away = self.emit(arith.CmpfOp(self.emit(math.AbsFOp(back)),
                                      self.emit(math.AbsFOp(x)), "ogt"))
        step = self.emit(arith.ExtUIOp(away, i32))
        toward = self.emit(arith.SubiOp(bits, step))
        odd = self.emit(arith.OrIOp(toward, self.emit(arith.ExtUIOp(inexact, i32))))
        return self.from_f32(self.emit(arith.BitcastOp(odd, f32)))

    def from_wide(self, x: SSAValue) -> SSAValue:
        if x.type == f64:
            return self.from_f64(x)
        if x.type != f32:
            x = self.emit(arith.ExtFOp(x, f32))  # float16: exact in float32
        return self.from_f32(x)


def _retype(value: SSAValue) -> None:
    if value.type == BF16:
        value._type = i16  # type: ignore[attr-defined]


def widen_bf16(fn: Operation) -> None:
    """Rewrite `fn` so that it has no bf16 value (module doc)."""
    ops = list(fn.walk())
    was_bf16: set[SSAValue] = {v for op in ops for v in op.results if v.type == BF16}
    was_bf16 |= {a for op in ops for region in op.regions for block in region.blocks
                 for a in block.args if a.type == BF16}
    for op in ops:
        if op.parent is None and op is not fn:
            continue  # erased
        if isinstance(op, llvm.GEPOp) and op.elem_type == BF16:
            op.properties["elem_type"] = i16  # (spill slots of phases: same 2-byte stride)
        operands_bf16 = [v in was_bf16 for v in op.operands]
        result_bf16 = any(r.type == BF16 for r in op.results)
        if not any(operands_bf16) and not result_bf16:
            continue
        rw = _Rewriter(op)
        update = atomic_update(op)
        if update is not None:
            _atomic(rw, op, update.kind)
            continue
        if isinstance(op, arith.ConstantOp):
            assert isinstance(op.value, FloatAttr)
            bits = _bf16_bits(op.value.value.data)
            new = rw.const(bits - (1 << 16) if bits >= 1 << 15 else bits, i16)
            op.results[0].replace_all_uses_with(new)
            was_bf16.add(new)
            op.detach()
            op.erase()
            continue
        if isinstance(op, _BITWISE):
            x = op.operands[0]
            if isinstance(op, arith.NegfOp):
                r = rw.emit(arith.XOrIOp(x, rw.const(-0x8000, i16)))
            elif isinstance(op, math.AbsFOp):
                r = rw.emit(arith.AndIOp(x, rw.const(0x7FFF, i16)))
            else:
                mag = rw.emit(arith.AndIOp(x, rw.const(0x7FFF, i16)))
                sign = rw.emit(arith.AndIOp(op.operands[1], rw.const(-0x8000, i16)))
                r = rw.emit(arith.OrIOp(mag, sign))
            op.results[0].replace_all_uses_with(r)
            was_bf16.add(r)
            op.detach()
            op.erase()
            continue
        if isinstance(op, arith.ExtFOp) and operands_bf16[0]:
            r = rw.to_wide(op.operands[0], op.results[0].type)
            op.results[0].replace_all_uses_with(r)
            op.detach()
            op.erase()
            continue
        if isinstance(op, arith.TruncFOp | arith.ExtFOp) and result_bf16:
            r = rw.from_wide(op.operands[0])
            was_bf16.add(r)
            op.results[0].replace_all_uses_with(r)
            op.detach()
            op.erase()
            continue
        if isinstance(op, arith.SIToFPOp | arith.UIToFPOp) and result_bf16:
            src = op.operands[0]
            if src.type == i1:
                src = rw.emit(arith.ExtUIOp(src, i32))
            wide = rw.emit(arith.SIToFPOp(src, f64))  # int32 / bool: exact in float64
            r = rw.from_f64(wide)
            was_bf16.add(r)
            op.results[0].replace_all_uses_with(r)
            op.detach()
            op.erase()
            continue
        if _carries_bits(op):
            for r in op.results:
                _retype(r)
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        _retype(arg)
            continue
        # arithmetic: widened operands, the result rounded once
        width = f64 if ufunc_of(op) is not None or isinstance(op, _IN_F64) else f32
        for i, is_bf16 in enumerate(operands_bf16):
            if is_bf16:
                op.operands[i] = rw.to_wide(op.operands[i], width)
        if result_bf16:
            result = op.results[0]
            result._type = width  # type: ignore[attr-defined]
            after = _Rewriter(op.next_op)  # type: ignore[arg-type]
            users = list(result.uses)
            r = after.from_wide(result)
            was_bf16.add(r)
            for use in users:
                use.operation.operands[use.index] = r
    for op in fn.walk():  # block arguments of lowered control flow (cf branches)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    _retype(arg)
    if isinstance(fn, func.FuncOp):  # a phase function receiving a uniform bf16 value
        t = fn.function_type
        fn.function_type = FunctionType.from_lists(
            [i16 if a == BF16 else a for a in t.inputs.data],
            [i16 if r == BF16 else r for r in t.outputs.data])


def _atomic(rw: _Rewriter, op: Operation, kind: str) -> None:
    """A bfloat16 atomic as load, combine, store (lanes run one at a time: the interpreter's
    order, which the support check ensures can be the only one, support.py), both accesses
    checked at the atomic's site (its attributes). `add` in float32 rounded once (ml_dtypes'
    addition); `max` / `min` IEEE `maximum` / `minimum` on the bits (a NaN wins, the old value's
    first; +0 > -0); `exch` the operand's bits."""
    ptr, value = op.operands[0], op.operands[-1]
    old = rw.emit(pto.LoadOp(ptr))
    _retype(old)
    old.owner.attributes.update(op.attributes)
    if kind == "add":
        total = rw.emit(arith.AddfOp(rw.to_f32(old), rw.to_f32(value)))
        new = rw.from_f32(total)
    elif kind in ("max", "min"):
        a, b = rw.to_f32(old), rw.to_f32(value)
        a_nan = rw.emit(arith.CmpfOp(a, a, "uno"))
        b_nan = rw.emit(arith.CmpfOp(b, b, "uno"))
        bigger = rw.emit(arith.CmpfOp(a, b, "ogt" if kind == "max" else "olt"))
        equal = rw.emit(arith.CmpfOp(a, b, "oeq"))
        # equal (the zeros): max keeps the one without the sign bit, min the one with it
        keep_zero = rw.emit(arith.CmpiOp(old, rw.const(0, i16),
                                         "slt" if kind == "min" else "sge"))
        a_wins = rw.emit(arith.OrIOp(bigger, rw.emit(arith.AndIOp(equal, keep_zero))))
        pick = rw.emit(arith.SelectOp(a_wins, old, value))
        pick = rw.emit(arith.SelectOp(b_nan, value, pick))
        new = rw.emit(arith.SelectOp(a_nan, old, pick))
    else:  # exch (the support check refuses the integer kinds on floats)
        new = value
    store = pto.StoreOp(new, ptr)
    store.attributes.update(op.attributes)
    op.parent_block().insert_op_before(store, op)
    op.results[0].replace_all_uses_with(old)
    op.detach()
    op.erase()


def _carries_bits(op: Operation) -> bool:
    """Ops that move a value without computing on it (i16 bits are as good as bf16)."""
    return isinstance(op, pto.LoadOp | pto.StoreOp | arith.SelectOp | func.ReturnOp |
                      func.CallOp | llvm.LoadOp | llvm.StoreOp) or op.dialect_name() in ("cf", "scf") or \
        op.name in ("pto.alloc_local",)


def bf16_bits(value: object) -> int:
    """The bits of a bfloat16 launch argument (a float rounded to nearest even, as NumPy)."""
    import ml_dtypes

    return int(np.asarray(value, dtype=ml_dtypes.bfloat16).view(np.uint16))


def _bf16_bits(value: float) -> int:
    import ml_dtypes

    return int(np.array(value, dtype=ml_dtypes.bfloat16).view(np.uint16))


def bf16_refusal(op: Operation) -> str | None:
    """Why `op` on bfloat16 values is not compiled (None: it is)."""
    types = [v.type for v in (*op.operands, *op.results)]
    if BF16 not in types:
        return None
    update = atomic_update(op)
    if update is not None and update.kind not in ("add", "max", "min", "exch"):
        return f"a bfloat16 atomic_{update.kind}"
    return None
