"""Compile a kernel's IR to machine code once, cache the object code on disk, and run it.

`llvm_ir(kernel_func)` runs the native pipeline (`NATIVE_PIPELINE`) on a copy of the kernel and
translates the `llvm` dialect to LLVM IR text with `xdsl.backend.llvm.convert`
(`pypto-opt --emit=llvm` prints it). `NativeKernel` compiles that IR with llvmlite (optimised at
O3, for the host CPU) into an object file kept under `cache_dir()`, keyed by the kernel's IR with
locations, the pypto and llvmlite versions and the target (triple, CPU, features): a new process
loads it without running LLVM again. docs/native.md#the-cache.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation

from pypto.backend.native.phase_codegen import spill_slots
from pypto.backend.native.phases import L1Buffer, arena_layout, arena_template
from pypto.backend.native.simt_to_lanes import LANE_SUFFIX, watchdog_loops
from pypto.backend.native.support import analyse
from pypto.backend.native import collectives
from pypto.backend.native.collectives import Operand, Site
from pypto.backend.native.to_llvm import (COLLECTIVE, COLLECTIVE_OPS, COLLECTIVE_SYMBOL, OOB,
                                          SITE_ATTR, WATCHDOG)
from pypto.diagnostics import op_location
from pypto.dialects import pto
from pypto.errors import KernelError, MemoryAccessError

NATIVE_PIPELINE = "pto-simt-to-lanes,convert-scf-to-cf,convert-pto-to-llvm"
"""The passes from a pto kernel to the llvm dialect (each usable from `pypto-opt -p`)."""

ERR_SLOTS = 10
"""The error record: code, site, element, parameter, block x/y/z, lane x/y/z (i64 each)."""

CACHE_ENV = "PYPTO_NATIVE_CACHE"


class NativeUnsupported(KernelError):
    """The kernel uses something the native backend does not compile yet (the reason says what)."""


def cache_dir() -> Path:
    """`$PYPTO_NATIVE_CACHE`, else `$XDG_CACHE_HOME/pypto/native` (~/.cache/pypto/native)."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pypto" / "native"


def _checked_ops(kernel: Operation) -> list[Operation]:
    """The accesses the lowering bounds-checks, in walk order: site `i` is op `i`."""
    return [op for op in kernel.walk()
            if isinstance(op, (pto.LoadOp, pto.StoreOp, pto.FmaOp, pto.AtomicAddOp,
                               *COLLECTIVE_OPS))]


def _collective_sites(kernel: func.FuncOp, l1: list[L1Buffer]) -> dict[int, Site]:
    """What the collectives callback needs to know of each block-level instruction."""
    from pypto import dtypes
    from pypto.backend.native.support import root_alloc, root_param

    allocs = [op for op in kernel.walk() if isinstance(op, pto.AllocLocalOp)]
    sites: dict[int, Site] = {}
    for index, op in enumerate(_checked_ops(kernel)):
        if not isinstance(op, COLLECTIVE_OPS):
            continue
        operands = []
        for v in op.operands:
            if not isinstance(v.type, pto.PtrType | pto.L1BufferType):
                continue
            dtype = np.dtype(dtypes.np_dtype_of(v.type.element_type))
            alloc = root_alloc(v)
            if alloc is not None:
                operands.append(Operand(dtype, None, l1[allocs.index(alloc)]))
            else:
                root = root_param(v)
                operands.append(Operand(dtype, None if root is None else root.index, None))
        shape = op.shape if isinstance(op, pto.MmaOp) else None
        sites[index] = Site(op.name.removeprefix("pto."), op_location(op), tuple(operands),
                            shape)
    return sites


def llvm_module(kernel: func.FuncOp) -> Any:
    """The kernel (a `func.func` with `pto.kernel`) lowered to an llvmlite `ir.Module`."""
    from xdsl.backend.llvm.convert import convert_module

    from pypto.ir import make_context
    from pypto.passes import parse_pipeline, run_pipeline

    module = ModuleOp([kernel.clone()])
    copy = next(iter(module.ops))
    for site, op in enumerate(_checked_ops(copy)):
        op.attributes[SITE_ATTR] = IntegerAttr(site, i64)
    run_pipeline(module, parse_pipeline(NATIVE_PIPELINE), make_context())
    result = convert_module(module, fallback_target_triple=None)
    for fn in result.functions:  # (xDSL's translation drops linkage: the lane function is
        if fn.name.endswith(LANE_SUFFIX):  # private, inlined into the grid function's loop)
            fn.linkage = "internal"
            fn.attributes.add("alwaysinline")
    return result


def llvm_ir(kernel: func.FuncOp) -> str:
    """The LLVM IR text of the kernel's native code (before LLVM's optimisations)."""
    return str(llvm_module(kernel))


_TARGET: Any = None


