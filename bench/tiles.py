"""Kernels written with tile vector instructions: pypto vs NumPy, side by side in the same run.

One line per figure:  <kernel> <size> pypto <ms> ms (race check off) <ms> ms (on)  numpy <ms> ms
ratio <x> (off) <x> (on)

The kernels are the kernel zoo's (tests/kernels/zoo.py, `tiles`): each repetition launches the
kernel (launch + sync timed, race detector off, then on) and runs its NumPy equivalent on the
same inputs, interleaved; the figure is the *minimum* over repetitions of each (CPU time of this
process by default), which a loaded machine inflates least. The last outputs are checked against
NumPy by the zoo's check, so a fast wrong answer cannot pass.
Run:  python bench/tiles.py [--repeat N] [--only NAME] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pypto as pto  # noqa: E402
from tests.kernels.zoo import TILE_KERNELS, cases  # noqa: E402

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def run(case, repeat: int, now) -> dict[str, float]:
    rng = np.random.default_rng(0)
    host = case.inputs(rng)
    tensors = {k: pto.alloc_tensor(a.nbytes, dtype=a.dtype) for k, a in host.items()}
    for k, a in host.items():
        pto.memcpy_h2d(tensors[k], a)
    args = case.lead + tuple(tensors.values()) + tuple(case.scalars(host))
    kernels = {on: pto.compile(case.kernel, args=args, block=case.block, race_check=on)
               for on in (False, True)}
    best = {"off": float("inf"), "on": float("inf"), "numpy": float("inf")}
    for rep in range(repeat + 1):  # the first is a warm-up
        for on in ((False, True) if rep % 2 else (True, False)):  # neither always runs first
            # (after NumPy has evicted the caches)
            t0 = now()
            pto.launch(kernels[on], grid=case.grid, block=case.block, args=args)
            pto.sync()
            if rep:
                best["on" if on else "off"] = min(best["on" if on else "off"], now() - t0)
        t0 = now()
        case.numpy(host)
        if rep:
            best["numpy"] = min(best["numpy"], now() - t0)
    outs = {}
    for k, t in tensors.items():
        o = np.empty_like(host[k])
        pto.memcpy_d2h(o, t)
        outs[k] = o
        t.free()
    case.check(outs, host)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--only", default="", help="a name prefix")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    opts = parser.parse_args()
    for case in cases("full"):
        if case.name not in TILE_KERNELS or not case.name.startswith(opts.only):
            continue
        b = run(case, opts.repeat, CLOCKS[opts.clock])
        print(f"{case.name} {case.size} pypto {b['off'] * 1e3:.2f} ms (race check off) "
              f"{b['on'] * 1e3:.2f} ms (on)  numpy {b['numpy'] * 1e3:.2f} ms  "
              f"ratio {b['off'] / b['numpy']:.2f}x (off) {b['on'] / b['numpy']:.2f}x (on)",
              flush=True)


if __name__ == "__main__":
    main()
