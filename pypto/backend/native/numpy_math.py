"""The transcendental functions in compiled code: NumPy's own float64 loops, called directly.

One definition for both backends (docs/native.md#exactness): the interpreter evaluates exp,
log, tanh, sin, ..., atan2 and `**` of floats as NumPy's float64 ufunc, rounded once to the
operand type (pypto/exact.py `via_f64`). NumPy's float64 loops are its own SIMD code (SVML-style
on AVX-512 machines), not libm, and may differ from libm in the last bit. So compiled code does
not call libm: it calls *the same machine code* NumPy runs, the ufunc's float64 inner loop
(`void loop(char **args, npy_intp *n, npy_intp *steps, void *data)`), on one element at a time.
The loop computes each element independently of how many it is given (tested on every function
and a few hundred thousand inputs: one element at a time, whole arrays and NumPy scalars give
the same bits).

The loop's address is read from the ufunc object (`PyUFuncObject.functions`, NumPy's public
struct in `ufuncobject.h`), checked by name and by calling it on sample inputs against the
ufunc itself; when anything does not match (another NumPy layout), `unavailable()` says why and
the support check refuses the function, so `backend="auto"` runs the interpreter. The object code
names the loops by symbol (`pypto_numpy_<name>`), bound to this process's addresses when the
object is loaded (`bind_symbols`), so the disk cache stays valid across processes.

`**` of floats is NumPy's float64 `power` loop, except the exponents 2, -1 and 0.5, which are
`a * a`, `1 / a` and `sqrt(a)` (C99's `pow(-0, 0.5) = +0`, `pow(-inf, 0.5) = +inf`): NumPy
itself takes those shortcuts when the exponent is one scalar, so the interpreter's definition
(exact.py `c99_power`) applies them to every lane whatever the exponent's shape.
"""

from __future__ import annotations

import ctypes
import re
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, f64, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from pypto.dialects import pto

if TYPE_CHECKING:
    from pypto.backend.native.to_llvm import _FunctionLowering

UFUNCS: dict[type[Operation], str] = {
    math.ExpOp: "exp", math.LogOp: "log", math.TanhOp: "tanh", math.SinOp: "sin",
    math.CosOp: "cos", math.Exp2Op: "exp2", math.Log2Op: "log2", math.TanOp: "tan",
    math.SinhOp: "sinh", math.CoshOp: "cosh", math.AsinOp: "arcsin", math.AcosOp: "arccos",
    math.AtanOp: "arctan", math.AsinhOp: "arcsinh", math.AcoshOp: "arccosh",
    math.AtanhOp: "arctanh", math.ExpM1Op: "expm1", math.Log10Op: "log10",
    math.Log1pOp: "log1p", math.CbrtOp: "cbrt", math.Atan2Op: "arctan2",
    math.PowFOp: "power",
}
"""The ops computed by NumPy's float64 loop of the ufunc of this name (`pto.sigmoid` uses exp)."""

SYMBOL_PREFIX = "pypto_numpy_"
_HELPER_PREFIX = "pypto.numpy."
_PTR_SIZE = ctypes.sizeof(ctypes.c_void_p)
_LOOP = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p),
                         ctypes.POINTER(ctypes.c_ssize_t), ctypes.POINTER(ctypes.c_ssize_t),
                         ctypes.c_void_p)


def ufunc_of(op: Operation) -> str | None:
    """The ufunc whose loop computes `op` (None: not a transcendental function)."""
    if isinstance(op, pto.SigmoidOp):
        return "exp"
    return UFUNCS.get(type(op))


_TILE_UFUNCS = {"texp": "exp", "tlog": "log", "trowexpandexpdif": "exp",
                "tcolexpandexpdif": "exp"}
"""Tile instructions whose loop nests (tile_loops.py) call NumPy's loop of this name."""


def tile_ufunc(op: Operation) -> str | None:
    """The ufunc a tile instruction compiled as a loop nest calls (None: none), if callable."""
    name = _TILE_UFUNCS.get(op.name.removeprefix("pto."))
    return name if name is not None and _loop(name)[0] is not None else None


