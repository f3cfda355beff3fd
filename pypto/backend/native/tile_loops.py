"""The simple tile vector instructions compiled as loops in the grid function (no callback).

A tile instruction in native code is a call into the interpreter's NumPy definition
(tiles.py), a few microseconds of Python per block and instruction. For the instructions
whose result per element is one IEEE operation or integer operation — add, sub, mul, div,
min, max, and, or, xor on two tiles, with a uniform scalar (`tadds` ...), or with a row / column
broadcast (`trowexpandmul` ...), the fill `texpands`, the broadcasts `trowexpand` /
`tcolexpand`, `ttrans`, and the sums `trowsum` / `tcolsum` in tile_ops.fold's order
(`_fold_loops`) — the phase plan's grid function gets instead a loop nest over the
tile (rows, then columns) of `pto.load`, the `arith` op and `pto.store` on the L1 arena: the
ops the lanes use, lowered by convert-pto-to-llvm with the interpreter's semantics (exactly
rounded IEEE arithmetic, `arith.maximumf` / `minimumf` as NaN-propagating with -0 < +0,
wrapping integers), so the same bits as NumPy's ufunc on the tile; tests/backend/native/
test_tiles.py compares both paths with the interpreter, byte for byte.

Only when it is safe without the callback's checks: every tile operand is a `pto.alloc_local`
itself (offset 0: the verifier has checked that it holds the tile, so no access can leave it),
element type f32, f16, i32 or i64 (float16 min / max excepted: LLVM's float16 minimum and
maximum did not give NumPy's bits), and a broadcast, transposed or reduced operand is not the
destination's buffer (the loop would overwrite what it still reads; NumPy reads it all first).
The accesses are marked unchecked (fast_blocks.UNCHECKED_ATTR): in range by construction.

Also loops since issue 29's speed work: the unary instructions (`tsqrt trsqrt trecip tabs
tneg trelu tnot`: `_unary`, one flat loop), `texp` / `tlog` and the expdif forms (`_chunked`:
NumPy's float64 loop, the interpreter's definition, called on 1,024 elements at a time), and
the max / min reductions (`_extreme_loops`: order-free IEEE maximum / minimum; a float tile
holding a NaN is recomputed by the call, `_unless_nan`, for NumPy's NaN payload), and `tcvt`
where it is one LLVM cast (`_convert`). Everything else (arg reductions, the other tcvt,
compares, selects, taxpy, shifts, bf16, operands at an offset) stays a call.
"""

from __future__ import annotations

from typing import Callable

from xdsl.dialects import arith, func, llvm, math, scf
from xdsl.dialects.builtin import (Float16Type, Float32Type, FloatAttr, IntegerAttr,
                                   IntegerType, UnitAttr, f64, i1, i8, i32, i64)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from pypto.backend.native.fast_blocks import UNCHECKED_ATTR
from pypto.backend.native.quick_ops import ANY_NAN_ATTR
from pypto.dialects import pto
from pypto.dialects.traits import tile_shape, tile_vector

ENABLED = True
"""Compile the simple instructions as loops (False: every one a call; for tests)."""

_FLOAT = {"add": arith.AddfOp, "sub": arith.SubfOp, "mul": arith.MulfOp, "div": arith.DivfOp,
          "max": arith.MaximumfOp, "min": arith.MinimumfOp}
_INT = {"add": arith.AddiOp, "sub": arith.SubiOp, "mul": arith.MuliOp, "max": arith.MaxSIOp,
        "min": arith.MinSIOp, "and": arith.AndIOp, "or": arith.OrIOp, "xor": arith.XOrIOp}


def _combine(what: str, t: Attribute) -> Callable[[SSAValue, SSAValue], Operation] | None:
    table = _FLOAT if isinstance(t, Float16Type | Float32Type) else \
        _INT if isinstance(t, IntegerType) and t.width.data in (32, 64) else {}
    cls = table.get(what)
    if cls is None:
        return None
    return lambda a, b: cls(a, b)  # type: ignore[call-arg]


def tile_ufunc_missing(op: Operation) -> bool:
    """Would `op`'s loop nest call a NumPy loop that is not callable (numpy_math.py)?"""
    from pypto.backend.native.numpy_math import _TILE_UFUNCS, tile_ufunc

    return op.name.removeprefix("pto.") in _TILE_UFUNCS and tile_ufunc(op) is None


