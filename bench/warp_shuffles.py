"""Warp shuffles and votes in the interpreter, against pto.reduce and NumPy, side by side.

One line per figure:

    <what>  shfl_down <ms> ms  pto.reduce <ms> ms  numpy <ms> ms

- warp sums of 2^20 float32 (blocks of 256): the five-step `shfl_down` tree (lane 0 stores)
  against `pto.reduce(v, scope="warp")` (lane 0 stores), and NumPy's `x.reshape(-1, 32).sum(1)`;
- a per-lane shuffle (`pto.shfl(v, src)` with `src` loaded per lane) and a ballot, against
  NumPy's gather and packed bits.

Median of --repeat launches (interpreter, compiled once before timing).

Run:  python bench/warp_shuffles.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import pypto as pto


@pto.kernel
def warp_sum_shfl(x, out):
    i = pto.get_global_id()
    v = x[i]
    for off in (16, 8, 4, 2, 1):
        v += pto.shfl_down(v, off)
    if pto.get_lane_id() == 0:
        out[i // 32] = v


@pto.kernel
def warp_sum_reduce(x, out):
    i = pto.get_global_id()
    v = pto.reduce(x[i], scope="warp")
    if pto.get_lane_id() == 0:
        out[i // 32] = v


@pto.kernel
def gather_and_ballot(x, src, o, bits):
    i = pto.get_global_id()
    v = x[i]
    o[i] = pto.shfl(v, src[i])
    bits[i] = pto.ballot(v > 0)


def _timed(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _launcher(kernel, grid, block, args):
    dev = [pto.tensor(a) for a in args]
    ck = pto.compile(kernel, args=dev, block=block)

    def run():
        ck(grid=grid, block=block, args=dev)
        pto.sync()
    return run, dev


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    rng = np.random.default_rng(0)
    n, block = 1 << 20, 256
    grid = n // block
    x = rng.integers(-100, 100, n).astype(np.float32)
    run_shfl, dev = _launcher(warp_sum_shfl, grid, block, (x, np.zeros(n // 32, np.float32)))
    shfl = _timed(run_shfl, repeat)
    assert np.array_equal(dev[1].numpy(), x.reshape(-1, 32).sum(axis=1))
    run_reduce, _ = _launcher(warp_sum_reduce, grid, block, (x, np.zeros(n // 32, np.float32)))
    reduce = _timed(run_reduce, repeat)
    ref = _timed(lambda: x.reshape(-1, 32).sum(axis=1), repeat)
    print(f"warp sums n={n}  shfl_down {shfl:.1f} ms  pto.reduce {reduce:.1f} ms  "
          f"numpy {ref:.1f} ms")

    src = rng.integers(0, 32, n).astype(np.int32)
    run_gather, dev = _launcher(gather_and_ballot, grid, block,
                                (x, src, np.zeros(n, np.float32), np.zeros(n, np.int32)))
    gather = _timed(run_gather, repeat)
    lanes = np.arange(n) - np.arange(n) % 32

    def numpy_gather_and_ballot():
        y = x[lanes + src]
        packed = np.packbits((x > 0).reshape(-1, 32), axis=1, bitorder="little")
        return y, np.repeat(packed.view(np.int32).reshape(-1), 32)

    y, bits = numpy_gather_and_ballot()
    assert np.array_equal(dev[2].numpy(), y) and np.array_equal(dev[3].numpy(), bits)
    ref = _timed(numpy_gather_and_ballot, repeat)
    print(f"shfl by lane + ballot n={n}  pypto {gather:.1f} ms  numpy {ref:.1f} ms")


if __name__ == "__main__":
    main()
