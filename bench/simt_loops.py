"""SIMT loops and pto.reduce against the hand-written forms they replace, side by side.

One line per kernel pair:

    <what>  hand-written <ms> ms  new form <ms> ms  numpy <ms> ms

- grid-stride saxpy: the host-computed trip count (`for _ in range(iters): if i < n`, an
  scf.for) against `for i in range(gid, n, grid * block)` (an scf.while with per-lane masks);
- block sum: the L1 tree with barrier_block written out against `pto.reduce(v, scope="block")`;
- softmax rows: tests/kernels/test_softmax.py's two kernels.

Median of --repeat launches (interpreter, compiled once before timing). NumPy computes the same
result (`a * x + y`, per-block sums, softmax) for scale.

Run:  python bench/simt_loops.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pypto as pto  # noqa: E402
from tests.kernels.test_reduction import block_sum, block_sum_reduce  # noqa: E402
from tests.kernels.test_saxpy import saxpy_grid_stride, saxpy_grid_stride_loop  # noqa: E402
from tests.kernels.test_softmax import BLOCK, softmax_rows, softmax_rows_reduce  # noqa: E402


def _timed(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _launcher(kernel, grid, block, args):
    dev = [pto.alloc_tensor(a.nbytes, dtype=a.dtype) if isinstance(a, np.ndarray) else a
           for a in args]
    for d, a in zip(dev, args):
        if isinstance(a, np.ndarray):
            pto.memcpy_h2d(d, a)
    ck = pto.compile(kernel, args=dev, block=block)

    def run():
        ck(grid=grid, block=block, args=dev)
        pto.sync()
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    rng = np.random.default_rng(0)

    n, grid, block = 1 << 20, 64, 256
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    iters = (n + grid * block - 1) // (grid * block)
    hand = _timed(_launcher(saxpy_grid_stride, grid, block, (-0.75, x, y, n, iters)), repeat)
    new = _timed(_launcher(saxpy_grid_stride_loop, grid, block, (-0.75, x, y, n)), repeat)
    ref = _timed(lambda: np.float32(-0.75) * x + y, repeat)
    print(f"grid-stride saxpy n={n}  hand-written {hand:.1f} ms  new form {new:.1f} ms  "
          f"numpy {ref:.1f} ms")

    n, block = 1 << 18, 256
    grid = n // block
    x = rng.standard_normal(n).astype(np.float32)
    part = np.zeros(grid, np.float32)
    hand = _timed(_launcher(block_sum, grid, block, (x, part, n, block, 8)), repeat)
    new = _timed(_launcher(block_sum_reduce, grid, block, (x, part, n)), repeat)
    ref = _timed(lambda: x.reshape(grid, block).sum(axis=1), repeat)
    print(f"block sum n={n}  hand-written {hand:.1f} ms  new form {new:.1f} ms  "
          f"numpy {ref:.1f} ms")

    rows, cols = 256, 1000
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.zeros_like(x)
    r = np.zeros(rows, np.float32)
    hand = _timed(_launcher(softmax_rows, rows, BLOCK, (x, out, r, r.copy(), cols)), repeat)
    new = _timed(_launcher(softmax_rows_reduce, rows, BLOCK, (x, out, r, r.copy(), cols)),
                 repeat)

    def numpy_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    ref = _timed(numpy_softmax, repeat)
    print(f"softmax {rows}x{cols}  hand-written {hand:.1f} ms  new form {new:.1f} ms  "
          f"numpy {ref:.1f} ms")


if __name__ == "__main__":
    main()
