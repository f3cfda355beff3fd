"""`pto.mma` compiled: NumPy's own BLAS `sgemm` called from the grid function, no callback into
Python per block and step (docs/native.md#mma).

The interpreter computes `C += A @ B` as `c + a @ b` in the accumulator type
(pypto/backend/interpreter/tile_ops.py `mma_result`): float16 / bfloat16 inputs widened to
float32 first (exact), a float16 accumulator widened, summed and rounded once. For tiles of at
least 2 x 2 x 2, NumPy's matmul of two C-contiguous float32 matrices is one call of its BLAS's
`cblas_sgemm(RowMajor, NoTrans, NoTrans, m, n, k, 1, A, k, B, n, 0, T, n)` into a fresh array
T, then `c + T` element by element (NumPy's matmul loop, numpy/_core/src/umath/matmul.c.src:
the vector and `k == 1` shapes take other routes, which stay callbacks). Compiled code makes
exactly that call — the same function of the same library, found in the process (NumPy's
bundled OpenBLAS) — on the same operands (widened the same way into scratch memory), then
adds T to C in float32 (rounded to float16 for a float16 accumulator): the same bits.
`blas()` checks this once per process against `np.matmul` on a few shapes and turns the
compiled path off if any bit differs or the function is not found (another BLAS; then every
`mma` is the callback, as before).

As for copies (copy_loops.py), the compiled path runs only when the callback would succeed:
no error recorded yet (err[0] == 0) and all three tiles inside their buffers; otherwise the
callback runs (pypto/backend/native/collectives.py), which raises the interpreter's error.
Integer (i32) accumulations are loops (`_integer_loops`): NumPy's integer matmul and add wrap
modulo 2^32, so any order of the sums gives its bits; they need no BLAS.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
from collections.abc import Callable

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (BFloat16Type, Float16Type, Float32Type, FloatAttr,
                                   IntegerAttr, IntegerType, ModuleOp, f16, f32, i8, i16, i32,
                                   i64)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from pypto.dialects import pto

ENABLED = True
"""Compile `mma` as a BLAS call (False: every `mma` a callback; for tests and benchmarks)."""

GEMM = "pypto_native_sgemm"
MALLOC = "pypto_native_malloc"
FREE = "pypto_native_free"

_ROW_MAJOR, _NO_TRANS = 101, 111  # CBLAS_ORDER / CBLAS_TRANSPOSE
_EQ, _SLT, _SLE, _SGE = 0, 2, 3, 5
_NAMES = ("scipy_cblas_sgemm64_", "cblas_sgemm64_")
"""ILP64 names of cblas_sgemm (64-bit dimensions) in NumPy's bundled OpenBLAS."""


def _libraries() -> list[str]:
    """Shared libraries NumPy may take its BLAS from: NumPy's own matmul module first (looked
    up through its handle, a symbol resolves to the function that module calls), then its
    wheel's bundled libraries."""
    root = os.path.dirname(os.path.dirname(np.__file__))
    found: list[str] = []
    try:
        from numpy._core import _multiarray_umath
        found.append(_multiarray_umath.__file__)
    except (ImportError, AttributeError):
        pass
    for pattern in ("numpy.libs/*openblas*", "numpy/.dylibs/*openblas*",
                    "scipy_openblas64/lib/*openblas*"):
        found += sorted(glob.glob(os.path.join(root, pattern)))
    return found


_SGEMM = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                          ctypes.c_int64, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p,
                          ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float,
                          ctypes.c_void_p, ctypes.c_int64)


def _agrees(address: int) -> bool:
    """Does the function at `address`, called as NumPy's matmul calls sgemm, give np.matmul's
    bits on a few shapes (ragged, square, tall)?"""
    fn = _SGEMM(address)
    rng = np.random.default_rng(0)
    for m, n, k in ((2, 2, 2), (37, 41, 29), (64, 64, 64), (128, 96, 64), (5, 130, 257)):
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        t = np.empty((m, n), np.float32)
        fn(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, m, n, k, 1.0, a.ctypes.data, k, b.ctypes.data, n,
           0.0, t.ctypes.data, n)
        if not np.array_equal(t.view(np.uint32), (a @ b).view(np.uint32)):
            return False
    return True


