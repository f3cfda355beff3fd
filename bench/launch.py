"""Fixed cost of a launch, and how time scales with the problem size.

1. Fixed cost: a cached launch + `pto.sync()` of vector_add at n = 2^10 (4 blocks), median of
   many calls, next to the same sequence for a kernel that does nothing but a bounds check.
2. Scaling curves: vector_add for n = 2^10 ... 2^24 and the block reduction (L1 tree,
   barrier_block, race check on) for n = 2^10 ... 2^22; for each size pypto's and NumPy's
   times (same run), the ratio, and the effective bandwidth; a least-squares fit
   t = fixed + n * per_element on the sizes >= 2^16 separates the two costs.
3. NumPy copy bandwidth measured in the same run (np.copyto of 2^24 float32), the yardstick for
   "how far from memory bandwidth".
4. Import time: CPU time of `import xdsl`, of pypto's dependencies (NumPy, ml_dtypes and the
   xDSL dialects pypto builds IR with) and of `import pypto`, each in fresh interpreters (min of
   several, .pyc files written by a warm-up run), then the cold `pto.compile()` of vector_add
   and its first launch + sync in the same fresh process.

One line per figure. Run:  python bench/launch.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

import pypto as pto  # noqa: E402
from tests.kernels.test_reduction import block_sum  # noqa: E402
from vector_add import vector_add  # noqa: E402
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)


@pto.kernel
def guard_only(o, n):
    """The smallest kernel with an argument: one comparison, no memory access."""
    i = pto.get_global_id()
    if i >= n:
        pto.store(o + i, 0.0)


def median_time(fn: Callable[[], object], repeat: int, inner: int = 1,
                clock: Callable[[], float] = time.perf_counter) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = clock()
        for _ in range(inner):
            fn()
        times.append((clock() - t0) / inner)
    return statistics.median(times)


def copy_bandwidth(repeat: int) -> float:
    """Bytes per second of np.copyto on 2^24 float32 (read + write counted)."""
    src = np.random.default_rng(0).random(1 << 24, dtype=np.float32)
    dst = np.empty_like(src)
    t = median_time(lambda: np.copyto(dst, src), repeat)
    return 2 * src.nbytes / t


def fixed_cost(repeat: int) -> None:
    n = 1 << 10
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    d_a, d_b, d_o = (pto.alloc_tensor(n * 4) for _ in range(3))
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)

    def va() -> None:
        pto.launch(vector_add, grid=4, block=256, args=(d_a, d_b, d_o, n))
        pto.sync()

    def guard() -> None:
        pto.launch(guard_only, grid=4, block=256, args=(d_o, n))
        pto.sync()

    def launch_only() -> None:
        pto.launch(vector_add, grid=4, block=256, args=(d_a, d_b, d_o, n))
    t_va = median_time(va, 21, 200 if repeat > 3 else 50)
    t_guard = median_time(guard, 21, 200 if repeat > 3 else 50)
    t_np = median_time(lambda: a + b, 21, 1000)
    t_launch = median_time(launch_only, 5, 200 if repeat > 3 else 50)
    pto.sync()
    # CPU time of this process: what the launch path costs, whatever else runs on the machine
    t_cpu = median_time(va, 21, 200 if repeat > 3 else 50, time.process_time)
    t_np_cpu = median_time(lambda: a + b, 21, 1000, time.process_time)
    print(f"fixed cost: cached launch + sync vector_add n=2^10 pypto {t_va * 1e6:.1f} us  "
          f"numpy a+b {t_np * 1e6:.2f} us  ratio {t_va / t_np:.0f}x")
    print(f"fixed cost (CPU time): cached launch + sync vector_add n=2^10 pypto "
          f"{t_cpu * 1e6:.1f} us  numpy a+b {t_np_cpu * 1e6:.2f} us")
    print(f"fixed cost: cached launch + sync guard-only kernel n=2^10 pypto {t_guard * 1e6:.1f} us")
    print(f"fixed cost: launch() alone (enqueue, then sync later) vector_add {t_launch * 1e6:.1f} us")
    native_fixed_cost(va, repeat)
    for t in (d_a, d_b, d_o):
        t.free()


def native_fixed_cost(va: Any, repeat: int) -> None:
    """The native backend (docs/native.md): the same cached launch + sync, and vector_add's
    first compile (lowering + LLVM + JIT, empty disk cache) and load from the disk cache."""
    import os
    import tempfile

    from pypto.backend.native.jit import NativeKernel

    previous = pto.set_backend("native")
    try:
        va()  # compiles (or loads) the native code
        t_wall = median_time(va, 21, 200 if repeat > 3 else 50)
        t_cpu = median_time(va, 21, 200 if repeat > 3 else 50, time.process_time)
    finally:
        pto.set_backend(previous)
    n = 1 << 10
    args = (pto.empty(n, np.float32), pto.empty(n, np.float32), pto.empty(n, np.float32), n)
    compiled = pto.compile(vector_add, args=args, block=256)
    firsts, loads = [], []
    saved = os.environ.get("PYPTO_NATIVE_CACHE")
    try:
        for _ in range(3):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["PYPTO_NATIVE_CACHE"] = cache
                t0 = time.process_time()
                NativeKernel(compiled.func, compiled.name, compiled.block)
                firsts.append(time.process_time() - t0)
                t0 = time.process_time()
                NativeKernel(compiled.func, compiled.name, compiled.block)
                loads.append(time.process_time() - t0)
    finally:
        if saved is None:
            os.environ.pop("PYPTO_NATIVE_CACHE", None)
        else:
            os.environ["PYPTO_NATIVE_CACHE"] = saved
    print(f"native fixed cost: cached launch + sync vector_add n=2^10 {t_wall * 1e6:.1f} us  "
          f"(CPU time {t_cpu * 1e6:.1f} us)")
    print(f"native compile (CPU): vector_add first launch's compile {min(firsts) * 1e3:.0f} ms  "
          f"from the disk cache {min(loads) * 1e3:.1f} ms")


DEPENDENCIES = ("numpy", "ml_dtypes", "xdsl.dialects.builtin", "xdsl.dialects.arith",
                "xdsl.dialects.func", "xdsl.dialects.scf", "xdsl.dialects.math")
"""What `import pypto` imports before any pypto code: its own cost is the difference."""

_TIMED = """
import sys, time
sys.path.insert(0, {examples!r})
{setup}
c0 = time.process_time()
{statement}
c1 = time.process_time()
times = [c1 - c0]
if {compile_too}:
    import pypto as pto
    from vector_add import vector_add
    d = [pto.alloc_tensor(4096) for _ in range(3)]
    c2 = time.process_time()
    pto.compile(vector_add, args=(d[0], d[1], d[2], 1024), block=256)
    c3 = time.process_time()
    pto.launch(vector_add, grid=4, block=256, args=(d[0], d[1], d[2], 1024))
    pto.sync()
    times += [c3 - c2, time.process_time() - c3]
