"""5-point Jacobi stencil on a 2-D grid of 2-D blocks, with Dirichlet boundaries.

`out[y, x] = C0 * u[y, x] + C1 * (u[y-1, x] + u[y+1, x] + u[y, x-1] + u[y, x+1])` on interior
points; boundary points are copied unchanged. Lanes outside the matrix (edge blocks) do nothing.
The NumPy reference uses the same float32 operations in the same order, so results are equal
bit for bit. A second kernel reads the neighbours from an L1 tile with a one-element halo (the
shared-memory version a CUDA author writes next) and must give the same bits.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto

C0 = 0.5
C1 = 0.125
BX, BY = 16, 8          # block shape
HX, HY = BX + 2, BY + 2  # L1 tile with a one-element halo


@pto.kernel
def jacobi5(u, out, h, w):
    x = pto.get_global_id(0)
    y = pto.get_global_id(1)
    if x >= w or y >= h:
        return
    i = y * w + x
    c = pto.load(u + i)
    if x == 0 or y == 0 or x == w - 1 or y == h - 1:
        pto.store(out + i, c)
    else:
        nb = pto.load(u + i - w) + pto.load(u + i + w) + pto.load(u + i - 1) + pto.load(u + i + 1)
        pto.store(out + i, C0 * c + C1 * nb)


@pto.kernel
def jacobi5_tiled(u, out, h, w):
    """Stage the block's points plus a halo in L1; every lane loads up to 2 tile points."""
    tile = pto.alloc_local(HX * HY)
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    x0 = pto.get_block_id(0) * BX - 1     # global coordinates of tile[0, 0]
    y0 = pto.get_block_id(1) * BY - 1
    lin = ty * BX + tx
    for k in range(0, HX * HY, BX * BY):  # the tile has more points than the block has lanes
        t = lin + k
        gx = x0 + t % HX
        gy = y0 + t // HX
        if t < HX * HY and gx >= 0 and gy >= 0 and gx < w and gy < h:
            pto.store(tile + t, pto.load(u + gy * w + gx))
    pto.barrier_block()
    x = x0 + 1 + tx
    y = y0 + 1 + ty
    if x < w and y < h:
        t = (ty + 1) * HX + tx + 1
        c = pto.load(tile + t)
        if x == 0 or y == 0 or x == w - 1 or y == h - 1:
            pto.store(out + y * w + x, c)
        else:
            nb = pto.load(tile + t - HX) + pto.load(tile + t + HX) + pto.load(tile + t - 1) + \
                pto.load(tile + t + 1)
            pto.store(out + y * w + x, C0 * c + C1 * nb)


def jacobi_ref(u: np.ndarray) -> np.ndarray:
    out = u.copy()
    if u.shape[0] > 2 and u.shape[1] > 2:
        nb = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
        out[1:-1, 1:-1] = np.float32(C0) * u[1:-1, 1:-1] + np.float32(C1) * nb
    return out


SHAPES = [(8, 16), (33, 47), (1, 1), (2, 100), (100, 3), (64, 64)]


@pytest.mark.parametrize("kernel", [jacobi5, jacobi5_tiled], ids=["global", "l1_tile"])
@pytest.mark.parametrize("shape", SHAPES)
def test_jacobi_matches_numpy(run, kernel, shape):
    h, w = shape
    u = np.random.default_rng(h * 131 + w).standard_normal(shape).astype(np.float32)
    out = np.full(shape, np.nan, np.float32)
    grid = ((w + BX - 1) // BX, (h + BY - 1) // BY)
    _, out = run(kernel, grid, (BX, BY), (u, out, h, w))
    np.testing.assert_array_equal(out, jacobi_ref(u))


@pytest.mark.parametrize("shape", [(33, 47), (8, 16)])
def test_tiled_jacobi_under_other_warp_orders(run_scheduled, shape):
    h, w = shape
    u = np.random.default_rng(w).standard_normal(shape).astype(np.float32)
    grid = ((w + BX - 1) // BX, (h + BY - 1) // BY)
    _, out = run_scheduled(jacobi5_tiled, grid, (BX, BY), (u, np.zeros(shape, np.float32), h, w))
    np.testing.assert_array_equal(out, jacobi_ref(u))


def test_jacobi_iterations_converge_to_the_boundary_harmonic(run):
    """Ten sweeps, ping-ponging two device buffers without host copies in between."""
    h, w = 20, 30
    u = np.zeros((h, w), np.float32)
    u[0, :] = 1.0
    d_a, d_b = pto.alloc_tensor(u.nbytes), pto.alloc_tensor(u.nbytes)
    pto.memcpy_h2d(d_a, u)
    pto.memcpy_h2d(d_b, u)
    grid = ((w + BX - 1) // BX, (h + BY - 1) // BY)
    ref = u
    for _ in range(10):
        pto.launch(jacobi5, grid=grid, block=(BX, BY), args=(d_a, d_b, h, w))
        d_a, d_b = d_b, d_a
        ref = jacobi_ref(ref)
    out = np.empty_like(u)
    pto.memcpy_d2h(out, d_a)
    np.testing.assert_array_equal(out, ref)
    d_a.free()
    d_b.free()