@functools.cache
def blas() -> tuple[int, int, int] | None:
    """(sgemm, malloc, free) addresses for compiled `mma`, or None: NumPy's BLAS not found as
    an ILP64 OpenBLAS, or it does not give np.matmul's bits when called directly."""
    libc = _libc()
    if libc is None:
        return None
    malloc, free = libc
    for path in _libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _NAMES:
            fn = getattr(lib, name, None)
            if fn is None:
                continue
            address = ctypes.cast(fn, ctypes.c_void_p).value
            if address and malloc and free and _agrees(address):
                return address, malloc, free
    return None


def active() -> bool:
    """Whether `mma` compiles as a BLAS call in this process."""
    return ENABLED and blas() is not None


def cache_key() -> str:
    """What the object code of a compiled `mma` depends on (a part of the cache key): the
    switch and whether the BLAS call is on."""
    return f"mma {ENABLED} blas {active()}"


@functools.cache
def _libc() -> tuple[int, int] | None:
    libc = ctypes.CDLL(None)
    try:
        malloc = ctypes.cast(libc.malloc, ctypes.c_void_p).value
        free = ctypes.cast(libc.free, ctypes.c_void_p).value
    except AttributeError:
        return None
    return (malloc, free) if malloc and free else None


def bind() -> None:
    """Resolve the compiled `mma`'s symbols (before linking an object that calls them): the
    scratch memory's malloc and free, and NumPy's sgemm when found."""
    import llvmlite.binding as binding

    found = blas()
    if found is not None:
        binding.add_symbol(GEMM, found[0])
    memory = _libc()
    if memory is not None:
        binding.add_symbol(MALLOC, memory[0])
        binding.add_symbol(FREE, memory[1])


def _kind(t: Attribute) -> str | None:
    if isinstance(t, IntegerType) and t.width.data == 32:
        return "i32"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, BFloat16Type):
        return "bf16"
    return None


def compiled(op: pto.MmaOp) -> bool:
    """Whether `op` becomes a BLAS call (else the callback per block and call)."""
    m, n, k = op.shape
    acc = _kind(pto.element_type_of(op.c.type))
    ins = _kind(pto.element_type_of(op.a.type))
    if acc == "i32":  # wrapping sums: loops, any shape, with or without a BLAS
        return ENABLED and ins == "i32" and _libc() is not None
    return active() and m >= 2 and n >= 2 and k >= 2 and acc in ("f32", "f16") and \
        ins in ("f32", "f16", "bf16") and (acc == "f32" or ins == "f16")


def declare(module: ModuleOp) -> None:
    """The external functions the compiled `mma` calls, once per module."""
    ptr = llvm.LLVMPointerType()
    have = {o.sym_name.data for o in module.ops if isinstance(o, llvm.FuncOp)}
    for name, ftype in (
            (GEMM, llvm.LLVMFunctionType([i32, i32, i32, i64, i64, i64, f32, ptr, i64, ptr,
                                          i64, f32, ptr, i64], None)),
            (MALLOC, llvm.LLVMFunctionType([i64], ptr)),
            (FREE, llvm.LLVMFunctionType([ptr], None))):
        if name not in have:
            module.body.block.insert_op_before(llvm.FuncOp(
                name, ftype, linkage=llvm.LinkageAttr("external"), body=Region()),
                module.body.block.first_op)


class _Builder:
    """Appends llvm ops to the current block of a region being built."""

    def __init__(self, block: Block):
        self.block = block

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def i64(self, v: int) -> SSAValue:
        return self.add(llvm.ConstantOp(IntegerAttr(v, i64), i64))

    def cmp(self, a: SSAValue, b: SSAValue, pred: int) -> SSAValue:
        return self.add(llvm.ICmpOp(a, b, IntegerAttr(pred, i64)))

    def at(self, base: SSAValue, element: SSAValue, size: int) -> SSAValue:
        byte = self.add(llvm.MulOp(element, self.i64(size)))
        return self.add(llvm.GEPOp.from_mixed_indices(base, [byte], i8))

    def loop(self, count: int, body: Callable[[_Builder, SSAValue], None]) -> None:
        """`for i in range(count)` (count >= 1), continuing in the block after it."""
        region = self.block.parent
        assert region is not None
        loop, after = Block(arg_types=[i64]), Block()
        region.insert_block_after(loop, self.block)
        region.insert_block_after(after, loop)
        self.add(llvm.BrOp(loop, self.i64(0)))
        self.block = loop
        body(self, loop.args[0])
        following = self.add(llvm.AddOp(loop.args[0], self.i64(1)))
        more = self.cmp(following, self.i64(count), _SLT)
        self.add(llvm.CondBrOp(more, loop, [following], after, []))
        self.block = after