Emit = Callable[[Operation], SSAValue]
_UNARY = ("exp", "log", "sqrt", "rsqrt", "recip", "abs", "neg", "relu", "not")


def _unary(what: str, t: Attribute) -> Callable[[Emit, SSAValue], SSAValue] | None:
    """The lanes' ops for unary tile instruction `what` on element type `t` (tile_ops.py's
    definitions: sqrt correctly rounded; rsqrt 1 / sqrt in float64 rounded once; recip 1 / a
    in the type; relu a where a > 0 or NaN, else +0; integer abs / neg wrapping). exp and log
    are `_chunked`."""
    if isinstance(t, Float16Type | Float32Type):
        def zero(e: Emit) -> SSAValue:
            return e(arith.ConstantOp(FloatAttr(0.0, t)))
        table: dict[str, Callable[[Emit, SSAValue], SSAValue]] = {
            "sqrt": lambda e, a: e(math.SqrtOp(a)),
            "rsqrt": lambda e, a: e(math.RsqrtOp(a)),
            "recip": lambda e, a: e(arith.DivfOp(e(arith.ConstantOp(FloatAttr(1.0, t))), a)),
            "abs": lambda e, a: e(math.AbsFOp(a)),
            "neg": lambda e, a: e(arith.NegfOp(a)),
            "relu": lambda e, a: e(arith.SelectOp(
                e(arith.OrIOp(e(arith.CmpfOp(a, zero(e), "ogt")), e(arith.CmpfOp(a, a, "uno")))),
                a, zero(e))),
        }
        return table.get(what)
    if isinstance(t, IntegerType) and t.width.data in (32, 64):
        def c(e: Emit, v: int) -> SSAValue:
            return e(arith.ConstantOp(IntegerAttr(v, t)))
        table = {
            "neg": lambda e, a: e(arith.SubiOp(c(e, 0), a)),
            "abs": lambda e, a: e(arith.SelectOp(e(arith.CmpiOp(a, c(e, 0), "slt")),
                                                 e(arith.SubiOp(c(e, 0), a)), a)),
            "not": lambda e, a: e(arith.XOrIOp(a, c(e, -1))),
            "relu": lambda e, a: e(arith.MaxSIOp(a, c(e, 0))),
        }
        return table.get(what)
    return None


def _form(op: Operation) -> tuple[str, str | None] | None:
    """(form, elementwise op) of an instruction compiled as a loop, else None. Forms: "bin"
    (dst = a op b), "scalar" (a op s), "fill" (s), "rowx" / "colx" (a op v, v broadcast),
    "row" / "col" (v broadcast), "trans", "unary" (f(a), one flat loop), "rowsum" /
    "colsum", "rowext" / "colext" (max / min along rows / columns)."""
    name = op.name.removeprefix("pto.t")
    if name == "expands":
        return "fill", None
    if name == "trans":
        return "trans", None
    for prefix in ("row", "col"):
        if name.startswith(prefix + "expand"):
            what = name[len(prefix) + len("expand"):]
            return (prefix, None) if not what else (prefix + "x", what)
    if name in ("rowsum", "colsum"):
        return name, "add"
    if name in ("rowmax", "rowmin", "colmax", "colmin"):
        return name[:3] + "ext", name[3:]
    if name in _UNARY:
        return "unary", name
    trait = tile_vector(op)
    assert trait is not None
    if trait.roles == ("full", "full", "full") and name in (*_FLOAT, *_INT):
        return "bin", name
    if trait.roles == ("full", "full", "value") and name.endswith("s") and \
            name[:-1] in (*_FLOAT, *_INT):
        return "scalar", name[:-1]
    return None


