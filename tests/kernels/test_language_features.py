"""Small kernels exercising the language around the numerics: early `return`, loops with
loop-carried values (ascending and descending ranges, nested conditionals), `pto.constexpr` and
automatic specialisation, `select` / `cast`, module constants and closed-over values, and the
warp-only `pto.barrier()`. Every result is exact and compared for equality.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from tests.conftest import run_kernel

LO = -1.0
HI = 2.0
SCALE = 4.0
USE_OFFSET = True
OFFSET = 0.25
MAX_STEPS = 200


@pto.kernel
def clamp_scale(x, y, clamped, n):
    """Module constants folded in; `select` for the clamp, `cast` of a bool to count."""
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i)
        c = pto.select(v < LO, LO, pto.select(v > HI, HI, v))
        if USE_OFFSET:                  # compile-time: only this branch is lowered
            c = c + OFFSET
        pto.store(y + i, c * SCALE)
        pto.atomic_add(clamped, pto.cast(v < LO or v > HI, pto.int32))


@pto.kernel
def horner(coef, x, y, n, DEGREE: pto.constexpr):
    """p(x) = sum coef[k] x^k, evaluated from the top coefficient down (descending range)."""
    i = pto.get_global_id()
    if i >= n:
        return
    v = pto.load(x + i)
    acc = pto.load(coef + DEGREE)
    for k in range(DEGREE - 1, -1, -1):
        acc = acc * v + pto.load(coef + k)      # uniform address: a broadcast load
    pto.store(y + i, acc)


@pto.kernel
def collatz_steps(start, steps, n):
    """Steps to reach 1 (capped): a loop-carried pair updated under a per-lane condition."""
    i = pto.get_global_id()
    if i >= n:
        return
    v = pto.load(start + i)
    count = 0
    for _ in range(MAX_STEPS):
        if v != 1:
            v = pto.select(v % 2 == 0, v // 2, 3 * v + 1)
            count = count + 1
    pto.store(steps + i, count)


@pto.kernel
def classify(x, out, n):
    """Several early returns: each lane stops at its own `return`."""
    i = pto.get_global_id()
    if i >= n:
        return
    v = pto.load(x + i)
    if v < 0:
        pto.store(out + i, -1)
        return
    if v == 0:
        pto.store(out + i, 0)
        return
    r = 1
    if v >= 100:
        r = 3
    elif v >= 10:
        r = 2
    pto.store(out + i, r)


@pto.kernel
def warp_reverse(x, y, n):
    """Reverse each warp's 32 elements through L1; only lanes of the same warp exchange data,
    so the warp barrier suffices."""
    buf = pto.alloc_local(1024)
    i = pto.get_global_id()
    tid = pto.get_local_id()
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.barrier()
    base = pto.get_warp_id() * pto.WARP_SIZE
    if i < n:
        pto.store(y + i, pto.load(buf + base + (pto.WARP_SIZE - 1 - pto.get_lane_id())))


@pto.kernel
def block_reverse(x, y, size):
    """`size` sizes an L1 buffer, so it is specialised on its launch value automatically."""
    buf = pto.alloc_local(size)
    tid = pto.get_local_id()
    base = pto.get_block_id() * size
    pto.store(buf + tid, pto.load(x + base + tid))
    pto.barrier_block()
    pto.store(y + base + tid, pto.load(buf + size - 1 - tid))


def make_scaler(factor: int, bias: int):
    @pto.kernel
    def scale(x, y, n):
        i = pto.get_global_id()
        if i < n:
            pto.store(y + i, pto.load(x + i) * factor + bias)   # closed-over ints folded
    return scale


SIZES = [1, 33, 256, 1000]


def grid(n: int, block: int = 256) -> int:
    return (n + block - 1) // block


@pytest.mark.parametrize("n", SIZES)
def test_clamp_scale_constants_select_cast(run, n):
    x = (np.random.default_rng(n).standard_normal(n) * 2).astype(np.float32)
    y = np.zeros(n, np.float32)
    _, y, clamped = run(clamp_scale, grid(n), 256, (x, y, np.zeros(1, np.int32), n))
    ref = (np.clip(x, np.float32(LO), np.float32(HI)) + np.float32(OFFSET)) * np.float32(SCALE)
    np.testing.assert_array_equal(y, ref)
    assert clamped[0] == int(((x < LO) | (x > HI)).sum())


@pytest.mark.parametrize("degree", [0, 1, 5])
@pytest.mark.parametrize("n", SIZES)
def test_horner_constexpr_degree(run, n, degree):
    rng = np.random.default_rng(n + degree)
    coef = rng.standard_normal(degree + 1).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    _, _, y = run(horner, grid(n), 256, (coef, x, y, n, degree))
    acc = np.full(n, coef[degree], np.float32)
    for k in range(degree - 1, -1, -1):
        acc = acc * x + coef[k]
    np.testing.assert_array_equal(y, acc)


def test_constexpr_values_compile_separate_variants():
    run = run_kernel  # the pto level only: the zoo's `run` also compiles an npu-level variant
    coef = np.arange(1, 7, dtype=np.float32)
    x = np.full(4, 2.0, np.float32)
    before = len(horner.cache)
    for degree in (2, 3, 2):
        _, _, y = run(horner, 1, 32, (coef, x, np.zeros(4, np.float32), 4, degree))
        assert y[0] == sum(coef[k] * 2.0 ** k for k in range(degree + 1))
    assert len(horner.cache) == before + 2       # degree 2 compiled once, reused


def collatz_ref(v: int) -> int:
    count = 0
    for _ in range(MAX_STEPS):
        if v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            count += 1
    return count


@pytest.mark.parametrize("n", [1, 100, 300])
def test_collatz_loop_carried_under_divergence(run, n):
    start = np.arange(1, n + 1, dtype=np.int32)
    start[-1] = 27                      # 111 steps
    steps = np.full(n, -1, np.int32)
    _, steps = run(collatz_steps, grid(n, 128), 128, (start, steps, n))
    np.testing.assert_array_equal(steps, [collatz_ref(int(v)) for v in start])


@pytest.mark.parametrize("n", SIZES)
def test_early_returns(run, n):
    x = np.random.default_rng(n).integers(-50, 500, n).astype(np.int32)
    x[: min(n, 4)] = [0, -1, 10, 100][: min(n, 4)]
    out = np.full(n + 5, 99, np.int32)          # the tail past n must stay untouched
    _, out = run(classify, grid(n), 256, (x, out, n))
    ref = np.select([x < 0, x == 0, x >= 100, x >= 10], [-1, 0, 3, 2], 1)
    np.testing.assert_array_equal(out[:n], ref)
    np.testing.assert_array_equal(out[n:], 99)


@pytest.mark.parametrize("n,block", [(32, 32), (256, 256), (100, 64), (1000, 128)])
def test_warp_exchange_under_the_warp_barrier(run, n, block):
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, np.nan, np.float32)
    _, y = run(warp_reverse, grid(n, block), block, (x, y, n))
    padded = np.zeros(grid(n, block) * block, np.float32)
    padded[:n] = x
    ref = padded.reshape(-1, 32)[:, ::-1].reshape(-1)[:n]
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("size", [32, 96, 512])
def test_int_parameter_sizing_l1_is_specialised(run, size):
    blocks = 3
    x = np.arange(blocks * size, dtype=np.float32)
    y = np.zeros_like(x)
    _, y = run(block_reverse, blocks, size, (x, y, size))
    np.testing.assert_array_equal(y, x.reshape(blocks, size)[:, ::-1].reshape(-1))


def test_closed_over_values_are_folded_per_kernel(run):
    x = np.arange(10, dtype=np.int32)
    k1, k2 = make_scaler(3, 1), make_scaler(-2, 5)
    _, y1 = run(k1, 1, 32, (x, np.zeros(10, np.int32), 10))
    _, y2 = run(k2, 1, 32, (x, np.zeros(10, np.int32), 10))
    np.testing.assert_array_equal(y1, x * 3 + 1)
    np.testing.assert_array_equal(y2, x * -2 + 5)


def test_l1_exchanges_under_other_warp_orders(run_scheduled):
    n, block = 1000, 128
    x = np.arange(n, dtype=np.float32)
    _, y = run_scheduled(warp_reverse, grid(n, block), block, (x, np.zeros(n, np.float32), n))
    padded = np.zeros(grid(n, block) * block, np.float32)
    padded[:n] = x
    np.testing.assert_array_equal(y, padded.reshape(-1, 32)[:, ::-1].reshape(-1)[:n])
    _, y = run_scheduled(block_reverse, 4, 96, (x[:384], np.zeros(384, np.float32), 96))
    np.testing.assert_array_equal(y, x[:384].reshape(4, 96)[:, ::-1].reshape(-1))


@pto.kernel
def float_divmod(a, b, q, r, n):
    i = pto.get_global_id()
    if i < n:
        x = pto.load(a + i)
        y = pto.load(b + i)
        pto.store(q + i, x // y)
        pto.store(r + i, x % y)


def test_float_floor_division_and_modulo_have_python_semantics(run):
    rng = np.random.default_rng(0)
    a = np.concatenate([[1.0, -1.0, 7.0, 1304.0, -7.5, 7.5],
                        rng.standard_normal(250) * 1000]).astype(np.float32)
    b = np.concatenate([[0.1, 0.1, -0.1, 7.2797713, 2.0, -2.0],
                        rng.standard_normal(250) * 3]).astype(np.float32)
    n = a.size
    _, _, q, r = run(float_divmod, grid(n), 256,
                     (a, b, np.zeros(n, np.float32), np.zeros(n, np.float32), n))
    np.testing.assert_array_equal(r, np.mod(a, b))
    np.testing.assert_array_equal(q, np.floor_divide(a, b))
