"""Cold `pto.compile()` time of the article's kernels, and how often the shared analyses run.

One line per kernel:

    compile <kernel>  compile <ms> ms  +first launch <ms> ms  varying_values x<n>  lane models x<n>

`compile` is `pto.compile()` of a fresh `@pto.kernel` object (nothing cached on it: lowering,
verification, the default pipeline `pto-verify-barriers`, the interpreter's mode choice);
`+first launch` adds generating the interpreter code for the launch's variant (what the first
`pto.launch` pays on top). The counts are the computations of `varying_values` (uniformity) and
of `LaneModel`s (lane roots, token instances) over both steps; analyses shared through
`pypto.analysis.cache` are computed once per kernel and IR state. Medians of --repeat fresh
compiles after one warm-up (the first compile also pays Python's imports and xDSL's caches).
There is no NumPy equivalent of compiling: the ms figures stand alone.

Then one line per shipped target for the cost of choosing schedules by the model
(docs/passes.md#choosing-by-the-cost-model):

    compile matmul 512^3 f16 128x128x64 <target>  default <ms> ms  choose=fusion <ms> ms  x<ratio>  (min <ms> / <ms> ms x<ratio>, load <1-min load average>; walked <n>/<costed>)

the article's pipelined matmul compiled cold (a fresh kernel and an empty schedule-cost cache:
every candidate costed) with the default pipeline, whose `pto-double-buffer` costs its
candidate schedules, and with `pto-double-buffer{choose=fusion}` (the fusion-aware rule, no
costing), interleaved in the same run; CPU-time medians, then the minima (the least disturbed
compile of each: on a shared machine the medians move with the load, printed last), and how
many of the candidates were costed by walking their IR rather than by a traced run
(docs/cost-model.md#how-pto-double-buffer-chooses). The
interpreter's MMAs in the candidates' trial runs use NumPy's BLAS: with a multi-threaded BLAS
on a loaded machine a 128x64x128 product can take milliseconds instead of microseconds
(`OPENBLAS_NUM_THREADS=1` shows the compiler's own cost).

With `--against REV` (a git revision of this repository, e.g. the tree an issue was filed
against), one more line per target compares this tree's default pipeline with REV's, each
cold-compiling the same kernel in its own process (a temporary `git worktree` of REV), rounds
alternated:

    compile matmul 512^3 f16 128x128x64 <target>  this tree <ms> ms  <REV> <ms> ms  x<ratio>  (rounds: x<r1> x<r2> ..., load <1-min load average>)

Run:  python bench/compile.py [--repeat 15] [--against REV [--rounds 3]]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import pypto as pto  # noqa: E402
from pypto.analysis import lane_values, uniformity  # noqa: E402
from pipeline_matmul import matmul_tile  # noqa: E402
from vector_add import vector_add  # noqa: E402
from timing import git_tree  # noqa: E402
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)

COUNTS = {"varying": 0, "lane_model": 0}

def _count(module, name: str, key: str) -> None:
    original = getattr(module, name)

    def counted(*args, **kwargs):
        COUNTS[key] += 1
        return original(*args, **kwargs)

    setattr(module, name, counted)

def _install_counters() -> None:
    # Count the computations themselves, wherever they are called from.
    _count(uniformity, "_compute_varying" if hasattr(uniformity, "_compute_varying")
           else "varying_values", "varying")
    original_init = lane_values.LaneModel.__post_init__

    def counted_init(self):
        COUNTS["lane_model"] += 1
        original_init(self)

    lane_values.LaneModel.__post_init__ = counted_init

def _patch_callers() -> None:
    """Modules that imported `varying_values` by name see the counting wrapper too."""
    import pypto.analysis.lane_values as lv
    import pypto.backend.interpreter.codegen as cg
    import pypto.backend.interpreter.executor as ex

    if not hasattr(uniformity, "_compute_varying"):
        for module in (lv, cg, ex, uniformity):
            if hasattr(module, "varying_values"):
                module.varying_values = uniformity.varying_values

def one(kernel, args, block, one_d: bool) -> tuple[float, float, dict[str, int]]:
    fresh = pto.kernel(kernel.fn)
    COUNTS.update(varying=0, lane_model=0)
    t0 = time.perf_counter()
    ck = pto.compile(fresh, args=args, block=block)
    t1 = time.perf_counter()
    ck.executable.variant(one_d)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t0, dict(COUNTS)

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--against", metavar="REV",
                        help="also compare the default pipeline's compile with REV's")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternated rounds of --against (default 3)")
    args = parser.parse_args()
    if args.against:
        against(args.against, args.repeat, args.rounds)
        return
    _install_counters()
    _patch_callers()
    n = 1 << 20
    va_args = tuple(pto.alloc_tensor(n * 4) for _ in range(3)) + (n,)
    m = 256
    mm_args = (pto.alloc_tensor(m * m * 4), pto.alloc_tensor(m * m * 4),
               pto.alloc_tensor(m * m * 4), m, m, m, 64, 64, 64)
    for name, kernel, kargs, block, one_d in (
            ("vector_add", vector_add, va_args, 256, True),
            ("matmul_tile", matmul_tile, mm_args, 64, False)):
        one(kernel, kargs, block, one_d)  # warm-up
        runs = [one(kernel, kargs, block, one_d) for _ in range(args.repeat)]
        compile_ms = statistics.median(r[0] for r in runs) * 1e3
        launch_ms = statistics.median(r[1] for r in runs) * 1e3
        counts = runs[-1][2]
        print(f"compile {name}  compile {compile_ms:.1f} ms  +first launch {launch_ms:.1f} ms  "
              f"varying_values x{counts['varying']}  lane models x{counts['lane_model']}",
              flush=True)
    choosing(args.repeat)

def choosing(repeat: int) -> None:
    """Cold compiles of the article's matmul: the default pipeline against choose=fusion."""
    import numpy as np

    from pypto import compiler

    fusion = "pto-double-buffer{choose=fusion},pto-allocate-l1,pto-verify-barriers"
    m, tile = 512, (128, 128, 64)
    walked = [0, 0]  # of the last default compile: candidates walked from the IR, costed

    def cold(pipeline: str | None, target: str | None) -> float:
        a = pto.alloc_tensor(m * m * 2, dtype=np.float16)
        c = pto.alloc_tensor(m * m * 4, dtype=np.float32)
        compiler._SCHEDULE_COSTER = None  # an empty cost cache: every candidate costed
        fresh = pto.kernel(matmul_tile.fn)
        t0 = time.process_time()
        pto.compile(fresh, args=(a, a, c, m, m, m, *tile), block=64, pipeline=pipeline,
                    target=target)
        t1 = time.process_time()
        coster = compiler._SCHEDULE_COSTER
        if pipeline is None and coster is not None:
            walked[:] = [coster.walked, coster.costed]
        return t1 - t0

    for target in (None, "ascend910b"):
        cold(None, target), cold(fusion, target)  # warm-up
        default, rule = [], []
        for _ in range(repeat):
            default.append(cold(None, target))
            rule.append(cold(fusion, target))
        d, f = statistics.median(default) * 1e3, statistics.median(rule) * 1e3
        dmin, fmin = min(default) * 1e3, min(rule) * 1e3
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"compile matmul 512^3 f16 128x128x64 {target or 'default'}  default {d:.1f} ms  "
              f"choose=fusion {f:.1f} ms  x{d / f:.2f}  (min {dmin:.1f} / {fmin:.1f} ms "
              f"x{dmin / fmin:.2f}, load {load:.1f}; walked {walked[0]}/{walked[1]})", flush=True)