def emit(op: Operation, operands: list[SSAValue], block: Block) -> bool:
    """Append to `block` (a grid function's, in scf form) the loop nest computing tile
    instruction `op` with `operands` (its operands resolved in the grid function); False,
    having added nothing, when `op` stays a call (tiles.py)."""
    if not ENABLED or tile_vector(op) is None:
        return False
    if op.name == "pto.tcvt":
        return _convert(op, operands, block)
    form = _form(op)
    if form is None:
        return False
    kind, what = form
    trait = tile_vector(op)
    assert trait is not None
    dst = op.operands[0]
    elem = pto.element_type_of(dst.type)
    if not isinstance(elem, Float16Type | Float32Type) and not (
            isinstance(elem, IntegerType) and elem.width.data in (32, 64)):
        return False
    rows, cols = tile_shape(op)
    shifted: list[tuple[SSAValue, int]] = []  # (offset in the grid, largest valid offset)
    for index, role in enumerate(trait.roles):
        value = op.operands[index]
        if role == "value":
            continue
        buffer = _buffer(value)
        if buffer is None:
            return False
        if value.owner is not buffer:  # a full tile at an offset: a double-buffered slot
            resolved = operands[index].owner
            if role != "full" or not isinstance(resolved, pto.AddPtrOp):
                return False
            count = buffer.results[0].type.size  # type: ignore[attr-defined]
            shifted.append((resolved.operands[1], count - rows * cols))
        if pto.element_type_of(value.type) != elem:
            return False
        if index and (role != "full" or kind in ("rowsum", "colsum", "rowext", "colext")) and \
                buffer is _buffer(dst):
            return False  # a broadcast, transposed or reduced operand in the destination's
    if tile_ufunc_missing(op):
        return False  # (NumPy's loop is not callable here: the call computes it)
    if not shifted:
        return _emit_loops(op, operands, block, kind, what, elem)
    # the loops when every slot lies inside its buffer, else the call (which raises its error)
    loops = Block()
    if not _emit_loops(op, operands, loops, kind, what, elem):
        return False
    loops.add_op(scf.YieldOp())
    ok = _in_range(block, shifted)
    call = Block([op.clone(value_mapper=dict(zip(op.operands, operands))), scf.YieldOp()])
    block.add_op(scf.IfOp(ok, [], Region(loops), Region(call)))
    return True


def _emit_loops(op: Operation, operands: list[SSAValue], block: Block, kind: str,
                what: str | None, elem: Attribute) -> bool:
    """The loop nest of `op` (its operands checked by `emit`) at `block`; False, having added
    nothing, when this form and type stay a call."""
    rows, cols = tile_shape(op)
    ufunc = {"exp": "exp", "log": "log", "expdif": "exp"}.get(what or "")
    if ufunc is not None and kind in ("unary", "rowx", "colx") and \
            isinstance(elem, Float16Type | Float32Type):
        _declare_loop(op, ufunc)
        _chunked(block, rows, cols, kind, ufunc, elem, operands)
        return True
    if kind == "unary":
        f = _unary(what, elem)  # type: ignore[arg-type]
        if f is None:
            return False
        _flat_loop(block, rows * cols, f, operands)
        return True
    if kind in ("rowext", "colext"):
        flag = _extreme_loops(block, rows, cols, kind == "rowext", what == "max", elem,
                              operands)
        if flag is not None:
            _unless_nan(block, op, operands, flag)
        return True
    combine = _combine(what, elem) if what is not None else None
    if what is not None and combine is None:
        return False
    if isinstance(elem, Float16Type) and what in ("min", "max"):
        return False  # (LLVM's float16 minimum / maximum do not give NumPy's bits)
    if kind in ("rowsum", "colsum"):
        _fold_loops(block, rows, cols, kind == "rowsum", elem, operands)
    else:
        _loops(block, rows, cols, kind, combine, operands)
    return True


def _buffer(value: SSAValue) -> pto.AllocLocalOp | None:
    """The `pto.alloc_local` a tile operand is, or is at an offset in (`pto.addptr` of it)."""
    owner = value.owner
    if isinstance(owner, pto.AddPtrOp):
        owner = owner.operands[0].owner
    return owner if isinstance(owner, pto.AllocLocalOp) else None


