"""Softmax over rows with the PTO tile vector instructions, double-buffered over row blocks.

Each block owns `rows_per_block` rows of an n_rows x n_cols float32 matrix and walks them in
row blocks of `tile_rows`. Inside the loop a `pto.pipeline` loads the next row block into an
L1 tile (an async copy), then computes the softmax of each of its rows as an NPU kernel author
writes it — four tile instructions on the vector pipe:

    pto.trowmax(m, x)                 m[r]    = max over the row
    pto.trowexpandexpdif(y, x, m)     y[r, c] = exp(x[r, c] - m[r])
    pto.trowsum(m, y)                 m[r]    = sum over the row (the documented fold order)
    pto.trowexpanddiv(y, y, m)        y[r, c] = y[r, c] / m[r]

and stores it back. `pto.compile`'s default pipeline runs `pto-double-buffer`, which gives the
input tile two L1 slots so that the load of row block i+1 overlaps the vector work on row
block i. The result is checked against NumPy, and the modelled cycles of this kernel are
printed beside the same softmax written one lane per element (docs/language.md#lanes-or-tiles).

Run:  python examples/softmax_tiles.py
"""

import numpy as np

import pypto as pto


@pto.kernel
def softmax_tiles(X, Y, n_cols: pto.constexpr, tile_rows: pto.constexpr,
                  rows_per_block: pto.constexpr):
    row0 = pto.get_block_id() * rows_per_block
    m = pto.alloc_tile(tile_rows, 1)                       # row maxima, then row sums
    y = pto.alloc_tile(tile_rows, n_cols)                  # the result of a row block
    for r in range(0, rows_per_block, tile_rows):
        with pto.pipeline() as pl:
            with pl.stage("load"):
                x = pto.alloc_tile(tile_rows, n_cols)       # tile_rows x n_cols float32
                tok = pto.async_load(x, X + (row0 + r) * n_cols, tile_rows * n_cols * 4)
            with pl.stage("compute", after="load"):
                pto.wait(tok)
                pto.trowmax(m, x)
                pto.trowexpandexpdif(y, x, m)               # x is only read: its two slots
                pto.trowsum(m, y)                           # can be refilled ahead
                pto.trowexpanddiv(y, y, m)
                pto.store(Y + (row0 + r) * n_cols, y, tile_rows * n_cols * 4)


def softmax(x: np.ndarray, tile_rows: int = 16, blocks: int = 4) -> np.ndarray:
    """Row softmax of a float32 matrix on pypto (rows a multiple of tile_rows * blocks)."""
    n_rows, n_cols = x.shape
    if n_rows % (tile_rows * blocks):
        raise ValueError(f"{n_rows} rows are not a multiple of {tile_rows} x {blocks} blocks")
    y = np.empty_like(x)
    softmax_tiles[blocks, 64](x, y, n_cols, tile_rows, n_rows // blocks)
    return y


def reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def main() -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((256, 128)) * 4).astype(np.float32)
    y = softmax(x)
    err = float(np.abs(y - reference(x)).max())
    assert err < 1e-6, f"softmax differs from NumPy by {err}"
    assert np.allclose(y.sum(axis=1), 1.0, atol=1e-5)
    d_x, d_y = pto.tensor(x), pto.empty(x.shape, np.float32)
    prof = pto.profile(softmax_tiles, grid=(4, 1, 1), block=(64, 1, 1),
                       args=(d_x, d_y, 128, 16, 64), target="ascend910b")
    print(f"pypto: softmax_tiles {x.shape[0]}x{x.shape[1]} passed (max error {err:.1e}); "
          f"modelled {prof.total_cycles} cycles on ascend910b")


if __name__ == "__main__":
    main()
