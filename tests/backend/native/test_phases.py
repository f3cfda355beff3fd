"""Phase splitting, the L1 arena and warp ids of the native backend (docs/native.md#phases),
bit for bit against the interpreter (the oracle) and against NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.errors import MemoryAccessError
from tests.backend.native.helpers import both, same_bits


@pto.kernel
def warp_pairs(x, y, n):
    """Lanes of one warp exchange through L1 with no barrier: legal in lockstep (the
    interpreter; lanes of a warp never race), so the L1 store must be a phase of its own."""
    buf = pto.alloc_local(256)
    tid = pto.get_local_id()
    i = pto.get_global_id()
    v = pto.load(x + i)
    pto.store(buf + tid, v * 2.0)
    w = pto.load(buf + (tid ^ 1))
    pto.store(y + i, w + v)


def test_warp_exchange_without_barrier_is_a_phase_per_l1_write():
    n = 1024
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    interp, native = both(warp_pairs, n // 256, 256, [x, np.zeros(n, np.float32)], (n,))
    assert same_bits(interp, native)
    partner = x[np.arange(n) ^ 1]
    assert np.array_equal(native[1], partner * np.float32(2) + x)


@pto.kernel
def carried(x, out, n, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """A Hillis-Steele scan whose running value `acc` (lane-private) is carried across the
    barriers of a uniform loop, and a lane-dependent `if` holding an L1 write whose result is
    used after it (guard-split, its result in a spill slot)."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    odd = pto.alloc_local(BLOCK)
    acc = 0.0
    if i < n:
        acc = pto.load(x + i)
    s = 1
    for _ in range(LOG2):
        pto.store(buf + tid, acc)
        pto.barrier_block()
        t = acc
        if tid >= s:
            t = acc + pto.load(buf + tid - s)
        pto.barrier_block()
        acc = t
        s = s * 2
    r = acc
    if tid % 2 == 1:
        w = acc * 0.5
        pto.store(odd + tid, w)
        r = w + pto.load(odd + tid)
    if i < n:
        pto.store(out + i, r)


def test_lane_values_carried_across_barriers_and_guard_split_ifs():
    n, block = 1000, 128
    x = np.random.default_rng(1).integers(-8, 8, n).astype(np.float32)  # exact sums
    grid = (n + block - 1) // block
    interp, native = both(carried, grid, block, [x, np.zeros(n, np.float32)], (n, block, 7))
    assert same_bits(interp, native)
    padded = np.zeros(grid * block, np.float32)
    padded[:n] = x
    scan = np.cumsum(padded.reshape(grid, block), axis=1).reshape(-1)[:n]
    expect = np.where(np.arange(n) % 2 == 1, scan, scan)  # w + w == acc for odd lanes
    assert np.array_equal(native[1], expect.astype(np.float32))


@pto.kernel
def fresh_l1(out, BLOCK: pto.constexpr):
    """Block b writes only elements 0..b of its L1; the others keep the poison of fresh L1
    (NaN), so a block must not see the previous block's writes: the arena is refilled."""
    buf = pto.alloc_local(BLOCK)
    ints = pto.alloc_local(BLOCK, dtype=pto.int32)
    tid = pto.get_local_id()
    b = pto.get_block_id()
    if tid <= b:
        pto.store(buf + tid, pto.cast(tid, pto.float32))
        pto.store(ints + tid, tid)
    pto.barrier_block()
    i = pto.get_global_id()
    pto.store(out + i, pto.load(buf + tid) + pto.cast(pto.load(ints + tid), pto.float32))


def test_fresh_l1_holds_the_interpreters_poison_in_every_block():
    block, grid = 8, 4
    out = np.zeros(block * grid, np.float32)
    interp, native = both(fresh_l1, grid, block, [out], (block,))
    assert same_bits(interp, native)
    got = native[0].reshape(grid, block)
    for b in range(grid):
        assert np.array_equal(got[b, :b + 1], 2 * np.arange(b + 1, dtype=np.float32))
        assert np.isnan(got[b, b + 1:]).all()


@pto.kernel
def ids(warps, lanes):
    """Warp and lane-in-warp ids in a 2-D block (the linear lane id x + bx * y, split by 32)."""
    i = pto.get_local_id(0) + pto.get_block_dim(0) * pto.get_local_id(1)
    base = pto.get_block_id() * pto.get_block_dim(0) * pto.get_block_dim(1)
    pto.store(warps + (base + i), pto.get_warp_id())
    pto.store(lanes + (base + i), pto.get_lane_id())