def _in_range(block: Block, shifted: list[tuple[SSAValue, int]]) -> SSAValue:
    """At `block`: is every full-tile operand at a run-time offset in its buffer (a
    double-buffered tile's slot, `pto.addptr %x, slot * rows * cols`) inside it, each offset in
    `[0, largest]`? Then the loops' unchecked accesses are in range."""
    ok: SSAValue | None = None
    for offset, largest in shifted:
        bounds = [arith.ConstantOp(IntegerAttr(v, offset.type)) for v in (0, largest)]
        block.add_ops(bounds)
        for test in (arith.CmpiOp(offset, bounds[0].result, "sge"),
                     arith.CmpiOp(offset, bounds[1].result, "sle")):
            block.add_op(test)
            if ok is None:
                ok = test.result
            else:
                both = arith.AndIOp(ok, test.result)
                block.add_op(both)
                ok = both.result
    assert ok is not None
    return ok


def _convert(op: Operation, operands: list[SSAValue], block: Block) -> bool:
    """`tcvt` where it is one LLVM cast (tile_ops `convert`): float16 <-> float32 rounded to
    nearest even (`fptrunc`, correctly rounded; widening is exact in every mode), int32 <->
    int64 in any mode (wrapping, as `astype`). Both tiles whole `pto.alloc_local` buffers;
    the other conversions (to and from integers, the directed roundings) stay calls."""
    dst, src = op.operands[0], op.operands[1]
    if not isinstance(dst.owner, pto.AllocLocalOp) or not isinstance(src.owner, pto.AllocLocalOp):
        return False
    to, frm = pto.element_type_of(dst.type), pto.element_type_of(src.type)
    rounding = op.properties.get("rounding")
    mode = getattr(rounding, "data", "rne")
    floats = (Float16Type, Float32Type)
    if isinstance(to, floats) and isinstance(frm, floats):
        if to == frm:
            f: Callable[[Emit, SSAValue], SSAValue] = lambda e, a: a
        elif isinstance(to, Float32Type):
            f = lambda e, a: e(arith.ExtFOp(a, to))  # noqa: E731 (exact)
        elif mode == "rne":
            f = lambda e, a: e(arith.TruncFOp(a, to))  # noqa: E731
        else:
            return False
    elif isinstance(to, IntegerType) and isinstance(frm, IntegerType) and \
            to.width.data in (32, 64) and frm.width.data in (32, 64):
        if to == frm:
            f = lambda e, a: a  # noqa: E731
        elif to.width.data > frm.width.data:
            f = lambda e, a: e(arith.ExtSIOp(a, to))  # noqa: E731
        else:
            f = lambda e, a: e(arith.TruncIOp(a, to))  # noqa: E731
    else:
        return False
    rows, cols = tile_shape(op)
    _flat_loop(block, rows * cols, f, operands)
    return True


CHUNK = 1024
"""Elements per call of NumPy's loop in a tile instruction's loop nest (`_chunked`)."""


def _declare_loop(op: Operation, ufunc: str) -> None:
    """Declare NumPy's float64 loop `pypto_numpy_<ufunc>` (numpy_math.py) in the module
    holding `op`, once (the call is an `llvm.call`, verified against the module's symbols).
    A kernel outside any module is split only to count its spill slots: nothing is lowered
    from it, so nothing is declared."""
    from xdsl.dialects.builtin import ModuleOp

    from pypto.backend.native.numpy_math import SYMBOL_PREFIX

    module = op.parent_op()
    while module is not None and not isinstance(module, ModuleOp):
        module = module.parent_op()
    if module is None:
        return
    name = SYMBOL_PREFIX + ufunc
    body = module.body.block
    if not any(isinstance(o, llvm.FuncOp) and o.sym_name.data == name for o in body.ops):
        ptr = llvm.LLVMPointerType()
        decl = llvm.FuncOp(name, llvm.LLVMFunctionType([ptr, ptr, ptr, ptr]),
                           linkage=llvm.LinkageAttr("external"), body=Region())
        if body.first_op is None:
            body.add_op(decl)
        else:
            body.insert_op_before(decl, body.first_op)


