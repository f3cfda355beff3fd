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
import gc
import hashlib
import importlib
import os
import re
import tempfile
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
from xdsl.dialects import arith, func, math
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import (ArrayAttr, BFloat16Type, IntegerAttr, IntegerType, ModuleOp,
                                   i64)
from xdsl.ir import Operation

from pypto.settings import read
from pypto.backend.interpreter import watchdog
from pypto.backend.native import (collectives, copy_loops, inflight, int_pow,
                                  loop_steps, mma_calls, numpy_math, printf, row_decision,
                                  row_order, shared_hbm, tokens, while_codegen)
from pypto.backend.native import tiles as native_tiles
from pypto.backend.native.bf16 import bf16_bits
from pypto.backend.native.collectives import Operand, Site
from pypto.backend.native.constant_lanes import GATHER_FREE_ATTR
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.inline_stages import inline_pipelines
from pypto.backend.native.phase_codegen import spill_slots
from pypto.backend.native.phases import (L1Buffer, aligned_words, arena_layout, arena_template, merged_phases,
                                         needs_phases)
from pypto.backend.native import carried_values, plain_stores, transposed_rows
from pypto.backend.native.simt_to_lanes import LANE_SUFFIX, SLOTS_ATTR, watchdog_loops
from pypto.backend.native import pair_runs, perf_map
from pypto.backend.native.exchange_selects import select_exchanges
from pypto.backend.native.guarded_interchange import interchange_guarded_loops
from pypto.backend.native.interchange import interchange_strided_loops
from pypto.backend.native.lane_independence import LaunchCheck
from pypto.backend.native.support import analyse_launch
from pypto.backend.native.tree_selects import select_tree_steps
from pypto.backend.native.int_trees import sum_int_trees
from pypto.backend.native.tree_unroll import unroll_block_loops
from pypto.backend.native.warp_exchange import exchange_warp_collectives, max_lanes
from pypto.backend.native.to_llvm import (CAST_RANGE, COLLECTIVE, COLLECTIVE_OPS,
                                          COLLECTIVE_SYMBOL, DIVIDE_BY_ZERO, EXPIRED_SLOT,
                                          LIMIT_SLOT, OOB, SITE_ATTR, TIME_LIMIT, WATCHDOG)
from pypto.diagnostics import op_location
from pypto.dialects import pto
from pypto.errors import DeadlockError, KernelError, MemoryAccessError

NATIVE_PIPELINE = "pto-simt-to-lanes,convert-scf-to-cf,convert-pto-to-llvm"
"""The passes from a pto kernel to the llvm dialect (each usable from `pypto-opt -p`)."""

ERR_SLOTS = row_order.ORDER_SLOT + 1
"""The error record: code, site, element (or a value's bits), parameter, block x/y/z, lane x/y/z
(i64 each); then the launch's trip limit and time-limit flag (to_llvm.LIMIT_SLOT, EXPIRED_SLOT);
then the hulls of the copies in flight (inflight.COUNT_SLOT); then whether the launch may run in
row order (row_order.ORDER_SLOT)."""

CACHE_ENV = "PYPTO_NATIVE_CACHE"


class NativeUnsupported(KernelError):
    """The kernel uses something the native backend does not compile yet (the reason says what)."""


class NotCached(Exception):
    """`NativeKernel(..., cached_only=True)` found no object code in the disk cache: compiling
    it would run the lowering and LLVM (the "tiered" backend then interprets first,
    pypto/runtime/tiering.py)."""


def cache_dir() -> Path:
    """`$PYPTO_NATIVE_CACHE`, else `$XDG_CACHE_HOME/pypto/native` (~/.cache/pypto/native)."""
    given = read(CACHE_ENV)  # (a file there: its `UsageError`, pypto/settings.py)
    if given is not None:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pypto" / "native"


_DIVISIONS = (arith.DivSIOp, arith.DivUIOp, arith.RemSIOp, arith.RemUIOp, arith.FloorDivSIOp)


def _runtime_divisor(op: Operation) -> bool:
    if not isinstance(op, _DIVISIONS):
        return False
    c = op.operands[1].owner
    return not (isinstance(c, arith.ConstantOp) and isinstance(c.value, IntegerAttr) and
                c.value.value.data != 0)


_CHECKED_TYPES: frozenset[type] = frozenset()


def _checked_ops(kernel: Operation) -> list[Operation]:
    """The ops the lowering checks, in walk order: site `i` is op `i` (accesses: bounds;
    divisions by a run-time divisor: zero; float-to-int casts: range; block-level instructions:
    the collectives callback's site, pypto.backend.native.collectives)."""
    global _CHECKED_TYPES
    if not _CHECKED_TYPES:  # (a set of the op classes: one lookup per op, where isinstance
        roots = [pto.LoadOp, pto.StoreOp, pto.FmaOp, pto.AtomicAddOp, *pto.ATOMIC_OPS,
                 arith.FPToSIOp, pto.PrintfOp, *COLLECTIVE_OPS, *pto.TILE_VECTOR_OPS]
        found: set[type] = set()  # (with a tuple of ~40 classes took 37 ms of a 57 ms load)
        while roots:  # (the classes and their subclasses: isinstance's answer)
            cls = roots.pop()
            found.add(cls)
            roots.extend(cls.__subclasses__())
        _CHECKED_TYPES = frozenset(found)
    checked = _CHECKED_TYPES
    return [op for op in kernel.walk()
            if type(op) in checked or _runtime_divisor(op) or _checked_power(op)]


