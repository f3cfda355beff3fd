"""A native switch off against on: steady-state launch times of zoo kernels, processes alternated.

A switch is a module-level bool of the native backend listed in `jit.SWITCHES` (part of the disk
cache's key, so both variants share one cache). For each round, one child process per variant
(off, then on) compiles each chosen zoo kernel with the switch set, launches it 25 times (fresh
inputs every 5th launch, uploaded untimed) and reports the median CPU time of `launch + sync`.
Printed: one line per kernel and variant, with every round's median. One more launch on freshly
uploaded inputs is checked against the zoo's reference, so a fast wrong answer cannot pass.

Run:  python bench/native_ab.py --switch jit.NO_BUILTIN_COPIES --only "atomic_total;block_sum ("
      [--rounds 2]      (kernel name prefixes separated by ';': zoo names contain commas)
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LAUNCHES, FRESH_EVERY = 25, 5


def child(switch: str, value: bool, names: list[str]) -> None:
    import numpy as np

    import pypto as pto
    from tests.kernels.zoo import cases, check_and_free

    module, name = switch.rsplit(".", 1)
    setattr(importlib.import_module(f"pypto.backend.native.{module}"), name, value)
    everything = cases("full")
    for prefix in names:
        case = next(c for c in everything if c.name.startswith(prefix))
        rng = np.random.default_rng(1)
        host = case.inputs(rng)
        tensors = {k: pto.alloc_tensor(a.nbytes, dtype=a.dtype) for k, a in host.items()}
        args = case.lead + tuple(tensors.values()) + tuple(case.scalars(host))
        kernel = pto.compile(case.kernel, args=args, block=case.block, race_check=False)

        def upload(arrays: dict) -> None:
            for k, a in arrays.items():
                pto.memcpy_h2d(tensors[k], a)
            pto.sync()

        def launch() -> float:
            t0 = time.process_time()
            pto.launch(kernel, grid=case.grid, block=case.block, args=args, backend="native")
            pto.sync()
            return time.process_time() - t0

        upload(host)
        launch()
        times = []
        for i in range(LAUNCHES):
            if i % FRESH_EVERY == 0:
                host = case.inputs(rng)
                upload(host)
            times.append(launch())
        upload(host)  # (a kernel that accumulates, atomic_total, is checked after one launch)
        launch()
        check_and_free(case, tensors, host)
        print(f"{case.name}\t{statistics.median(times) * 1e3:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--switch", required=True, help="MODULE.NAME, one of jit.SWITCHES")
    parser.add_argument("--only", required=True, help="';'-separated zoo name prefixes")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", choices=("0", "1"), help=argparse.SUPPRESS)
    opts = parser.parse_args()
    names = [s.strip() for s in opts.only.split(";") if s.strip()]
    if opts.child is not None:
        child(opts.switch, opts.child == "1", names)
        return
    from pypto.backend.native import jit

    if tuple(opts.switch.rsplit(".", 1)) not in jit.SWITCHES:
        parser.error(f"--switch {opts.switch}: not one of jit.SWITCHES "
                     f"({', '.join('.'.join(s) for s in jit.SWITCHES)})")
    seen: dict[tuple[str, str], list[str]] = {}
    for _ in range(opts.rounds):
        for value in ("0", "1"):
            out = subprocess.run([sys.executable, __file__, "--switch", opts.switch, "--only",
                                  opts.only, "--child", value], capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"the child with {opts.switch}={value} failed:\n{out.stderr[-2000:]}")
            for line in out.stdout.splitlines():
                kernel, ms = line.split("\t")
                seen.setdefault((kernel, value), []).append(ms)
    print(f"# {opts.switch} off vs on: median CPU ms of {LAUNCHES} native launch + sync per "
          f"process, {opts.rounds} rounds of processes alternated")
    for (kernel, value), ms in seen.items():
        print(f"{kernel} | {opts.switch}={'on' if value == '1' else 'off'} | {', '.join(ms)}")


if __name__ == "__main__":
    main()