def _widen(b: _Builder, p: SSAValue, kind: str) -> SSAValue:
    """Element `p` points to (f32, f16 or bf16) as float32, exactly."""
    if kind == "f32":
        return b.add(llvm.LoadOp(p, f32))
    if kind == "f16":
        return b.add(llvm.FPExtOp(b.add(llvm.LoadOp(p, f16)), f32))
    bits = b.add(llvm.ZExtOp(b.add(llvm.LoadOp(p, i16)), i32))  # bfloat16: its 16 bits on top
    shifted = b.add(llvm.ShlOp(bits, b.add(llvm.ConstantOp(IntegerAttr(16, i32), i32))))
    return b.add(llvm.BitcastOp(shifted, f32))


def emit(op: Operation, err: SSAValue, operands: list[tuple[SSAValue, SSAValue, SSAValue]],
         call_ops: list[Operation]) -> bool:
    """Replace `mma` `op` (in a grid function being lowered to llvm) by the guarded BLAS call,
    falling back to `call_ops` (the callback's argument setup and call, already built).
    `operands`: (element pointer, element count, element offset) of C, A and B. False
    (nothing changed) when the `mma` stays a plain callback."""
    if not isinstance(op, pto.MmaOp) or not compiled(op):
        return False
    m, n, k = op.shape
    acc = _kind(pto.element_type_of(op.c.type))
    ins = _kind(pto.element_type_of(op.a.type))
    assert acc is not None and ins is not None
    head = op.parent_block()
    assert head is not None
    rest = head.split_before(op)
    region = head.parent
    assert region is not None
    slow, fast = Block(), Block()
    region.insert_block_after(slow, head)
    region.insert_block_after(fast, slow)

    h = _Builder(head)
    call = call_ops[-1]
    for setup in call_ops[:-1]:
        head.add_op(setup)
    zero = h.i64(0)
    code = h.add(llvm.LoadOp(h.add(llvm.GEPOp.from_mixed_indices(err, [0], i64)), i64))
    ok = h.cmp(code, zero, _EQ)
    for (_base, count, offset), elements in zip(operands, (m * n, m * k, k * n)):
        inside = h.add(llvm.AndOp(h.cmp(offset, zero, _SGE), h.cmp(
            h.add(llvm.AddOp(offset, h.i64(elements))), count, _SLE)))
        ok = h.add(llvm.AndOp(ok, inside))
    head.add_op(llvm.CondBrOp(ok, fast, [], slow, []))
    slow.add_op(call)
    slow.add_op(llvm.BrOp(rest))

    f = _Builder(fast)
    if acc == "i32":
        _integer_loops(f, [(base, offset) for base, _count, offset in operands], m, n, k)
        f.add(llvm.BrOp(rest))
        op.detach()
        op.erase()
        return True
    size = {"f32": 4, "f16": 2, "bf16": 2}
    c_ptr, a_ptr, b_ptr = (f.at(base, offset, size[kind]) for (base, _c, offset), kind in
                           zip(operands, (acc, ins, ins)))
    widen = ins != "f32"
    scratch = f.add(llvm.CallOp(MALLOC, f.i64(4 * (m * n + (m * k + k * n) * widen)),
                                return_type=llvm.LLVMPointerType()))
    t_ptr = scratch
    if widen:  # A and B as float32 after T (NumPy's astype: contiguous copies)
        a32 = f.at(scratch, f.i64(m * n), 4)
        b32 = f.at(scratch, f.i64(m * n + m * k), 4)
        for src, dst, count in ((a_ptr, a32, m * k), (b_ptr, b32, k * n)):
            def copy(b: _Builder, i: SSAValue, src: SSAValue = src, dst: SSAValue = dst) -> None:
                b.add(llvm.StoreOp(_widen(b, b.at(src, i, size[ins]), ins), b.at(dst, i, 4)))
            f.loop(count, copy)
        a_ptr, b_ptr = a32, b32

    def i32c(v: int) -> SSAValue:
        return f.add(llvm.ConstantOp(IntegerAttr(v, i32), i32))

    def f32c(v: float) -> SSAValue:
        return f.add(llvm.ConstantOp(FloatAttr(v, f32), f32))

    f.add(llvm.CallOp(GEMM, i32c(_ROW_MAJOR), i32c(_NO_TRANS), i32c(_NO_TRANS), f.i64(m),
                      f.i64(n), f.i64(k), f32c(1.0), a_ptr, f.i64(k), b_ptr, f.i64(n),
                      f32c(0.0), t_ptr, f.i64(n), return_type=None))

    def accumulate(b: _Builder, i: SSAValue) -> None:
        c_at = b.at(c_ptr, i, size[acc])
        total = b.add(llvm.FAddOp(_widen(b, c_at, acc), b.add(llvm.LoadOp(b.at(t_ptr, i, 4),
                                                                           f32))))
        if acc == "f16":
            total = b.add(llvm.FPTruncOp(total, f16))  # rounded once, as astype(float16)
        b.add(llvm.StoreOp(total, c_at))
    f.loop(m * n, accumulate)
    f.add(llvm.CallOp(FREE, scratch, return_type=None))
    f.add(llvm.BrOp(rest))
    op.detach()
    op.erase()
    return True