def test_warp_and_lane_ids():
    block = (24, 5)
    lanes = block[0] * block[1]
    out = [np.zeros(3 * lanes, np.int32), np.zeros(3 * lanes, np.int32)]
    interp, native = both(ids, 3, block, out)
    assert same_bits(interp, native)
    lin = np.tile(np.arange(lanes), 3)
    assert np.array_equal(native[0], lin // 32)
    assert np.array_equal(native[1], lin % 32)


@pto.kernel
def overrun(x, y, k):
    a = pto.alloc_local(64)
    b = pto.alloc_local(64)
    tid = pto.get_local_id()
    pto.store(a + tid, pto.load(x + tid))
    pto.store(b + tid, 1.0)
    pto.barrier_block()
    pto.store(y + tid, pto.load(a + tid + k))


def test_l1_out_of_bounds_error_matches_the_interpreter():
    x = np.ones(64, np.float32)
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(overrun, 1, 64, (x, np.zeros(64, np.float32), 9), backend=backend)
        errors.append(info.value)
    assert str(errors[0]) == str(errors[1])
    assert "L1 buffer 'a'" in str(errors[1]) and "into its neighbour" in str(errors[1])
    assert errors[1].lane == (55, 0, 0)


@pto.kernel
def l1_write_in_condition(x, n):
    """An L1 write (an atomic) in a while loop's condition: the condition region is split into
    phases as the body is (docs/native.md#while-loops)."""
    buf = pto.alloc_local(64, dtype=pto.int32)
    tid = pto.get_local_id()
    pto.store(buf + tid, 0)
    pto.barrier_block()
    k = 0
    while pto.atomic_add(buf + (tid ^ 1), 1) < n + tid % 3:
        k += 1
    pto.store(x + tid, pto.cast(k, pto.float32))


def test_an_l1_write_in_a_while_condition_is_compiled():
    native, oracle = np.zeros(64, np.float32), np.zeros(64, np.float32)
    pto.launch(l1_write_in_condition, 1, 64, (native, 2), backend="native")
    pto.launch(l1_write_in_condition, 1, 64, (oracle, 2), backend="interpreter")
    assert np.array_equal(native, oracle) and np.array_equal(native, 2 + np.arange(64) % 3)


@pto.kernel
def l1_hist(keys, counts, n):
    """L1 atomics (a phase each, lane order) and a uniform if around barriers."""
    h = pto.alloc_local(16, dtype=pto.int32)
    tid = pto.get_local_id()
    i = pto.get_global_id()
    if tid < 16:
        pto.store(h + tid, 0)
    pto.barrier_block()
    if i < n:
        pto.atomic_add(h + pto.load(keys + i) % 16, 1)
    pto.barrier_block()
    if n > 0:  # uniform: runs at block level, around a barrier
        pto.barrier_block()
        if tid < 16:
            pto.atomic_add(counts + (pto.get_block_id() * 16 + tid), pto.load(h + tid))


def test_l1_atomics_and_uniform_if_around_barriers():
    n, block = 3000, 256
    keys = np.random.default_rng(2).integers(0, 1000, n).astype(np.int32)
    grid = (n + block - 1) // block
    interp, native = both(l1_hist, grid, block, [keys, np.zeros(16 * grid, np.int32)], (n,))
    assert same_bits(interp, native)
    expect = np.zeros((grid, 16), np.int32)
    for b in range(grid):
        expect[b] = np.bincount(keys[b * block:(b + 1) * block] % 16, minlength=16)
    assert np.array_equal(native[1].reshape(grid, 16), expect)


@pto.kernel
def tile_scale(x, y, N, ROWS: pto.constexpr, COLS: pto.constexpr):
    """A strided 2-D async copy into L1, lanes computing on it, an async copy back."""
    t = pto.alloc_local(ROWS * COLS)
    o = pto.alloc_local(ROWS * COLS)
    col0 = pto.get_block_id() * COLS
    tok = pto.async_load(t, x + col0, ROWS * COLS * 4, rows=ROWS, src_stride=N)
    pto.wait(tok)
    tid = pto.get_local_id()
    pto.store(o + tid, pto.load(t + tid) * 3.0 + 1.0)
    pto.barrier_block()
    pto.async_store(y + col0, o, ROWS * COLS * 4, rows=ROWS, dst_stride=N)
    pto.wait_all()


def test_async_copies_with_strides_bit_exact():
    rows, cols, blocks = 8, 16, 5
    n = cols * blocks
    x = np.random.default_rng(3).standard_normal((rows, n)).astype(np.float32)
    interp, native = both(tile_scale, blocks, rows * cols, [x.reshape(-1), np.zeros(rows * n,
                                                                                 np.float32)],
                          (n, rows, cols))
    assert same_bits(interp, native)
    assert np.array_equal(native[1].reshape(rows, n), x * np.float32(3) + np.float32(1))


@pto.kernel
def tile_mm(A, B, C, K: pto.constexpr, T: pto.constexpr):
    """C (T x T) = A (T x K) @ B (K x T): fill, copies waited at once, mma per k-tile, then a
    synchronous tile store."""
    a = pto.alloc_local(T * T, dtype=A.dtype)
    b = pto.alloc_local(T * T, dtype=B.dtype)
    c = pto.alloc_local(T * T)
    pto.fill(c, 0.0, T * T)
    for k0 in range(0, K, T):
        pto.async_load(a, A + k0, T * T * A.itemsize, rows=T, src_stride=K)
        pto.async_load(b, B + k0 * T, T * T * B.itemsize, rows=T, src_stride=T)
        pto.wait_all()
        pto.mma(c, a, b, T, T, T)
    pto.store(C, c, T * T * 4, rows=T, dst_stride=T)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_mma_gives_the_interpreters_bits(dtype):
    t, k = 16, 64
    rng = np.random.default_rng(4)
    a = rng.standard_normal((t, k)).astype(dtype)
    b = rng.standard_normal((k, t)).astype(dtype)
    interp, native = both(tile_mm, 1, 32, [a.reshape(-1), b.reshape(-1),
                                           np.zeros(t * t, np.float32)], (k, t))
    assert same_bits(interp, native)
    expect = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(native[2].reshape(t, t), expect, rtol=1e-4, atol=1e-4)


def test_copy_out_of_bounds_error_matches_the_interpreter():
    rows, cols = 8, 16
    x = np.zeros(rows * cols - 1, np.float32)  # one element short
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(tile_scale, 1, rows * cols, (x, np.zeros(rows * cols, np.float32), cols,
                                                    rows, cols), backend=backend)
        errors.append(info.value)
    assert str(errors[0]) == str(errors[1])
    assert "out-of-bounds async_load source: HBM buffer 'x' element 127" in str(errors[1])


@pto.kernel
def in_flight(x, y):
    t = pto.alloc_local(64)
    o = pto.alloc_local(64)
    tok = pto.async_load(t, x, 256, rows=1)
    tid = pto.get_local_id()
    pto.store(o + tid, 1.0)
    pto.wait(tok)
    pto.store(y + tid, pto.load(t + tid) + pto.load(o + tid))


def test_a_copy_in_flight_across_disjoint_work_compiles():
    """The copy into `t` is in flight while lanes write `o` (another buffer): no hazard can
    fire (tokens.py), so it compiles and agrees with the interpreter."""
    x = np.arange(64, dtype=np.float32)
    interp, native = both(in_flight, 1, 64, [x, np.zeros(64, np.float32)])
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1], x + 1)


