"""2-D tails: a 2-D launch whose last block column / row is partial (docs/interpreter.md,
"2-D tails") against the same kernel on a matrix the blocks cover exactly, same run.

One line per figure:
  <kernel> <h>x<w> pypto <seconds> s  numpy <seconds> s  ratio <x>  vs <side>x<side> <x>
(`ratio`: pypto / NumPy's `a * x + b`; `vs`: pypto's time per element over the time per
element of the exactly covered size next to it.) Medians of fresh launches, launch + sync timed.
Run:  python bench/tails2d.py [--repeat N] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import pypto as pto
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tests.kernels.test_users_zoo import scale2d_global, scale2d_ids, scale2d_ref  # noqa: E402

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
BX, BY = 16, 8
SIZES = ((1000, 1024), (2000, 2048), (3000, 3072))


def median(fn, repeat: int, now) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = now()
        fn()
        times.append(now() - t0)
    return float(np.median(times))


def bench(kernel, side: int, repeat: int, now) -> tuple[float, float]:
    x = np.random.default_rng(side).standard_normal((side, side)).astype(np.float32)
    dx = pto.alloc_tensor(x.nbytes, dtype=x.dtype)
    dy = pto.alloc_tensor(x.nbytes, dtype=x.dtype)
    pto.memcpy_h2d(dx, x)
    grid = ((side + BX - 1) // BX, (side + BY - 1) // BY)

    def run() -> None:
        pto.launch(kernel, grid=grid, block=(BX, BY), args=(dx, dy, side, side, 1.5, -0.25))
        pto.sync()

    t_pto = median(run, repeat, now)
    y = np.empty_like(x)
    pto.memcpy_d2h(y, dy)
    ref = scale2d_ref(x, 1.5, -0.25)
    assert y.tobytes() == ref.tobytes(), f"{kernel.__name__} {side}: wrong result"
    t_np = median(lambda: np.float32(1.5) * x + np.float32(-0.25), repeat, now)
    dx.free()
    dy.free()
    return t_pto, t_np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--quick", action="store_true", help="the 1000 / 1024 pair only")
    opts = parser.parse_args()
    now = CLOCKS[opts.clock]
    print(f"# 2-D tails: 16x8 blocks, guard `r < h and c < w` (median of {opts.repeat}, "
          f"{opts.clock} clock)")
    for kernel, name in ((scale2d_ids, "scale2d ids"), (scale2d_global, "scale2d global")):
        for odd, even in SIZES[:1] if opts.quick else SIZES:
            te, ne = bench(kernel, even, opts.repeat, now)
            to, no = bench(kernel, odd, opts.repeat, now)
            for side, t, n in ((odd, to, no), (even, te, ne)):
                per = (t / side**2) / (te / even**2)
                print(f"{name} {side}x{side} pypto {t:.5f} s  numpy {n:.5f} s  "
                      f"ratio {t / n:.1f}x  vs {even}x{even} {per:.2f}x")


if __name__ == "__main__":
    main()
