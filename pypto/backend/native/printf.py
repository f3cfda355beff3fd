"""`pto.printf` in compiled code: a callback per lane into Python's `%` formatting.

The interpreter prints one line per active lane, `[block (x, y, z) lane (x, y, z)] text`,
formatted with Python's `%` of the lane's values converted to Python numbers
(pypto/backend/interpreter/tiles.py `printf`), for all lanes of its vector before the next op.
Compiled lanes run one after another, so the lines come out in the interpreter's order when the
kernel has one `pto.printf`, outside loops: each lane prints at most once, in linear lane order,
blocks in order, whatever the interpreter's vector (grid, batch, block or warp). That is what the
support check accepts (support.py); a kernel with more, or one in a loop, runs on the
interpreter.

The lane function calls `pypto_native_printf(err, site, block x/y/z, lane x/y/z, n, v0..v7)`
with each value as 64 bits (integers sign-extended, bools 0/1, floats widened exactly to
float64: the interpreter's `float()` of a float16 / bfloat16 / float32 is the same number); the
callback formats the line with the site's format and writes it to `sys.stdout`. A format that
cannot print a lane's values (`%d` of inf) is the interpreter's `KernelError`, kept on the
kernel (collectives.py's error path); the lines of the lanes before it are already printed
(the interpreter prints none of that op's lines then).
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, f64, i32, i64
from xdsl.ir import Operation, Region, SSAValue

from pypto.backend.native.collectives import _KERNELS, COLLECTIVE_CODE
from pypto.dialects import pto
from pypto.errors import KernelError

if TYPE_CHECKING:
    from pypto.backend.native.to_llvm import _FunctionLowering

SYMBOL = "pypto_native_printf"
MAX_VALUES = 8
CALLBACK_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64,
                                 *[ctypes.c_int64] * 7, *[ctypes.c_int64] * MAX_VALUES)


@dataclass(frozen=True)
class PrintSite:
    fmt: str
    kinds: tuple[str, ...]  # per value: "i" integer, "b" bool, "f" float
    location: str


def site_of(op: pto.PrintfOp, location: str) -> PrintSite:
    kinds = tuple("b" if isinstance(v.type, IntegerType) and v.type.width.data == 1 else
                  "i" if isinstance(v.type, IntegerType) else "f" for v in op.values)
    return PrintSite(op.format.data, kinds, location)


def signature() -> llvm.LLVMFunctionType:
    return llvm.LLVMFunctionType([llvm.LLVMPointerType(), i64, *[i64] * 7,
                                  *[i64] * MAX_VALUES], i32)


def lower_printf(lowering: _FunctionLowering, op: pto.PrintfOp) -> None:
    """A call of the callback; a non-zero status ends the lane (the kernel keeps the error)."""
    before = lowering._before
    site = lowering._site(op)
    err = lowering.fn.body.blocks[0].args[-1]
    coords = [before(op, llvm.SExtOp(c, i64)) for c in (lowering.ids or ())]
    if len(coords) != 6:
        raise ValueError("convert-pto-to-llvm: pto.printf outside a lane function")
    values: list[SSAValue] = []
    for v in op.values:
        t = v.type
        if isinstance(t, IntegerType):
            values.append(v if t == i64 else before(op, (llvm.ZExtOp if t.width.data == 1
                                                         else llvm.SExtOp)(v, i64)))
        else:
            wide = v if t == f64 else before(op, llvm.FPExtOp(v, f64))
            values.append(before(op, llvm.BitcastOp(wide, i64)))
    zero = before(op, lowering._const(0, i64))
    values += [zero] * (MAX_VALUES - len(values))
    count = before(op, lowering._const(len(op.values), i64))
    site_c = before(op, lowering._const(site, i64))
    status = before(op, llvm.CallOp(SYMBOL, err, site_c, *coords, count, *values,
                                    return_type=i32))
    zero32 = before(op, lowering._const(0, i32))
    ok = before(op, llvm.ICmpOp(status, zero32, IntegerAttr(0, i64)))  # eq
    lowering._fail_unless(op, ok, COLLECTIVE_CODE, site, None, -1)  # (to_llvm.COLLECTIVE)
    lowering.calls_printf = True
    op.detach()
    op.erase()


def declare(module: ModuleOp) -> None:
    if not any(isinstance(o, llvm.FuncOp) and o.sym_name.data == SYMBOL for o in module.ops):
        module.body.block.insert_op_before(llvm.FuncOp(
            SYMBOL, signature(), linkage=llvm.LinkageAttr("external"), body=Region()),
            module.body.block.first_op)


def _callback(err: int, site: int, bx: int, by: int, bz: int, lx: int, ly: int, lz: int,
              count: int, *raw: int) -> int:
    kernel = _KERNELS.get(err)
    if kernel is None:
        return COLLECTIVE_CODE
    try:
        where: PrintSite = kernel.printf_sites[site]
        row = tuple(_value(kind, bits) for kind, bits in zip(where.kinds, raw[:count]))
        fmt = where.fmt
        try:
            text = (fmt[:-1] if fmt.endswith("\n") else fmt) % row  # C's final newline
        except (TypeError, ValueError, OverflowError) as exc:
            kernel.collective_error = KernelError(
                f"pto.printf format {fmt!r} cannot print {row}: {exc}", kernel=kernel.name,
                location=where.location)
            kernel.err[0] = COLLECTIVE_CODE
            return COLLECTIVE_CODE
        sys.stdout.write(f"[block {(bx, by, bz)} lane {(lx, ly, lz)}] {text}\n")
    except Exception as exc:  # noqa: BLE001 - never let an exception cross the C frame
        kernel.collective_error = KernelError(f"internal error in pto.printf of the native "
                                              f"backend: {exc!r}", kernel=kernel.name)
        kernel.err[0] = COLLECTIVE_CODE
        return COLLECTIVE_CODE
    return 0


def _value(kind: str, bits: int) -> Any:
    if kind == "f":
        return float(np.int64(bits).view(np.float64))
    if kind == "b":
        return bool(bits)
    return int(bits)


CALLBACK = CALLBACK_TYPE(_callback)
"""The C function `pypto_native_printf` resolves to (kept alive here)."""


def address() -> int:
    return ctypes.cast(CALLBACK, ctypes.c_void_p).value or 0


def printf_ops(kernel: Operation) -> list[Operation]:
    return [op for op in kernel.walk() if isinstance(op, pto.PrintfOp)]