def _chunked(block: Block, rows: int, cols: int, kind: str, ufunc: str, elem: Attribute,
             operands: list[SSAValue]) -> None:
    """texp / tlog (`kind` "unary": the tile as one row of rows x cols elements) and
    trowexpandexpdif / tcolexpandexpdif ("rowx" / "colx": the difference a - v rounded to
    the tile's type first, tile_ops `_expdif`) as NumPy's float64 loop called on up to
    `CHUNK` elements at a time: per row and chunk, a loop widening the arguments into a
    float64 scratch array, one call of the loop (numpy_math.py: the interpreter's very
    definition, `np.exp(..., dtype=float64)` rounded once), a loop rounding the results into
    the destination. Both loops are vectorised by LLVM; one call per 1,024 elements costs
    nothing beside them (per vector of 16 lanes it was a third of the time)."""
    n_rows, n_cols = (1, rows * cols) if kind == "unary" else (rows, cols)
    chunk = min(CHUNK, n_cols)
    ptr = llvm.LLVMPointerType()
    args_in = _scratch(block, chunk, f64)
    args_out = _scratch(block, chunk, f64)
    argv = _scratch(block, 2, ptr)
    steps = _scratch(block, 2, i64)
    dims = _scratch(block, 1, i64)

    def row(b: Block, r: SSAValue) -> None:
        def e(o: Operation, where: Block = b) -> SSAValue:
            where.add_op(o)
            return o.results[0]

        def load(where: Block, base: SSAValue, index: SSAValue) -> SSAValue:
            ld = pto.LoadOp(e(pto.AddPtrOp(base, index), where))
            ld.attributes[UNCHECKED_ATTR] = UnitAttr()
            return e(ld, where)

        v = load(b, operands[2], r) if kind == "rowx" else None  # (once per row: see _loops)
        base = e(arith.MuliOp(r, _const(b, n_cols)))

        def piece(pb: Block, c0: SSAValue) -> None:
            def ep(o: Operation) -> SSAValue:
                return e(o, pb)
            left = ep(arith.SubiOp(_const(pb, n_cols), c0))
            m = ep(arith.MinSIOp(left, _const(pb, chunk)))

            def widen(wb: Block, j: SSAValue) -> None:
                c = e(arith.AddiOp(c0, j), wb)
                x = load(wb, operands[1], e(arith.AddiOp(base, c), wb))
                if kind == "rowx":
                    x = e(arith.SubfOp(x, v), wb)  # type: ignore[arg-type]
                elif kind == "colx":
                    x = e(arith.SubfOp(x, load(wb, operands[2], c)), wb)
                wide = e(arith.ExtFOp(x, f64), wb)
                wb.add_op(llvm.StoreOp(wide, e(llvm.GEPOp.from_mixed_indices(
                    args_in, [e(arith.ExtSIOp(j, i64), wb)], f64), wb)))

            def narrow(nb: Block, j: SSAValue) -> None:
                c = e(arith.AddiOp(c0, j), nb)
                wide = e(llvm.LoadOp(e(llvm.GEPOp.from_mixed_indices(
                    args_out, [e(arith.ExtSIOp(j, i64), nb)], f64), nb), f64), nb)
                st = pto.StoreOp(e(arith.TruncFOp(wide, elem), nb),
                                 e(pto.AddPtrOp(operands[0], e(arith.AddiOp(base, c), nb)), nb))
                st.attributes[UNCHECKED_ATTR] = UnitAttr()
                nb.add_op(st)

            _for_to(pb, m, widen)
            pb.add_op(llvm.StoreOp(args_in, argv))
            pb.add_op(llvm.StoreOp(args_out, ep(llvm.GEPOp.from_mixed_indices(argv, [1], ptr))))
            eight = ep(arith.ConstantOp(IntegerAttr(8, i64)))
            pb.add_op(llvm.StoreOp(eight, steps))
            pb.add_op(llvm.StoreOp(eight, ep(llvm.GEPOp.from_mixed_indices(steps, [1], i64))))
            pb.add_op(llvm.StoreOp(ep(arith.ExtSIOp(m, i64)), dims))
            null = ep(llvm.IntToPtrOp(ep(arith.ConstantOp(IntegerAttr(0, i64)))))
            pb.add_op(llvm.CallOp(_loop_symbol(ufunc), argv, dims, steps, null))
            _for_to(pb, m, narrow)

        inner = Block(arg_types=[i32])
        piece(inner, inner.args[0])
        inner.add_op(scf.YieldOp())
        b.add_op(scf.ForOp(_const(b, 0), _const(b, n_cols), _const(b, chunk), [],
                           Region(inner)))

    _for(block, 0, n_rows, row)