def _checked_power(op: Operation) -> bool:
    """An integer `**` whose exponent is checked (int_pow.py: not a constant >= 0)."""
    if not isinstance(op, math.IPowIOp):
        return False
    exponent = int_pow.constant_exponent(op)
    return exponent is None or exponent < 0


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
    return lowered(kernel)[0]


def lowered(kernel: func.FuncOp) -> tuple[Any, int]:
    """(the kernel lowered to an llvmlite `ir.Module`, the spill slots per lane its phase
    functions use: the lowering's own split's count, 0 without phases)."""
    from xdsl.backend.llvm.convert import convert_module

    from pypto.ir import make_context
    from pypto.passes import parse_pipeline

    module = ModuleOp([exchange_warp_collectives(inline_pipelines(kernel)).clone()])
    copy = next(iter(module.ops))
    for site, op in enumerate(_checked_ops(copy)):
        op.attributes[SITE_ATTR] = IntegerAttr(site, i64)
    ctx = make_context()
    slots = 0
    for native_pass in parse_pipeline(NATIVE_PIPELINE):  # (not verified after each pass, as
        native_pass.apply(ctx, module)                   # run_pipeline does: a third of the
        # lowering's time; `pypto-opt -p` and the lit tests verify them, LLVM verifies it)
        slots = max([slots, *(fn.attributes[SLOTS_ATTR].value.data  # type: ignore[attr-defined]
                              for fn in module.ops if SLOTS_ATTR in fn.attributes)])
    internal = {fn.sym_name.data for fn in module.ops if isinstance(fn, llvm_dialect.FuncOp)
                and fn.linkage is not None and fn.linkage.linkage.data == "internal"}
    result = convert_module(module, fallback_target_triple=None)
    numpy_math.add_vector_variants(result)  # NumPy's loops once per vector of lanes
    numpy_math.widen_lane_loops(result, kernel)
    pair_runs.keep_run_loops(result)  # (a sorting network's runs of pairs)
    plain_stores.freeze_reloads(result)  # (selects stored back: no masked stores)
    for fn in result.functions:  # (xDSL's translation drops linkage: the lane function is
        if fn.name.endswith(LANE_SUFFIX):  # private, inlined into the grid function's loop)
            fn.linkage = "internal"
            fn.attributes.add("alwaysinline")
        elif fn.name in internal:  # the per-block range checks (fast_blocks.py, full_blocks.py):
            fn.linkage = "internal"  # inlined into the grid function, no copy of their own
    result.gather_free = [fn.sym_name.data for fn in module.ops  # type: ignore[attr-defined]
                          if isinstance(fn, llvm_dialect.FuncOp) and
                          GATHER_FREE_ATTR in fn.attributes]
    grid = next(fn for fn in result.functions if fn.name == kernel.sym_name.data)
    noalias = _noalias_params(kernel)
    for index, arg in enumerate(grid.args):
        if index in noalias:
            arg.add_attribute("noalias")
    for arg in grid.args[-3:-1]:  # the L1 arena and the spill slots: arrays of their own, the
        arg.add_attribute("noalias")  # arena passed on to collectives (docs/native.md#phases)
    transposed_rows.add_rows(result, kernel.sym_name.data)  # (needs the noalias marks)
    _add_entry(result, grid)
    return result, slots


ENTRY_SUFFIX = ".entry"
"""`@k.entry(ptr argv) -> i32`: the grid function's arguments read from one array of 8-byte
slots (one ctypes argument per launch instead of one per parameter: a launch's marshalling)."""


def _noalias_params(kernel: func.FuncOp) -> set[int]:
    """Indices, among the grid function's LLVM arguments, of the base pointers of tensor
    parameters marked `pto.noalias` (pypto.analysis.alias: passed once in this launch)."""
    found: set[int] = set()
    index = 0
    attrs = kernel.arg_attrs.data if kernel.arg_attrs is not None else ()
    for i, arg in enumerate(kernel.body.block.args):
        if isinstance(arg.type, pto.PtrType):
            if i < len(attrs) and "pto.noalias" in attrs[i].data:
                found.add(index)
            index += 2
        else:
            index += 1
    return found


