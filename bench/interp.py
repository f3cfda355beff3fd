"""Interpreter speed: pypto vs NumPy, side by side in the same run.

One line per figure:  <benchmark> <size> pypto <seconds> s (<rate>)  numpy <seconds> s  ratio <x>
Only launch + sync is timed for pypto (device tensors are allocated and filled beforehand).
Kernels: vector_add and the pipelined matmul from examples/, the block reduction (L1 tree with
barrier_block) from the kernel zoo in tests/kernels/test_reduction.py.
Run:  python bench/interp.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "tests"))

import pypto as pto
from timing import best_of  # noqa: E402
from kernels.test_reduction import block_sum  # noqa: E402
from kernels.test_transpose import ROWS, TILE, transpose  # noqa: E402
from pipeline_matmul import matmul_tile  # noqa: E402
from vector_add import vector_add  # noqa: E402
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)




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


def bench_matmul(size: int, tile: int, block: int, repeat: int) -> None:
    """C = A @ B, float32, square `size`; one block per tile x tile tile of C."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    d_a, d_b, d_c = (pto.alloc_tensor(size * size * 4) for _ in range(3))
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)
    args = (d_a, d_b, d_c, size, size, size, tile, tile, tile)
    grid = (size // tile, size // tile)

    def run_pypto() -> None:
        pto.launch(matmul_tile, grid=grid, block=block, args=args)
        pto.sync()

    t_pto = best_of(run_pypto, repeat)
    t_np = best_of(lambda: a @ b, repeat)
    out = np.empty((size, size), dtype=np.float32)
    pto.memcpy_d2h(out, d_c)
    assert np.allclose(out, a @ b, rtol=1e-4, atol=1e-3), "pypto result differs from NumPy"
    flops = 2 * size ** 3
    print(f"matmul {size}x{size}x{size} tile={tile} block={block} pypto {t_pto:.5f} s "
          f"({flops / t_pto / 1e9:.2f} GFLOP/s)  numpy {t_np:.5f} s  ratio {t_pto / t_np:.1f}x")
    for t in (d_a, d_b, d_c):
        t.free()


def bench_block_sum(n: int, block: int, repeat: int, race_check: bool = True) -> None:
    """Per-block partial sums through an L1 tree (block mode); NumPy does the whole x.sum()."""
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    grid = (n + block - 1) // block
    d_x, d_p = pto.alloc_tensor(n * 4), pto.alloc_tensor(grid * 4)
    pto.memcpy_h2d(d_x, x)
    args = (d_x, d_p, n, block, block.bit_length() - 1)
    kernel = pto.compile(block_sum, args=args, block=block, race_check=race_check)

    def run_pypto() -> None:
        pto.launch(kernel, grid=grid, block=block, args=args)
        pto.sync()

    t_pto = best_of(run_pypto, repeat)
    t_np = best_of(lambda: x.sum(), repeat)
    partial = np.empty(grid, dtype=np.float32)
    pto.memcpy_d2h(partial, d_p)
    assert np.isclose(partial.sum(dtype=np.float64), x.sum(dtype=np.float64), rtol=1e-5), \
        "pypto result differs from NumPy"
    checks = "" if race_check else " race_check=off"
    print(f"block_sum n=2^{n.bit_length() - 1} block={block}{checks} pypto {t_pto:.5f} s "
          f"({n / t_pto:,.0f} elements/s)  numpy {t_np:.5f} s  ratio {t_pto / t_np:.1f}x")
    for t in (d_x, d_p):
        t.free()


def race_overhead(name: str, compile_kernel, grid, block, args, rounds: int) -> None:
    """Race detector on vs off for one kernel, interleaved so machine noise hits both alike;
    prints the median of the per-round ratios (the issue's target: at most 2x)."""
    kernels = {on: compile_kernel(on) for on in (True, False)}
    ratios, times = [], {True: [], False: []}
    for kernel in kernels.values():
        pto.launch(kernel, grid=grid, block=block, args=args)
        pto.sync()
    for _ in range(rounds):
        for on, kernel in kernels.items():
            t0 = time.perf_counter()
            pto.launch(kernel, grid=grid, block=block, args=args)
            pto.sync()
            times[on].append(time.perf_counter() - t0)
        ratios.append(times[True][-1] / times[False][-1])
    print(f"race_check {name} on {min(times[True]):.5f} s  off {min(times[False]):.5f} s  "
          f"overhead median {statistics.median(ratios):.2f}x (of {rounds} interleaved rounds)")


def bench_race_overhead(quick: bool) -> None:
    rng = np.random.default_rng(0)
    n, block = (1 << 16, 256) if quick else (1 << 20, 256)
    x = rng.random(n, dtype=np.float32)
    grid = n // block
    d_x, d_p = pto.alloc_tensor(n * 4), pto.alloc_tensor(grid * 4)
    pto.memcpy_h2d(d_x, x)
    args = (d_x, d_p, n, block, block.bit_length() - 1)
    race_overhead(f"block_sum n=2^{n.bit_length() - 1}",
                  lambda on: pto.compile(block_sum, args=args, block=block, race_check=on),
                  grid, block, args, 3 if quick else 7)
    size = 256 if quick else 1024
    a = rng.standard_normal((size, size), dtype=np.float32)
    d_a, d_t = pto.alloc_tensor(a.nbytes), pto.alloc_tensor(a.nbytes)
    pto.memcpy_h2d(d_a, a)
    targs = (d_a, d_t, size, size)
    tgrid, tblock = (size // TILE, size // TILE), (TILE, ROWS)
    race_overhead(f"transpose {size}x{size}",
                  lambda on: pto.compile(transpose, args=targs, block=tblock, race_check=on),
                  tgrid, tblock, targs, 3 if quick else 7)
    out = np.empty((size, size), np.float32)
    pto.memcpy_d2h(out, d_t)
    assert np.array_equal(out, a.T), "pypto transpose differs from NumPy"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    opts = parser.parse_args()
    sizes = [1 << 16, 1 << 20] if opts.quick else [1 << 16, 1 << 20, 1 << 22]
    repeat = 3 if opts.quick else 7
    print("# pypto interpreter vs NumPy (same run, best of repeats; modelled device on the CPU)")
    for n in sizes:
        bench_vector_add(n, 256, repeat)
    for size in (256, 512):
        bench_matmul(size, 64, 64, repeat)
    # blocks with barriers run in batches of whole blocks (batch mode)
    for n in ([1 << 16] if opts.quick else [1 << 16, 1 << 20]):
        for race_check in (True, False):
            bench_block_sum(n, 256, min(repeat, 3), race_check)
    bench_race_overhead(opts.quick)


if __name__ == "__main__":
    main()
