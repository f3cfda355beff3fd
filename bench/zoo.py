"""The kernel zoo (tests/kernels/ and examples/) timed against its idiomatic NumPy equivalent.

For every kernel: fresh random inputs each repetition (uploaded untimed), then pypto's
`launch + sync` with the race detector on, with it off, and the NumPy equivalent on the same
inputs, all in the same repetition; the figure is the median over repetitions of the
per-repetition ratio pypto / NumPy. The last repetition's output is checked against NumPy (bit
for bit where the kernel's order of operations is emulated exactly, else with a tolerance), so a
fast wrong answer cannot pass for a speed-up.

Output: one markdown table, one row per kernel (the bench's "one line per figure").
Run:  python bench/zoo.py [--quick] [--repeat N] [--only NAME[,...]] [--clock wall|cpu]
(--quick uses small sizes, for a smoke test; figures in docs/performance.md are full size.)

`--backend native`: another table, the native backend (docs/native.md) beside the interpreter
(race detector off) and NumPy in the same repetitions, with the native code's first compile
(lowering + LLVM + JIT, empty disk cache) and its load from the disk cache; kernels the native
backend does not compile yet are listed with the reason.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pypto as pto  # noqa: E402
from tests.kernels.zoo import Arrays, Case, cases, check_and_free  # noqa: E402  (the zoo's kernels and checks)
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def run_case(case: Case, repeat: int, seed: int, clock: str = "wall") -> dict[str, float]:
    """Times one case; returns medians (seconds and ratios). `clock="cpu"` times with this
    process's CPU time (all its threads), which descheduling on a loaded machine does not
    inflate."""
    now = CLOCKS[clock]
    rng = np.random.default_rng(seed)
    host = case.inputs(rng)
    tensors = {k: pto.alloc_tensor(a.nbytes, dtype=a.dtype) for k, a in host.items()}
    args = case.lead + tuple(tensors.values()) + tuple(case.scalars(host))
    kernels = {on: pto.compile(case.kernel, args=args, block=case.block, race_check=on)
               for on in (True, False)}

    def upload(arrays: Arrays) -> None:
        for k, a in arrays.items():
            pto.memcpy_h2d(tensors[k], a)
        pto.sync()

    def timed_launch(kernel: Any) -> float:
        t0 = now()
        pto.launch(kernel, grid=case.grid, block=case.block, args=args)
        pto.sync()
        return now() - t0

    for kernel in kernels.values():      # warm-up: first launch caches, first touches
        upload(host)
        timed_launch(kernel)
    case.numpy(host)
    times: dict[str, list[float]] = {"on": [], "off": [], "numpy": []}
    for _ in range(repeat):
        host = case.inputs(rng)
        for key, on in (("on", True), ("off", False)):
            upload(host)
            times[key].append(timed_launch(kernels[on]))
        t0 = now()
        case.numpy(host)
        times["numpy"].append(now() - t0)
    check_and_free(case, tensors, host)
    med = {k: statistics.median(v) for k, v in times.items()}
    med["ratio_on"] = statistics.median(a / b for a, b in zip(times["on"], times["numpy"]))
    med["ratio_off"] = statistics.median(a / b for a, b in zip(times["off"], times["numpy"]))
    med["race"] = statistics.median(a / b for a, b in zip(times["on"], times["off"]))
    return med


def run_native_case(case: Case, repeat: int, seed: int, clock: str = "wall") -> dict[str, Any]:
    """Times one case on both backends and NumPy (same inputs, same repetition); the native
    code's first compile and its load from the disk cache. `{"unsupported": reason}` when the
    native backend does not compile the kernel."""
    import os
    import tempfile

    from pypto.backend.native.jit import NativeKernel, NativeUnsupported
    from pypto.backend.native.support import unsupported_reason

    now = CLOCKS[clock]
    rng = np.random.default_rng(seed)
    host = case.inputs(rng)
    tensors = {k: pto.alloc_tensor(a.nbytes, dtype=a.dtype) for k, a in host.items()}
    args = case.lead + tuple(tensors.values()) + tuple(case.scalars(host))
    kernel = pto.compile(case.kernel, args=args, block=case.block, race_check=False)
    reason = unsupported_reason(kernel.func)
    if reason is not None:
        for t in tensors.values():
            t.free()
        return {"unsupported": reason}
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PYPTO_NATIVE_CACHE"] = cache
        t0 = now()  # (the chosen clock: CPU time is robust to a loaded machine; at the
        NativeKernel(kernel.func, kernel.name, kernel.block)  # launch's block, as a first
        first = now() - t0                                    # launch compiles it)
        t0 = now()
        NativeKernel(kernel.func, kernel.name, kernel.block)
        cached = now() - t0
        del os.environ["PYPTO_NATIVE_CACHE"]

    def upload(arrays: Arrays) -> None:
        for k, a in arrays.items():
            pto.memcpy_h2d(tensors[k], a)
        pto.sync()

    def timed_launch(backend: str) -> float:
        t0 = now()
        pto.launch(kernel, grid=case.grid, block=case.block, args=args, backend=backend)
        pto.sync()
        return now() - t0

    for backend in ("interpreter", "native"):  # warm-up (the native code compiles here)
        upload(host)
        timed_launch(backend)
    times: dict[str, list[float]] = {"native": [], "interpreter": [], "numpy": []}
    for _ in range(repeat):
        host = case.inputs(rng)
        for backend in ("interpreter", "native"):
            upload(host)
            times[backend].append(timed_launch(backend))
        t0 = now()
        case.numpy(host)
        times["numpy"].append(now() - t0)
    check_and_free(case, tensors, host)  # the last native launch's outputs, against NumPy
    med: dict[str, Any] = {k: statistics.median(v) for k, v in times.items()}
    for k in ("native", "interpreter"):
        med[f"ratio_{k}"] = statistics.median(a / b for a, b in zip(times[k], times["numpy"]))
    med["first"], med["cached"] = first, cached
    return med


def main_native(opts: argparse.Namespace, only: list[str], skip: list[str]) -> None:
    print(f"# pypto native backend vs interpreter vs NumPy: median of {opts.repeat} "
          f"per-repetition ratios, launch + sync timed ({opts.clock} clock)")
    print()
    print("| kernel | size | native (ms) | interpreter (ms) | NumPy (ms) | native ÷ NumPy "
          "| interpreter ÷ NumPy | first compile (ms) | from disk cache (ms) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    unsupported = []
    for i, case in enumerate(cases("quick" if opts.quick else "full")):
        if only and not any(case.name.startswith(p) for p in only):
            continue
        if any(case.name.startswith(p) for p in skip):
            continue
        m = run_native_case(case, opts.repeat, seed=1000 + i, clock=opts.clock)
        if "unsupported" in m:
            unsupported.append((case.name, m["unsupported"]))
            continue
        print(f"| {case.name} | {case.size} | {m['native'] * 1e3:.3f} | "
              f"{m['interpreter'] * 1e3:.2f} | {m['numpy'] * 1e3:.3f} | "
              f"{m['ratio_native']:.2f}× | {m['ratio_interpreter']:.1f}× | "
              f"{m['first'] * 1e3:.0f} | {m['cached'] * 1e3:.1f} |", flush=True)
    print()
    print(f"Not compiled natively yet ({len(unsupported)}):")
    for name, reason in unsupported:
        print(f"- {name}: {reason.rsplit('/', 1)[-1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    parser.add_argument("--skip", default="", help="comma-separated name prefixes to leave out")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall (default) or cpu: this process's CPU time, robust to load")
    parser.add_argument("--backend", choices=("interpreter", "native"), default="interpreter",
                        help="native: the native backend beside the interpreter and NumPy")
    opts = parser.parse_args()
    only = [s.strip() for s in opts.only.split(",") if s.strip()]
    skip = [s.strip() for s in opts.skip.split(",") if s.strip()]
    if opts.backend == "native":
        main_native(opts, only, skip)
        return
    print(f"# pypto kernel zoo vs NumPy: median of {opts.repeat} per-repetition ratios, "
          f"fresh inputs each repetition, launch + sync timed ({opts.clock} clock)")
    print()
    print("| kernel | size | pypto race on (ms) | pypto race off (ms) | NumPy (ms) "
          "| ÷ NumPy, race on | ÷ NumPy, race off | race-check overhead |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for i, case in enumerate(cases("quick" if opts.quick else "full")):
        if only and not any(case.name.startswith(p) for p in only):
            continue
        if any(case.name.startswith(p) for p in skip):
            continue
        m = run_case(case, opts.repeat, seed=1000 + i, clock=opts.clock)
        print(f"| {case.name} | {case.size} | {m['on'] * 1e3:.2f} | {m['off'] * 1e3:.2f} | "
              f"{m['numpy'] * 1e3:.3f} | {m['ratio_on']:.1f}× | {m['ratio_off']:.1f}× | "
              f"{m['race']:.2f}× |", flush=True)


if __name__ == "__main__":
    main()