def _add_entry(module: Any, grid: Any) -> None:
    """Add `@k.entry` (see ENTRY_SUFFIX): slot i holds argument i, an address or integer as
    i64, a float as a double (float32 rounded by `fptrunc`, as ctypes' c_float rounds)."""
    from llvmlite import ir

    i64t = ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(ir.IntType(32), [ir.PointerType()]),
                     name=grid.name + ENTRY_SUFFIX)
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    argv = fn.args[0]
    values = []
    for index, arg in enumerate(grid.args):
        slot = builder.gep(argv, [ir.Constant(i64t, index)], source_etype=i64t)
        t = arg.type
        if isinstance(t, ir.PointerType):
            values.append(builder.inttoptr(builder.load(slot, typ=i64t), t))
        elif isinstance(t, ir.IntType):
            raw = builder.load(slot, typ=i64t)
            values.append(raw if t.width == 64 else builder.trunc(raw, t))
        elif isinstance(t, ir.DoubleType):
            values.append(builder.load(slot, typ=t))
        else:
            values.append(builder.fptrunc(builder.load(slot, typ=ir.DoubleType()), t))
    builder.ret(builder.call(grid, values))


def llvm_ir(kernel: func.FuncOp) -> str:
    """The LLVM IR text of the kernel's native code (before LLVM's optimisations)."""
    return _module_text(llvm_module(kernel))


def _module_text(module: Any) -> str:
    """`module` as LLVM IR text, every function defined with the string attributes
    `_attributes` gives it (llvmlite's IR builder has no string function attributes, so they
    are written into the text)."""
    text = str(module)
    gather_free = set(getattr(module, "gather_free", []))
    features = None
    if gather_free:
        import llvmlite.binding as llvm

        _target()
        features = f"{llvm.get_host_cpu_features().flatten()},{NO_GATHERS}".lstrip(",")

    def attributed(m: re.Match[str]) -> str:
        name = m.group(2).strip('"')
        attrs = _attributes(name in gather_free, features)
        return f"{m.group(1)} {' '.join(attrs)}" if attrs else m.group(1)

    return re.sub(r'^(define [^\n]*?@("(?:[^"\\]|\\.)*"|[-\w.$]+)\(.*\))$', attributed, text,
                  flags=re.M)


def _attributes(gather_free: bool, features: str | None) -> list[str]:
    """A defined function's string attributes: the host's target features plus the tuning
    flags that make LLVM prefer scalar code to vector gathers and scatters for the functions
    `llvm_module` listed in `gather_free` (constant_lanes.GATHER_FREE_ATTR); and, with
    NO_BUILTIN_COPIES, `no-builtin-memcpy` (docs/native.md#speed)."""
    attrs = [f'"target-features"="{features}"'] if gather_free else []
    if NO_BUILTIN_COPIES:
        attrs.append('"no-builtin-memcpy"')
    return attrs


NO_BUILTIN_COPIES = True
"""Forbid LLVM to turn a copy loop into a call of libc's `memcpy` (explicit `llvm.memcpy`
intrinsics, copy_loops.py, stay calls): a copy of a few hundred bytes per block runs inline,
vectorised, instead of a library call per block (docs/native.md#speed, seventh round).
`no-builtin-memset` too was measured and changed nothing."""


NO_GATHERS = "+prefer-no-gather,+prefer-no-scatter"
"""The x86 tuning features of a `GATHER_FREE_ATTR` function (constant_lanes.py)."""


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


_VERSIONS: list[str] = []


# The module-level switches that change the object code a kernel compiles to (tests turn them
# off to compare with the plain lowering): each one is part of the disk cache's key, so an
# object compiled with a switch off is never loaded with it on. tests/backend/native/
# test_cache_switches.py fails when a native module grows a boolean switch not listed here.
SWITCHES: tuple[tuple[str, str], ...] = (
    ("arena_refill", "ENABLED"), ("copy_loops", "ENABLED"), ("fill_loops", "ENABLED"),
    ("fast_blocks", "KEEP_X_LOOPS"), ("fast_prefix", "ENABLED"), ("int_trees", "ENABLED"),
    ("jit", "NO_BUILTIN_COPIES"), ("pair_fusion", "ENABLED"), ("pair_registers", "ENABLED"),
    ("pair_runs", "ENABLED"), ("pair_runs", "KEEP_RUNS"),
    ("plain_stores", "ENABLED"), ("tile_loops", "ENABLED"), ("transposed_rows", "PREFETCH"),
    ("tree_selects", "ENABLED"))


def switches() -> str:
    """The switches' current values, and `mma`'s switch and whether it calls BLAS (a part of
    the cache key; docs/native.md#the-cache)."""
    values = (f"{module}.{name}={getattr(importlib.import_module(f'pypto.backend.native.{module}'), name)}"
              for module, name in SWITCHES)
    return " ".join((*values, mma_calls.cache_key()))


def _versions() -> str:
    """The versions the object code depends on: pypto's, llvmlite's, xDSL's, and a hash of the
    native backend's own source (a changed lowering must not load an old object, even at one
    pypto version: a development checkout, or two checkouts sharing a cache)."""
    if not _VERSIONS:
        def version(name: str) -> str:
            try:
                return metadata.version(name)
            except metadata.PackageNotFoundError:
                return "?"
        source = hashlib.sha256()
        for path in sorted(Path(__file__).parent.glob("*.py")):
            source.update(path.read_bytes())
        _VERSIONS.append(f"pypto {version('pypto')} llvmlite {version('llvmlite')} "
                         f"xdsl {version('xdsl')} native {source.hexdigest()[:16]}")
    return _VERSIONS[0]


