"""Row layernorm written with tile vector instructions (docs/language.md#tile-vector-instructions),
the tile twin of test_layernorm.py's one-lane-per-column kernel.

Each block normalises `tile_rows` rows: the row sums by `pto.trowsum` (folding halves), the
mean, the deviations by `pto.trowexpandsub`, the two-pass variance (sum of squared deviations,
which does not cancel as `E[x²] - E[x]²` does), `rsqrt(var + eps)` by `pto.trsqrt`, then the
per-column affine map with `gamma` and `beta` as 1 x cols tiles (`pto.tcolexpandmul`,
`pto.tcolexpandadd`). No lane touches a tile, so no barrier is needed.

Every instruction rounds once in float32, so the output is compared bit for bit with a NumPy
emulation of the same steps (the fold written independently), and with a tolerance against the
float64 layernorm.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from tests.conftest import run_kernel
from tests.kernels.test_layernorm import EPS, layernorm64, make_inputs


@pto.kernel
def layernorm_tiles(X, Y, G, B, ncols: pto.constexpr, tile_rows: pto.constexpr, eps):
    r0 = pto.get_block_id() * tile_rows
    x = pto.alloc_tile(tile_rows, ncols)
    sq = pto.alloc_tile(tile_rows, ncols)
    s = pto.alloc_tile(tile_rows, 1)
    g = pto.alloc_tile(1, ncols)
    b = pto.alloc_tile(1, ncols)
    n = pto.cast(ncols, pto.float32)
    pto.wait(pto.async_load(x, X + r0 * ncols, tile_rows * ncols * 4))
    pto.wait(pto.async_load(g, G, ncols * 4))
    pto.wait(pto.async_load(b, B, ncols * 4))
    pto.trowsum(s, x)
    pto.tdivs(s, s, n)                  # the row means
    pto.trowexpandsub(x, x, s)          # deviations, in place
    pto.tmul(sq, x, x)
    pto.trowsum(s, sq)
    pto.tdivs(s, s, n)                  # the variances
    pto.tadds(s, s, eps)
    pto.trsqrt(s, s)                    # 1 / sqrt in float64, rounded once
    pto.trowexpandmul(x, x, s)
    pto.tcolexpandmul(x, x, g)          # gamma[c]
    pto.tcolexpandadd(x, x, b)          # beta[c]
    pto.store(Y + r0 * ncols, x, tile_rows * ncols * 4)


def fold_rows(x: np.ndarray) -> np.ndarray:
    """Row sums in the tile instructions' documented order, folding halves (columns listed
    one by one, independently of the interpreter's fold)."""
    cols = [x[:, j] for j in range(x.shape[1])]
    while len(cols) > 1:
        h = len(cols) // 2
        cols = [(cols[j] + cols[j + h]).astype(x.dtype) for j in range(h)] + cols[2 * h:]
    return cols[0]


def emulated_layernorm_tiles(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                             eps: float) -> np.ndarray:
    """`layernorm_tiles`'s output, instruction by instruction in float32."""
    f32 = np.float32
    n = f32(x.shape[1])
    mean = (fold_rows(x) / n).astype(f32)
    d = (x - mean[:, None]).astype(f32)
    var = (fold_rows((d * d).astype(f32)) / n).astype(f32)
    v = (var + f32(eps)).astype(f32)
    rstd = (1.0 / np.sqrt(v.astype(np.float64))).astype(f32)
    y = (d * rstd[:, None]).astype(f32)
    return ((y * gamma).astype(f32) + beta).astype(f32)


def layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, tile_rows: int = 8,
              eps: float = EPS) -> np.ndarray:
    """Row layernorm of a float32 matrix on pypto (rows a multiple of tile_rows)."""
    rows, ncols = x.shape
    y = np.empty_like(x)
    _, y, _, _ = run_kernel(layernorm_tiles, rows // tile_rows, 32,
                            (x, y, gamma, beta, ncols, tile_rows, eps))
    return y


SHAPES = [(8, 1), (8, 100), (16, 128), (8, 129), (32, 300), (24, 1000)]


@pytest.mark.parametrize("shape", SHAPES)
def test_layernorm_tiles_bit_for_bit(run, shape):
    """At the pto and npu levels (the zoo's `run`), with the output filled with NaN first."""
    rows, ncols = shape
    rng = np.random.default_rng(rows * 31 + ncols)
    x, y, gamma, beta = make_inputs(rng, rows, ncols, offset=50.0)
    _, y, _, _ = run(layernorm_tiles, rows // 8, 32, (x, y, gamma, beta, ncols, 8, EPS))
    np.testing.assert_array_equal(y.view(np.uint32),
                                  emulated_layernorm_tiles(x, gamma, beta, EPS).view(np.uint32))
    np.testing.assert_allclose(y, layernorm64(x, gamma, beta, EPS), rtol=1e-4, atol=1e-4)


def test_a_constant_row_gives_beta():
    """Zero variance: the deviations are exactly 0 and rsqrt(eps) finite, so y = beta."""
    x = np.full((8, 64), -3.5, np.float32)
    gamma = np.linspace(-2, 2, 64, dtype=np.float32)
    beta = np.linspace(5, -5, 64, dtype=np.float32)
    np.testing.assert_array_equal(layernorm(x, gamma, beta), np.broadcast_to(beta, (8, 64)))


def test_needs_no_barrier():
    """Only tile instructions touch the tiles: the verifier (in the default pipeline) and the
    race detector accept the kernel under every warp schedule."""
    rng = np.random.default_rng(3)
    x, y, gamma, beta = make_inputs(rng, 16, 96)
    want = emulated_layernorm_tiles(x, gamma, beta, EPS)
    for schedule in (None, "in_order", "reverse"):
        _, out, _, _ = run_kernel(layernorm_tiles, 2, 64, (x, y, gamma, beta, 96, 8, EPS),
                                  schedule=schedule, race_check=True)
        np.testing.assert_array_equal(out, want)