def _loop_symbol(ufunc: str) -> str:
    from pypto.backend.native.numpy_math import SYMBOL_PREFIX

    return SYMBOL_PREFIX + ufunc


def _for_to(block: Block, hi: SSAValue, body: Callable[[Block, SSAValue], None]) -> None:
    """for j in range(0, hi): body (hi a value)."""
    inner = Block(arg_types=[i32])
    body(inner, inner.args[0])
    inner.add_op(scf.YieldOp())
    block.add_op(scf.ForOp(_const(block, 0), hi, _const(block, 1), [], Region(inner)))


def _flat_loop(block: Block, count: int, f: Callable[[Emit, SSAValue], SSAValue],
               operands: list[SSAValue]) -> None:
    """dst[i] = f(a[i]) for i < count: both operands whole `pto.alloc_local` tiles (row-major,
    contiguous), so one loop over the elements, which LLVM vectorises (a tile of one column
    too)."""
    def body(b: Block, i: SSAValue) -> None:
        def e(o: Operation) -> SSAValue:
            b.add_op(o)
            return o.results[0]
        ld = pto.LoadOp(e(pto.AddPtrOp(operands[1], i)))
        ld.attributes[UNCHECKED_ATTR] = UnitAttr()
        value = f(e, e(ld))
        st = pto.StoreOp(value, e(pto.AddPtrOp(operands[0], i)))
        st.attributes[UNCHECKED_ATTR] = UnitAttr()
        b.add_op(st)
    _for(block, 0, count, body)


def _extreme_loops(block: Block, rows: int, cols: int, by_row: bool, biggest: bool,
                   elem: Attribute, operands: list[SSAValue]) -> SSAValue | None:
    """`trowmax` / `trowmin` / `tcolmax` / `tcolmin` of a whole tile: per line, the IEEE
    maximum (minimum) of its elements (arith.maximumf: NaN if any is NaN, +0 above -0;
    signed integer max / min), an associative and commutative operation, so any order gives
    tile_ops `_extreme`'s value. A NaN's payload is the exception: which NaN NumPy's
    reduction returns depends on its loop, so a float tile holding a NaN is recomputed by the
    interpreter's definition (`_unless_nan`): for a float tile, the result is the scratch
    byte (nonzero: the tile holds a NaN) this loop nest sets."""
    lines, n = (rows, cols) if by_row else (cols, rows)
    is_float = isinstance(elem, Float16Type | Float32Type)
    if is_float:
        pick = arith.MaximumfOp if biggest else arith.MinimumfOp
    else:
        pick = arith.MaxSIOp if biggest else arith.MinSIOp
    flag = _scratch(block, 1, i8) if is_float else None
    if flag is not None:
        zero8 = arith.ConstantOp(IntegerAttr(0, i8))
        block.add_op(zero8)
        block.add_op(llvm.StoreOp(zero8.result, flag))

    def line(b: Block, k: SSAValue) -> None:
        def e(o: Operation) -> SSAValue:
            b.add_op(o)
            return o.results[0]

        def src(bb: Block, i: SSAValue) -> SSAValue:
            def ee(o: Operation) -> SSAValue:
                bb.add_op(o)
                return o.results[0]
            if by_row:
                index = ee(arith.AddiOp(ee(arith.MuliOp(k, _const(bb, cols))), i))
            else:
                index = ee(arith.AddiOp(ee(arith.MuliOp(i, _const(bb, cols))), k))
            ld = pto.LoadOp(ee(pto.AddPtrOp(operands[1], index)))
            ld.attributes[UNCHECKED_ATTR] = UnitAttr()
            return ee(ld)

        first = src(b, _const(b, 0))
        nan0 = e(arith.CmpfOp(first, first, "uno")) if is_float else \
            e(arith.ConstantOp(IntegerAttr(0, i1)))
        inner = Block(arg_types=[i32, elem, i1])
        i, acc, nan = inner.args
        x = src(inner, i)
        acc2 = pick(acc, x)
        if is_float:  # (a line holding a NaN is recomputed: any NaN will do here)
            acc2.attributes[ANY_NAN_ATTR] = UnitAttr()
        inner.add_op(acc2)
        if is_float:
            seen = arith.CmpfOp(x, x, "uno")
            inner.add_op(seen)
            nan2 = arith.OrIOp(nan, seen.result)
            inner.add_op(nan2)
            nan_next = nan2.result
        else:
            nan_next = nan
        inner.add_op(scf.YieldOp(acc2.results[0], nan_next))
        loop = scf.ForOp(_const(b, 1), _const(b, n), _const(b, 1), [first, nan0], Region(inner))
        b.add_op(loop)
        st = pto.StoreOp(loop.results[0], e(pto.AddPtrOp(operands[0], k)))
        st.attributes[UNCHECKED_ATTR] = UnitAttr()
        b.add_op(st)
        if flag is not None:
            old = e(llvm.LoadOp(flag, i8))
            bit = e(arith.ExtUIOp(loop.results[1], i8))
            b.add_op(llvm.StoreOp(e(arith.OrIOp(old, bit)), flag))

    _for(block, 0, lines, line)
    return flag


