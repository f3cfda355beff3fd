"""Interpreter semantics against NumPy references."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from vector_add import vector_add  # noqa: E402

RNG = np.random.default_rng(1234)


@pytest.mark.parametrize("n, block", [(1024, 256), (1000, 256), (1, 32), (4097, 128),
                                      (65536, 1024), (300, 96)])
def test_vector_add_matches_numpy(run, n, block):
    a = RNG.random(n, dtype=np.float32)
    b = RNG.random(n, dtype=np.float32)
    o = np.zeros(n, dtype=np.float32)
    grid = (n + block - 1) // block
    _, _, out = run(vector_add, grid, block, (a, b, o, n))
    np.testing.assert_array_equal(out, a + b)


def test_vector_add_leaves_elements_past_n_untouched(run):
    n = 1000
    a = RNG.random(1024, dtype=np.float32)
    b = RNG.random(1024, dtype=np.float32)
    o = np.full(1024, -7.0, dtype=np.float32)
    _, _, out = run(vector_add, 4, 256, (a, b, o, n))
    np.testing.assert_array_equal(out[:n], a[:n] + b[:n])
    assert (out[n:] == -7.0).all()


@pto.kernel
def fma_kernel(a, b, c, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.fma(o + i, pto.load(a + i), pto.load(b + i), pto.load(c + i))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fma_is_a_true_multiply_add_rounded_once(run, dtype):
    n = 2000
    a = (RNG.random(n) * 4 - 2).astype(dtype)
    b = (RNG.random(n) * 4 - 2).astype(dtype)
    c = (RNG.random(n) * 4 - 2).astype(dtype)
    o = np.zeros(n, dtype=dtype)
    *_, out = run(fma_kernel, 8, 256, (a, b, c, o, n))
    ref = (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(dtype)
    np.testing.assert_array_equal(out, ref)


@pto.kernel
def branches(x, o, n):
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i)
        if v > 0.5:
            r = v * 2.0
        elif v > 0.25:
            r = v - 1.0
        else:
            r = -v
        k = i % 3
        if k == 0:
            r = r + 100.0
        pto.store(o + i, r)


def test_nested_divergent_branches_merge_per_lane(run):
    n = 777
    x = RNG.random(n, dtype=np.float32)
    o = np.zeros(n, dtype=np.float32)
    _, out = run(branches, 7, 128, (x, o, n))
    ref = np.where(x > 0.5, x * np.float32(2), np.where(x > 0.25, x - np.float32(1), -x))
    ref = np.where(np.arange(n) % 3 == 0, ref + np.float32(100), ref).astype(np.float32)
    np.testing.assert_array_equal(out, ref)


@pto.kernel
def int_ops(x, o, n):
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i)
        r = (v // 7) * 3 + v % 7 - (v ^ 5) + (v & 12) + (v | 1) + (v << 2) + (v >> 1)
        r = max(r, -50) + min(v, 3) + abs(v - 100)
        pto.store(o + i, r)


def test_integer_arithmetic_has_python_semantics(run):
    n = 500
    x = RNG.integers(-1000, 1000, n).astype(np.int32)
    o = np.zeros(n, dtype=np.int32)
    _, out = run(int_ops, 2, 256, (x, o, n))
    v = x.astype(np.int64)
    r = (v // 7) * 3 + v % 7 - (v ^ 5) + (v & 12) + (v | 1) + (v << 2) + (v >> 1)
    r = np.maximum(r, -50) + np.minimum(v, 3) + np.abs(v - 100)
    np.testing.assert_array_equal(out, r.astype(np.int32))


@pto.kernel
def ids_2d(o, width):
    x = pto.get_global_id(0)
    y = pto.get_global_id(1)
    code = (pto.get_block_id(0) * 1000 + pto.get_block_id(1) * 100 + pto.get_local_id(0) * 10
            + pto.get_local_id(1))
    pto.store(o + y * width + x, code + pto.get_grid_dim(0) * 0 + pto.get_block_dim(1) * 0)


def test_two_dimensional_grid_ids(run):
    grid, block = (3, 2), (4, 5)
    width, height = grid[0] * block[0], grid[1] * block[1]
    o = np.zeros(width * height, dtype=np.int32)
    (out,) = run(ids_2d, grid, block, (o, width))
    ys, xs = np.divmod(np.arange(width * height), width)
    ref = (xs // 4) * 1000 + (ys // 5) * 100 + (xs % 4) * 10 + ys % 5
    np.testing.assert_array_equal(out, ref)


@pto.kernel
def warp_lane(o):
    i = pto.get_global_id()
    pto.store(o + i, pto.get_warp_id() * 100 + pto.get_lane_id())


def test_warp_and_lane_ids(run):
    o = np.zeros(3 * 96, dtype=np.int32)
    (out,) = run(warp_lane, 3, 96, (o,))
    local = np.arange(3 * 96) % 96
    np.testing.assert_array_equal(out, (local // 32) * 100 + local % 32)


@pto.kernel
def oob_store(o, n):
    i = pto.get_global_id()
    pto.store(o + i, 1.0)


def test_out_of_bounds_store_names_kernel_line_block_lane_address_bounds(run):
    o = np.zeros(100, dtype=np.float32)
    with pytest.raises(pto.MemoryAccessError) as info:
        run(oob_store, 1, 128, (o, 100))
    err = info.value
    assert err.address == 100
    assert err.bounds == (0, 100)
    assert err.block == (0, 0, 0)
    assert err.lane == (100, 0, 0)
    text = str(err)
    assert "oob_store" in text and "test_interpreter.py" in text
    assert "element 100" in text and "0..99" in text and "lane (100, 0, 0)" in text


@pto.kernel
def oob_gather(x, o, idx_scale, shift):
    i = pto.get_global_id()
    v = pto.load(x + i * idx_scale + shift)
    pto.store(o + i, v)


def test_out_of_bounds_gather_in_a_later_block(run):
    x = np.zeros(64, dtype=np.float32)
    o = np.zeros(64, dtype=np.float32)
    with pytest.raises(pto.MemoryAccessError) as info:
        run(oob_gather, 2, 32, (x, o, 1, -3))
    assert info.value.address == -3
    assert info.value.lane == (0, 0, 0)
    x = np.zeros(64, dtype=np.float32)
    with pytest.raises(pto.MemoryAccessError) as info:
        run(oob_gather, 2, 32, (x, o, 2, 1))
    # lane k reads 2k+1 >= 64 first at k = 32: block 1, lane 0
    assert info.value.address == 65 and info.value.block == (1, 0, 0)
    assert info.value.lane == (0, 0, 0)


def test_out_of_bounds_never_touches_host_memory(run):
    """A masked-off lane may hold a wild address; it is never dereferenced."""
    n = 10
    a = RNG.random(16, dtype=np.float32)
    b = RNG.random(16, dtype=np.float32)
    o = np.zeros(16, dtype=np.float32)
    _, _, out = run(vector_add, 1, 1024, (a, b, o, n))
    np.testing.assert_array_equal(out[:n], a[:n] + b[:n])


@pto.kernel
def divergent_block_barrier(o, n):
    i = pto.get_global_id()
    if i < n:
        pto.barrier_block()
    pto.store(o + i, 1.0)


def test_block_barrier_under_a_lane_dependent_if_is_rejected_at_compile_time():
    t = pto.alloc_tensor(64 * 4)
    with pytest.raises(pto.BarrierError) as info:
        pto.compile(divergent_block_barrier, args=(t, 40), block=64)
    text = str(info.value)
    assert "pto.barrier_block is a block barrier" in text
    assert "under lane-dependent control flow" in text
    # it names the barrier's line and the divergent condition's line
    import inspect
    lines, start = inspect.getsourcelines(divergent_block_barrier.fn)
    assert f":{start + 4}:" in text.splitlines()[0]  # pto.barrier_block()
    assert f"test_interpreter.py:{start + 3}:" in text  # if i < n


def test_block_barrier_not_reached_by_all_lanes_is_a_deadlock_at_run_time():
    """IR that skipped the static check (hand-written) still cannot hang the interpreter."""
    from xdsl.parser import Parser

    from pypto.backend.interpreter import Executable
    from pypto.ir import make_context

    text = """
    func.func @k(%o: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
      %i = pto.get_global_id 0 : i32
      %c = arith.cmpi slt, %i, %n : i32
      scf.if %c {
        pto.barrier_block
      }
      func.return
    }"""
    module = Parser(make_context(), text).parse_module()
    exe = Executable(next(iter(module.ops)))
    with pytest.raises(pto.DeadlockError, match="not reached by every lane"):
        exe.run((1, 1, 1), (64, 1, 1), (pto.alloc_tensor(64 * 4), 40))


@pto.kernel
def uniform_barriers(o, n):
    i = pto.get_global_id()
    pto.barrier()
    pto.barrier_block()
    if i < n:
        pto.store(o + i, 2.0)


def test_uniform_barriers_run_in_block_mode(run):
    o = np.zeros(64, dtype=np.float32)
    (out,) = run(uniform_barriers, 2, 32, (o, 50))
    np.testing.assert_array_equal(out, np.where(np.arange(64) < 50, 2.0, 0.0))


@pto.kernel
def int_div_zero(x, o):
    i = pto.get_global_id()
    pto.store(o + i, 10 // pto.load(x + i))


def test_integer_division_by_zero_is_an_error(run):
    x = np.array([1, 2, 0, 4], dtype=np.int32)
    o = np.zeros(4, dtype=np.int32)
    with pytest.raises(pto.KernelError, match="division by zero"):
        run(int_div_zero, 1, 4, (x, o))


def test_scalar_argument_types_are_checked_at_launch():
    ck = pto.compile(vector_add, args=(pto.alloc_tensor(16), pto.alloc_tensor(16),
                                       pto.alloc_tensor(16), 4), block=4)
    with pytest.raises(pto.LaunchError, match="int32"):
        ck.execute((1, 1, 1), (4, 1, 1), (pto.alloc_tensor(16), pto.alloc_tensor(16),
                                           pto.alloc_tensor(16), 2**40))


def test_compiled_kernels_are_cached_per_specialisation():
    t = pto.alloc_tensor(16)
    c1 = pto.compile(vector_add, args=(t, t, t, 4), block=4)
    c2 = pto.compile(vector_add, args=(t, t, t, 9), block=4)
    assert c1 is c2  # same types: same specialisation
    t16 = pto.alloc_tensor(16, dtype=np.float16)
    c3 = pto.compile(vector_add, args=(t16, t16, t16, 4), block=4)
    assert c3 is not c1
    assert "!pto.ptr<f16, global>" in c3.mlir


def test_compiled_kernel_call_launches(run):
    n = 64
    a = RNG.random(n, dtype=np.float32)
    b = RNG.random(n, dtype=np.float32)
    d = [pto.alloc_tensor(n * 4) for _ in range(3)]
    pto.memcpy_h2d(d[0], a)
    pto.memcpy_h2d(d[1], b)
    ck = pto.compile(vector_add, args=(*d, n), block=32)
    ck(grid=2, block=32, args=(*d, n))
    out = np.empty(n, dtype=np.float32)
    pto.memcpy_d2h(out, d[2])
    np.testing.assert_array_equal(out, a + b)
