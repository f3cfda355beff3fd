"""Block-level copies compiled as memcpy loops (pypto/backend/native/copy_loops.py,
docs/native.md#collectives): the bytes of the interpreter and of NumPy's slicing, for f32, f16,
bf16, int32 and bool (int8 is no device tensor type), 1-D and 2-D strided tiles, partial tiles at the tensor's edges; the callback path
(copy loops off) gives the same bytes; out-of-bounds and malformed copies raise the
interpreter's error, message and location, natively; "auto" runs copies in loops natively."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native import copy_loops
from tests.backend.native.helpers import both, same_bits

TR, TC, PAD = 8, 16, 3  # tile rows, tile columns, extra L1 row stride

pytestmark = pytest.mark.shared_native_cache  # (copy_loops.ENABLED is part of the cache key)


@pto.kernel
def tile_round_trip(x, y, M, N, ES: pto.constexpr):
    """Block (bi, bj) copies its TR x TC tile of the M x N matrix x (fewer rows / columns at the
    bottom and right edges) into L1 at a row stride TC + PAD, then stores it back to y at the
    same place: y equals x where the tiles cover it."""
    buf = pto.alloc_local(TR * (TC + PAD), dtype=x.dtype)
    r0 = pto.get_block_id(1) * TR
    c0 = pto.get_block_id(0) * TC
    rows = min(TR, M - r0)
    cols = min(TC, N - c0)
    nbytes = rows * cols * ES
    t = pto.async_load(buf, x + r0 * N + c0, nbytes, rows=rows, src_stride=N,
                       dst_stride=TC + PAD)
    pto.wait(t)
    s = pto.async_store(y + r0 * N + c0, buf, nbytes, rows=rows, src_stride=TC + PAD,
                        dst_stride=N)
    pto.wait(s)


@pto.kernel
def stream_1d(x, y, n, CH: pto.constexpr, ES: pto.constexpr):
    """1-D: each block streams its chunks of CH elements through L1 (the last one partial)."""
    buf = pto.alloc_local(CH, dtype=x.dtype)
    start = pto.get_block_id() * 4 * CH
    for k in range(4):
        base = start + k * CH
        if base < n:
            count = min(CH, n - base)
            t = pto.async_load(buf, x + base, count * ES)
            pto.wait(t)
            s = pto.async_store(y + base, buf, count * ES)
            pto.wait(s)


@pto.kernel
def overrun(x, y, n, EXTRA: pto.constexpr, ES: pto.constexpr):
    """Block b loads 64 elements at b * 64 + EXTRA: the last block reads past x's end."""
    buf = pto.alloc_local(64, dtype=x.dtype)
    b = pto.get_block_id()
    t = pto.async_load(buf, x + b * 64 + EXTRA, 64 * ES)
    pto.wait(t)
    s = pto.async_store(y + b * 64, buf, 64 * ES)
    pto.wait(s)


DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32}


