"""The block-level instructions of native code, run by a callback into NumPy.

Compiled grid functions call `pypto_native_collective(err, site, ...)` (to_llvm.py
`collective_signature`) once per block for `pto.fill`, `pto.async_load`, `pto.async_store`,
`pto.tile_store` and `pto.mma`. They are done here with NumPy exactly as the interpreter does
them (docs/isa.md#l1-and-tile-instructions): copies complete at issue (tokens.py proves the
interpreter's in-flight hazard checks cannot fire, or inflight.py compiles them), `mma` is `C + A @ B` through NumPy's matmul — the same BLAS call on the same
contiguous row-major tiles, so the same summation order and the same bits — and the errors
(out-of-bounds regions, bad row counts, overlapping rows) have the interpreter's messages.
A callback costs a few microseconds per block and instruction; the tiles it moves are large.
Copies mostly bypass it: copy_loops.py compiles them as a `memcpy` per row, guarded by the
conditions under which `_run` would succeed, and calls back here only when a guard fails (so the
errors are raised here, with the interpreter's messages) or for `i1` elements.

The record `err` identifies the launching `NativeKernel` (each has its own), which keeps the
sites' operand descriptions and the bound arguments; the block being run is in err[4:7] (the
grid function writes it there at each block). An error is kept on the kernel, code 3 written
at err[0] (every later lane loop and callback of the launch then does nothing) and raised by
`NativeKernel.run`.
"""

from __future__ import annotations

import ctypes
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from pypto.backend.interpreter.tile_ops import mma_result
from pypto.errors import KernelError, MemoryAccessError

COLLECTIVE_CODE = 6  # to_llvm.COLLECTIVE

CALLBACK_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64,
    *[ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64] * 3,
    *[ctypes.c_int64] * 4, ctypes.c_double)


@dataclass(frozen=True)
class Operand:
    """An operand of a block-level instruction: HBM parameter `param` or L1 buffer `l1`."""

    dtype: np.dtype
    param: int | None
    l1: Any  # phases.L1Buffer | None


@dataclass(frozen=True)
class Site:
    kind: str            # fill, async_load, async_store, tile_store, mma
    location: str
    operands: tuple[Operand, ...]
    shape: tuple[int, int, int] | None = None  # mma's m, n, k


_KERNELS: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()
"""err-record address -> its NativeKernel (registered for the kernel's lifetime)."""


def register(err_address: int, kernel: Any) -> None:
    _KERNELS[err_address] = kernel


def unregister(err_address: int) -> None:
    _KERNELS.pop(err_address, None)


def _array(address: int, count: int, dtype: np.dtype) -> np.ndarray:
    if count <= 0:
        return np.zeros(0, dtype)
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(address)
    return np.frombuffer(raw, dtype=dtype)


class _Failed(Exception):
    def __init__(self, error: KernelError):
        super().__init__(str(error))
        self.error = error


def _callback(err: int, site: int, p0: int, n0: int, o0: int, p1: int, n1: int, o1: int,
              p2: int, n2: int, o2: int, x0: int, x1: int, x2: int, x3: int,
              fval: float) -> int:
    kernel = _KERNELS.get(err)
    if kernel is None:
        return COLLECTIVE_CODE
    record = kernel.err
    if record[0]:
        return int(record[0])
    try:
        _run(kernel, kernel.collective_sites[site],
             [(p0, n0, o0), (p1, n1, o1), (p2, n2, o2)], (x0, x1, x2, x3), fval)
    except _Failed as failed:
        kernel.collective_error = failed.error
        record[0] = COLLECTIVE_CODE
        return COLLECTIVE_CODE
    except Exception as exc:  # noqa: BLE001 - never let an exception cross the C frame
        kernel.collective_error = KernelError(f"internal error in a block-level instruction "
                                              f"of the native backend: {exc!r}",
                                              kernel=kernel.name)
        record[0] = COLLECTIVE_CODE
        return COLLECTIVE_CODE
    return 0


CALLBACK = CALLBACK_TYPE(_callback)
"""The C function the JIT resolves `pypto_native_collective` to (kept alive here)."""


def address() -> int:
    return ctypes.cast(CALLBACK, ctypes.c_void_p).value or 0


def _name(kernel: Any, operand: Operand) -> tuple[str, str]:
    if operand.l1 is not None:
        return "L1", operand.l1.name
    return "HBM", kernel.bound[operand.param].name


