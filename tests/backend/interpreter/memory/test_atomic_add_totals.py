"""`pto.atomic_add` whose `old` result is never used: the integer fast path.

Codegen passes `need_old=False` when the result has no use; on an integer buffer the runtime
then applies every addition at once (`np.add.at`), which is exact because wrap-around integer
addition is associative and commutative. These tests check it against a Python reference
(one addition at a time, in lane order, wrapped to the element type), in every integer dtype,
for global and L1 buffers, per-lane and uniform values and addresses, masked lanes and values
that wrap; that the errors (bounds, uninitialised L1, in-flight copies) are exactly the ones
the serialised path raises; that floats keep the lane order; and that the flag is emitted only
when it may be.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from tests.conftest import from_device, to_device


@pto.kernel
def add_unused(buf, idx, val, n):
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(buf + pto.load(idx + i), pto.load(val + i))


@pto.kernel
def add_uniform_unused(buf, idx, n, step):
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(buf + pto.load(idx + i), step)


@pto.kernel
def add_one_address_unused(buf, val, n, at):
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(buf + at, pto.load(val + i))


@pto.kernel
def l1_bins_unused(idx, val, out, n, NB: pto.constexpr):
    bins = pto.alloc_local(NB, dtype=val.dtype)
    pto.fill(bins, 7, NB)
    pto.barrier_block()
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(bins + pto.load(idx + i), pto.load(val + i))
    pto.barrier_block()
    t = pto.get_local_id()
    if t < NB:
        pto.store(out + pto.get_block_id() * NB + t, pto.load(bins + t))


@pto.kernel
def add_used(buf, idx, val, olds, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(olds + i, pto.atomic_add(buf + pto.load(idx + i), pto.load(val + i)))


def wrapped_sums(start: np.ndarray, idx: np.ndarray, val: np.ndarray) -> np.ndarray:
    """`start[idx[k]] += val[k]` for every k in order, in Python integers, wrapped at the end
    to the element type (wrapping once at the end equals wrapping at every step)."""
    info = np.iinfo(start.dtype)
    total = [int(x) for x in start]
    for k in range(idx.size):
        total[int(idx[k])] += int(val[k])
    span = info.max - info.min + 1
    return np.array([(t - info.min) % span + info.min for t in total], dtype=start.dtype)


INT_DTYPES = [np.int32, np.int64]  # pypto's integer types


def values(dtype: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """Values near the type's extremes, so the sums wrap."""
    info = np.iinfo(dtype)
    return rng.integers(info.max // 2, info.max, n, endpoint=True, dtype=dtype)


def launch(kernel: Any, grid: int, block: int, args: tuple[Any, ...], **options: Any):
    device, tensors = to_device(args)
    ck = pto.compile(kernel, args=device, block=block, **options)
    pto.launch(ck, grid=grid, block=block, args=device)
    return ck, from_device(tensors)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("n,size", [(1, 1), (300, 5), (1000, 1000), (2048, 64)])
def test_global_totals_match_the_one_at_a_time_reference(dtype, n, size):
    rng = np.random.default_rng(n + size)
    buf = values(dtype, size, rng)
    idx = rng.integers(0, size, n).astype(np.int32)
    val = values(dtype, n, rng)
    m = n - n // 3                                        # lanes past m are masked off
    _, (out, _, _) = launch(add_unused, (n + 127) // 128, 128, (buf, idx, val, m))
    np.testing.assert_array_equal(out, wrapped_sums(buf, idx[:m], val[:m]))


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_uniform_value_and_uniform_address(dtype):
    rng = np.random.default_rng(3)
    n = 1500
    buf = values(dtype, 10, rng)
    idx = rng.integers(0, 10, n).astype(np.int32)
    step = int(np.iinfo(dtype).max // 3)
    _, (out, _) = launch(add_uniform_unused, 6, 256, (buf, idx, n, step))
    np.testing.assert_array_equal(
        out, wrapped_sums(buf, idx, np.full(n, step, dtype)))
    val = values(dtype, n, rng)
    _, (out, _) = launch(add_one_address_unused, 6, 256, (buf, val, n - 7, 4))
    np.testing.assert_array_equal(out, wrapped_sums(buf, np.full(n - 7, 4), val[:n - 7]))


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_l1_totals_per_block_side_by_side(dtype):
    """Batch mode: each block's lanes add into their own block's copy of L1."""
    rng = np.random.default_rng(5)
    nb, block, blocks = 12, 64, 20
    n = block * blocks - 30
    idx = rng.integers(0, nb, n).astype(np.int32)
    val = values(dtype, n, rng)
    out = np.zeros(blocks * nb, dtype)
    device, _ = to_device((idx, val, out, n, nb))
    assert pto.compile(l1_bins_unused, args=device, block=block).executable.mode == "batch"
    _, (_, _, out) = launch(l1_bins_unused, blocks, block, (idx, val, out, n, nb))
    for b in range(blocks):
        lanes = slice(b * block, min(n, (b + 1) * block))
        ref = wrapped_sums(np.full(nb, 7, dtype), idx[lanes], val[lanes])
        np.testing.assert_array_equal(out[b * nb:(b + 1) * nb], ref)


def atomic_line(executable: Any, instrumented: bool = False) -> str:
    source = executable.variant(True, instrumented).source
    return next(line for line in source.splitlines() if "atomic_add(" in line)


def test_flag_only_when_old_is_unused():
    t = pto.alloc_tensor(64 * 4, dtype=np.int32)
    unused = pto.compile(add_unused, args=(t, t, t, 64), block=64).executable
    used = pto.compile(add_used, args=(t, t, t, t, 64), block=64).executable
    assert atomic_line(unused).endswith(", False)")
    assert not atomic_line(used).endswith(", False)")
    # instruments observe every op's value: the instrumented variant always computes `old`
    assert not atomic_line(unused, instrumented=True).endswith(", False)")


def test_float_atomics_keep_the_lane_order_when_old_is_unused():
    """float16: 2048 + 1 rounds back to 2048, so the order of the additions shows."""
    n = 64
    val = np.ones(n, np.float16)
    val[-1] = 2048
    _, (out, _, _) = launch(add_unused, 1, 64, (np.zeros(1, np.float16),
                                                np.zeros(n, np.int32), val, n))
    assert out[0] == np.float16(63) + np.float16(2048)          # the ones first, in lane order


def error_text(fast: bool, fn: Any) -> str:
    saved = FAST_PATHS.on
    FAST_PATHS.on = fast
    try:
        with pytest.raises(pto.KernelError) as info:
            fn()
            pto.sync()
        return f"{type(info.value).__name__}: {info.value}"
    finally:
        FAST_PATHS.on = saved


@pytest.mark.parametrize("bad", [-3, 1000])
@pytest.mark.parametrize("kernel", ["global", "l1"])
def test_out_of_bounds_errors_are_those_of_the_serialised_path(bad, kernel):
    idx = np.arange(256, dtype=np.int32) % 12
    idx[77] = bad
    idx[200] = bad + 1
    val = np.ones(256, np.int32)
    if kernel == "global":
        args: tuple[Any, ...] = (np.zeros(12, np.int32), idx, val, 250)
        run = lambda: launch(add_unused, 4, 64, args)  # noqa: E731
    else:
        args = (idx, val, np.zeros(4 * 12, np.int32), 250, 12)
        run = lambda: launch(l1_bins_unused, 4, 64, args)  # noqa: E731
    fast, general = error_text(True, run), error_text(False, run)
    assert fast == general
    assert "out-of-bounds atomic_add" in fast and "lane (13, 0, 0)" in fast and f"element {bad}" in fast


@pto.kernel
def atomic_into_uninitialised(idx, out, n):
    bins = pto.alloc_local(16, dtype=pto.int32)
    pto.fill(bins, 0, 8)                    # bins 8..15 never written
    pto.barrier_block()
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(bins + pto.load(idx + i), 1)
    pto.barrier_block()
    t = pto.get_local_id()
    if t < 8:
        pto.store(out + t, pto.load(bins + t))


def test_uninitialised_l1_errors_are_those_of_the_serialised_path():
    idx = np.arange(64, dtype=np.int32) % 8
    idx[40] = 11
    args = (idx, np.zeros(8, np.int32), 64)
    run = lambda: launch(atomic_into_uninitialised, 1, 64, args,  # noqa: E731
                         check_uninitialized=True)
    fast, general = error_text(True, run), error_text(False, run)
    assert fast == general and "'bins'[11]" in fast
    _, (_, out) = launch(atomic_into_uninitialised, 1, 64, (idx % 8, np.zeros(8, np.int32), 64),
                         check_uninitialized=True)
    np.testing.assert_array_equal(out, np.bincount(idx % 8, minlength=8))


@pto.kernel
def atomic_while_in_flight(src, idx, n):
    bins = pto.alloc_local(64, dtype=pto.int32)
    tok = pto.async_load(bins, src, 64 * 4)
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(bins + pto.load(idx + i), 1)
    pto.wait(tok)


def test_in_flight_errors_are_those_of_the_serialised_path():
    args = (np.zeros(64, np.int32), np.arange(64, dtype=np.int32), 64)
    run = lambda: launch(atomic_while_in_flight, 1, 64, args, pipeline="")  # noqa: E731
    fast, general = error_text(True, run), error_text(False, run)
    assert fast == general and "in flight" in fast


@pto.kernel
def count_own_lane(buf, n):
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(buf + i, 3)     # inactive lanes' addresses (i >= n) are out of bounds


@pto.kernel
def l1_own_lane(out, n):
    bins = pto.alloc_local(50, dtype=pto.int32)
    t = pto.get_local_id()
    pto.fill(bins, 1, 50)
    pto.barrier_block()
    if t < 50:
        pto.atomic_add(bins + t, t)    # lanes 50..63 would be out of bounds: inactive
    pto.barrier_block()
    if t < 50:
        pto.store(out + pto.get_block_id() * 50 + t, pto.load(bins + t))


def test_inactive_lanes_out_of_bounds_are_ignored():
    for fast in (True, False):
        saved, FAST_PATHS.on = FAST_PATHS.on, fast
        try:
            _, (out,) = launch(count_own_lane, 8, 128, (np.zeros(1000, np.int32), 1000))
            np.testing.assert_array_equal(out, np.full(1000, 3))
            _, (out,) = launch(l1_own_lane, 6, 64, (np.zeros(300, np.int32), 300))
            np.testing.assert_array_equal(out, np.tile(1 + np.arange(50), 6))
        finally:
            FAST_PATHS.on = saved