def _target() -> tuple[Any, str]:
    """The host target machine (created once) and its description for cache keys."""
    global _TARGET
    if _TARGET is None:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        triple = llvm.get_process_triple()
        cpu = llvm.get_host_cpu_name()
        features = llvm.get_host_cpu_features().flatten()
        machine = llvm.Target.from_triple(triple).create_target_machine(
            cpu=cpu, features=features, opt=3, jit=True)
        _TARGET = (machine, f"{triple}|{cpu}|{features}")
    return _TARGET


def _new_machine() -> Any:
    import llvmlite.binding as llvm

    _target()
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3,
        jit=True)


def _versions() -> str:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "?"
    return f"pypto {version('pypto')} llvmlite {version('llvmlite')} xdsl {version('xdsl')} " \
           f"native {_source_hash()}"


_SOURCE_HASH: list[str] = []


def _source_hash() -> str:
    """A hash of this backend's own modules: the object code (and the spill-slot count kept
    beside it) depend on them, and an edited checkout keeps its version number."""
    if not _SOURCE_HASH:
        digest = hashlib.sha256()
        for path in sorted(Path(__file__).parent.glob("*.py")):
            digest.update(path.read_bytes())
        _SOURCE_HASH.append(digest.hexdigest()[:16])
    return _SOURCE_HASH[0]


