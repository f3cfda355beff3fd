"""`pto.fill` compiled as a store loop in the grid function: no callback into NumPy per block
and fill (docs/native.md#collectives).

The callback (pypto/backend/native/collectives.py `_run`) writes `view[...] = fval` (a float
element type: the value widened to float64, then NumPy's cast of a Python float to the
element type) or `np.array(v).astype(dtype)` (an integer type: the value sign-extended to 64
bits, then truncated to the element's width). The compiled loop stores the same bits:

- float32: `fptrunc` of the same float64 — the C cast NumPy's assignment makes (round to
  nearest even), one instruction on both sides; float64: the value itself;
- integers of 8, 16, 32 or 64 bits: the value itself (a truncation of its sign extension).

A signalling NaN is the one value where LLVM may fold `fptrunc(fpext(x))` back to `x` while the
callback's conversions quiet it: a float32 signalling NaN (exponent all ones, mantissa not zero,
quiet bit clear) takes the callback. float16, bfloat16 and bool fills stay callbacks (the
float64 -> float16 conversion is a runtime-library call MCJIT may not resolve; a bool is
`astype(bool)` of the integer).

As for copies (copy_loops.py), the loop runs only when the callback would succeed and write
something: no error recorded yet (err[0] == 0), count > 0, offset >= 0 and offset + count inside
the buffer. Otherwise the callback runs, which raises the interpreter's error (an out-of-bounds
destination, with block and buffer) or writes nothing.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (Float32Type, Float64Type, IntegerAttr, IntegerType, f32,
                                   i8, i32, i64)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from pypto.dialects import pto

ENABLED = True
"""Compile fills as store loops (False: every fill a callback; for tests and benchmarks)."""

_EQ, _NE, _SLT, _SLE, _SGT, _SGE = 0, 1, 2, 3, 4, 5
_F32_EXPONENT, _F32_MANTISSA, _F32_QUIET = 0x7F800000, 0x007FFFFF, 0x00400000


def _size(t: Attribute) -> int | None:
    """Bytes of an element the loop fills, None when the fill stays a callback."""
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, Float64Type):
        return 8
    if isinstance(t, IntegerType) and t.width.data in (8, 16, 32, 64):
        return t.width.data // 8
    return None


def compiled(op: pto.FillOp) -> bool:
    """Whether fill `op` becomes a store loop (else a callback per block and fill)."""
    return ENABLED and _size(pto.element_type_of(op.dst.type)) is not None


def emit(op: Operation, err: SSAValue, dst: tuple[SSAValue, SSAValue, SSAValue],
         count: SSAValue, fval: SSAValue, call_ops: list[Operation]) -> bool:
    """Replace fill `op` (in a grid function being lowered to llvm) by the guarded store loop,
    falling back to `call_ops` (the callback's argument setup and call, already built).
    `dst`: (element pointer, element count, element offset) of the buffer; `count`: the
    fill's element count (i64); `fval`: the float64 value the callback receives. False
    (nothing changed) when the fill stays a plain callback."""
    if not isinstance(op, pto.FillOp) or not compiled(op):
        return False
    t = pto.element_type_of(op.dst.type)
    size = _size(t)
    assert size is not None
    head = op.parent_block()
    assert head is not None
    rest = head.split_before(op)
    region = head.parent
    assert region is not None
    slow, start, loop = Block(), Block(), Block(arg_types=[i64])
    region.insert_block_after(slow, head)
    region.insert_block_after(start, slow)
    region.insert_block_after(loop, start)

    def add(block: Block, new: Operation) -> SSAValue:
        block.add_op(new)
        return new.results[0]

    def const(block: Block, v: int, ty: Attribute = i64) -> SSAValue:
        return add(block, llvm.ConstantOp(IntegerAttr(v, ty), ty))

    def cmp(block: Block, a: SSAValue, b: SSAValue, pred: int) -> SSAValue:
        return add(block, llvm.ICmpOp(a, b, IntegerAttr(pred, i64)))

    call = call_ops[-1]
    for setup in call_ops[:-1]:  # (both paths use the argument setup: the float64 value)
        head.add_op(setup)
    base, size_elems, offset = dst
    zero = const(head, 0)
    code = add(head, llvm.LoadOp(add(head, llvm.GEPOp.from_mixed_indices(err, [0], i64)), i64))
    conds = [cmp(head, code, zero, _EQ), cmp(head, count, zero, _SGT),
             cmp(head, offset, zero, _SGE),
             cmp(head, add(head, llvm.AddOp(offset, count)), size_elems, _SLE)]
    if isinstance(t, Float32Type):
        value = add(head, llvm.FPTruncOp(fval, f32))  # NumPy's cast of the Python float
        bits = add(head, llvm.BitcastOp(op.value, i32))  # the element's own bits: not a
        exponent = add(head, llvm.AndOp(bits, const(head, _F32_EXPONENT, i32)))  # signalling
        mantissa = add(head, llvm.AndOp(bits, const(head, _F32_MANTISSA, i32)))  # NaN
        quiet = add(head, llvm.AndOp(bits, const(head, _F32_QUIET, i32)))
        signalling = add(head, llvm.AndOp(
            add(head, llvm.ICmpOp(exponent, const(head, _F32_EXPONENT, i32),
                                  IntegerAttr(_EQ, i64))),
            add(head, llvm.AndOp(
                add(head, llvm.ICmpOp(mantissa, const(head, 0, i32), IntegerAttr(_NE, i64))),
                add(head, llvm.ICmpOp(quiet, const(head, 0, i32), IntegerAttr(_EQ, i64)))))))
        conds.append(add(head, llvm.XOrOp(signalling, add(head, llvm.ConstantOp(
            IntegerAttr(-1, IntegerType(1)), IntegerType(1))))))
    elif isinstance(t, Float64Type):
        value = fval
    else:
        value = op.value
    ok = conds[0]
    for c in conds[1:]:
        ok = add(head, llvm.AndOp(ok, c))
    head.add_op(llvm.CondBrOp(ok, start, [], slow, []))

    slow.add_op(call)
    slow.add_op(llvm.BrOp(rest))

    first = add(start, llvm.GEPOp.from_mixed_indices(base, [add(start, llvm.MulOp(
        offset, const(start, size)))], i8))
    start.add_op(llvm.BrOp(loop, zero))

    i = loop.args[0]
    at = add(loop, llvm.GEPOp.from_mixed_indices(first, [add(loop, llvm.MulOp(
        i, const(loop, size)))], i8))
    loop.add_op(llvm.StoreOp(value, at))
    following = add(loop, llvm.AddOp(i, const(loop, 1)))
    loop.add_op(llvm.CondBrOp(cmp(loop, following, count, _SLT), loop, [following], rest, []))
    op.detach()
    op.erase()
    return True


__all__ = ["ENABLED", "compiled", "emit"]