def _compile_object(kernel: func.FuncOp) -> tuple[bytes, int]:
    """(object code, spill slots per lane) of the kernel."""
    module, slots = lowered(kernel)
    return object_code(_module_text(module)), slots


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a kernel is compiled (or loaded). The
    lowering builds and rewrites tens of thousands of IR objects (ops, blocks, use lists: all
    in reference cycles), which survive into the oldest generation and trigger full
    collections that walk every object of the process, 0.1-0.3 s each, freeing nothing the
    lowering still uses. The IR is garbage once the object code exists: the process's next
    collection frees it (docs/native.md#compile-time)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def object_code(ir_text: str) -> bytes:
    """LLVM IR text (`llvm_ir`) optimised for the host CPU and compiled to an object file."""
    machine, _ = _target()
    mod = _optimised(ir_text, unroll=True)
    if str(mod).count("\n") > UNROLL_LIMIT * max(ir_text.count("\n"), 1):
        # Full unrolling of constant-trip tile loops made one huge basic block whose code
        # generation is superlinear (layernorm's tiles: 1k lines -> 13k, 2.5 s of codegen):
        # optimise again without unrolling (docs/native.md#compile-time).
        mod = _optimised(ir_text, unroll=False)
    numpy_math.mark_per_element(mod)  # (read back by numpy_math.per_element)
    _drop_dead_functions(mod)
    return bytes(machine.emit_object(mod))


UNROLL_LIMIT = 6
"""How many times its input's lines the optimised LLVM IR may grow before the module is
optimised again without loop unrolling (docs/native.md#compile-time)."""


def _optimised(ir_text: str, unroll: bool) -> Any:
    """The module parsed, verified and run through LLVM's O3 pipeline for the host CPU (loop
    and SLP vectorisation on; loop unrolling as `unroll` says)."""
    import llvmlite.binding as llvm

    machine, _ = _target()
    mod = llvm.parse_assembly(ir_text)
    mod.triple = machine.triple
    mod.data_layout = str(machine.target_data)
    mod.verify()
    options = llvm.PipelineTuningOptions(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_unrolling = unroll
    with options, llvm.create_pass_builder(machine, options) as builder, \
            builder.getModulePassManager() as manager:
        manager.run(mod, builder)
    return mod


_REFERENCE = re.compile(r'@("(?:[^"\\]|\\.)*"|[-\w.$]+)')


def _drop_dead_functions(mod: Any) -> None:
    """Delete, after optimisation, the functions nothing calls any more (the checked lane
    loops LLVM inlined, NumPy's vector variants the vectoriser did not use, ...): the entry is
    the only symbol the runtime looks up, so no code is generated for them. The live functions'
    code is unchanged (docs/native.md#compile-time)."""
    import llvmlite.binding as llvm

    defined = [fn for fn in mod.functions if not fn.is_declaration]
    referenced: dict[str, int] = {}
    for name in _REFERENCE.findall(str(mod)):
        name = name[1:-1] if name.startswith('"') else name
        referenced[name] = referenced.get(name, 0) + 1
    dead = [fn for fn in defined if referenced.get(fn.name, 0) <= 1 and  # (its definition)
            not fn.name.endswith(ENTRY_SUFFIX)]
    if not dead:
        return
    for fn in dead:
        fn.linkage = llvm.Linkage.internal
    with llvm.create_pass_builder(_target()[0], llvm.PipelineTuningOptions()) as builder, \
            llvm.create_new_module_pass_manager() as manager:
        manager.add_global_dead_code_eliminate_pass()
        manager.run(mod, builder)


def _cached_slots(path: Path, kernel: func.FuncOp) -> int:
    """Spill slots per lane of the kernel's phases, kept beside its object code
    (`<object>.slots`, written by the compile that counted them): counting them again splits
    the kernel (phases.py), which a load from the disk cache should not pay."""
    side = path.with_suffix(".slots")
    try:
        return int(side.read_text())
    except (OSError, ValueError):
        pass
    slots = spill_slots(kernel)  # (an object cached without its side file)
    _write_slots(side, slots)
    return slots


def _write_slots(side: Path, slots: int) -> None:
    try:
        side.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=side.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(str(slots))
        os.replace(tmp, side)
    except OSError:
        pass


def _variants(kernel: func.FuncOp) -> Iterator[func.FuncOp]:
    """The kernels a build tries, best first, until the support check (with the phase plan)
    accepts one: its strided loops interchanged (interchange.py), and then those under a lane
    guard too (guarded_interchange.py), each with its block-level tree loops unrolled
    (tree_unroll.py) and as it is; then the same without the first interchange; the kernel as
    written last (its refusal is the one reported). Made lazily: a kernel the first variant
    suits is checked once (a check per interchange before was a fifth of a load from the
    disk cache: docs/native.md#the-cache)."""
    seen: list[func.FuncOp] = []

    def with_unrolled(base: func.FuncOp) -> Iterator[func.FuncOp]:
        for candidate in (unroll_block_loops(base), base):  # tree steps' strides constant
            if not any(candidate is s for s in seen):
                seen.append(candidate)
                yield candidate

    interchanged = interchange_strided_loops(kernel)  # grid-stride loops at block level
    for base in ((interchanged, kernel) if interchanged is not kernel else (kernel,)):
        guarded = interchange_guarded_loops(base)  # the same under a lane guard
        if guarded is not base:
            yield from with_unrolled(guarded)
        yield from with_unrolled(base)


class NativeKernel:
    """One specialisation compiled to machine code; `run` executes a launch synchronously."""

    def __init__(self, kernel: func.FuncOp, name: str,
                 block: tuple[int, int, int] | None = None, *, cached_only: bool = False):
        """`cached_only`: raise `NotCached` instead of compiling when the disk cache has no
        object code for the kernel (after the support check: an unsupported kernel still
        raises `NativeUnsupported`)."""
        with _collector_paused():  # (the analyses and the lowering: docs/native.md#compile-time)
            self._build(kernel, name, block, cached_only)

    def _build(self, kernel: func.FuncOp, name: str, block: tuple[int, int, int] | None,
               cached_only: bool) -> None:
        from pypto.ir import structure_text

        # The disk cache's key text: the kernel as given and the block shape. The object code
        # is a function of these, the backend's source and switches and the target (all in
        # the key): every step below is deterministic. The input, not the rewritten kernel
        # (tree steps unrolled, phases merged: often several times larger), as a structure
        # text (all the printer with debug info shows, 0.6 ms for matmul's 115 ops against
        # printing's 3.9 ms: docs/native.md#the-cache).
        text = f"{structure_text(kernel)}\nblock {block}\n"
        kernel = printf.add_order_keys(inline_pipelines(kernel))  # (printfs in loops: trips)
        kernel = loop_steps.lower_steps(kernel)  # (run-time steps: checked divisions)
        kernel = inflight.instrument(kernel)  # (copies in flight checked at run time, if the
        self.inflight_copies = inflight.copy_kinds(kernel) if tokens.CHECKED_ATTR in \
            kernel.attributes else {}  # proof fails: inflight.py)
        exchanged = exchange_warp_collectives(kernel)  # (stages inlined;
        # shuffles and votes through L1)
        self.exchange_lanes = max_lanes() if exchanged is not kernel else None
        kernel = exchanged
        kernel = carried_values.carry_values(kernel)  # (a later loop's recomputed value)
        for kernel in _variants(kernel):  # the first the support check accepts
            if block is not None:  # the compiled block shape: constant lane loops for it
                kernel = kernel.clone()  # (fast_blocks.py; part of the cache key's IR text)
                kernel.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(v, i64) for v in block])
                kernel = select_exchanges(kernel)  # sorting-network steps branch-free
                kernel = select_tree_steps(kernel)  # tree steps' inner ifs branch-free
                kernel = sum_int_trees(kernel)  # integer L1 trees as one sum (int_trees.py)
            plans: list[Any] = []
            reason, self.needs_1d, modelled = analyse_launch(kernel, plans)
            if reason is None:
                break
        if reason is not None:
            raise NativeUnsupported(f"the native backend does not compile kernel '{name}' yet: "
                                    f"{reason}; run it on the interpreter "
                                    f"(backend='interpreter' or 'auto')", kernel=name)
        self.merged_1d = merged_phases(kernel, plans[-1] if plans else None)  # (phase_merge.py:
        # proven for 1-D blocks)
        self.shared_hbm = shared_hbm.has_shared(kernel)  # (one-block launches only)
        import llvmlite.binding as llvm

        self.name = name
        # (modelled: the written tensors whose lane independence is proven per launch)
        self.independence = LaunchCheck(kernel, modelled) if modelled else None
        self.row_decision = None if needs_phases(kernel) else \
            row_decision.decision(kernel, block)
        """Decides per launch whether the lanes may run in row order (row_decision.py)."""
        from pypto.analysis.uniformity import varying_values

        varying = varying_values(kernel, block_ids_uniform=False)  # (the interpreter's GRID
        checked = _checked_ops(kernel)                            # mode: its message names
        self.sites = [(op.name.removeprefix("pto."), op_location(op))  # the lane when the
                      for op in checked]                                # divisor varies)
        self.lane_divisors = [_runtime_divisor(op) and op.operands[1] in varying
                              for op in checked]
        self.cast_types = [str(np.dtype(f"int{op.results[0].type.width.data}"))
                           if isinstance(op, arith.FPToSIOp) else "" for op in checked]
        self.loops = [op_location(op) for op in watchdog_loops(kernel)]
        self.barriers = [op_location(op) for op in while_codegen.barrier_sites(kernel)]
        self.step_sites = {i for i, op in enumerate(checked) if loop_steps.is_step_check(op)}
        self.params = list(kernel.body.block.args)
        self.l1 = arena_layout(kernel)  # the L1 arena and spill slots (phases.py)
        self.arena = arena_template(self.l1)
        self._arena_address = self.arena.ctypes.data
        self.collective_sites = _collective_sites(kernel, self.l1)
        self.tile_sites = native_tiles.sites(kernel, self.l1, checked)
        self.tile_views: dict[Any, Any] = {}  # (tiles.py: views of the arena per site)
        self.printf_sites = {i: printf.site_of(op, op_location(op))
                             for i, op in enumerate(checked) if isinstance(op, pto.PrintfOp)}
        _, self.printf_free, buffered = printf.plan(kernel)  # (dims the printing lane or
        self.printf_lines: list[Any] | None = [] if buffered else None  # lane is not pinned in)
        self.printf_launch: tuple[Any, ...] = ()  # (grid, block, bound) of buffered lines
        self.interpreter: Any = None  # the kernel's Executable: its lane vectors order the
        # buffered lines (printf.flush; pypto.compiler's _native sets it)
        self.token_lanes = tokens.lane_limit(kernel)  # (copies in flight: lanes per dimension)
        self.collective_error: KernelError | None = None
        self.bound: Sequence[Any] = ()
        self._spill: np.ndarray = np.zeros(1, np.uint64)
        machine, target = _target()
        key = hashlib.sha256(f"{_versions()}\n{target}\n{switches()}\n"
                             f"{text}".encode()).hexdigest()[:32]
        path = cache_dir() / f"{name[:40]}-{key}.o"
        self.cached = path.exists()
        if self.cached:
            obj = path.read_bytes()
            self.slots = _cached_slots(path, kernel)
        elif cached_only:
            raise NotCached(str(path))
        else:
            obj, self.slots = _compile_object(kernel)  # (the lowering's count of spill slots)
            _write_slots(path.with_suffix(".slots"), self.slots)
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
            mma_calls.bind()  # (malloc, free and NumPy's sgemm: mma_calls.py)
        if self.tile_sites:
            llvm.add_symbol(native_tiles.TILE_SYMBOL, native_tiles.address())
        if self.printf_sites:
            llvm.add_symbol(printf.SYMBOL, printf.address())
        ufuncs = numpy_math.kernel_ufuncs(kernel)  # (lane ops and tile loop nests)
        numpy_math.bind_symbols(ufuncs)
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _new_machine())
        self._object = llvm.ObjectFileRef.from_data(obj)  # the engine uses it: keep it alive
        self.engine.add_object_file(self._object)
        self.engine.finalize_object()
        if read("PYPTO_PERF_MAP", False):  # (names for `perf report`: perf_map.py)
            perf_map.write(obj, perf_map.engine_lookup(self.engine), name)
        self.auto_prefers_interpreter: str | None = (
            f"it calls NumPy's {', '.join(ufuncs)} loop once per element: its lane loop is "
            f"not vectorised (docs/native.md#choosing-a-backend: about 10x the interpreter's "
            f"time for exp)" if ufuncs and numpy_math.per_element(self.engine) else
            copy_loops.looped_callbacks_reason(kernel))
        """Why "auto" runs this kernel on the interpreter although it compiles (None: it does
        not): compiled, it would be slower."""
        self.err = np.zeros(ERR_SLOTS, dtype=np.int64)
        self._err_address = self.err.ctypes.data
        if self.collective_sites or self.tile_sites or self.printf_sites:
            collectives.register(self._err_address, self)
        self.fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(
            self.engine.get_function_address(name + ENTRY_SUFFIX))
        self.run = self._make_run()

    def _make_run(self) -> Any:
        """`run(grid, block, bound)` for this kernel as straight-line Python made once: it
        writes the arguments into the slots `@k.entry` reads (an address only when the tensor's
        Buffer changed: `__array_interface__` costs microseconds) and makes one ctypes call.
        It keeps the last Buffer of each tensor parameter (a view: it does not keep the
        tensor, whose accounting is by the Tensor object, docs/runtime.md). Launches of one
        kernel from several threads take turns (a lock): they share the slots and the error
        record. The last three slots are the grid function's pointers: the L1 arena and the
        spill slots (phases.py) and the error record."""
        slots = sum(2 if isinstance(p.type, pto.PtrType) else 1 for p in self.params) + 11
        ints = (ctypes.c_int64 * slots)()
        doubles = (ctypes.c_double * slots).from_buffer(ints)
        ints[slots - 3] = self._arena_address
        ints[slots - 2] = self._spill.ctypes.data
        ints[slots - 1] = self._err_address
        space: dict[str, Any] = {"A": ints, "D": doubles, "fn": self.fn, "P": ctypes.addressof(ints),
                                 "last": [None] * (len(self.params) + 1), "error": self._error,
                                 "_keep": (ints, doubles)}
        names = [f"b{i}" for i in range(len(self.params))]
        import threading

        space["lock"] = threading.Lock()  # one slot array and error record: one launch at a time
        lines = ["def run(grid, block, bound):",
                 "    with lock:",
                 "        return run1(grid, block, bound)",
                 "def run1(grid, block, bound):",
                 f"    {', '.join(names)}{',' if len(names) == 1 else ''} = bound"
                 if names else "    pass"]
        slot = 0
        for i, p in enumerate(self.params):
            b = names[i]
            if isinstance(p.type, pto.PtrType):
                lines += [f"    if {b} is not last[{i}]:",
                          f"        last[{i}] = {b}",
                          f"        A[{slot}] = {b}.data.__array_interface__['data'][0]",
                          f"        A[{slot + 1}] = {b}.count"]
                slot += 2
            elif isinstance(p.type, IntegerType):  # (a bool constexpr: NumPy's bool_ is not
                lines.append(f"    A[{slot}] = {b}" if p.type.width.data > 1 else  # an int)
                             f"    A[{slot}] = 1 if {b} else 0")
                slot += 1
            elif isinstance(p.type, BFloat16Type):  # its 16 bits (bf16.py), rounded as NumPy
                lines.append(f"    A[{slot}] = bf16_bits({b})")
                space["bf16_bits"] = bf16_bits
                slot += 1
            else:
                lines.append(f"    D[{slot}] = {b}")
                slot += 1
        n = len(self.params)
        lines += [f"    if grid != last[{n}]:",
                  f"        last[{n}] = grid",
                  f"        A[{slot}], A[{slot + 1}], A[{slot + 2}] = grid",
                  f"        A[{slot + 6}] = 0",
                  f"        A[{slot + 7}] = grid[0] * grid[1] * grid[2]",
                  f"    A[{slot + 3}], A[{slot + 4}], A[{slot + 5}] = block"]
        if self.slots:  # spill slots for the block's lanes (phase-split kernels)
            space["spill_for"] = self._spill_for
            lines += [f"    if block != last_block[0]:",
                      f"        last_block[0] = block",
                      f"        A[{slots - 2}] = spill_for(block)"]
            space["last_block"] = [None]
        if self.collective_sites or self.tile_sites or self.printf_sites:  # the callbacks read
            space.update(E=self.err, me=self)  # the bound arguments and the record
            lines += ["    me.bound = bound",
                      "    E[0] = 0"]
            if self.inflight_copies:  # (inflight.py: each launch starts with none in flight)
                lines += ["    me.inflight_state = None",
                          f"    E[{inflight.COUNT_SLOT}] = 0"]
        if self.row_decision is not None:  # (row_decision.py: the launch's lanes independent)
            space.update(E=self.err, row_decision=self.row_decision,
                         row_memo=self.row_decision.memo)
            lines += self.row_decision.lines(names, "E")
        if self.loops:  # the watchdog: PYPTO_MAX_TRIPS read per launch, and the timeout=
            space.update(E=self.err, max_trips=watchdog.max_trips, deadline=watchdog._deadline,
                         timed=self._timed)
            lines += [f"    E[{LIMIT_SLOT}] = max_trips()",
                      "    if deadline:",
                      "        return timed(grid, bound)"]
        if self.printf_lines is None:
            lines += ["    if fn(P):",
                      "        raise error(grid, bound)"]
            lines += ["def call(grid, bound):",
                      "    if fn(P):",
                      "        raise error(grid, bound)"]
        else:  # printf.plan: the launch's lines sorted into the interpreter's order
            space["flush"] = printf.flush
            lines += ["    me.printf_launch = (grid, block, bound)",
                      "    if fn(P):",  # (a failed launch's lines: replay.py prints them)
                      "        raise error(grid, bound)",
                      "    flush(me)"]
            lines += ["def call(grid, bound):",
                      "    if fn(P):",
                      "        raise error(grid, bound)",
                      "    flush(me)"]
        exec(compile("\n".join(lines) + "\n", f"<pto native run {self.name}>", "exec"),
             space)
        self._call = space["call"]
        return space["run"]

    def _timed(self, grid: tuple[int, int, int], bound: Sequence[Any]) -> None:
        """The rest of `run` under an open time limit (watchdog.time_limit): a timer thread
        sets the flag every `while` loop reads each CLOCK_EVERY trips (ctypes releases the
        GIL during the call, so the timer runs)."""
        import threading
        import time

        self.err[EXPIRED_SLOT] = 0
        remaining = watchdog._deadline[-1][0] - time.monotonic()
        timer = threading.Timer(max(remaining, 0.0), self.err.__setitem__, (EXPIRED_SLOT, 1))
        timer.start()
        try:
            self._call(grid, bound)
        finally:
            timer.cancel()

    def unsupported_launch(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                           bound: Sequence[Any] = ()) -> NativeUnsupported | None:
        """Why this launch cannot run natively (None: it can): a kernel whose written
        tensors are lane-private by `get_global_id(0)` needs a 1-D launch; one whose tensors
        lane_independence.py follows needs its proof to pass on this launch's shape and scalar
        arguments `bound` (docs/native.md#lane-independence)."""
        if self.independence is not None:
            why = self.independence.refusal(grid, block, bound)
            if why is not None:
                return NativeUnsupported(
                    f"the native backend cannot prove that the lanes of kernel '{self.name}' "
                    f"never share an HBM element in this launch (grid {grid}, block {block}): "
                    f"{why}; it runs lanes one after another, the interpreter in lockstep, so "
                    f"the results could differ; run it on the interpreter "
                    f"(backend='interpreter' or 'auto')", kernel=self.name)
        if self.exchange_lanes is not None and block[0] * block[1] * block[2] > \
                self.exchange_lanes:
            return NativeUnsupported(
                f"the native backend exchanges warp shuffles and votes of kernel '{self.name}' "
                f"through L1 buffers of {self.exchange_lanes} lanes, fewer than this block's; "
                f"run it on the interpreter (backend='interpreter' or 'auto')",
                kernel=self.name)
        refused = printf.launch_refusal(self.printf_free, self.printf_lines is not None, grid,
                                        block, self.name, self.interpreter) or \
            tokens.launch_refusal(self.token_lanes, block, self.name)  # (printing lane / block,
        if refused is not None:                                       # lanes proven apart)
            return NativeUnsupported(refused, kernel=self.name)
        if self.merged_1d and block[1] * block[2] != 1:
            return NativeUnsupported(
                f"the native backend compiled kernel '{self.name}' for a 1-D block (its tree "
                f"steps read and write L1 in one phase, proven exact only there, "
                f"docs/native.md#merged-tree-steps); launch it with a 1-D block, or run it on "
                f"the interpreter (backend='interpreter' or 'auto')", kernel=self.name)
        if self.shared_hbm and grid[0] * grid[1] * grid[2] != 1:
            return NativeUnsupported(
                f"the native backend runs kernel '{self.name}' only in one-block launches (its "
                f"lanes may share HBM elements: each write is a phase across the block's lanes, "
                f"while the interpreter runs a launch's blocks as one lane vector, "
                f"docs/native.md#shared-hbm-elements); run it on the interpreter "
                f"(backend='interpreter' or 'auto')", kernel=self.name)
        if self.needs_1d and grid[1] * grid[2] * block[1] * block[2] != 1:
            return NativeUnsupported(
                f"the native backend runs kernel '{self.name}' only in 1-D launches (its "
                f"tensors read and written at get_global_id(0) are lane-private only there); "
                f"run it on the interpreter (backend='interpreter' or 'auto')", kernel=self.name)
        return None

    def _spill_for(self, block: tuple[int, int, int]) -> int:
        """The address of spill slots for every lane of a block of shape `block` (phases.py:
        values live across a barrier), grown when a launch has more lanes than the last."""
        lanes = block[0] * block[1] * block[2]
        if self._spill.size < self.slots * lanes:
            self._spill = aligned_words(self.slots * lanes)  # (phases.ALIGN)
        return self._spill.ctypes.data

    def _error(self, grid: tuple[int, int, int], bound: Sequence[Any]) -> KernelError:
        code, site, address, param, *coords = (int(v) for v in self.err[:10])
        self.err[0] = 0  # the next launch starts clean (a phase's lane loop reads the status)
        self.last_error_code = code  # (replay.py: which errors the interpreter names again)
        if code == COLLECTIVE and self.collective_error is not None:
            error, self.collective_error = self.collective_error, None
            return error
        block, lane = tuple(coords[:3]), tuple(coords[3:])
        if code == WATCHDOG:
            limit = int(self.err[LIMIT_SLOT])
            return KernelError(
                f"this loop has run {limit:,} trips without ending on some lane; check that its "
                f"condition changes (the interpreter stops a loop after "
                f"{watchdog.MAX_TRIPS_ENV}={limit} trips in one launch; set it higher for a loop "
                f"that really runs longer)", kernel=self.name, location=self.loops[site])
        if code == TIME_LIMIT:
            seconds = watchdog._deadline[-1][1] if watchdog._deadline else 0.0
            return KernelError(
                f"this loop was still running when the time limit of {seconds:g} s ran out "
                f"(timeout= of pto.launch / pto.sync); check that its condition changes, or "
                f"give a longer timeout", kernel=self.name, location=self.loops[site])
        if code == while_codegen.DEADLOCK:  # (lanes.py `_divergent_barrier`'s message)
            return DeadlockError(
                f"deadlock: pto.barrier() is not reached by every lane of the warp (lane "
                f"{lane} of block {block} took another path); a barrier must sit in control "
                f"flow that is uniform across the warp", kernel=self.name,
                location=self.barriers[site])
        op, location = self.sites[site]
        if code == int_pow.NEG_EXPONENT:
            return KernelError(int_pow.MESSAGE, kernel=self.name, location=location)
        if code == DIVIDE_BY_ZERO and site in self.step_sites:
            return KernelError(loop_steps.ZERO_STEP, kernel=self.name, location=location)
        if code == DIVIDE_BY_ZERO:
            where = f" in block {block}, lane {lane}" if self.lane_divisors[site] else ""
            return KernelError(f"integer division by zero{where}", kernel=self.name,
                               location=location)
        if code == CAST_RANGE:
            value = np.int64(address).view(np.float64)
            return KernelError(f"pto.cast of {value} to {self.cast_types[site]} is out of range "
                               f"(or NaN)", kernel=self.name, location=location)
        assert code == OOB, code
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