def _unless_nan(block: Block, op: Operation, operands: list[SSAValue],
                flag: SSAValue) -> None:
    """After `_extreme_loops`: when the tile held a NaN, the instruction again as the call
    into the interpreter's definition (tiles.py), which gives NumPy's NaN."""
    loaded = llvm.LoadOp(flag, i8)
    zero = arith.ConstantOp(IntegerAttr(0, i8))
    cond = arith.CmpiOp(loaded.results[0], zero.result, "ne")
    block.add_ops([loaded, zero, cond])
    call = op.clone(value_mapper=dict(zip(op.operands, operands)))
    block.add_op(scf.IfOp(cond.result, [], Region(Block([call, scf.YieldOp()]))))


def _const(block: Block, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, i32))
    block.add_op(c)
    return c.result


def _loops(block: Block, rows: int, cols: int, kind: str,
           combine: Callable[[SSAValue, SSAValue], Operation] | None,
           operands: list[SSAValue]) -> None:
    zero, one = _const(block, 0), _const(block, 1)
    outer = Block(arg_types=[i32])
    inner = Block(arg_types=[i32])
    r, c = outer.args[0], inner.args[0]

    def add(op: Operation) -> SSAValue:
        inner.add_op(op)
        return op.results[0]

    def load(base: SSAValue, offset: SSAValue, where: Block = inner) -> SSAValue:
        ptr = pto.AddPtrOp(base, offset)
        ld = pto.LoadOp(ptr.results[0])
        ld.attributes[UNCHECKED_ATTR] = UnitAttr()
        where.add_ops([ptr, ld])
        return ld.results[0]

    ncols = _const(inner, cols)
    full = add(arith.AddiOp(add(arith.MuliOp(r, ncols)), c))
    dst_index = full
    if kind == "trans":  # dst[c, r] = a[r, c]: dst is cols x rows
        dst_index = add(arith.AddiOp(add(arith.MuliOp(c, _const(inner, rows))), r))
        value = load(operands[1], full)
    elif kind == "fill":
        value = operands[1]
    elif kind == "bin":
        value = add(combine(load(operands[1], full), load(operands[2], full)))  # type: ignore
    elif kind == "scalar":
        value = add(combine(load(operands[1], full), operands[2]))  # type: ignore[misc]
    # (v[r] is loaded once per row, outside the loop over the columns: LLVM cannot tell that
    # the stores to the destination, in the same arena, leave it unchanged, and would not
    # vectorise the row's loop)
    elif kind in ("row", "col"):
        value = load(operands[1], r, outer) if kind == "row" else load(operands[1], c)
    else:  # rowx / colx: a op v[r] / v[c]
        v = load(operands[2], r, outer) if kind == "rowx" else load(operands[2], c)
        value = add(combine(load(operands[1], full), v))  # type: ignore[misc]
    ptr = add(pto.AddPtrOp(operands[0], dst_index))
    st = pto.StoreOp(value, ptr)
    st.attributes[UNCHECKED_ATTR] = UnitAttr()
    inner.add_op(st)
    inner.add_op(scf.YieldOp())
    outer.add_op(scf.ForOp(zero, _const(outer, cols), one, [], Region(inner)))
    outer.add_op(scf.YieldOp())
    block.add_op(scf.ForOp(zero, _const(block, rows), one, [], Region(outer)))


