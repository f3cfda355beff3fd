"""Interpreter speed: pypto vs NumPy, side by side in the same run.

One line per figure:  <benchmark> n=<size> <impl> <seconds> s  (<elements/s>)  [xNumPy]
Run:  python bench/interp.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import pypto as pto  # noqa: E402
from vector_add import vector_add  # noqa: E402


def best_of(fn, repeat: int) -> float:
    fn()  # warm-up (compiles and caches the kernel, fills caches)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_vector_add(n: int, block: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    d_a, d_b, d_o = (pto.alloc_tensor(n * 4) for _ in range(3))
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)
    grid = (n + block - 1) // block

    def run_pypto() -> None:
        pto.launch(vector_add, grid=grid, block=block, args=(d_a, d_b, d_o, n))
        pto.sync()

    t_pto = best_of(run_pypto, repeat)
    t_np = best_of(lambda: a + b, repeat)
    out = np.empty(n, dtype=np.float32)
    pto.memcpy_d2h(out, d_o)
    assert np.array_equal(out, a + b), "pypto result differs from NumPy"
    print(f"vector_add n=2^{n.bit_length() - 1} block={block} pypto {t_pto:.5f} s "
          f"({n / t_pto:,.0f} elements/s)  numpy {t_np:.5f} s  ratio {t_pto / t_np:.1f}x")
    for t in (d_a, d_b, d_o):
        t.free()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    opts = parser.parse_args()
    sizes = [1 << 16, 1 << 20] if opts.quick else [1 << 16, 1 << 20, 1 << 22]
    repeat = 3 if opts.quick else 7
    print("# pypto interpreter vs NumPy (same run, best of repeats; modelled device on the CPU)")
    for n in sizes:
        bench_vector_add(n, 256, repeat)


if __name__ == "__main__":
    main()
