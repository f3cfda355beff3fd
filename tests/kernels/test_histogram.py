"""Histogram with `pto.atomic_add` on int32 bins.

`bin = value % nbins` (Python's `%`, so negative values land in [0, nbins)). Two kernels: the
direct one (every lane adds 1 to a global bin) and the privatised one a CUDA author writes to
cut global contention: per-block bins in L1 (zeroed with `pto.fill`, `barrier_block()`),
atomics into L1, `barrier_block()`, then one global atomic per bin and block.

Besides the counts, the values `atomic_add` returns are checked: the lanes that hit a bin
received the old values 0, 1, ..., count-1, each exactly once (atomicity: no two lanes saw the
same old value).
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto


@pto.kernel
def histogram(data, bins, olds, n, nbins):
    i = pto.get_global_id()
    if i >= n:
        return
    b = pto.load(data + i) % nbins
    old = pto.atomic_add(bins + b, 1)
    pto.store(olds + i, old)


@pto.kernel
def histogram_l1(data, bins, n, NBINS: pto.constexpr, BLOCK: pto.constexpr):
    tid = pto.get_local_id()
    local = pto.alloc_local(NBINS, dtype=pto.int32)
    pto.fill(local, 0, NBINS)
    pto.barrier_block()
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(local + pto.load(data + i) % NBINS, 1)
    pto.barrier_block()
    for b0 in range(0, NBINS, BLOCK):      # every bin, BLOCK at a time
        b = b0 + tid
        if b < NBINS:
            count = pto.load(local + b)
            if count != 0:
                pto.atomic_add(bins + b, count)


def check_old_values(values: np.ndarray, olds: np.ndarray, start: np.ndarray, nbins: int):
    for b in range(nbins):
        got = np.sort(olds[values % nbins == b])
        np.testing.assert_array_equal(got, start[b] + np.arange(got.size, dtype=np.int32))


SIZES = [1, 100, 256, 1000, 10007]


@pytest.mark.parametrize("nbins", [1, 7, 64])
@pytest.mark.parametrize("n", SIZES)
def test_histogram_counts_and_old_values(run, n, nbins):
    rng = np.random.default_rng(n * 100 + nbins)
    data = rng.integers(-500, 500, n).astype(np.int32)
    start = rng.integers(0, 10, nbins).astype(np.int32)     # bins need not start at zero
    olds = np.full(n, -1, np.int32)
    block = 256
    _, bins, olds = run(histogram, (n + block - 1) // block, block,
                        (data, start.copy(), olds, n, nbins))
    counts = np.bincount(data % nbins, minlength=nbins).astype(np.int32)
    np.testing.assert_array_equal(bins, start + counts)
    check_old_values(data, olds, start, nbins)
    # old + 1 over all lanes of one bin covers start+1 .. start+count: the sum is consistent
    for b in range(nbins):
        sel = olds[data % nbins == b]
        assert int((sel.astype(np.int64) + 1).sum()) == \
            sum(range(int(start[b]) + 1, int(start[b]) + int(counts[b]) + 1))


@pytest.mark.parametrize("nbins,block", [(7, 64), (256, 256), (300, 128)])
@pytest.mark.parametrize("n", [1, 1000, 10007])
def test_privatised_histogram_matches_bincount(run, n, nbins, block):
    data = np.random.default_rng(n + nbins).integers(-10**6, 10**6, n).astype(np.int32)
    bins = np.zeros(nbins, np.int32)
    _, bins = run(histogram_l1, (n + block - 1) // block, block, (data, bins, n, nbins, block))
    np.testing.assert_array_equal(bins, np.bincount(data % nbins, minlength=nbins))


def test_all_lanes_hitting_one_bin_see_distinct_old_values(run):
    n = 777
    data = np.full(n, 42, np.int32)
    olds = np.full(n, -1, np.int32)
    _, bins, olds = run(histogram, 4, 256, (data, np.zeros(1, np.int32), olds, n, 1))
    assert bins[0] == n
    np.testing.assert_array_equal(np.sort(olds), np.arange(n))


@pytest.mark.parametrize("nbins,block", [(7, 64), (300, 128)])
def test_privatised_histogram_under_other_warp_orders(run_scheduled, nbins, block):
    n = 3000
    data = np.random.default_rng(nbins).integers(-10**6, 10**6, n).astype(np.int32)
    _, bins = run_scheduled(histogram_l1, (n + block - 1) // block, block,
                            (data, np.zeros(nbins, np.int32), n, nbins, block))
    np.testing.assert_array_equal(bins, np.bincount(data % nbins, minlength=nbins))