def kernel_ufuncs(kernel: Operation) -> list[str]:
    """The ufuncs whose loops the kernel's native code may call (to bind: `bind_symbols`)."""
    return sorted({n for op in kernel.walk()
                   if (n := ufunc_of(op) or tile_ufunc(op)) is not None})


@cache
def _loop(name: str) -> tuple[int | None, str]:
    """(address of the float64 loop of `np.<name>`, "") or (None, why not)."""
    uf = getattr(np, name)
    nargs = uf.nin + uf.nout
    base = id(uf)
    head = 2 * _PTR_SIZE  # PyObject_HEAD: refcount, type
    ints = (ctypes.c_int * 4).from_address(base + head)  # nin, nout, nargs, identity
    if (ints[0], ints[1], ints[2]) != (uf.nin, uf.nout, nargs):
        return None, f"NumPy {np.__version__}'s ufunc layout is not the one expected"
    functions = ctypes.c_void_p.from_address(base + head + 16).value
    data = ctypes.c_void_p.from_address(base + head + 16 + _PTR_SIZE).value
    ntypes = ctypes.c_int.from_address(base + head + 16 + 2 * _PTR_SIZE).value
    named = ctypes.c_char_p.from_address(base + head + 24 + 2 * _PTR_SIZE).value
    types = ctypes.c_void_p.from_address(base + head + 24 + 3 * _PTR_SIZE).value
    if named != name.encode() or not functions or not types or ntypes != uf.ntypes:
        return None, f"NumPy {np.__version__}'s ufunc layout is not the one expected"
    codes = (ctypes.c_char * (ntypes * nargs)).from_address(types).raw
    want = bytes([np.dtype(np.float64).num] * nargs)
    for i in range(ntypes):
        if codes[i * nargs:(i + 1) * nargs] != want:
            continue
        if data and (ctypes.c_void_p * ntypes).from_address(data)[i]:
            return None, f"np.{name}'s float64 loop needs data"
        address = (ctypes.c_void_p * ntypes).from_address(functions)[i]
        if address and _agrees(name, address, uf.nin):
            return int(address), ""
        return None, f"np.{name}'s float64 loop does not give np.{name}'s results"
    return None, f"np.{name} has no float64 loop"


def _agrees(name: str, address: int, nin: int) -> bool:
    """Does the loop at `address`, called one element at a time (the scalar helper) and on 16
    elements at a time (the vector variants), give `np.<name>`'s bits?"""
    rng = np.random.default_rng(29)
    xs = [np.concatenate([rng.standard_normal(64) * 4, rng.uniform(-1, 1, 64),
                          [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324]])
          for _ in range(nin)]
    if nin == 2:
        xs[1] = np.abs(xs[1])
    with np.errstate(all="ignore"):
        want = getattr(np, name)(*xs) if nin == 1 else getattr(np, name)(xs[0], xs[1].copy())
    got = np.empty_like(xs[0])
    loop = _LOOP(address)
    args = (ctypes.c_void_p * (nin + 1))()
    dims = (ctypes.c_ssize_t * 1)(1)
    steps = (ctypes.c_ssize_t * (nin + 1))(*[8] * (nin + 1))
    for k in range(got.size):
        for j in range(nin):
            args[j] = xs[j].ctypes.data + 8 * k
        args[nin] = got.ctypes.data + 8 * k
        loop(args, dims, steps, None)
    vector = np.empty_like(xs[0])
    dims[0] = 16
    for k in range(0, got.size - 15, 16):
        for j in range(nin):
            args[j] = xs[j].ctypes.data + 8 * k
        args[nin] = vector.ctypes.data + 8 * k
        loop(args, dims, steps, None)
    whole = got.size // 16 * 16
    if not np.array_equal(vector[:whole].view(np.uint64), got[:whole].view(np.uint64)):
        return False
    if name == "power":  # exponents 2, -1, 0.5: NumPy's scalar shortcuts (module doc)
        keep = ~np.isin(xs[1], (2.0, -1.0, 0.5))
        got, want = got[keep], want[keep]
    return bool(np.array_equal(got.view(np.uint64), want.view(np.uint64)))