_COLD = """
import os, statistics, sys, time
sys.path.insert(0, "examples")
import numpy as np
import pypto as pto
from pypto import compiler
from pipeline_matmul import matmul_tile
m, tile, target, repeat = 512, (128, 128, 64), sys.argv[1] or None, int(sys.argv[2])
def cold():
    a = pto.alloc_tensor(m * m * 2, dtype=np.float16)
    c = pto.alloc_tensor(m * m * 4, dtype=np.float32)
    if hasattr(compiler, "_SCHEDULE_COSTER"):
        compiler._SCHEDULE_COSTER = None
    fresh = pto.kernel(matmul_tile.fn)
    t0 = time.process_time()
    pto.compile(fresh, args=(a, a, c, m, m, m, *tile), block=64,
                **({"target": target} if target else {}))
    return time.process_time() - t0
cold(), cold()
print(statistics.median(cold() for _ in range(repeat)) * 1e3)
"""


def _cold_ms(tree: Path, target: str, repeat: int) -> float:
    """Median CPU ms of a cold default-pipeline compile of the matmul, in a process of its own
    importing pypto from `tree`."""
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _COLD, target, str(repeat)], cwd=tree, env=env,
                         check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def against(rev: str, repeat: int, rounds: int) -> None:
    """This tree's default pipeline against REV's (docs/cost-model.md "What choosing costs")."""
    with git_tree(rev) as old:
        for target in ("", "ascend910b"):
            pairs = [(_cold_ms(ROOT, target, repeat), _cold_ms(old, target, repeat))
                     for _ in range(rounds)]
            new, base = statistics.median(p[0] for p in pairs), \
                statistics.median(p[1] for p in pairs)
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
            each = " ".join(f"x{a / b:.2f}" for a, b in pairs)
            print(f"compile matmul 512^3 f16 128x128x64 {target or 'default'}  this tree "
                  f"{new:.1f} ms  {rev} {base:.1f} ms  x{new / base:.2f}  (rounds: {each}, "
                  f"load {load:.1f})", flush=True)


if __name__ == "__main__":
    main()