print(*times)
"""


def _fresh_cpu_times(statements: list[tuple[str, str, bool]], runs: int) -> list[list[float]]:
    """For each (setup, statement, compile_too): the min over `runs` fresh interpreters of the
    CPU seconds of `statement` run after the untimed `setup` (and of the cold compile and first
    launch of vector_add after it).
    The statements take turns, so that a burst of load on the machine hits them alike."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    codes = [_TIMED.format(examples=str(ROOT / "examples"), setup=setup, statement=statement,
                           compile_too=compile_too) for setup, statement, compile_too in statements]
    best: list[list[float] | None] = [None] * len(codes)
    for run in range(runs + 1):  # the first round writes the .pyc files a user's install has
        for index, code in enumerate(codes):
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  check=True, env=env, cwd=ROOT)
            times = [float(x) for x in done.stdout.split()]
            if run:
                old = best[index]
                best[index] = times if old is None else [min(a, b) for a, b in zip(old, times)]
    return [b for b in best if b is not None]


def import_time(runs: int) -> None:
    deps = "import " + ", ".join(DEPENDENCIES)
    (xdsl,), (dep,), (own,), (pypto, cold, first) = _fresh_cpu_times(
        [("", "import xdsl", False), ("", deps, False), (deps, "import pypto", False),
         ("", "import pypto", True)], runs)
    # pypto's own cost is timed directly, in an interpreter that has already imported its
    # dependencies: a difference of two ~1 s figures would be mostly the noise of both
    print(f"import time (CPU, min of {runs} fresh interpreters): import xdsl {xdsl * 1e3:.1f} ms  "
          f"dependencies (numpy, ml_dtypes, xDSL builtin/arith/func/scf/math) {dep * 1e3:.1f} ms  "
          f"import pypto {pypto * 1e3:.1f} ms  pypto beyond its dependencies "
          f"{own * 1e3:.1f} ms (timed after importing them)")
    print(f"cold compile (CPU): pto.compile() of vector_add right after import pypto "
          f"{cold * 1e3:.2f} ms  first launch + sync {first * 1e3:.2f} ms")


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    ns = np.array([p[0] for p in points], np.float64)
    ts = np.array([p[1] for p in points], np.float64)
    per, fixed = np.polyfit(ns, ts, 1)
    return fixed, per