def unavailable(op: Operation) -> str | None:
    """Why `op`'s NumPy loop cannot be called from compiled code (None: it can)."""
    name = ufunc_of(op)
    if name is None:
        return "not a NumPy function"
    return _loop(name)[1] or None


def symbols(module: Operation) -> list[str]:
    """The ufuncs whose loops the lowered `module` calls."""
    return sorted({op.sym_name.data[len(SYMBOL_PREFIX):] for op in module.walk()
                   if isinstance(op, llvm.FuncOp) and
                   op.sym_name.data.startswith(SYMBOL_PREFIX)})


def bind_symbols(names: list[str]) -> None:
    """Resolve `pypto_numpy_<name>` to this process's NumPy loops (before linking an object)."""
    import llvmlite.binding as binding

    for name in names:
        address, why = _loop(name)
        if address is None:
            raise RuntimeError(f"np.{name}'s float64 loop is not callable: {why}")
        binding.add_symbol(SYMBOL_PREFIX + name, address)


# lowering ----------------------------------------------------------------------------------

def lower_math(lowering: _FunctionLowering, op: Operation) -> None:
    """`op` on its operands widened to float64, through NumPy's loop, rounded once."""
    name = ufunc_of(op)
    assert name is not None
    t = op.results[0].type
    wide = [x if x.type == f64 else lowering._before(op, llvm.FPExtOp(x, f64))
            for x in op.operands]
    if isinstance(op, pto.SigmoidOp):  # 1 / (1 + exp(-x)) in float64 (exact.py `_sigmoid`)
        neg = lowering._before(op, llvm.FNegOp(wide[0]))
        e = _call(lowering, op, "exp", [neg])
        one = lowering._const(1.0, f64)
        den = lowering._before(op, one, llvm.FAddOp(one.result, e))
        r = lowering._before(op, llvm.FDivOp(one.result, den))
    elif name == "power":
        r = _power(lowering, op, wide[0], wide[1])
    else:
        r = _call(lowering, op, name, wide)
    lowering.numpy_calls.add(name)
    rounded = lowering._round_f64(op, r, t)
    op.results[0].replace_all_uses_with(rounded)
    op.detach()
    op.erase()


def _call(lowering: _FunctionLowering, op: Operation, name: str,
          args: list[SSAValue]) -> SSAValue:
    lowering.numpy_calls.add(name)
    return lowering._before(op, llvm.CallOp(_HELPER_PREFIX + name, *args, return_type=f64))


def _power(lowering: _FunctionLowering, op: Operation, a: SSAValue, b: SSAValue) -> SSAValue:
    """NumPy's power loop, with the exponents 2, -1, 0.5 as `a*a`, `1/a`, C99's sqrt."""
    p = _call(lowering, op, "power", [a, b])
    before = lowering._before

    def const(v: float) -> SSAValue:
        return before(op, lowering._const(v, f64))

    square = before(op, llvm.FMulOp(a, a))
    inverse = before(op, llvm.FDivOp(const(1.0), a))
    root = before(op, llvm.CallIntrinsicOp("llvm.sqrt.f64", [a], [f64]))
    root = before(op, llvm.FAddOp(root, const(0.0)))  # +0 for -0 (round to nearest)
    is_neg_inf = before(op, llvm.FCmpOp(a, const(-np.inf), "oeq"))
    root = before(op, llvm.SelectOp(is_neg_inf, const(np.inf), root))
    r = p
    for value, special in ((2.0, square), (-1.0, inverse), (0.5, root)):
        hit = before(op, llvm.FCmpOp(b, const(value), "oeq"))
        r = before(op, llvm.SelectOp(hit, special, r))
    return r