def _integer_loops(f: _Builder, operands: list[tuple[SSAValue, SSAValue]], m: int, n: int,
                   k: int) -> None:
    """C += A @ B for int32 tiles as loops: the interpreter's `c + a @ b` is NumPy's integer
    matmul loop (no BLAS) then an add, every product and sum wrapping modulo 2^32 — so any
    order of the sums gives the same bits. The products go to a scratch T first (C may
    overlap A or B: NumPy computes `a @ b` before it adds), in the order i, p, j (the j loop
    contiguous in B and T, which LLVM vectorises)."""
    (c_base, c_off), (a_base, a_off), (b_base, b_off) = operands
    c_ptr, a_ptr, b_ptr = (f.at(base, off, 4) for base, off in
                           ((c_base, c_off), (a_base, a_off), (b_base, b_off)))
    t_ptr = f.add(llvm.CallOp(MALLOC, f.i64(4 * m * n), return_type=llvm.LLVMPointerType()))
    zero = f.add(llvm.ConstantOp(IntegerAttr(0, i32), i32))
    f.loop(m * n, lambda b, i: b.add(llvm.StoreOp(zero, b.at(t_ptr, i, 4))))

    def row(b: _Builder, i: SSAValue) -> None:
        def step(b: _Builder, p: SSAValue) -> None:
            a_ip = b.add(llvm.LoadOp(b.at(a_ptr, b.add(llvm.AddOp(
                b.add(llvm.MulOp(i, b.i64(k))), p)), 4), i32))
            b_row = b.at(b_ptr, b.add(llvm.MulOp(p, b.i64(n))), 4)
            t_row = b.at(t_ptr, b.add(llvm.MulOp(i, b.i64(n))), 4)

            def column(b: _Builder, j: SSAValue) -> None:
                t_at = b.at(t_row, j, 4)
                product = b.add(llvm.MulOp(a_ip, b.add(llvm.LoadOp(b.at(b_row, j, 4), i32))))
                b.add(llvm.StoreOp(b.add(llvm.AddOp(b.add(llvm.LoadOp(t_at, i32)), product)),
                                   t_at))
            b.loop(n, column)
        b.loop(k, step)
    f.loop(m, row)

    def accumulate(b: _Builder, i: SSAValue) -> None:
        c_at = b.at(c_ptr, i, 4)
        b.add(llvm.StoreOp(b.add(llvm.AddOp(b.add(llvm.LoadOp(c_at, i32)), b.add(
            llvm.LoadOp(b.at(t_ptr, i, 4), i32)))), c_at))
    f.loop(m * n, accumulate)
    f.add(llvm.CallOp(FREE, t_ptr, return_type=None))


def uses(module: ModuleOp) -> bool:
    """Does the lowered `module` call the compiled `mma`?"""
    return any(isinstance(o, llvm.CallOp) and o.callee.string_value() == GEMM
               for o in module.walk())


__all__ = ["ENABLED", "active", "bind", "blas", "compiled", "declare", "emit", "uses"]