def _region(kernel: Any, site: Site, operand: Operand, data: np.ndarray, base: int, rows: int,
            row_len: int, stride: int, what: str) -> np.ndarray:
    """The interpreter's `_region` (tiles.py): a (rows, row_len) view, checked."""
    if rows == 0 or row_len == 0:
        return data[0:0].reshape(0, 0)
    if stride < row_len and rows > 1:
        raise _Failed(KernelError(f"a row stride of {stride} elements is shorter than the row "
                                  f"({row_len} elements): the rows would overlap",
                                  kernel=kernel.name, location=site.location))
    hi = base + (rows - 1) * stride + row_len
    if base < 0 or hi > data.size:
        address = base if base < 0 else hi - 1
        space, name = _name(kernel, operand)
        block = tuple(int(v) for v in kernel.err[4:7])
        size = data.size
        raise _Failed(MemoryAccessError(
            f"out-of-bounds {site.kind} {what}: {space} buffer '{name}' element {address} "
            f"(valid elements 0..{size - 1}) in block {block}"
            f"{kernel.l1_neighbour(operand.l1, address) if operand.l1 is not None else ''}",
            kernel=kernel.name, location=site.location, block=block, lane=None,
            address=address, bounds=(0, size), buffer=name))
    if stride == row_len or rows == 1:
        return data[base:base + rows * row_len].reshape(rows, row_len)
    return np.lib.stride_tricks.as_strided(data[base:], shape=(rows, row_len),
                                           strides=(stride * data.itemsize, data.itemsize),
                                           writeable=True)


_ARRAYS: dict[tuple[int, int, np.dtype], np.ndarray] = {}
"""(address, count, dtype) -> the array over that memory: a view made once (`from_address` costs
microseconds, paid per block and instruction otherwise). The memory at an address a call passes
is mapped during that call, so a view kept from an earlier call at the same address is valid."""


def _cached_array(address: int, count: int, dtype: np.dtype) -> np.ndarray:
    key = (address, count, dtype)
    found = _ARRAYS.get(key)
    if found is None:
        if len(_ARRAYS) > 4096:
            _ARRAYS.clear()
        found = _ARRAYS[key] = _array(address, count, dtype)
    return found


def _run(kernel: Any, site: Site, pointers: list[tuple[int, int, int]],
         ints: tuple[int, int, int, int], fval: float) -> None:
    arrays = [_cached_array(p, n, op.dtype) for (p, n, _), op in zip(pointers, site.operands)]
    offsets = [o for _, _, o in pointers]
    if site.kind == "fill":
        count = ints[0]
        view = _region(kernel, site, site.operands[0], arrays[0], offsets[0], 1, count, count,
                       "destination")
        dtype = site.operands[0].dtype
        view[...] = np.array(ints[1]).astype(dtype) if dtype.kind in "iub" else fval
        return
    if site.kind == "mma":
        m, n, k = site.shape  # type: ignore[misc]
        c = _region(kernel, site, site.operands[0], arrays[0], offsets[0], m, n, n, "C")
        a = _region(kernel, site, site.operands[1], arrays[1], offsets[1], m, k, k, "A")
        b = _region(kernel, site, site.operands[2], arrays[2], offsets[2], k, n, n, "B")
        if a.dtype == b.dtype == c.dtype and c.dtype != np.float16:
            np.add(c, a @ b, out=c)
        else:
            c[...] = mma_result(c, a, b)  # the interpreter's accumulation (tile_ops.py)
        return
    nbytes, rows, src_stride, dst_stride = ints
    itemsize = site.operands[0].dtype.itemsize
    if rows <= 0 or nbytes < 0 or nbytes % (rows * itemsize):
        raise _Failed(KernelError(f"pto.{site.kind}: nbytes={nbytes} is not a whole number of "
                                  f"{rows} row(s) of {itemsize}-byte elements",
                                  kernel=kernel.name, location=site.location))
    row_len = nbytes // (rows * itemsize)
    src = _region(kernel, site, site.operands[1], arrays[1], offsets[1], rows, row_len,
                  src_stride, "source")
    dst = _region(kernel, site, site.operands[0], arrays[0], offsets[0], rows, row_len,
                  dst_stride, "destination")
    dst[...] = src

