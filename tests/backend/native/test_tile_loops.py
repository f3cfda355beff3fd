"""The tile instructions compiled as loop nests since issue 29's speed work (tile_loops.py):
texp / tlog / tsqrt / trsqrt / trecip / tabs / tneg / trelu, trowexpandexpdif /
tcolexpandexpdif and the max / min reductions, on odd shapes (one row, one column, widths that
are not a multiple of the vector width), bit for bit against the interpreter and against NumPy
references of the documented definitions (docs/language.md#tile-vector-instructions); the
reductions on tiles with NaNs (the loop's result is replaced by the interpreter's definition:
NumPy's NaN) and signed zeros."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from tests.backend.native.test_corpus import _same_up_to_nan_payload

UNARY = ("texp", "tlog", "tsqrt", "trsqrt", "trecip", "tabs", "tneg", "trelu")
REDUCE = ("trowmax", "trowmin", "tcolmax", "tcolmin")
SOURCE = '''import pypto as pto


@pto.kernel
def tile_loops(X, V, W, {outs}):
    x = pto.alloc_tile({r}, {c}, dtype=pto.{t})
    v = pto.alloc_tile({r}, 1, dtype=pto.{t})
    w = pto.alloc_tile(1, {c}, dtype=pto.{t})
    pto.wait(pto.async_load(x, X, {r} * {c} * {size}))
    pto.wait(pto.async_load(v, V, {r} * {size}))
    pto.wait(pto.async_load(w, W, {c} * {size}))
{body}'''


def _kernel(rows: int, cols: int, t: str, tmp_path: Path):
    size = np.dtype(t).itemsize
    outs, body = [], []
    for name in UNARY:
        outs.append(f"O_{name}")
        body += [f"    d_{name} = pto.alloc_tile({rows}, {cols}, dtype=pto.{t})",
                 f"    pto.{name}(d_{name}, x)",
                 f"    pto.store(O_{name}, d_{name}, {rows * cols * size})"]
    for name, arg, shape in (("trowexpandexpdif", "v", (rows, cols)),
                             ("tcolexpandexpdif", "w", (rows, cols))):
        outs.append(f"O_{name}")
        body += [f"    d_{name} = pto.alloc_tile({rows}, {cols}, dtype=pto.{t})",
                 f"    pto.{name}(d_{name}, x, {arg})",
                 f"    pto.store(O_{name}, d_{name}, {shape[0] * shape[1] * size})"]
    for name in REDUCE:
        shape = (rows, 1) if name.startswith("trow") else (1, cols)
        outs.append(f"O_{name}")
        body += [f"    d_{name} = pto.alloc_tile({shape[0]}, {shape[1]}, dtype=pto.{t})",
                 f"    pto.{name}(d_{name}, x)",
                 f"    pto.store(O_{name}, d_{name}, {shape[0] * shape[1] * size})"]
    body.append("    pto.texp(x, x)  # in place")
    outs.append("O_inplace")
    body.append(f"    pto.store(O_inplace, x, {rows * cols * size})")
    text = SOURCE.format(outs=", ".join(outs), r=rows, c=cols, t=t, size=size,
                         body="\n".join(body) + "\n")
    name = f"pto_tile_loops_{t}_{rows}_{cols}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.tile_loops, [o.removeprefix("O_") for o in outs]


def _reference(name: str, x: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The documented definitions, written out with NumPy (not tile_ops)."""
    t = x.dtype
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64)
        if name in ("texp", "inplace"):
            return np.exp(wide).astype(t)
        if name == "tlog":
            return np.log(wide).astype(t)
        if name == "tsqrt":
            return np.sqrt(x)
        if name == "trsqrt":
            return (1.0 / np.sqrt(wide)).astype(t)
        if name == "trecip":
            return (t.type(1) / x).astype(t)
        if name == "tabs":
            return np.abs(x)
        if name == "tneg":
            return -x
        if name == "trelu":
            return np.where((x > 0) | np.isnan(x), x, t.type(0)).astype(t)
        if name == "trowexpandexpdif":
            return np.exp((x - v).astype(t).astype(np.float64)).astype(t)
        if name == "tcolexpandexpdif":
            return np.exp((x - w).astype(t).astype(np.float64)).astype(t)
    axis = 1 if name.startswith("trow") else 0
    big = name.endswith("max")
    out = []
    for line in (x if axis == 1 else x.T):
        if np.isnan(line).any():
            out.append(np.nan)
        elif (line == 0).all() or line.max(initial=-np.inf) == 0 and big or \
                line.min(initial=np.inf) == 0 and not big:
            zeros = line[line == 0]
            signs = np.signbit(zeros)
            neg = signs.all() if big else signs.any()  # max: +0 unless all -0
            out.append(-0.0 if neg else 0.0)
        else:
            out.append(line.max() if big else line.min())
    r = np.array(out, t)
    return r.reshape(-1, 1) if axis == 1 else r.reshape(1, -1)


