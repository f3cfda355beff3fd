"""Bounds checks `i OP n` of an affine lane value against a uniform one (`lanes.ramp_compare`):
when the outcome is the same on every lane the interpreter hands out a cached all-True /
all-False mask that `mask_and` recognises without looking at the lanes. Every predicate, both
operand orders, bounds below, inside, at and beyond the lane vector, with the fast paths on and
off, against NumPy's answer for the lanes' global ids."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter import lanes
from pypto.backend.interpreter.caches import RunCache
from pypto.backend.interpreter.fastpaths import FAST_PATHS

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
       "==": operator.eq, "!=": operator.ne}


@pto.kernel
def lt(o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, 1)


@pto.kernel
def le(o, n):
    i = pto.get_global_id()
    if i <= n:
        pto.store(o + i, 1)


@pto.kernel
def gt(o, n):
    i = pto.get_global_id()
    if i > n:
        pto.store(o + i, 1)


@pto.kernel
def ge(o, n):
    i = pto.get_global_id()
    if i >= n:
        pto.store(o + i, 1)


@pto.kernel
def eq(o, n):
    i = pto.get_global_id()
    if i == n:
        pto.store(o + i, 1)


@pto.kernel
def ne(o, n):
    i = pto.get_global_id()
    if i != n:
        pto.store(o + i, 1)


@pto.kernel
def swapped_lt(o, n):
    i = pto.get_global_id()
    if n > i:  # the uniform operand on the left
        pto.store(o + i, 1)


@pto.kernel
def swapped_ge(o, n):
    i = pto.get_global_id()
    if n <= i:
        pto.store(o + i, 1)


@pto.kernel
def if_else(o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, 1)
    else:
        pto.store(o + i, 2)


KERNELS = {"<": lt, "<=": le, ">": gt, ">=": ge, "==": eq, "!=": ne}
LANES = 128  # 2 blocks of 64


@pytest.fixture(params=[True, False], ids=["fast", "general"])
def fast_paths(request):
    saved = FAST_PATHS.on
    FAST_PATHS.on = request.param
    yield
    FAST_PATHS.on = saved


def _run(kernel, n: int) -> np.ndarray:
    o = pto.alloc_tensor(LANES * 4, dtype=np.int32)
    pto.memcpy_h2d(o, np.zeros(LANES, np.int32))
    pto.launch(kernel, grid=2, block=64, args=(o, n))
    out = np.empty(LANES, np.int32)
    pto.memcpy_d2h(out, o)
    return out


BOUNDS = [-(2**31), -5, -1, 0, 1, 63, 64, 126, 127, 128, 129, 1000, 2**31 - 1]


@pytest.mark.parametrize("n", BOUNDS)
@pytest.mark.parametrize("op", sorted(OPS))
def test_each_predicate_matches_numpy(op, n, fast_paths):
    ids = np.arange(LANES)
    assert _run(KERNELS[op], n).tolist() == OPS[op](ids, n).astype(np.int32).tolist()


@pytest.mark.parametrize("n", BOUNDS)
def test_uniform_operand_on_the_left(n, fast_paths):
    ids = np.arange(LANES)
    assert _run(swapped_lt, n).tolist() == (n > ids).astype(np.int32).tolist()
    assert _run(swapped_ge, n).tolist() == (n <= ids).astype(np.int32).tolist()


@pytest.mark.parametrize("n", [-1, 0, 50, 128, 500])
def test_both_sides_of_a_branch(n, fast_paths):
    ids = np.arange(LANES)
    assert _run(if_else, n).tolist() == np.where(ids < n, 1, 2).tolist()


def test_ramp_compare_is_numpy_comparison_of_the_int64_difference():
    """The helper against NumPy's own int64 arithmetic (wrapping included) and comparison."""
    cache = RunCache()
    ramp = cache.ramp(100)
    rng = np.random.default_rng(3)
    values = [0, 1, 50, 99, 100, 101, -1, -100, 2**31, -(2**31) - 7, 2**63 - 1, -(2**63)]
    values += [int(v) for v in rng.integers(-300, 300, 40)]
    saved = FAST_PATHS.on
    try:
        for on in (True, False):
            FAST_PATHS.on = on
            for op, fn in OPS.items():
                for u in values:
                    for base in (0, 3, -4, 2**62, -(2**62)):
                        with np.errstate(over="ignore"):
                            bound = np.int64(u) - np.int64(base)
                        want = fn(ramp.astype(np.int64), bound)
                        got = lanes.ramp_compare(cache, ramp, op, np.int64(u), np.int64(base))
                        assert got.dtype == np.bool_ and np.array_equal(got, want), \
                            (op, u, base, on)
    finally:
        FAST_PATHS.on = saved


def test_uniform_masks_are_recognised_and_read_only():
    cache = RunCache()
    no, every = cache.uniform_masks(64)
    assert not no.any() and every.all()
    assert not no.flags.writeable and not every.flags.writeable
    assert cache.uniform_masks(64)[1] is every  # one pair per Executable and size
    assert RunCache().uniform_masks(64)[1] is not every  # nothing shared between Executables
    for c in (cache, None):  # with the cache: by identity; without: by looking at the lanes
        assert lanes.mask_and(None, every, c) is None
        assert lanes.mask_and(None, no, c) is False
        assert lanes.mask_andnot(None, no, c) is None
        assert lanes.mask_andnot(None, every, c) is False
        partial = np.arange(64) < 10
        got = lanes.mask_and(partial, every, c)  # an outer mask stays what it was
        assert np.array_equal(got, partial)
        assert lanes.mask_and(partial, no, c) is False


@pytest.mark.parametrize("size", [1, 100, 1 << 14, (1 << 14) + 1, 1 << 16])
def test_mask_and_decides_none_all_or_some(size):
    """Both ways of deciding (one count on short masks, any/all on long ones) give the same."""
    every = np.ones(size, bool)
    nothing = np.zeros(size, bool)
    some = every.copy()
    some[size // 2] = False
    assert lanes.mask_and(None, every.copy()) is None
    assert lanes.mask_and(None, nothing.copy()) is False
    if size > 1:
        assert lanes.mask_and(None, some) is some
        assert lanes.mask_andnot(None, some).sum() == 1
        assert lanes.mask_and(some, every.copy()).sum() == size - 1
    assert lanes.mask_andnot(None, nothing.copy()) is None
    assert lanes.mask_and(every.copy(), every.copy()).all()  # an array mask stays an array
