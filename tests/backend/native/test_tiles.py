"""The tile vector instructions on both backends, bit for bit (docs/native.md#tile-vector-instructions).

Every instruction of the dialect (`pto.TILE_VECTOR_OPS`), on every element type it accepts,
every `tcmp` comparison, every `tcvt` source, destination and rounding mode, the reductions on
odd and even widths: the interpreter's result and the native backend's must be the same raw
bytes. The inputs are every pair of the exactness suite's special values (±0, ±inf, NaN,
subnormals, extremes) plus random bit patterns, laid out as tiles. The interpreter is checked
against exact references by tests/exactness/test_tile_ops.py; here the native backend is
checked against the interpreter, and what it does not compile is counted, never run wrong.
Also: tile instructions mixed with lane code on the same tiles, the zoo's tile kernels, the
examples' softmax, and the errors."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import NativeUnsupported
from pypto.dialects import pto as pto_dialect
from pypto.dialects.traits import tile_vector
from tests.backend.native.test_corpus import _same_up_to_nan_payload
from tests.exactness import reference as R
from tests.exactness.ops import DTYPE_NAMES, random_values, specials

COLS = 32
DTYPES = {"f32": R.F32, "f16": R.F16, "bf16": R.BF16, "i32": R.I32, "i64": R.I64,
          "i1": R.BOOL}


def _inputs(dt: np.dtype, seed: int) -> dict[str, np.ndarray]:
    """Named input tiles of element type `dt`: `a`, `b` (every pair of specials, then random
    values), `n` (shift counts in and around 0..width-1), `v` (rows x 1), `w` (1 x cols),
    `m` (an int32 mask: 0, 1 and other values)."""
    rng = np.random.default_rng(seed)
    sp = specials(dt)
    a = [x for x, _ in itertools.product(sp, sp)]
    b = [y for _, y in itertools.product(sp, sp)]
    xs = np.concatenate([np.array(a, dtype=dt), random_values(dt, 96, rng)])
    ys = np.concatenate([np.array(b, dtype=dt), random_values(dt, 96, rng)])
    pad = -xs.size % COLS
    xs = np.concatenate([xs, random_values(dt, pad, rng)]).reshape(-1, COLS)
    ys = np.concatenate([ys, random_values(dt, pad, rng)]).reshape(-1, COLS)
    rows = xs.shape[0]
    out = {"a": xs, "b": ys, "v": random_values(dt, rows, rng).reshape(rows, 1),
           "w": random_values(dt, COLS, rng).reshape(1, COLS),
           "m": rng.integers(-1, 3, xs.shape).astype(np.int32)}
    if dt.kind == "i":
        bits = dt.itemsize * 8
        out["n"] = (np.abs(ys.astype(np.int64)) % (bits + 8) - 4).astype(dt)
    return out


@dataclass(frozen=True)
class Call:
    """`pto.<name>(dst, *inputs[, scalar][, props])`: one instruction on one dtype."""

    name: str
    dst: np.dtype
    dst_shape: str  # "full", "row", "col", "trans"
    inputs: tuple[str, ...]
    scalar: bool = False
    props: str = ""

    @property
    def id(self) -> str:
        return f"{self.name}{'-' + self.props if self.props else ''}"


def _calls(dt_name: str) -> list[Call]:
    """Every tile instruction the dialect accepts on source element type `dt_name`."""
    dt = DTYPES[dt_name]
    calls = []
    for cls in pto_dialect.TILE_VECTOR_OPS:
        if dt_name not in cls.DTYPES:
            continue
        name = cls.name.removeprefix("pto.")
        trait = tile_vector(cls)
        assert trait is not None
        operands = [n for n, _ in cls.get_irdl_definition().operands]
        roles = dict(zip(operands, trait.roles))
        dst_shape = roles[operands[0]]
        scalar = "value" in trait.roles
        ins: list[str] = []
        for n in operands[1:]:
            role = roles[n]
            if role == "value":
                continue
            if n == "mask":
                ins.append("m")
            elif role == "row":
                ins.append("v")
            elif role == "col":
                ins.append("w")
            elif name in ("tshl", "tshr") and n == "b":
                ins.append("n")
            else:
                ins.append("b" if n == "b" else "a")
        if name in ("tcmp", "tcmps"):
            for cmp in pto_dialect.TILE_COMPARISONS:
                calls.append(Call(name, R.I32, dst_shape, tuple(ins), scalar, f'"{cmp}"'))
            for d in cls.DST_DTYPES or ():
                if d != "i32":
                    calls.append(Call(name, DTYPES[d], dst_shape, tuple(ins), scalar, '"lt"'))
        elif name == "tcvt":
            for d in cls.DST_DTYPES or ():
                for mode in pto_dialect.TILE_ROUNDINGS:
                    calls.append(Call(name, DTYPES[d], dst_shape, tuple(ins), False,
                                      f'rounding="{mode}"'))
        else:
            dst = DTYPES[cls.DST_DTYPES[0]] if cls.DST_DTYPES else dt
            calls.append(Call(name, dst, dst_shape, tuple(ins), scalar))
    return calls


def _shape(role: str, rows: int, cols: int = COLS) -> tuple[int, int]:
    return {"full": (rows, cols), "row": (rows, 1), "col": (1, cols),
            "trans": (cols, rows)}[role]


def carrier(dt: np.dtype) -> np.dtype:
    """The element type a tile of `dt` travels through HBM as: bfloat16 tiles go as float32
    (exactly) and are converted in L1 with `tcvt` (the native backend compiles bfloat16 L1
    tiles, not bfloat16 tensors or values: docs/native.md#tile-vector-instructions)."""
    return R.F32 if dt == R.BF16 else dt


def _load_tile(lines: list[str], name: str, src: str, shape: tuple[int, int],
               dt: np.dtype) -> None:
    r, k = shape
    lines.append(f"    {name} = pto.alloc_tile({r}, {k}, dtype=pto.{DTYPE_NAMES[dt]})")
    if carrier(dt) == dt:
        lines.append(f"    pto.wait(pto.async_load({name}, {src}, {r * k * dt.itemsize}))")
        return
    c = carrier(dt)
    lines.append(f"    {name}_c = pto.alloc_tile({r}, {k}, dtype=pto.{DTYPE_NAMES[c]})")
    lines.append(f"    pto.wait(pto.async_load({name}_c, {src}, {r * k * c.itemsize}))")
    lines.append(f"    pto.tcvt({name}, {name}_c)")


def _kernel_source(calls: list[Call], dt: np.dtype, rows: int, scalar: bool,
                   cols: int = COLS) -> str:
    """One kernel: the inputs loaded into L1 tiles, each call's destination loaded from its
    own tensor (taxpy reads it), the instruction, the destination stored to an output."""
    used = sorted({n for c in calls for n in c.inputs})
    params = [f"o{i}, d{i}" for i in range(len(calls))] + [f"i_{n}" for n in used] + ["s"]
    lines = ["import pypto as pto", "", "", "@pto.kernel",
             f"def tile_group({', '.join(params)}):"]
    for n in used:
        shape = {"v": (rows, 1), "w": (1, cols)}.get(n, (rows, cols))
        _load_tile(lines, f"x_{n}", f"i_{n}", shape, np.dtype(np.int32) if n == "m" else dt)
    if scalar:
        lines.append(f"    sv = pto.cast(s, pto.{DTYPE_NAMES[dt]})")
    for i, c in enumerate(calls):
        r, k = _shape(c.dst_shape, rows, cols)
        _load_tile(lines, f"t{i}", f"d{i}", (r, k), c.dst)
        args = [f"t{i}", *[f"x_{n}" for n in c.inputs]]
        if c.scalar:
            args.insert(1 if c.name in ("texpands", "tci") else len(args), "sv")
        if c.props:
            args.append(c.props)
        lines.append(f"    pto.{c.name}({', '.join(args)})")
        out = f"t{i}"
        if carrier(c.dst) != c.dst:
            lines.append(f"    pto.tcvt(t{i}_c, t{i})")
            out = f"t{i}_c"
        lines.append(f"    pto.store(o{i}, {out}, {r * k * carrier(c.dst).itemsize})")
    return "\n".join(lines) + "\n"


def _load(source: str, directory: Path, index: int) -> Any:
    name = f"pto_native_tiles_{index}"
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.tile_group


def _scalars(dt: np.dtype) -> list[Any]:
    if dt.kind == "i":
        return [3, -2, int(np.iinfo(dt).max)]
    return [0.1, -0.0, float("inf"), float("nan")]


def _run_group(calls: list[Call], dt: np.dtype, ins: dict[str, np.ndarray], kernel: Any,
               s: Any) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    rows = ins["a"].shape[0]
    rng = np.random.default_rng(11)
    arrays: list[np.ndarray] = []
    for c in calls:
        shape = _shape(c.dst_shape, rows)
        arrays += [np.zeros(shape, carrier(c.dst)),
                   random_values(c.dst, shape[0] * shape[1], rng).reshape(shape)
                   .astype(carrier(c.dst))]
    arrays += [ins[n].astype(carrier(ins[n].dtype))
               for n in sorted({n for c in calls for n in c.inputs})]
    outs = []
    for backend in ("interpreter", "native"):
        copies = [a.copy() for a in arrays]
        try:
            pto.launch(kernel, 1, 32, (*copies, s), backend=backend)
        except NativeUnsupported:
            return None
        outs.append(copies[0:2 * len(calls):2])
    return outs[0], outs[1]


def _same(want: np.ndarray, got: np.ndarray, dt_name: str) -> bool:
    """Byte for byte; on float16 / bfloat16 tiles, except where both results are NaN (which
    operand's payload an operation on two NaNs keeps is NumPy's C compiler's choice, and NumPy's
    software float16 conversion keeps a signalling NaN signalling: docs/native.md#exactness)."""
    if dt_name in ("f16", "bf16") and want.dtype.kind == "f":
        return _same_up_to_nan_payload(want, got)
    return want.tobytes() == got.tobytes()


GROUP = 8  # calls per kernel (their tiles fit in L1 together)


def test_every_tile_instruction_on_every_dtype_bit_exact(tmp_path):
    """Both backends give the same bytes for every (instruction, dtype, comparison, rounding
    mode) the dialect accepts; the count of those compiled natively is docs/native.md's."""
    compiled: list[str] = []
    refused: dict[str, str] = {}
    kernels = 0
    for dt_name in ("f32", "f16", "i32", "i64", "bf16"):
        dt = DTYPES[dt_name]
        ins = _inputs(dt, seed=len(compiled))
        calls = _calls(dt_name)  # (the instructions taking a scalar in groups of their own)
        parts = [[c for c in calls if c.scalar == part] for part in (False, True)]
        groups = [p[i:i + GROUP] for p in parts for i in range(0, len(p), GROUP)]
        for group in groups:
            scalar = any(c.scalar for c in group)
            kernel = _load(_kernel_source(group, dt, ins["a"].shape[0], scalar), tmp_path,
                           kernels)
            kernels += 1
            for s in (_scalars(dt) if scalar else [0]):
                result = _run_group(group, dt, ins, kernel, s)
                if result is None:
                    break
                for c, want, got in zip(group, *result):
                    assert _same(want, got, dt_name), \
                        f"{c.id} on {dt_name} (s={s}): the native backend differs from " \
                        f"the interpreter at {np.flatnonzero(want.view(np.uint8) != got.view(np.uint8))[:8]}"
            if result is None:
                for c in group:
                    refused[f"{c.id}-{dt_name}-to-{DTYPE_NAMES[c.dst]}"] = "refused"
            else:
                compiled += [f"{c.id}-{dt_name}-to-{DTYPE_NAMES[c.dst]}" for c in group]
    print(f"native: {len(compiled)} of {len(compiled) + len(refused)} tile instructions x "
          f"dtypes bit-exact ({kernels} kernels); refused: {sorted(refused)}")
    assert len(compiled) >= 422  # docs/native.md: 422 of 422 (bf16 scalars included)


def test_the_callback_path_of_the_loop_compiled_instructions_bit_exact(tmp_path, monkeypatch):
    """With the loop nests off (pypto/backend/native/tile_loops.py), the simple instructions
    are calls into the interpreter's definition as well: the same bytes."""
    from pypto.backend.native import tile_loops

    monkeypatch.setattr(tile_loops, "ENABLED", False)
    for dt_name in ("f32", "i32"):
        dt = DTYPES[dt_name]
        ins = _inputs(dt, seed=3)
        calls = [c for c in _calls(dt_name) if c.name in (
            "tadd", "tsub", "tmul", "tdiv", "tmax", "tmin", "txor", "tadds", "tmaxs",
            "texpands", "trowexpandmul", "tcolexpandsub", "trowexpand", "ttrans", "texp",
            "tlog", "tsqrt", "trsqrt", "trecip", "tabs", "tneg", "trelu", "tnot",
            "trowexpandexpdif", "tcolexpandexpdif", "trowmax", "tcolmin")]
        for start in range(0, len(calls), GROUP):
            group = calls[start:start + GROUP]
            scalar = any(c.scalar for c in group)
            kernel = _load(_kernel_source(group, dt, ins["a"].shape[0], scalar), tmp_path,
                           1000 + start + (0 if dt_name == "f32" else 500))
            for s in (_scalars(dt) if scalar else [0]):
                result = _run_group(group, dt, ins, kernel, s)
                assert result is not None
                for c, want, got in zip(group, *result):
                    assert want.tobytes() == got.tobytes(), f"{c.id} {dt_name} s={s}"


@pto.kernel
def lanes_and_tiles(X, Y):
    t = pto.alloc_tile(4, 8)
    u = pto.alloc_tile(8, 4)
    e = pto.alloc_tile(8, 4)
    s = pto.alloc_tile(8, 1)
    i = pto.get_local_id()
    pto.store(t + i, pto.load(X + i) * 2.0)                          # lanes write the tile
    pto.barrier_block()
    pto.ttrans(u, t)                                                 # a loop nest
    pto.texp(e, u)                                                   # a call
    pto.barrier_block()
    pto.store(e + i, pto.load(e + (31 - i)) + pto.load(u + i))       # lanes read both
    pto.barrier_block()
    pto.trowsum(s, e)                                                # a call reads lanes' data
    pto.barrier_block()
    pto.store(Y + i, pto.load(e + i) + pto.load(s + i // 4))


def test_tile_instructions_and_lane_code_share_the_arena():
    """Lane stores before a tile instruction are its input, its result is what lanes load
    after it: in both backends (the arena is the memory the callback and the loops use)."""
    x = np.random.default_rng(4).standard_normal(32).astype(np.float32)
    outs = []
    for backend in ("interpreter", "native"):
        y = pto.tensor(np.zeros(32, np.float32))
        k = pto.compile(lanes_and_tiles, args=(pto.tensor(x), y), block=32, race_check=False)
        pto.launch(k, 1, 32, (pto.tensor(x), y), backend=backend)
        pto.sync()
        outs.append(y.numpy())
    assert outs[0].tobytes() == outs[1].tobytes()
    u = (x * np.float32(2)).reshape(4, 8).T.reshape(-1)
    e = np.exp(u.astype(np.float64)).astype(np.float32)
    e2 = e[::-1] + u
    s = e2.reshape(8, 4)
    s = (s[:, 0] + s[:, 2]) + (s[:, 1] + s[:, 3])                     # the documented fold
    want = e2 + np.repeat(s, 4)
    assert outs[1].tobytes() == want.tobytes()


def test_tile_kernels_of_the_zoo_and_the_example_run_natively():
    """The zoo's flash attention and layernorm (tile instructions, mma, copies in a loop) run
    natively, bit for bit; examples/softmax_tiles.py's double-buffered loop is refused with
    its reason (its epilogue stores Y by a second op; a carried copy's slot depends on the
    iteration), and "auto" runs it on the interpreter."""
    from tests.kernels import zoo

    ran = []
    for case in zoo.cases("tiny"):
        if case.name not in zoo.TILE_KERNELS:
            continue
        arrays = case.inputs(np.random.default_rng(7))
        results = []
        for backend in ("interpreter", "native", "auto"):
            copies = {k: v.copy() for k, v in arrays.items()}
            args = (*case.lead, *copies.values(), *case.scalars(copies))
            try:
                pto.launch(case.kernel, case.grid, case.block, args, backend=backend)
            except NativeUnsupported as exc:
                assert case.name.startswith("softmax") and (
                    "in flight" in str(exc) or "written by more than one op" in str(exc))
                continue
            results.append(copies)
        for got in results[1:]:
            for k in arrays:
                assert got[k].tobytes() == results[0][k].tobytes(), (case.name, k)
        case.check(results[-1], arrays)
        if len(results) == 3:
            ran.append(case.name)
    assert {"flash attention (tile ops + mma)", "layernorm (tile ops)"} <= set(ran)


@pytest.mark.parametrize("shape", [(5, 7), (3, 1), (1, 9), (13, 33), (2, 64)])
def test_sums_in_the_fold_order_on_odd_and_even_widths(shape, tmp_path):
    """trowsum / tcolsum compiled as loops (tile_loops.py) follow tile_ops.fold's order on
    every width, odd carries included: the interpreter's bytes, float16 and float32 (where the
    order shows) and int64."""
    rows, cols = shape
    for dt_name in ("f32", "f16", "i64"):
        dt = DTYPES[dt_name]
        rng = np.random.default_rng(rows * 100 + cols)
        x = random_values(dt, rows * cols, rng).reshape(rows, cols)
        if dt.kind == "f":  # cancellations and ties, where the order changes the bits
            x = np.where(rng.random(x.shape) < 0.5, x,
                         (rng.standard_normal(x.shape) * 1e3).astype(dt))
        calls = [Call("trowsum", dt, "row", ("a",)), Call("tcolsum", dt, "col", ("a",))]
        kernel = _load(_kernel_source(calls, dt, rows, False, cols), tmp_path,
                       2000 + rows * 100 + cols + len(dt_name))
        arrays = [np.zeros((rows, 1), dt), np.zeros((rows, 1), dt),
                  np.zeros((1, cols), dt), np.zeros((1, cols), dt), x]
        outs = []
        for backend in ("interpreter", "native"):
            copies = [a.copy() for a in arrays]
            pto.launch(kernel, 1, 32, (*copies, 0), backend=backend)
            outs.append((copies[0], copies[2]))
        for want, got in zip(*outs):
            assert want.tobytes() == got.tobytes(), (shape, dt_name)


OOB_IR = """
builtin.module {
  func.func @oob(%o: !pto.ptr<f32, global> {pto.noalias}, %k: i32) attributes {pto.kernel} {
    %x = pto.alloc_local {offset = 0 : i64, shape = array<i64: 4, 8>} : !pto.l1buf<32xf32>
    %y = pto.alloc_local {offset = 128 : i64, shape = array<i64: 4, 8>} : !pto.l1buf<32xf32>
    %one = arith.constant 1.000000e+00 : f32
    pto.texpands %x, %one shape(4, 8) : !pto.l1buf<32xf32>, f32
    %p = pto.addptr %x, %k : !pto.l1buf<32xf32>, i32 -> !pto.ptr<f32, local>
    pto.tadds %p, %x, %one shape(4, 8) : !pto.ptr<f32, local>, !pto.l1buf<32xf32>, f32
    %bytes = arith.constant 128 : i32
    %rows = arith.constant 1 : i32
    %len = arith.constant 32 : i32
    pto.tile_store %o, %x, %bytes rows %rows strides(%len, %len) : !pto.ptr<f32, global>, !pto.l1buf<32xf32>
    func.return
  }
}
"""


def test_a_tile_operand_outside_its_buffer_raises_the_interpreters_message():
    """IR may give a tile instruction a pointer into a buffer (the frontend passes tiles
    only): at an offset that leaves the buffer, the call raises the interpreter's
    MemoryAccessError (interpreter/tiles.py `oob_region`), its neighbour note included; in
    range it computes."""
    from types import SimpleNamespace

    from xdsl.parser import Parser

    from pypto.backend.native.jit import NativeKernel
    from pypto.errors import MemoryAccessError
    from pypto.ir import make_context

    fn = next(iter(Parser(make_context(), OOB_IR).parse_module().ops))
    native = NativeKernel(fn, "oob")
    out = np.zeros(32, np.float32)
    buf = SimpleNamespace(data=out, count=32, name="o")
    native.run((1, 1, 1), (32, 1, 1), (buf, 0))
    assert np.array_equal(out, np.full(32, 2, np.float32))
    with pytest.raises(MemoryAccessError) as info:
        native.run((1, 1, 1), (32, 1, 1), (buf, 8))
    assert "out-of-bounds tadds destination: L1 buffer 'x' element 39 (valid elements " \
           "0..31) in block (0, 0, 0); that address is L1 byte 156, inside buffer 'y' " \
           "(bytes 128..255" in str(info.value)
    assert info.value.address == 39


@pto.kernel
def tiles_in_a_uniform_branch(Y, n, flag):
    a = pto.alloc_tile(4, 8, dtype=pto.int32)
    b = pto.alloc_tile(4, 8, dtype=pto.int32)
    if flag > 0:                          # uniform: a block-level if
        pto.tci(a, n)
    else:
        pto.texpands(a, n)
    for k in range(3):                    # a block-level loop
        pto.tadds(b, a, k)
        pto.txor(a, a, b)
    pto.store(Y, a, 4 * 8 * 4)


@pytest.mark.parametrize("flag", [1, 0])
def test_tile_instructions_under_uniform_control_flow(flag):
    outs = []
    for backend in ("interpreter", "native"):
        y = pto.tensor(np.zeros(32, np.int32))
        pto.launch(tiles_in_a_uniform_branch, 1, 32, (y, 2**31 - 20, flag), backend=backend)
        pto.sync()
        outs.append(y.numpy())
    a = (np.arange(32, dtype=np.int64) + 2**31 - 20 if flag else np.full(32, 2**31 - 20)
         ).astype(np.int32)
    for k in range(3):
        a = a ^ (a + np.int32(k))
    assert outs[0].tobytes() == outs[1].tobytes() == a.tobytes()