@pytest.mark.parametrize("t", ["float32", "float16"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 17), (7, 33), (64, 1), (2, 100)])
@pytest.mark.parametrize("nans", [False, True])
def test_loop_compiled_tile_instructions_on_odd_shapes_bit_exact(t, shape, nans, tmp_path):
    rows, cols = shape
    rng = np.random.default_rng(rows * 131 + cols)
    dt = np.dtype(t)
    x = (rng.standard_normal(shape) * 3).astype(dt)
    x.flat[:: 5] = np.abs(x.flat[:: 5])
    x.flat[1:: 11] = 0.0
    x.flat[2:: 13] = -0.0
    if nans:
        bits = {"float32": np.uint32, "float16": np.uint16}[t]
        nan = np.array([0x7FC00001, 0xFFC0BEEF, 0x7F800F00] if t == "float32" else
                       [0x7E01, 0xFE42, 0x7C0F], bits).view(dt)
        x.flat[3:: 7] = np.resize(nan, x.flat[3:: 7].size)
    v = (rng.standard_normal((rows, 1)) * 2).astype(dt)
    w = (rng.standard_normal((1, cols)) * 2).astype(dt)
    kernel, names = _kernel(rows, cols, t, tmp_path)
    shapes = {n: (rows, 1) if n in ("trowmax", "trowmin") else
              (1, cols) if n in ("tcolmax", "tcolmin") else shape for n in names}
    results = {}
    for backend in ("interpreter", "native"):
        outs = {n: np.zeros(shapes[n], dt) for n in names}
        pto.launch(kernel, 1, 32, (x, v, w, *outs.values()), backend=backend)
        results[backend] = outs
    for n in names:
        want, got = results["interpreter"][n], results["native"][n]
        if t == "float16":  # (docs/native.md#exactness: NaN payloads of float16 ops)
            assert _same_up_to_nan_payload(want, got), n
        else:
            assert want.tobytes() == got.tobytes(), n
        ref = _reference(n, x, v, w)
        assert _same_up_to_nan_payload(ref, got), n


CVT_SOURCE = '''import pypto as pto


@pto.kernel
def cvt(X, O):
    x = pto.alloc_tile({r}, {c}, dtype=pto.{src})
    d = pto.alloc_tile({r}, {c}, dtype=pto.{dst})
    pto.wait(pto.async_load(x, X, {r} * {c} * {src_size}))
    pto.tcvt(d, x, rounding="{mode}")
    pto.store(O, d, {r} * {c} * {dst_size})
'''


@pytest.mark.parametrize("src,dst,mode", [("float32", "float16", "rne"),
                                          ("float16", "float32", "rz"),
                                          ("float32", "float32", "rm"),
                                          ("int32", "int64", "rne"),
                                          ("int64", "int32", "rp")])
@pytest.mark.parametrize("shape", [(1, 1), (7, 33)])
def test_tcvt_compiled_as_one_cast_per_element(src, dst, mode, shape, tmp_path):
    """tcvt where it is one LLVM cast (float16 <-> float32 to nearest, widening, int32 <->
    int64 wrapping) is a loop (no tile callback in the code), with the interpreter's and
    NumPy's bits."""
    from pypto.backend.native.jit import llvm_ir

    rows, cols = shape
    name = f"pto_tile_cvt_{src}_{dst}_{mode}_{rows}_{cols}"
    path = tmp_path / f"{name}.py"
    path.write_text(CVT_SOURCE.format(r=rows, c=cols, src=src, dst=dst, mode=mode,
                                      src_size=np.dtype(src).itemsize,
                                      dst_size=np.dtype(dst).itemsize))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(rows + cols)
    if src.startswith("int"):
        info = np.iinfo(src)
        x = rng.integers(info.min, info.max, size=shape, dtype=src, endpoint=True)
        x.flat[0] = info.min
    else:
        with np.errstate(over="ignore"):
            x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, size=shape)
                 ).astype(src)
        x.flat[-1] = np.inf
    outs = {}
    for backend in ("interpreter", "native"):
        o = np.zeros(shape, dst)
        pto.launch(mod.cvt, 1, 32, (x, o), backend=backend)
        outs[backend] = o
    assert outs["native"].tobytes() == outs["interpreter"].tobytes()
    with np.errstate(over="ignore"):
        assert outs["native"].tobytes() == x.astype(dst).tobytes()
    ck = pto.compile(mod.cvt, args=(x, np.zeros(shape, dst)), block=32)
    assert "pypto_native_tile" not in llvm_ir(ck.func)