HOIST_ATTR = "pto.native_hoist"
"""On a scratch `llvm.alloca`: moved to the grid function's entry block by `hoist_scratch`
(an alloca inside the loop over blocks would grow the stack each time round)."""


def _scratch(block: Block, count: int, elem: Attribute) -> SSAValue:
    """`count` elements of stack (allocated once: `hoist_scratch`)."""
    size = arith.ConstantOp(IntegerAttr(count, i64))
    alloca = llvm.AllocaOp(size.result, elem)
    alloca.attributes[HOIST_ATTR] = UnitAttr()
    block.add_op(size)
    block.add_op(alloca)
    return alloca.results[0]


def hoist_scratch(grid: func.FuncOp) -> None:
    """Move the scratch allocas of `grid` (a finished grid function) to its entry block."""
    entry = grid.body.blocks[0]
    for op in [o for o in grid.walk() if HOIST_ATTR in o.attributes]:
        size = op.operands[0].owner
        assert isinstance(size, Operation)
        for moved in (size, op):
            moved.detach()
        entry.insert_ops_before([size, op], entry.first_op)


def _for(block: Block, lo: int, hi: int, body: Callable[[Block, SSAValue], None]) -> None:
    inner = Block(arg_types=[i32])
    body(inner, inner.args[0])
    inner.add_op(scf.YieldOp())
    block.add_op(scf.ForOp(_const(block, lo), _const(block, hi), _const(block, 1), [],
                           Region(inner)))


def _fold_loops(block: Block, rows: int, cols: int, by_row: bool, elem: Attribute,
                operands: list[SSAValue]) -> None:
    """`trowsum` / `tcolsum` in tile_ops.fold's order: for each row (column), the first half
    of its n elements added elementwise to the second into a scratch line, an odd last one
    carried, then the same on the scratch until one remains. n is static, so the steps are
    too: one loop per step, every sum rounded to the tile's type (arith.addf / addi)."""
    lines, n = (rows, cols) if by_row else (cols, rows)
    scratch = _scratch(block, max(1, (n + 1) // 2), elem)
    add_op = arith.AddfOp if isinstance(elem, Float16Type | Float32Type) else arith.AddiOp

    def line(b: Block, k: SSAValue) -> None:
        def put(bb: Block, op: Operation) -> SSAValue:
            bb.add_op(op)
            return op.results[0]

        def src(bb: Block, i: SSAValue) -> SSAValue:  # element i of line k
            if by_row:
                index = put(bb, arith.AddiOp(put(bb, arith.MuliOp(k, _const(bb, cols))), i))
            else:
                index = put(bb, arith.AddiOp(put(bb, arith.MuliOp(i, _const(bb, cols))), k))
            ld = pto.LoadOp(put(bb, pto.AddPtrOp(operands[1], index)))
            ld.attributes[UNCHECKED_ATTR] = UnitAttr()
            return put(bb, ld)

        def at(bb: Block, i: SSAValue) -> SSAValue:
            return put(bb, llvm.GEPOp.from_mixed_indices(scratch, [i], elem))

        def tmp(bb: Block, i: SSAValue) -> SSAValue:
            return put(bb, llvm.LoadOp(at(bb, i), elem))

        def plus(bb: Block, i: SSAValue, h: int) -> SSAValue:
            return put(bb, arith.AddiOp(i, _const(bb, h)))

        if n == 1:
            result = src(b, _const(b, 0))
        else:
            m, first = n, True
            while m > 1:
                h = m // 2

                def step(bb: Block, i: SSAValue, h: int = h, first: bool = first) -> None:
                    get = src if first else tmp
                    total = put(bb, add_op(get(bb, i), get(bb, plus(bb, i, h))))
                    bb.add_op(llvm.StoreOp(total, at(bb, i)))
                _for(b, 0, h, step)
                if m % 2:
                    get = src if first else tmp
                    b.add_op(llvm.StoreOp(get(b, _const(b, 2 * h)), at(b, _const(b, h))))
                m -= h
                first = False
            result = tmp(b, _const(b, 0))
        st = pto.StoreOp(result, put(b, pto.AddPtrOp(operands[0], k)))
        st.attributes[UNCHECKED_ATTR] = UnitAttr()
        b.add_op(st)

    _for(block, 0, lines, line)