def curve_vector_add(sizes: list[int], repeat: int, bw: float) -> None:
    points = []
    for n in sizes:
        rng = np.random.default_rng(n)
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        d_a, d_b, d_o = (pto.alloc_tensor(n * 4) for _ in range(3))
        pto.memcpy_h2d(d_a, a)
        pto.memcpy_h2d(d_b, b)
        grid = (n + 255) // 256

        def run() -> None:
            pto.launch(vector_add, grid=grid, block=256, args=(d_a, d_b, d_o, n))
            pto.sync()
        inner = max(1, (1 << 16) // n)
        t = median_time(run, repeat, inner)
        t_np = median_time(lambda: a + b, repeat, inner)
        out = np.empty(n, np.float32)
        pto.memcpy_d2h(out, d_o)
        assert np.array_equal(out, a + b)
        moved = 12 * n
        print(f"vector_add n=2^{n.bit_length() - 1} pypto {t * 1e3:.3f} ms  numpy "
              f"{t_np * 1e3:.3f} ms  ratio {t / t_np:.1f}x  pypto {moved / t / 1e9:.2f} GB/s "
              f"({moved / t / bw:.0%} of copy bandwidth)  numpy {moved / t_np / 1e9:.2f} GB/s")
        points.append((n, t))
        for x in (d_a, d_b, d_o):
            x.free()
    fixed, per = fit([p for p in points if p[0] >= 1 << 16])
    print(f"vector_add fit: fixed {fixed * 1e6:.0f} us + {per * 1e9:.2f} ns/element "
          f"(copy bandwidth moves 12 bytes in {12 / bw * 1e9:.2f} ns)")


def curve_reduction(sizes: list[int], repeat: int, bw: float) -> None:
    points = []
    for n in sizes:
        x = np.random.default_rng(n).random(n, dtype=np.float32)
        grid = n // 256
        d_x, d_p = pto.alloc_tensor(n * 4), pto.alloc_tensor(grid * 4)
        pto.memcpy_h2d(d_x, x)
        args = (d_x, d_p, n, 256, 8)

        def run() -> None:
            pto.launch(block_sum, grid=grid, block=256, args=args)
            pto.sync()
        inner = max(1, (1 << 14) // n)
        t = median_time(run, repeat, inner)
        t_np = median_time(lambda: x.reshape(-1, 256).sum(axis=1), repeat, inner)
        print(f"block_sum n=2^{n.bit_length() - 1} pypto {t * 1e3:.3f} ms  numpy "
              f"{t_np * 1e3:.3f} ms  ratio {t / t_np:.1f}x  pypto {4 * n / t / 1e9:.3f} GB/s "
              f"({4 * n / t / bw:.1%} of copy bandwidth)")
        points.append((n, t))
        d_x.free()
        d_p.free()
    fixed, per = fit([p for p in points if p[0] >= 1 << 14])
    print(f"block_sum fit: fixed {fixed * 1e6:.0f} us + {per * 1e9:.2f} ns/element "
          f"(copy bandwidth reads 4 bytes in {4 / bw * 1e9:.3f} ns)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    opts = parser.parse_args()
    repeat = 3 if opts.quick else 7
    bw = copy_bandwidth(repeat)
    print(f"numpy copy bandwidth (np.copyto 2^24 float32, read + write) {bw / 1e9:.2f} GB/s")
    fixed_cost(repeat)
    import_time(5 if opts.quick else 9)
    top = 18 if opts.quick else 24
    curve_vector_add([1 << k for k in range(10, top + 1, 2)], repeat, bw)
    top = 16 if opts.quick else 22
    curve_reduction([1 << k for k in range(10, top + 1, 2)], repeat, bw)


if __name__ == "__main__":
    main()