def _compile_object(kernel: func.FuncOp) -> bytes:
    import llvmlite.binding as llvm

    machine, _ = _target()
    mod = llvm.parse_assembly(str(llvm_module(kernel)))
    mod.triple = machine.triple
    mod.data_layout = str(machine.target_data)
    mod.verify()
    options = llvm.PipelineTuningOptions(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = True
    with options, llvm.create_pass_builder(machine, options) as builder, \
            builder.getModulePassManager() as manager:
        manager.run(mod, builder)
    return bytes(machine.emit_object(mod))


def _cached_slots(path: Path, kernel: func.FuncOp) -> int:
    """Spill slots per lane of the kernel's phases, kept beside its object code
    (`<object>.slots`): computing them splits the kernel again (phases.py), which a load from
    the disk cache should not pay."""
    side = path.with_suffix(".slots")
    try:
        return int(side.read_text())
    except (OSError, ValueError):
        pass
    slots = spill_slots(kernel)
    try:
        side.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=side.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(str(slots))
        os.replace(tmp, side)
    except OSError:
        pass
    return slots


def _ctype(t: Any) -> Any:
    name = str(t)
    return {"i1": ctypes.c_bool, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
            "f32": ctypes.c_float, "f64": ctypes.c_double}[name]


class NativeKernel:
    """One specialisation compiled to machine code; `run` executes a launch synchronously."""

    def __init__(self, kernel: func.FuncOp, name: str):
        reason, self.needs_1d = analyse(kernel)
        if reason is not None:
            raise NativeUnsupported(f"the native backend does not compile kernel '{name}' yet: "
                                    f"{reason}; run it on the interpreter "
                                    f"(backend='interpreter' or 'auto')", kernel=name)
        import llvmlite.binding as llvm

        self.name = name
        self.sites = [(op.name.removeprefix("pto."), op_location(op))
                      for op in _checked_ops(kernel)]
        self.loops = [op_location(op) for op in watchdog_loops(kernel)]
        self.params = list(kernel.body.block.args)
        self.l1 = arena_layout(kernel)  # the L1 arena and spill slots (phases.py)
        self.arena = arena_template(self.l1)
        self._arena_address = self.arena.ctypes.data
        self.collective_sites = _collective_sites(kernel, self.l1)
        self.collective_error: KernelError | None = None
        self.bound: Sequence[Any] = ()
        self._spill: np.ndarray = np.zeros(1, np.uint64)
        machine, target = _target()
        from pypto.ir import print_ir

        text = print_ir(ModuleOp([kernel.clone()]), debuginfo=True)
        key = hashlib.sha256(f"{_versions()}\n{target}\n{text}".encode()).hexdigest()[:32]
        path = cache_dir() / f"{name[:40]}-{key}.o"
        self.cached = path.exists()
        self.slots = _cached_slots(path, kernel)
        if self.cached:
            obj = path.read_bytes()
        else:
            obj = _compile_object(kernel)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
                with os.fdopen(fd, "wb") as f:
                    f.write(obj)
                os.replace(tmp, path)  # atomic: concurrent processes never read half a file
            except OSError:
                pass  # a read-only cache only costs the next process a compile
        # the engine takes ownership of its target machine (freed with it): a fresh one each
        if self.collective_sites:  # (resolved by name when the object is linked)
            llvm.add_symbol(COLLECTIVE_SYMBOL, collectives.address())
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _new_machine())
        self._object = llvm.ObjectFileRef.from_data(obj)  # the engine uses it: keep it alive
        self.engine.add_object_file(self._object)
        self.engine.finalize_object()
        address = self.engine.get_function_address(name)
        argtypes: list[Any] = []
        for p in self.params:
            if isinstance(p.type, pto.PtrType):
                argtypes += [ctypes.c_void_p, ctypes.c_int64]
            else:
                argtypes.append(_ctype(p.type))
        argtypes += [ctypes.c_int32] * 8 + [ctypes.c_void_p] * 3
        self.fn = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)
        self.err = np.zeros(ERR_SLOTS, dtype=np.int64)
        self._err_address = self.err.ctypes.data
        if self.collective_sites:
            collectives.register(self._err_address, self)

    def unsupported_launch(self, grid: tuple[int, int, int],
                           block: tuple[int, int, int]) -> NativeUnsupported | None:
        """Why this launch shape cannot run natively (None: it can): a kernel whose written
        tensors are lane-private by `get_global_id(0)` needs a 1-D launch."""
        if self.needs_1d and grid[1] * grid[2] * block[1] * block[2] != 1:
            return NativeUnsupported(
                f"the native backend runs kernel '{self.name}' only in 1-D launches (its "
                f"tensors read and written at get_global_id(0) are lane-private only there); "
                f"run it on the interpreter (backend='interpreter' or 'auto')", kernel=self.name)
        return None

    def run(self, grid: tuple[int, int, int], block: tuple[int, int, int],
            bound: Sequence[Any]) -> None:
        """Run every block of the launch; `bound` are the interpreter's bound arguments
        (Buffers for tensors, typed scalars), so both backends check arguments alike."""
        args: list[Any] = []
        for p, value in zip(self.params, bound):
            if isinstance(p.type, pto.PtrType):  # (__array_interface__: a third of .ctypes)
                args += [value.data.__array_interface__["data"][0], value.count]
            else:
                args.append(value.item() if isinstance(value, np.generic) else value)
        blocks = grid[0] * grid[1] * grid[2]
        lanes = block[0] * block[1] * block[2]
        if self._spill.size < self.slots * lanes:
            self._spill = np.zeros(self.slots * lanes, np.uint64)
        self.err[0] = 0
        self.bound = bound
        status = self.fn(*args, *grid, *block, 0, blocks, self._arena_address,
                         self._spill.ctypes.data, self._err_address)
        if status:
            raise self._error(grid, bound)

    def _error(self, grid: tuple[int, int, int], bound: Sequence[Any]) -> KernelError:
        code, site, address, param, *coords = (int(v) for v in self.err)
        if code == COLLECTIVE and self.collective_error is not None:
            error, self.collective_error = self.collective_error, None
            return error
        block, lane = tuple(coords[:3]), tuple(coords[3:])
        if code == WATCHDOG:
            from_loop = self.loops[site]
            return KernelError(
                f"this loop has run {10_000_000:,} iterations without ending on some lane; "
                f"check that its condition changes (the interpreter stops a loop after "
                f"pypto.backend.interpreter.codegen_loops.MAX_TRIPS iterations)",
                kernel=self.name, location=from_loop)
        assert code == OOB, code
        op, location = self.sites[site]
        if param < 0:  # L1 buffer -1 - param
            return self._l1_error(op, location, self.l1[-1 - param], address, block, lane)
        buf = bound[param]
        size = buf.count
        msg = (f"out-of-bounds {op} of HBM buffer '{buf.name}' at element {address} "
               f"(valid elements 0..{size - 1}, {size} x {buf.data.dtype}) by block {block}, "
               f"lane {lane}")
        return MemoryAccessError(msg, kernel=self.name, location=location, block=block,
                                 lane=lane, address=address, bounds=(0, size), buffer=buf.name)

    def _l1_error(self, op: str, location: str, buf: L1Buffer, address: int,
                  block: tuple[int, ...], lane: tuple[int, ...]) -> MemoryAccessError:
        """The interpreter's message for an out-of-bounds L1 access (lanes.py `oob`, with its
        note on the neighbouring buffer the address falls in)."""
        size = buf.count
        msg = (f"out-of-bounds {op} of L1 buffer '{buf.name}' at element {address} "
               f"(valid elements 0..{size - 1}, {size} x {buf.dtype}) by block {block}, "
               f"lane {lane}")
        msg += self.l1_neighbour(buf, address)
        return MemoryAccessError(msg, kernel=self.name, location=location, block=block,
                                 lane=lane, address=address, bounds=(0, size), buffer=buf.name)

    def l1_neighbour(self, buf: L1Buffer, address: int) -> str:
        """The interpreter's note on the buffer an out-of-bounds L1 address falls in."""
        byte = buf.offset + address * buf.dtype.itemsize
        other = next((b for b in sorted(self.l1, key=lambda b: b.offset)
                      if b.offset <= byte < b.end), None)
        if other is None or other.name == buf.name and other.offset == buf.offset:
            return ""
        return (f"; that address is L1 byte {byte}, inside buffer '{other.name}' (bytes "
                f"{other.offset}..{other.end - 1}, allocated at {other.location}): the "
                f"access overruns '{buf.name}' (bytes {buf.offset}..{buf.end - 1}) into "
                f"its neighbour")
