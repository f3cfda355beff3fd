"""Block-level copies (`pto.async_load`, `pto.async_store`, `pto.tile_store`) compiled as a
loop of `llvm.memcpy`, one per row, in the grid function: no callback into NumPy per block
and copy (docs/native.md#collectives).

A copy moves bytes between HBM and the L1 arena (the verifier gives source and destination one
element type and opposite memory spaces, so the two regions never overlap and a row-by-row
`memcpy` writes exactly the bytes NumPy's `dst[...] = src` writes in the interpreter,
pypto/backend/interpreter/tiles.py `_copy_one`). The compiled path is taken only when the
callback would succeed: no error recorded yet (err[0] == 0), rows > 0, nbytes a positive whole
number of rows of elements, strides not shorter than a row (or one row), both regions inside
their buffer. Otherwise the grid function calls the callback as before
(pypto/backend/native/collectives.py), which raises the interpreter's error with its message
and location (out-of-bounds region with block and buffer, bad row count, overlapping rows), or
does nothing after an earlier error, or copies zero bytes. So the bits and errors are the
callback's whatever path runs; tests/backend/native/test_copy_loops.py compares both paths.
"""

from __future__ import annotations

from xdsl.dialects import func, llvm, scf
from xdsl.dialects.builtin import IntegerAttr, i1, i8, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue

from pypto.backend.native import mma_calls
from pypto.dialects import pto

ENABLED = True
"""Compile copies as memcpy loops (False: every copy a callback; for tests and benchmarks)."""

_EQ, _NE, _SLT, _SLE, _SGT, _SGE = 0, 1, 2, 3, 4, 5
MEMCPY = "llvm.memcpy.p0.p0.i64"


def element_bytes(t: Attribute) -> int | None:
    """The size in bytes of a copied element type, None if not a whole number of bytes."""
    width = getattr(t, "width", None)
    bits = width.data if width is not None else getattr(t, "bitwidth", None)
    if not isinstance(bits, int) or bits % 8 or bits <= 0:
        return None
    return bits // 8