def _data(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bf16":
        from ml_dtypes import bfloat16
        return rng.standard_normal(shape).astype(bfloat16)
    if dtype == "i32":
        return rng.integers(-2 ** 31, 2 ** 31, shape).astype(np.int32)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    raw = rng.integers(0, 2 ** 16, shape).astype(np.uint16)  # every f16 bit pattern: NaNs too
    out = rng.standard_normal(shape).astype(DTYPES[dtype])
    if dtype == "f16":
        out = raw.view(np.float16)
    return out


@pytest.fixture(autouse=True)
def _native_per_setting(monkeypatch):
    """A compiled kernel keeps its native code (pypto/compiler.py `_native`): rebuild it when
    `copy_loops.ENABLED` differs from the setting it was built with, so each test runs the path
    it selects."""
    import pypto.compiler as compiler

    real = compiler._native

    def native(compiled, required):
        if compiled.__dict__.get("_copy_loops") != copy_loops.ENABLED:
            compiled.__dict__.pop("_native", None)
            compiled.__dict__["_copy_loops"] = copy_loops.ENABLED
        return real(compiled, required)
    monkeypatch.setattr(compiler, "_native", native)


@pytest.fixture(params=[True, False], ids=["loops", "callback"])
def copies(request, monkeypatch):
    monkeypatch.setattr(copy_loops, "ENABLED", request.param)
    return request.param


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i32", "bool"])
@pytest.mark.parametrize("m,n", [(32, 64), (29, 53), (8, 16), (5, 7)])
def test_2d_strided_tiles_with_partial_edges_bit_exact(dtype, m, n, copies):
    x = _data(dtype, (m, n), seed=m * n)
    y = np.zeros_like(x)
    grid = (-(-n // TC), -(-m // TR))
    interp, native = both(tile_round_trip, grid, 1, [x, y], (m, n, x.itemsize))
    assert same_bits(interp, native)
    assert native[1].view(np.uint8).tobytes() == x.view(np.uint8).tobytes()  # NumPy: y == x


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i32", "bool"])
@pytest.mark.parametrize("n", [1, 100, 256, 1000])
def test_1d_copies_in_a_loop_with_a_tail_bit_exact(dtype, n, copies):
    ch = 32
    x = _data(dtype, (n,), seed=n)
    y = np.zeros_like(x)
    blocks = -(-n // (4 * ch))
    interp, native = both(stream_1d, blocks, 1, [x, y], (n, ch, x.itemsize))
    assert same_bits(interp, native)
    assert native[1].view(np.uint8).tobytes() == x.view(np.uint8).tobytes()


def test_a_column_strip_of_a_wide_matrix_bit_exact(copies):
    """One-column tiles (row length 1 element, row stride N) at the right edge."""
    m, n = 24, TC + 1
    x = _data("f32", (m, n), seed=7)
    y = np.full_like(x, -1.0)
    interp, native = both(tile_round_trip, (2, -(-m // TR)), 1, [x, y], (m, n, x.itemsize))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1], x)


@pytest.mark.parametrize("dtype", ["f32", "f16", "i32"])
def test_out_of_bounds_copy_raises_the_interpreters_error(dtype, copies):
    x = _data(dtype, (256,), seed=1)
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.MemoryAccessError) as info:
            pto.launch(overrun, 4, 1, (x, np.zeros_like(x), 256, 5, x.itemsize), backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "out-of-bounds async_load source" in messages[1] and "block (3, 0, 0)" in messages[1]
    assert "test_copy_loops.py" in messages[1]  # the copy's line


@pto.kernel
def ragged(x, y, nbytes, rows):
    buf = pto.alloc_local(64)
    b = pto.get_block_id()  # (0: block-uniform operands)
    t = pto.async_load(buf, x, nbytes + b, rows=rows + b, src_stride=16, dst_stride=16)
    pto.wait(t)
    s = pto.async_store(y, buf, 64 * 4)
    pto.wait(s)


@pytest.mark.parametrize("nbytes,rows", [(64 * 4, 3), (6, 1), (-4, 1)])
def test_malformed_copies_raise_the_interpreters_error(nbytes, rows, copies):
    x = np.ones(64, np.float32)
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.KernelError) as info:
            pto.launch(ragged, 1, 1, (x, np.zeros_like(x), nbytes, rows), backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "not a whole number" in messages[1]


def test_an_empty_copy_moves_nothing_on_both_backends(copies):
    x = np.ones(64, np.float32)
    interp, native = both(ragged, 1, 1, [x, np.zeros_like(x)], (0, 2))
    assert same_bits(interp, native)


def test_auto_runs_looped_copies_natively_but_keeps_looped_mma_on_the_interpreter(monkeypatch):
    """docs/native.md#choosing-a-backend: compiled copies are faster natively; an `mma` in a
    loop that stays a callback per block and iteration (mma_calls.ENABLED off, or NumPy without
    an ILP64 OpenBLAS) keeps the kernel on the interpreter."""
    import sys
    from pathlib import Path

    from pypto.backend.interpreter.executor import Executable

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
    from pipeline_matmul import matmul_tile

    interpreted: list[int] = []
    real = Executable.run
    monkeypatch.setattr(Executable, "run", lambda self, *args, **kw: (
        interpreted.append(1), real(self, *args, **kw))[1])
    x = _data("f32", (1000,), seed=2)
    y = np.zeros_like(x)
    pto.launch(stream_1d, 8, 1, (x, y, 1000, 32, 4), backend="auto")
    assert interpreted == []
    np.testing.assert_array_equal(y, x)
    from pypto.backend.native import mma_calls

    monkeypatch.setattr(mma_calls, "ENABLED", False)
    a = np.ones((128, 128), np.float32)
    c = np.zeros_like(a)
    pto.launch(pto.kernel(matmul_tile.fn), (2, 2), 64, (a, a, c, 128, 128, 128, 64, 64, 32), backend="auto")
    assert interpreted  # the interpreter ran it
    np.testing.assert_array_equal(c, a @ a)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i32"])
def test_in_bounds_copies_make_no_callback(dtype, monkeypatch):
    """The compiled path is the one taken (copy_loops.py): no call into collectives._run for
    in-bounds copies with the loops on, one per block and copy with them off."""
    from pypto.backend.native import collectives

    calls: list[str] = []
    real = collectives._run
    monkeypatch.setattr(collectives, "_run", lambda kernel, site, *a: (
        calls.append(site.kind), real(kernel, site, *a))[1])
    x = _data(dtype, (29, 53), seed=5)
    counts = []
    for enabled in (True, False):
        monkeypatch.setattr(copy_loops, "ENABLED", enabled)
        calls.clear()
        y = np.zeros_like(x)
        pto.launch(tile_round_trip, (4, 4), 1, (x, y, 29, 53, x.itemsize), backend="native")
        assert y.view(np.uint8).tobytes() == x.view(np.uint8).tobytes()
        counts.append(len(calls))
    assert counts == [0, 2 * 16]


@pto.kernel
def default_strides(x, y, nbytes, rows):
    """A run-time row count with the default strides (one row's length, nbytes // (rows *
    itemsize)): 0 or fewer rows must raise the copy's error, not the stride's division."""
    buf = pto.alloc_local(64)
    t = pto.async_load(buf, x, nbytes, rows=rows)
    pto.wait(t)
    s = pto.async_store(y, buf, nbytes, rows=rows)
    pto.wait(s)


@pytest.mark.parametrize("kernel", [ragged, default_strides])
@pytest.mark.parametrize("nbytes,rows", [(16, 0), (16, -2), (0, 0)])
def test_no_rows_raises_the_copys_error_not_a_division_by_zero(kernel, nbytes, rows, copies):
    x = np.ones(64, np.float32)
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.KernelError) as info:
            pto.launch(kernel, 1, 1, (x, np.zeros_like(x), nbytes, rows), backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert f"nbytes={nbytes} is not a whole number of {rows} row(s)" in messages[1]
    assert "test_copy_loops.py" in messages[1] and "division" not in messages[1]


@pytest.mark.parametrize("rows", [1, 4, 8])
def test_run_time_rows_with_default_strides_copy_the_rows(rows, copies):
    x = np.arange(64, dtype=np.float32)
    interp, native = both(default_strides, 1, 1, [x, np.zeros_like(x)], (32 * 4, rows))
    expected = np.where(np.arange(64) < 32, x, 0)  # rows of 32 // rows, contiguous
    assert np.array_equal(interp[1], expected) and same_bits(interp, native)
