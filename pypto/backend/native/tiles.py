"""The tile vector instructions (`pto.tadd` ... `pto.ttrans`) in native code: block-level calls
into the interpreter's own NumPy definition of each instruction.

A tile vector instruction is block-level and uniform (docs/language.md#tile-vector-instructions):
the phase plan (phases.py) makes it a cut between lane loops, like the copies and `mma`
(collectives.py), and the grid function calls `pypto_native_tile(err, site, 4 x (buffer
address, element offset), integer value, float value)` once per block. The callback runs
`pypto.backend.interpreter.tile_ops.compute_into` — the function the interpreter runs for the
same instruction — on (rows, cols) views of the L1 arena. One definition, so the two backends
agree bit for bit by construction: the fold order of the reductions, `tcvt`'s four rounding
modes, `texp` / `tlog` evaluated by NumPy in float64 and rounded once (the same NumPy loop, so
no libm-vs-NumPy question arises, docs/native.md#exactness).

The arena the callback reads and writes is the one lane code addresses (the views are made
from the buffer addresses the compiled code passes), so lane loads and stores before and after
a tile instruction see its data. An operand outside its L1 buffer raises the interpreter's
`MemoryAccessError` message (tiles.py `oob_region`: "out-of-bounds <op> destination: L1 buffer
...", its note on the neighbouring buffer included).

The views are cached per site and element offsets (the arena of a `NativeKernel` never moves),
so a call costs a dictionary look-up and the NumPy operation: a few microseconds per block.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (FloatAttr, IntegerAttr, IntegerType, StringAttr, f64, i32,
                                   i64)
from xdsl.ir import Attribute, Operation, SSAValue

from pypto.backend.interpreter.tile_ops import compute_into
from pypto.dialects.traits import tile_vector
from pypto.errors import KernelError, MemoryAccessError

TILE_SYMBOL = "pypto_native_tile"
TILE_CODE = 6  # to_llvm.COLLECTIVE: the error is kept on the kernel (collective_error)
MAX_TILES = 4  # tsel: destination, mask, a, b

CALLBACK_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64,
                                 *[ctypes.c_void_p, ctypes.c_int64] * MAX_TILES,
                                 ctypes.c_int64, ctypes.c_double)


def tile_signature() -> llvm.LLVMFunctionType:
    """(err, site, 4 x (buffer address, element offset), i64 value, f64 value) -> i32."""
    ptr = llvm.LLVMPointerType()
    return llvm.LLVMFunctionType([ptr, i64, *[ptr, i64] * MAX_TILES, i64, f64], i32)


def is_tile_op(op: Operation) -> bool:
    return tile_vector(op) is not None


# --- the sites -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TileSite:
    """One tile instruction: its name ("tadd"), location, per address operand (destination
    first) its L1 buffer (phases.L1Buffer) and (rows, row_len, stride), its scalar's kind
    ("int", "float" or None) and string properties (cmp, rounding)."""

    name: str
    location: str
    buffers: tuple[Any, ...]
    geometry: tuple[tuple[int, int, int], ...]
    scalar: str | None
    props: tuple[tuple[str, str], ...]

    @cached_property
    def prop_dict(self) -> dict[str, str]:
        return dict(self.props)


def tile_site(op: Operation, buffer_of: Any) -> TileSite:
    """The callback's description of tile instruction `op`; `buffer_of(value)` is the
    L1Buffer a tile operand lies in."""
    from pypto.diagnostics import op_location

    trait = tile_vector(op)
    assert trait is not None
    tiles = trait.tiles(op, lambda v: None)
    indices = sorted(i for i, t in tiles.items() if t is not None)
    scalar = None
    for i, role in enumerate(trait.roles):
        if role == "value":
            scalar = "int" if isinstance(op.operands[i].type, IntegerType) else "float"
    props = tuple(sorted((k, v.data) for k, v in op.properties.items()
                         if isinstance(v, StringAttr)))
    return TileSite(op.name.removeprefix("pto."), op_location(op),
                    tuple(buffer_of(op.operands[i]) for i in indices),
                    tuple((tiles[i].rows, tiles[i].row_len, tiles[i].stride)  # type: ignore
                          for i in indices), scalar, props)


def sites(kernel: Operation, l1: list[Any], checked: list[Operation]) -> dict[int, TileSite]:
    """Site number (the op's index among the checked ops, jit._checked_ops) -> TileSite, for
    every tile instruction of `kernel`; `l1` is its arena layout (phases.arena_layout)."""
    from pypto.backend.native.support import root_alloc
    from pypto.dialects import pto

    allocs = [op for op in kernel.walk() if isinstance(op, pto.AllocLocalOp)]

    def buffer_of(value: SSAValue) -> Any:
        alloc = root_alloc(value)
        assert alloc is not None, "the support check admits tile operands in L1 buffers only"
        return l1[allocs.index(alloc)]

    return {index: tile_site(op, buffer_of) for index, op in enumerate(checked)
            if is_tile_op(op)}


# --- the lowering (called by to_llvm.py for a tile instruction in a grid function) ------------


def lower_tile_op(lowering: Any, op: Operation) -> None:
    """Replace `op` (in a grid function being lowered) by the call to `TILE_SYMBOL`: each tile
    operand as its buffer's address in the arena and its element offset, the scalar (if any)
    as an i64 (integers, sign-extended) or an f64 (floats, widened exactly)."""
    site = lowering._site(op)
    err = lowering.fn.body.blocks[0].args[-1]
    trait = tile_vector(op)
    assert trait is not None
    new: list[Operation] = []

    def const(v: int | float, t: Attribute = i64) -> SSAValue:
        c = llvm.ConstantOp(IntegerAttr(v, t) if isinstance(t, IntegerType) else
                            FloatAttr(v, t), t)
        new.append(c)
        return c.result

    args: list[SSAValue] = []
    ival: SSAValue | None = None
    fval: SSAValue | None = None
    for index, role in enumerate(trait.roles):
        value = op.operands[index]
        if role != "value":
            p = lowering.ptr(value)
            args += [p.base, p.offset]
            continue
        t = value.type
        if isinstance(t, IntegerType):
            if t.width.data == 64:
                ival = value
            else:
                ext = llvm.SExtOp(value, i64)
                new.append(ext)
                ival = ext.results[0]
        elif t == f64:
            fval = value
        else:
            ext = llvm.FPExtOp(value, f64)
            new.append(ext)
            fval = ext.results[0]
    while len(args) < 2 * MAX_TILES:
        args += [err, const(0)]
    call = llvm.CallOp(TILE_SYMBOL, err, const(site), *args,
                       ival if ival is not None else const(0),
                       fval if fval is not None else const(0.0, f64), return_type=i32)
    new.append(call)
    lowering._replace(op, *new, result=None)
    lowering.calls_tile = True


def declare(module_block: Any) -> None:
    """Declare `TILE_SYMBOL` at the top of the module (once)."""
    if any(isinstance(o, llvm.FuncOp) and o.sym_name.data == TILE_SYMBOL
           for o in module_block.ops):
        return
    from xdsl.ir import Region

    module_block.insert_op_before(llvm.FuncOp(TILE_SYMBOL, tile_signature(),
                                              linkage=llvm.LinkageAttr("external"),
                                              body=Region()), module_block.first_op)


# --- the runtime ---------------------------------------------------------------------------


class _Failed(Exception):
    def __init__(self, error: KernelError):
        super().__init__(str(error))
        self.error = error


def _view(kernel: Any, site: TileSite, index: int, address: int, base: int) -> np.ndarray:
    """The interpreter's `_region` (interpreter/tiles.py) over the L1 buffer at `address`:
    a (rows, row_len) view from element `base`, checked with its messages."""
    buf = site.buffers[index]
    rows, row_len, stride = site.geometry[index]
    raw = (ctypes.c_char * (buf.count * buf.dtype.itemsize)).from_address(address)
    data = np.frombuffer(raw, dtype=buf.dtype)
    if rows == 0 or row_len == 0:
        return data[0:0].reshape(0, 0)
    hi = base + (rows - 1) * stride + row_len
    if base < 0 or hi > data.size:
        element = base if base < 0 else hi - 1
        block = tuple(int(v) for v in kernel.err[4:7])
        what = "destination" if index == 0 else f"operand {index}"
        size = buf.count
        raise _Failed(MemoryAccessError(
            f"out-of-bounds {site.name} {what}: L1 buffer '{buf.name}' element {element} "
            f"(valid elements 0..{size - 1}) in block {block}"
            f"{kernel.l1_neighbour(buf, element)}", kernel=kernel.name,
            location=site.location, block=block, lane=None, address=element,
            bounds=(0, size), buffer=buf.name))
    if stride == row_len or rows == 1:
        return data[base:base + rows * row_len].reshape(rows, row_len)
    return np.lib.stride_tricks.as_strided(data[base:], shape=(rows, row_len),
                                           strides=(stride * data.itemsize, data.itemsize),
                                           writeable=True)


def _run(kernel: Any, index: int, pointers: tuple[int, ...], ival: int, fval: float) -> None:
    site: TileSite = kernel.tile_sites[index]
    cache = kernel.tile_views
    key = (index, pointers)
    views = cache.get(key)
    if views is None:
        views = [_view(kernel, site, i, pointers[2 * i], pointers[2 * i + 1])[None]
                 for i in range(len(site.buffers))]
        if len(cache) > 1024:
            cache.clear()
        cache[key] = views
    scalar: Any = None
    if site.scalar == "int":
        scalar = ival
    elif site.scalar == "float":
        scalar = fval
    compute_into(site.name, views[1:], scalar, site.prop_dict, views[0])


def _callback(err: int, site: int, p0: int, o0: int, p1: int, o1: int, p2: int, o2: int,
              p3: int, o3: int, ival: int, fval: float) -> int:
    from pypto.backend.native.collectives import _KERNELS

    kernel = _KERNELS.get(err)
    if kernel is None:
        return TILE_CODE
    record = kernel.err
    if record[0]:
        return int(record[0])
    try:
        _run(kernel, site, (p0 or 0, o0, p1 or 0, o1, p2 or 0, o2, p3 or 0, o3), ival, fval)
    except _Failed as failed:
        kernel.collective_error = failed.error
        record[0] = TILE_CODE
        return TILE_CODE
    except Exception as exc:  # noqa: BLE001 - never let an exception cross the C frame
        kernel.collective_error = KernelError(f"internal error in tile instruction "
                                              f"pto.{kernel.tile_sites[site].name} of the "
                                              f"native backend: {exc!r}", kernel=kernel.name)
        record[0] = TILE_CODE
        return TILE_CODE
    return 0


CALLBACK = CALLBACK_TYPE(_callback)
"""The C function the JIT resolves `pypto_native_tile` to (kept alive here)."""


def address() -> int:
    return ctypes.cast(CALLBACK, ctypes.c_void_p).value or 0