def test_auto_keeps_race_checked_kernels_on_the_interpreter(monkeypatch):
    """The race detector is the interpreter's (docs/native.md#choosing-a-backend): with it on,
    "auto" runs an L1 kernel there; with it off, natively."""
    from pypto.backend.native import jit

    runs = []
    real = jit.NativeKernel._make_run  # (`run` is made per kernel: wrap what makes it)

    def make_run(self):
        run = real(self)
        return lambda *a: (runs.append(self.name), run(*a))[1]

    monkeypatch.setattr(jit.NativeKernel, "_make_run", make_run)
    n = 256
    x = np.arange(n, dtype=np.float32)
    pto.launch(warp_pairs, 1, n, (x, np.zeros(n, np.float32), n), backend="auto")
    assert runs == []
    monkeypatch.setenv("PYPTO_RACE_CHECK", "0")
    y = np.zeros(n, np.float32)
    ck = pto.compile(warp_pairs, args=(x, y, n), block=n, race_check=False)
    pto.launch(ck, 1, n, (x, y, n), backend="auto")
    assert runs == ["warp_pairs"]
    assert np.array_equal(y, x[np.arange(n) ^ 1] * 2 + x)


def test_emit_llvm_of_a_kernel_with_phases_and_collectives(tmp_path):
    import contextlib
    import io

    from pypto.tools.opt import main

    a = pto.empty(16 * 64, np.float32)
    ck = pto.compile(tile_mm, args=(a, a, pto.empty(256, np.float32), 64, 16), block=32)
    path = tmp_path / "k.mlir"
    path.write_text(ck.as_text())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([str(path), "--emit=llvm"]) == 0
    text = out.getvalue()
    assert "declare i32 @\"pypto_native_collective\"" in text or \
        "declare i32 @pypto_native_collective" in text
    assert 'define i32 @"tile_mm"' in text
    import re

    calls = re.findall(r'call [^\n]*@"pypto_native_collective"', text)
    assert len(calls) == 5  # fill, two loads, mma, the tile store


def test_the_disk_cache_is_keyed_by_the_backends_own_source(monkeypatch):
    """An edited native backend (same version number) must not load object code compiled by
    the previous one: its phases and spill slots may differ."""
    from pypto.backend.native import jit

    from pypto.backend.native.phase_codegen import spill_slots

    ck = pto.compile(warp_pairs, args=(pto.empty(256, np.float32), pto.empty(256, np.float32),
                                       256), block=256)
    first = jit.NativeKernel(ck.func, ck.name)
    assert not first.cached
    assert first.slots == spill_slots(ck.func) > 0  # the lowering's own count (the split's)
    again = jit.NativeKernel(ck.func, ck.name)
    assert again.cached and again.slots == first.slots  # read back beside the object code
    for side in jit.cache_dir().glob("*.slots"):
        side.unlink()
    assert jit.NativeKernel(ck.func, ck.name).slots == first.slots  # (counted again)
    versions = jit._versions()
    assert " native " in versions  # (the source hash is part of the key)
    monkeypatch.setattr(jit, "_VERSIONS", [versions.rpartition(" native ")[0] + " native edited"])
    assert not jit.NativeKernel(ck.func, ck.name).cached
