"""Fused multiply-add speed: pypto's single-rounded `pto.fma` vs NumPy's (unfused) `a * x + y`.

One line per figure:  saxpy <dtype> n=<size> pypto <seconds> s (<rate>)  numpy <seconds> s  ratio <x>
`pto.fma` rounds once (round-to-odd in float64, docs/language.md); NumPy's `a * x + y` rounds
twice, so the results are compared with an exact reference only in tests/exactness/, not here.
Run:  python bench/fma.py [--quick]
"""

from __future__ import annotations

import argparse

import ml_dtypes
import numpy as np

import pypto as pto
from timing import best_of
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)


@pto.kernel
def saxpy(x, y, n, a: pto.constexpr):
    i = pto.get_global_id()
    if i < n:
        pto.fma(y + i, a, pto.load(x + i), pto.load(y + i))




def bench(dtype: np.dtype, n: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    a = dtype.type(1.5)
    d_x, d_y = (pto.alloc_tensor(n * dtype.itemsize, dtype=dtype) for _ in range(2))
    pto.memcpy_h2d(d_x, x)
    pto.memcpy_h2d(d_y, y)
    block = 256

    def run_pypto() -> None:
        pto.launch(saxpy, grid=(n + block - 1) // block, block=block, args=(d_x, d_y, n, 1.5))
        pto.sync()

    t_pto = best_of(run_pypto, repeat)
    t_np = best_of(lambda: a * x + y, repeat)
    print(f"saxpy {dtype.name} n=2^{n.bit_length() - 1} pypto {t_pto:.5f} s "
          f"({n / t_pto:,.0f} elements/s)  numpy {t_np:.5f} s  ratio {t_pto / t_np:.1f}x")
    for t in (d_x, d_y):
        t.free()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = parser.parse_args()
    n, repeat = (1 << 16, 3) if args.quick else (1 << 20, 5)
    print("# pto.fma (single rounding) vs NumPy a * x + y (same run, best of repeats)")
    for dtype in (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        bench(dtype, n, repeat)


if __name__ == "__main__":
    main()
