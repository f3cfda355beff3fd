"""Cost of profiling: pto.profile() vs a plain launch vs NumPy, side by side in the same run.

One line per figure:
  profile <kernel> <size> pto.profile <s> (every block traced <s>)  launch <s>  numpy <s>  | ...
pto.profile proves block classes from the launch when the kernel's control flow and addresses
do not depend on loaded data (pypto/backend/cost_model/classes.py): it runs the launch untraced
(the interpreter's fast paths) and one traced block per class, so its cost is the plain launch
plus O(classes). "every block traced" is the previous way (`run_and_cost(by_class=False)`), for
comparison. "CPU median" is the same ratio from the process's CPU time, median of interleaved
(profile, launch) pairs: what the profile costs whatever else the machine runs. The last line is the 2^20 / 2^16 vector_add ratio of the model's own time (block
classes, simulation, launch over the cores) for 16x the blocks.
The growth line (issue 31): pto.profile of vector_add at 2^24 lanes over 2^20, beside the plain
launch's own growth, and the profile's time beyond the launch's at both sizes.
Run:  python bench/profile.py [--quick] [--growth]   (--quick: the 1024^3 matmul becomes 512^3;
      --growth: only the growth line)
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

import pypto as pto
from timing import best_of  # noqa: E402
from pypto.backend.cost_model import ModelParams, build_profile  # noqa: E402
from pypto.backend.cost_model.run import run_and_cost  # noqa: E402
from pypto.backend.cost_model.trace import CostTrace  # noqa: E402
from pypto.backend.targets import default_target  # noqa: E402
from pypto.profiling import model_pipeline  # noqa: E402
from pipeline_matmul import matmul_tile  # noqa: E402
from vector_add import vector_add  # noqa: E402
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)


def bench_vector_add(n: int, repeat: int) -> float:
    block = 256
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    d_a, d_b, d_o = (pto.alloc_tensor(n * 4) for _ in range(3))
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)
    args = (d_a, d_b, d_o, n)
    grid = n // block
    prof = pto.profile(vector_add, grid=grid, block=block, args=args)
    t_prof = best_of(lambda: pto.profile(vector_add, grid=grid, block=block, args=args), repeat)
    target = default_target()
    params = ModelParams.of(target, "fused")
    compiled = pto.compile(vector_add, args=args, block=block,
                           pipeline=model_pipeline("fused", target))
    exe = compiled.executable
    t_full = best_of(lambda: run_and_cost(exe, (grid, 1, 1), (block, 1, 1), args, params,
                                          by_class=False), repeat)

    def launch() -> None:
        pto.launch(vector_add, grid=grid, block=block, args=args)
        pto.sync()

    t_launch = best_of(launch, repeat)
    t_np = best_of(lambda: a + b, repeat)
    cpu: dict[str, list[float]] = {"profile": [], "launch": []}
    for _ in range(4 * repeat + 1):  # interleaved: a burst of load hits both alike
        for what, fn in (("profile", lambda: pto.profile(vector_add, grid=grid, block=block,
                                                         args=args)), ("launch", launch)):
            c0 = time.process_time()
            fn()
            cpu[what].append(time.process_time() - c0)
    cpu_ratio = statistics.median(cpu["profile"]) / statistics.median(cpu["launch"])
    # the model's own share: block classes, simulation and the launch over the cores
    trace = CostTrace()
    exe.run((grid, 1, 1), (block, 1, 1), args, instrument=trace)
    t_model = best_of(lambda: build_profile("vector_add", (grid, 1, 1), (block, 1, 1), params,
                                            trace.table, trace.block_classes()), repeat)
    print(f"profile vector_add n=2^{n.bit_length() - 1} pto.profile {t_prof:.4f} s (every "
          f"block traced {t_full:.4f} s; model {t_model:.4f} s)  launch {t_launch:.4f} s  "
          f"numpy {t_np:.5f} s  | pto.profile / launch {t_prof / t_launch:.1f}x (CPU median "
          f"{cpu_ratio:.1f}x), modelled "
          f"{prof.total_cycles} cycles ({prof.model}, {len(prof.launch.classes)} block "
          f"class(es) for {grid} blocks)")
    return t_model


def bench_matmul(size: int, repeat: int) -> None:
    tile = 64
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    d_a, d_b, d_c = (pto.alloc_tensor(size * size * 4) for _ in range(3))
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)
    args = (d_a, d_b, d_c, size, size, size, tile, tile, tile)
    grid = (size // tile, size // tile)
    prof = pto.profile(matmul_tile, grid=grid, block=64, args=args)
    t_prof = best_of(lambda: pto.profile(matmul_tile, grid=grid, block=64, args=args), repeat)

    def launch() -> None:
        pto.launch(matmul_tile, grid=grid, block=64, args=args)
        pto.sync()

    t_launch = best_of(launch, repeat)
    t_np = best_of(lambda: a @ b, repeat)
    print(f"profile matmul {size}^3 pto.profile {t_prof:.4f} s  launch {t_launch:.4f} s  "
          f"numpy {t_np:.5f} s  | modelled {prof.total_cycles} cycles ({prof.model}, bound by "
          f"{prof.launch.bound})")


def bench_growth(repeat: int) -> None:
    """Issue 31's figure: pto.profile of vector_add at 2^24 lanes against 2^20, beside the
    plain launch's own growth. The profile's overhead (profile - launch) should grow by at
    most 3x for 16x the lanes: one traced block per class, whatever the grid. Times are
    medians of the process's CPU time over interleaved (profile, launch) pairs, so that what
    else the machine runs weighs on neither (and wall-clock best-of, for reference)."""
    block = 256
    times: dict[int, tuple[float, float, float, float]] = {}
    for n in (1 << 20, 1 << 24):
        d_a, d_b, d_o = (pto.alloc_tensor(n * 4) for _ in range(3))
        pto.memcpy_h2d(d_a, np.ones(n, np.float32))
        pto.memcpy_h2d(d_b, np.ones(n, np.float32))
        args = (d_a, d_b, d_o, n)
        grid = n // block

        def launch() -> None:
            pto.launch(vector_add, grid=grid, block=block, args=args)
            pto.sync()

        def profile() -> None:
            pto.profile(vector_add, grid=grid, block=block, args=args)

        profile()  # the compile and the class plan, cached for the kernel
        cpu: dict[str, list[float]] = {"profile": [], "launch": []}
        for _ in range(4 * repeat + 1):
            for what, fn in (("profile", profile), ("launch", launch)):
                c0 = time.process_time()
                fn()
                cpu[what].append(time.process_time() - c0)
        times[n] = (statistics.median(cpu["profile"]), statistics.median(cpu["launch"]),
                    best_of(profile, repeat), best_of(launch, repeat))
        for t in (d_a, d_b, d_o):
            t.free()
    (p20, l20, w20, v20), (p24, l24, w24, v24) = times[1 << 20], times[1 << 24]
    beyond20, beyond24 = max(p20 - l20, 1e-9), max(p24 - l24, 0.0)
    print(f"profile growth vector_add 2^24 / 2^20 (CPU medians): pto.profile {p24:.4f} / "
          f"{p20:.4f} s = {p24 / p20:.1f}x  launch {l24:.4f} / {l20:.4f} s = "
          f"{l24 / max(l20, 1e-9):.1f}x  | profile beyond launch {beyond24:.4f} / "
          f"{beyond20:.4f} s = {beyond24 / beyond20:.1f}x (goal <= 3x)  | wall best-of: "
          f"pto.profile {w24 / w20:.1f}x, launch {v24 / v20:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller matmul, fewer repeats")
    parser.add_argument("--growth", action="store_true",
                        help="only the 2^24 / 2^20 growth line (issue 31)")
    options = parser.parse_args()
    repeat = 2 if options.quick else 5
    if options.growth:
        bench_growth(repeat)
        return
    small = bench_vector_add(1 << 16, repeat)
    large = bench_vector_add(1 << 20, repeat)
    bench_matmul(512 if options.quick else 1024, 1 if options.quick else 3)
    print(f"model cost ratio 2^20 / 2^16 vector_add {large / small:.1f}x for 16x the blocks "
          f"(identical blocks are simulated once; the traced run itself grows with the lanes)")
    bench_growth(repeat)


if __name__ == "__main__":
    main()