def emit(op: Operation, err: SSAValue, src: tuple[SSAValue, SSAValue, SSAValue],
         dst: tuple[SSAValue, SSAValue, SSAValue], ints: list[SSAValue],
         call_ops: list[Operation]) -> bool:
    """Replace copy `op` (in a grid function being lowered to llvm) by the guarded memcpy
    loop, falling back to `call_ops` (the callback's argument setup and call, already built).
    `src` / `dst`: (element pointer, element count, element offset) of the operands; `ints`:
    nbytes, rows, src_stride, dst_stride as i64 values defined by ops in `call_ops` or before
    `op`. False (nothing changed) when the copy stays a plain callback."""
    if not isinstance(op, pto.BulkCopyOp) or not compiled(op):
        return False
    size = element_bytes(pto.element_type_of(op.dst.type))
    assert size is not None
    nbytes, rows, s_stride, d_stride = ints
    head = op.parent_block()
    assert head is not None
    rest = head.split_before(op)
    region = head.parent
    assert region is not None
    slow, loop = Block(), Block(arg_types=[i64])
    region.insert_block_after(slow, head)
    region.insert_block_after(loop, slow)

    def add(block: Block, new: Operation) -> SSAValue:
        block.add_op(new)
        return new.results[0]

    def const(block: Block, v: int, t: Attribute = i64) -> SSAValue:
        return add(block, llvm.ConstantOp(IntegerAttr(v, t), t))

    def cmp(block: Block, a: SSAValue, b: SSAValue, pred: int) -> SSAValue:
        return add(block, llvm.ICmpOp(a, b, IntegerAttr(pred, i64)))

    # The argument setup (constants, extensions) goes in the head: both paths use it.
    call = call_ops[-1]
    for setup in call_ops[:-1]:
        head.add_op(setup)
    zero, one, isz = const(head, 0), const(head, 1), const(head, size)
    code = add(head, llvm.LoadOp(add(head, llvm.GEPOp.from_mixed_indices(err, [0], i64)), i64))
    conds = [cmp(head, code, zero, _EQ), cmp(head, rows, zero, _SGT)]
    row_bytes_raw = add(head, llvm.MulOp(rows, isz))
    safe = add(head, llvm.SelectOp(conds[1], row_bytes_raw, one))  # no division by 0
    row_len = add(head, llvm.SDivOp(nbytes, safe))
    conds.append(cmp(head, add(head, llvm.SRemOp(nbytes, safe)), zero, _EQ))
    conds.append(cmp(head, nbytes, zero, _SGT))
    last = add(head, llvm.SubOp(rows, one))
    single = cmp(head, rows, one, _EQ)
    for base, count, offset, stride in ((*src, s_stride), (*dst, d_stride)):
        wide = cmp(head, stride, row_len, _SGE)
        conds.append(add(head, llvm.OrOp(single, wide)))
        conds.append(cmp(head, offset, zero, _SGE))
        span = add(head, llvm.AddOp(add(head, llvm.MulOp(last, stride)), row_len))
        conds.append(cmp(head, add(head, llvm.AddOp(offset, span)), count, _SLE))
    ok = conds[0]
    for c in conds[1:]:
        ok = add(head, llvm.AndOp(ok, c))
    head.add_op(llvm.CondBrOp(ok, loop, [zero], slow, []))

    slow.add_op(call)
    slow.add_op(llvm.BrOp(rest))

    r = loop.args[0]
    row_bytes = add(loop, llvm.MulOp(row_len, add(loop, llvm.ConstantOp(
        IntegerAttr(size, i64), i64))))
    pointers = []
    for base, _count, offset, stride in ((*dst, d_stride), (*src, s_stride)):
        element = add(loop, llvm.AddOp(offset, add(loop, llvm.MulOp(r, stride))))
        byte = add(loop, llvm.MulOp(element, add(loop, llvm.ConstantOp(
            IntegerAttr(size, i64), i64))))
        pointers.append(add(loop, llvm.GEPOp.from_mixed_indices(base, [byte], i8)))
    volatile = add(loop, llvm.ConstantOp(IntegerAttr(0, i1), i1))
    loop.add_op(llvm.CallIntrinsicOp(MEMCPY, [*pointers, row_bytes, volatile], []))
    following = add(loop, llvm.AddOp(r, add(loop, llvm.ConstantOp(IntegerAttr(1, i64), i64))))
    more = cmp(loop, following, rows, _SLT)
    loop.add_op(llvm.CondBrOp(more, loop, [following], rest, []))
    op.detach()
    op.erase()
    return True


def _in_loop(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, scf.ForOp | scf.WhileOp):
            return True
        parent = parent.parent_op()
    return False


def compiled(op: pto.BulkCopyOp) -> bool:
    """Whether copy `op` becomes a memcpy loop (else a callback per block and copy)."""
    size = element_bytes(pto.element_type_of(op.dst.type))
    return ENABLED and size is not None and \
        element_bytes(pto.element_type_of(op.src.type)) == size


def looped_callbacks_reason(kernel: func.FuncOp) -> str | None:
    """Why "auto" prefers the interpreter for a kernel calling back into NumPy per block in a
    loop (None: it does not): an `mma` in a loop (one BLAS call per block and iteration
    through a callback, where the interpreter multiplies every block's tiles in one batched
    call: the pipelined matmul 512 11.5 ms natively against 7.3 ms interpreted,
    docs/native.md#choosing-a-backend), or a copy that stays a callback. Copies compiled as
    memcpy loops are faster natively (the double-buffered scale 0.8 ms against 4.0 ms)."""
    for op in kernel.walk():
        if not _in_loop(op):
            continue
        if isinstance(op, pto.MmaOp) and not mma_calls.compiled(op):
            return ("its pto.mma runs in a loop, one callback into NumPy per block and "
                    "iteration (docs/native.md#choosing-a-backend: the pipelined matmul 512 "
                    "about 1.6x the interpreter's time)")
        if isinstance(op, pto.BulkCopyOp) and not compiled(op):
            return (f"its {op.name} of {pto.element_type_of(op.dst.type)} runs in a loop, one "
                    f"callback per block and copy (docs/native.md#choosing-a-backend)")
    return None