def add_helpers(module: ModuleOp, names: set[str]) -> None:
    """Per ufunc, the external loop's declaration and an internal `f64 (f64[, f64])` helper
    calling it on one element (stack slots for the loop's argument arrays)."""
    ptr = llvm.LLVMPointerType()
    existing = {o.sym_name.data for o in module.ops if isinstance(o, llvm.FuncOp)}
    first = module.body.block.first_op
    for name in sorted(names):
        if _HELPER_PREFIX + name in existing:
            continue
        nin = getattr(np, name).nin
        if SYMBOL_PREFIX + name not in existing:  # (tile loop nests may have declared it)
            module.body.block.insert_op_before(llvm.FuncOp(
                SYMBOL_PREFIX + name, llvm.LLVMFunctionType([ptr, ptr, ptr, ptr]),
                linkage=llvm.LinkageAttr("external"), body=Region()), first)
        block = Block(arg_types=[f64] * nin)
        ops: list[Operation] = []

        def emit(o: Operation) -> SSAValue:
            ops.append(o)
            return o.results[0] if o.results else None  # type: ignore[return-value]

        def const(v: int) -> SSAValue:
            return emit(llvm.ConstantOp(IntegerAttr(v, i64), i64))

        one = const(1)
        cells = [emit(llvm.AllocaOp(one, f64, alignment=8)) for _ in range(nin + 1)]
        args = emit(llvm.AllocaOp(const(nin + 1), ptr, alignment=8))
        steps = emit(llvm.AllocaOp(const(nin + 1), i64, alignment=8))
        dims = emit(llvm.AllocaOp(one, i64, alignment=8))
        eight = const(8)
        for j, cell in enumerate(cells):
            if j < nin:
                emit(llvm.StoreOp(block.args[j], cell))
            emit(llvm.StoreOp(cell, emit(llvm.GEPOp.from_mixed_indices(args, [j], ptr))))
            emit(llvm.StoreOp(eight, emit(llvm.GEPOp.from_mixed_indices(steps, [j], i64))))
        emit(llvm.StoreOp(one, dims))
        null = emit(llvm.IntToPtrOp(const(0)))
        ops.append(llvm.CallOp(SYMBOL_PREFIX + name, args, dims, steps, null))
        result = emit(llvm.LoadOp(cells[nin], f64))
        ops.append(llvm.ReturnOp(result))
        block.add_ops(ops)
        module.body.block.insert_op_before(llvm.FuncOp(
            _HELPER_PREFIX + name, llvm.LLVMFunctionType([f64] * nin, f64),
            linkage=llvm.LinkageAttr("internal"), body=Region(block)), first)


# one call per vector of lanes ---------------------------------------------------------------

VECTOR_WIDTHS = (2, 4, 8, 16, 32, 64)
"""The widths of the vector variants offered to LLVM's loop vectoriser (it picks one: 16 lanes
of float32 on AVX-512, 32 of float16)."""

PER_ELEMENT_SYMBOL = "pypto.numpy.per_element"
"""A byte in the object code: 1 when some function still calls a NumPy loop once per element
in its hot path (its lane loop was not vectorised), 0 otherwise (`mark_per_element`)."""


def _variant_name(helper: str, width: int, masked: bool) -> str:
    return f"{helper}.{'m' if masked else 'n'}{width}"


