"""The pipelined matmul of examples/pipeline_matmul.py against NumPy.

float32 and float16 inputs, float32 accumulation on the CUBE unit. The reference is
`a.astype(f32) @ b.astype(f32)`; the summation order differs (per-k-tile partial products), so
results are compared with a tolerance that grows with K. Sizes that are not multiples of the
tile are refused by the example's `matmul()` helper with a ValueError. Variants of the kernel
that skip waiting for their async loads must fail with a RaceError, not read stale tiles.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pipeline_matmul import matmul, matmul_tile  # noqa: E402


def tolerance(k: int) -> dict[str, float]:
    return {"rtol": 1e-4, "atol": 2e-6 * k}     # 1.3e-4 at K=64 ... 5e-4 at K=256


CASES = [
    (64, 64, 64),
    (128, 128, 128),
    (256, 256, 256),
    (192, 320, 96),
    (64, 256, 128),
    (256, 64, 192),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("m,n,k", CASES)
def test_matmul_matches_numpy(m, n, k, dtype):
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    tile = (64, 64, 64) if k % 64 == 0 else (64, 64, 32)
    c = matmul(a, b, tile)
    assert c.dtype == np.float32 and c.shape == (m, n)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), **tolerance(k))


@pytest.mark.parametrize("tile", [(32, 32, 32), (64, 32, 16), (32, 64, 128), (128, 64, 64)])
def test_other_tile_shapes(tile):
    m, n, k = 128, 128, 128
    rng = np.random.default_rng(sum(tile))
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    np.testing.assert_allclose(matmul(a, b, tile), a @ b, **tolerance(k))


def test_integer_valued_inputs_are_exact():
    """Small integers: every partial sum is exactly representable, so any order is exact."""
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (128, 192)).astype(np.float16)
    b = rng.integers(-4, 5, (192, 64)).astype(np.float16)
    np.testing.assert_array_equal(matmul(a, b), a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("shape_a,shape_b", [
    ((100, 64), (64, 64)),     # M
    ((64, 64), (64, 65)),      # N
    ((64, 96), (96, 64)),      # K (tile_k = 64)
    ((1, 64), (64, 64)),
])
def test_sizes_not_multiple_of_the_tile_are_refused(shape_a, shape_b):
    a = np.ones(shape_a, np.float32)
    b = np.ones(shape_b, np.float32)
    with pytest.raises(ValueError, match="must be multiples of the tile"):
        matmul(a, b, (64, 64, 64))


def test_inner_dimension_mismatch_is_refused():
    with pytest.raises(ValueError, match="inner dimensions differ"):
        matmul(np.ones((64, 64), np.float32), np.ones((128, 64), np.float32))


# -------------------------------------------------------------------------------------------
# variants: how the waits may (and may not) be written
# -------------------------------------------------------------------------------------------

@pto.kernel
def matmul_no_wait(A, B, C, M, N, K, tile_m, tile_n, tile_k):
    """examples/pipeline_matmul.py with the `pto.wait_all()` of the compute stage removed."""
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    for k0 in range(0, K, tile_k):
        with pto.pipeline() as pl:
            with pl.stage("load_a"):
                A_tile = pto.alloc_local(tile_m * tile_k, dtype=A.dtype)
                pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * A.itemsize,
                               rows=tile_m, src_stride=K)
            with pl.stage("load_b", after="load_a"):
                B_tile = pto.alloc_local(tile_k * tile_n, dtype=B.dtype)
                pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * B.itemsize,
                               rows=tile_k, src_stride=N)
            with pl.stage("compute", after="load_b"):
                pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


@pto.kernel
def matmul_token_waits(A, B, C, M, N, K, tile_m, tile_n, tile_k, WAIT_B: pto.constexpr):
    """Waits on the individual tokens; with WAIT_B=False the B tile is read in flight."""
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    for k0 in range(0, K, tile_k):
        A_tile = pto.alloc_local(tile_m * tile_k, dtype=A.dtype)
        tok_a = pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * A.itemsize,
                               rows=tile_m, src_stride=K)
        B_tile = pto.alloc_local(tile_k * tile_n, dtype=B.dtype)
        tok_b = pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * B.itemsize,
                               rows=tile_k, src_stride=N)
        pto.wait(tok_a)
        if WAIT_B:
            pto.wait(tok_b)
        pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
        if not WAIT_B:
            pto.wait(tok_b)     # too late: the mma already read B_tile
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


def launch_variant(kernel, a, b, tile, *extra, racy=False):
    """Launch a matmul variant; `racy=True`: the static check must reject it (BarrierError),
    then it runs with the static check skipped so the interpreter reports the race too."""
    (m, k), (_, n) = a.shape, b.shape
    tm, tn, tk = tile
    d_a = pto.alloc_tensor(a.nbytes, dtype=a.dtype)
    d_b = pto.alloc_tensor(b.nbytes, dtype=b.dtype)
    d_c = pto.alloc_tensor(m * n * 4)
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)
    args = (d_a, d_b, d_c, m, n, k, tm, tn, tk, *extra)
    if racy:
        with pytest.raises(pto.BarrierError):
            pto.compile(kernel, args=args, block=64)
        kernel = pto.compile(kernel, args=args, block=64, pipeline="")
    pto.launch(kernel, grid=(n // tn, m // tm), block=64, args=args)
    c = np.empty((m, n), np.float32)
    try:
        pto.memcpy_d2h(c, d_c)
    finally:
        for t in (d_a, d_b, d_c):
            t.free()
    return c


def test_missing_wait_all_is_a_race_error():
    a = np.ones((64, 128), np.float32)
    b = np.ones((128, 64), np.float32)
    with pytest.raises(pto.RaceError) as info:
        launch_variant(matmul_no_wait, a, b, (64, 64, 64), racy=True)
    message = str(info.value)
    assert "in flight" in message and "pto.wait" in message
    assert "test_matmul.py" in message


def test_waiting_on_each_token_is_equivalent():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((128, 128)).astype(np.float16)
    b = rng.standard_normal((128, 192)).astype(np.float16)
    c = launch_variant(matmul_token_waits, a, b, (64, 64, 32), True)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), **tolerance(128))


def test_waiting_for_b_after_the_mma_is_a_race_error():
    a = np.ones((64, 64), np.float32)
    b = np.ones((64, 64), np.float32)
    with pytest.raises(pto.RaceError):
        launch_variant(matmul_token_waits, a, b, (64, 64, 64), False, racy=True)


def test_kernel_launched_directly_matches_the_helper():
    """The example's kernel through pto.launch with the helper's arguments, float16 in."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    c = launch_variant(matmul_tile, a, b, (64, 64, 64))
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), **tolerance(64))


def test_matmul_kernel_under_other_warp_orders(run_scheduled):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    _, _, c = run_scheduled(matmul_tile, (2, 2), 64,
                            (a, b, np.zeros((128, 128), np.float32), 128, 128, 64, 64, 64, 32))
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), **tolerance(64))