def add_vector_variants(module: Any) -> None:
    """Let LLVM's loop vectoriser call NumPy's loop once per vector of lanes.

    `module` is the llvmlite `ir.Module` of a lowered kernel. Each scalar helper
    `pypto.numpy.<name>` (one element: `add_helpers`) gets vector variants
    `<N x double> pypto.numpy.<name>.nN(<N x double>...)` (and `.mN`, with a lane mask, which
    computes every lane: the inactive ones' results are not used) that store the N arguments
    to the stack and call the ufunc's float64 loop once with N elements, and the scalar helper
    is declared to have them (LLVM's `vector-function-abi-variant` attribute, the vector
    function ABI of `#pragma omp declare simd`): where the vectoriser turns a lane loop into
    vector code, each vector of lanes is one call of NumPy's loop instead of N. The loop
    computes each element independently of how many it is given (module doc), so the bits are
    the same. The scalar helper is `noinline` (inlined, its call would be hidden from the
    vectoriser) and has no memory effects from its caller's view (its own stack slots only).
    The variants keep external linkage: unused internal functions are deleted before the
    vectoriser could use them."""
    from llvmlite import ir

    f64t = ir.DoubleType()
    i64t = ir.IntType(64)
    ptr = ir.PointerType()
    for fn in list(module.functions):
        if not fn.name.startswith(_HELPER_PREFIX) or not fn.blocks:
            continue
        name = fn.name[len(_HELPER_PREFIX):]
        if name not in UFUNCS.values():
            continue
        nin = getattr(np, name).nin
        loop = module.get_global(SYMBOL_PREFIX + name)
        variants = []
        for width in VECTOR_WIDTHS:
            vt = ir.VectorType(f64t, width)
            for masked in (False, True):
                params = [vt] * nin + ([ir.VectorType(ir.IntType(1), width)] if masked else [])
                variant = ir.Function(module, ir.FunctionType(vt, params),
                                      name=_variant_name(fn.name, width, masked))
                variant.attributes.add("nounwind")
                b = ir.IRBuilder(variant.append_basic_block("entry"))
                # (each cell at least 64 bytes: NumPy's SIMD loops take their blocked path
                # only for arguments at least a vector apart, as for arrays)
                cells = [b.alloca(vt, max(1, 8 // width)) for _ in range(nin + 1)]
                for cell in cells:
                    cell.align = 64
                argv = b.alloca(ptr, nin + 1)
                steps = b.alloca(i64t, nin + 1)
                dims = b.alloca(i64t)
                for j, cell in enumerate(cells):
                    if j < nin:
                        b.store(variant.args[j], cell)
                    index = ir.Constant(i64t, j)
                    b.store(cell, b.gep(argv, [index], source_etype=ptr))
                    b.store(ir.Constant(i64t, 8), b.gep(steps, [index], source_etype=i64t))
                b.store(ir.Constant(i64t, width), dims)
                b.call(loop, [argv, dims, steps, ir.Constant(ptr, None)])
                b.ret(b.load(cells[nin], typ=vt))
                variants.append(f"_ZGV_LLVM_{'M' if masked else 'N'}{width}{'v' * nin}_"
                                f"{fn.name}({variant.name})")
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        fn.attributes.add("nounwind")
        for raw in ("memory(none)", "willreturn",
                    f'"vector-function-abi-variant"="{",".join(variants)}"'):
            set.add(fn.attributes, raw)  # (not in llvmlite's list of known attributes)


def _calls(text: str) -> tuple[bool, bool]:
    """(calls a scalar helper, calls a vector variant) in one function's LLVM IR text."""
    scalar = vector = False
    for m in re.finditer(r'call[^\n]*@"?' + re.escape(_HELPER_PREFIX) +
                         r'[a-z0-9]+(\.[mn]\d+)?"?\(', text):
        if m.group(1):
            vector = True
        else:
            scalar = True
    return scalar, vector


def mark_per_element(mod: Any) -> None:
    """Add `PER_ELEMENT_SYMBOL` to the optimised llvmlite binding module `mod`: 1 when a
    function of the kernel calls a NumPy loop on single elements and never on a vector (its
    lane loop was not vectorised: about 10x the interpreter's time for exp), 0 otherwise.
    The checked functions (`.checked`: a block with an access out of range or a partial edge
    block) and the vectoriser's remainder loops call the scalar helper on a few lanes: a
    function that also calls a vector variant is fast."""
    import llvmlite.binding as binding

    slow = 0
    for fn in mod.functions:
        if fn.is_declaration or fn.name.startswith(_HELPER_PREFIX) or \
                fn.name.endswith(".checked"):
            continue
        scalar, vector = _calls(str(fn))
        if scalar and not vector:
            slow = 1
    flag = binding.parse_assembly(f'@"{PER_ELEMENT_SYMBOL}" = constant i8 {slow}\n')
    flag.triple = mod.triple
    flag.data_layout = mod.data_layout
    mod.link_in(flag)


def per_element(engine: Any) -> bool:
    """Does the loaded kernel (an llvmlite execution engine) call NumPy's loops per element
    in its hot path (`mark_per_element`)? Object code without the mark calls none."""
    address = engine.get_global_value_address(PER_ELEMENT_SYMBOL)
    return bool(address) and ctypes.c_uint8.from_address(address).value == 1


# wider vectors for lane loops calling NumPy ------------------------------------------------

LANE_LOOP_WIDTH = 64
"""Lanes per call of NumPy's loop in a vectorised lane loop (`widen_lane_loops`)."""


def _loop_id(module: Any, width: int) -> Any:
    """A distinct, self-referential `llvm.loop` node asking for vectorisation at `width`."""
    from llvmlite import ir

    hint = module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.width"),
                                ir.Constant(ir.IntType(32), width)])
    # (no "llvm.loop.vectorize.enable": a loop forced that way which cannot be vectorised,
    # a checked lane loop with its early exits, makes LLVM print a warning)
    return loop_node(module, [hint])


def loop_node(module: Any, hints: list[Any]) -> Any:
    """A distinct, self-referential `llvm.loop` node holding `hints` (metadata nodes of
    llvmlite `module`), for a loop's back-edge branch."""
    from llvmlite import ir

    class LoopID(ir.values.MDValue):  # type: ignore[misc, name-defined]
        def descr(self, buf: list[str]) -> None:
            ops = ", ".join([self.get_reference(), *[o.get_reference() for o in self.operands]])
            buf += (f"distinct !{{ {ops} }}", "\n")

    return LoopID(module, hints, name=str(len(module.metadata)))


def _successors(block: Any) -> list[Any]:
    from llvmlite import ir

    term = block.terminator
    if isinstance(term, ir.ConditionalBranch):
        return [term.operands[1], term.operands[2]]
    if isinstance(term, ir.Branch):
        return [term.operands[0]]
    if isinstance(term, ir.SwitchInstr):
        return [term.default, *[b for _, b in term.cases]]
    return []


def _innermost_loops(fn: Any, wanted: set[Any]) -> list[Any]:
    """The back-edge branches of the innermost natural loops of llvmlite function `fn`
    containing a block of `wanted`."""
    blocks = list(fn.blocks)
    succ = {b: _successors(b) for b in blocks}
    pred: dict[Any, list[Any]] = {b: [] for b in blocks}
    for b in blocks:
        for s in succ[b]:
            pred[s].append(b)
    entry = blocks[0]
    dom = {b: set(blocks) for b in blocks}
    dom[entry] = {entry}
    changed = True
    while changed:
        changed = False
        for b in blocks[1:]:
            ps = [dom[p] for p in pred[b]]
            new = (set.intersection(*ps) if ps else set()) | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    loops = []
    for b in blocks:
        for h in succ[b]:
            if h in dom[b]:  # b -> h is a back edge: the loop of header h
                body, work = {h, b}, [b]
                while work:
                    x = work.pop()
                    for p in pred[x]:
                        if p not in body:
                            body.add(p)
                            work.append(p)
                loops.append((body, b))
    chosen = []
    for block in wanted:
        around = [(body, latch) for body, latch in loops if block in body]
        if around:
            chosen.append(min(around, key=lambda lp: len(lp[0]))[1])
    return chosen


def _plain(fn: Any) -> bool:
    """Does lane function `fn` call only NumPy's helpers and LLVM intrinsics, with no atomic
    instruction (what LLVM's vectoriser would refuse: it prints why, for a hinted loop)?"""
    from llvmlite import ir

    for b in fn.blocks:
        for i in b.instructions:
            if i.opname in ("atomicrmw", "cmpxchg", "fence"):
                return False
            if isinstance(i, ir.CallInstr):
                name = getattr(i.callee, "name", "")
                if not name.startswith((_HELPER_PREFIX, "llvm.")):
                    return False
    return True


LANE_ID_ARGS = (-10, -9, -8)
"""The positions of `tx, ty, tz` among a lane function's arguments (then the grid's and the
block's dimensions and the error record: simt_to_lanes.py, phase_codegen.py)."""


def _uniform_store(fn: Any) -> bool:
    """Does llvmlite lane function `fn` store to an address that does not depend on its lane
    (every lane of a vectorised loop would write the same address: LLVM refuses that loop)?
    Per function, so a phase-split kernel whose `if tid == 0: out[row] = v` sits in a phase
    of its own still gets its other lane loops widened."""
    args = list(fn.args)
    varying = {id(args[i]) for i in LANE_ID_ARGS}
    changed = True
    while changed:  # forward closure through the operands (phis included)
        changed = False
        for b in fn.blocks:
            for i in b.instructions:
                if id(i) not in varying and any(id(o) in varying for o in i.operands):
                    varying.add(id(i))
                    changed = True
    return any(i.opname == "store" and id(i.operands[1]) not in varying
               for b in fn.blocks for i in b.instructions)


def widenable(kernel: Operation) -> bool:
    """May the lane loops of `kernel` (a pto kernel) carry a vectorisation width hint? Not
    when a lane writes memory at an address every lane shares (atomics, a uniform store):
    LLVM cannot vectorise that loop and, for a hinted one, prints why; nor with printf."""
    from pypto.analysis.uniformity import varying_values

    varying = varying_values(kernel)  # type: ignore[arg-type]
    for op in kernel.walk():
        if isinstance(op, (pto.AtomicAddOp, *pto.ATOMIC_OPS, pto.PrintfOp)):
            return False
        address = op.ptr if isinstance(op, pto.StoreOp) else \
            op.dst if isinstance(op, pto.FmaOp) else None
        if address is not None and address not in varying:
            return False
    return True


def widen_lane_loops(module: Any, kernel: Operation) -> None:
    """Ask LLVM to vectorise every innermost loop calling NumPy's loops (through an inlined
    lane function) at `LANE_LOOP_WIDTH` lanes (`llvm.loop.vectorize.width`): the vectoriser
    would pick 16 lanes of float32 (one AVX-512 register), and a call of NumPy's loop costs
    about as much as 16 elements of exp (70 ns for tanh, against 2 ns per element): 64 lanes
    per call pays it a quarter as often. Only where `widenable(kernel)`: LLVM prints why it
    did not vectorise a hinted loop."""
    from llvmlite import ir

    calls: set[str] = {f.name for f in module.functions if f.name.startswith(_HELPER_PREFIX)}
    if not calls:
        return
    whole = widenable(kernel)  # else only lane functions without a uniform store (phases)
    callers = set(calls)
    changed = True
    while changed:  # functions calling them, directly or through other functions
        changed = False
        for fn in module.functions:
            if fn.name in callers or not fn.blocks:
                continue
            if any(isinstance(i, ir.CallInstr) and getattr(i.callee, "name", "") in callers
                   for b in fn.blocks for i in b.instructions):
                callers.add(fn.name)
                changed = True
    # only the loops over a fast lane function (fast_blocks.py: no checks, no early exits):
    # LLVM prints its analysis to stderr when a loop with a width hint is not vectorised
    # (and whose vectorisation nothing in them forbids: calls of other functions such as the
    # atomics' and printf's, atomic instructions)
    functions = {f.name: f for f in module.functions}
    fast = {name for name in callers if name.endswith(".fast.lane") and
            _plain(functions[name]) and (whole or not _uniform_store(functions[name]))}
    if not fast:
        return
    loop_id = None
    for fn in module.functions:
        if not fn.blocks or fn.name.startswith(_HELPER_PREFIX):
            continue
        wanted = {b for b in fn.blocks for i in b.instructions
                  if isinstance(i, ir.CallInstr) and getattr(i.callee, "name", "") in fast}
        if not wanted:
            continue
        for latch in _innermost_loops(fn, wanted):
            if loop_id is None:
                loop_id = _loop_id(module, LANE_LOOP_WIDTH)
            latch.terminator.set_metadata("llvm.loop", loop_id)
