"""Transcendental functions in lane code on the native backend: native vs interpreter vs NumPy,
side by side in the same run (docs/native.md#exactness).

Compiled code computes exp, log, tanh, sigmoid, `**` ... with NumPy's own float64 loop (the
definition both backends share), called once per vector of lanes where LLVM vectorises the lane
loop (pypto/backend/native/numpy_math.py). One line per kernel:
  <kernel> <size> native <ms> ms  interpreter <ms> ms  numpy <ms> ms  ratio <x> (native) <x> (interp)
NumPy is the same definition written with NumPy (`np.exp(x, dtype=float64)` rounded once).
Each repetition launches on each backend (launch + sync, race detector off) and runs NumPy,
interleaved; the figure is the minimum over repetitions (CPU time by default). The backends'
outputs are compared bit for bit, and with NumPy's.
Run:  python bench/math_native.py [--repeat N] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pypto as pto  # noqa: E402
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


@pto.kernel
def exp_lanes(x, y, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.exp(pto.load(x + i)))


@pto.kernel
def tanh_lanes(x, y, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.tanh(pto.load(x + i)))


@pto.kernel
def sigmoid_lanes(x, y, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.sigmoid(pto.load(x + i)))


def _f64(f, x):
    with np.errstate(all="ignore"):
        return f(x.astype(np.float64)).astype(x.dtype)


CASES = [
    ("exp float32", exp_lanes, np.float32, lambda x: _f64(np.exp, x)),
    ("exp float16", exp_lanes, np.float16, lambda x: _f64(np.exp, x)),
    ("tanh float32", tanh_lanes, np.float32, lambda x: _f64(np.tanh, x)),
    ("sigmoid float32", sigmoid_lanes, np.float32,
     lambda x: _f64(lambda w: 1.0 / (1.0 + np.exp(-w)), x)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    parser.add_argument("--log2n", type=int, default=20)
    opts = parser.parse_args()
    now = CLOCKS[opts.clock]
    n = 1 << opts.log2n
    for name, kernel, dt, ref in CASES:
        x_host = (np.random.default_rng(0).standard_normal(n) * 3).astype(dt)
        tensors = {be: (pto.tensor(x_host), pto.tensor(np.zeros(n, dt)))
                   for be in ("native", "interpreter")}
        kernels = {be: pto.compile(kernel, args=(*t, n), block=256, race_check=False)
                   for be, t in tensors.items()}
        best = {"native": float("inf"), "interpreter": float("inf"), "numpy": float("inf")}
        for rep in range(opts.repeat + 1):  # the first is a warm-up (and the compile)
            order = ("native", "interpreter") if rep % 2 else ("interpreter", "native")
            for be in order:
                t0 = now()
                pto.launch(kernels[be], n // 256, 256, (*tensors[be], n), backend=be)
                pto.sync()
                if rep:
                    best[be] = min(best[be], now() - t0)
            t0 = now()
            want = ref(x_host)
            if rep:
                best["numpy"] = min(best["numpy"], now() - t0)
        got = {be: t[1].numpy() for be, t in tensors.items()}
        if got["native"].tobytes() != got["interpreter"].tobytes():
            raise AssertionError(f"{name}: the backends differ")
        if got["native"].tobytes() != want.tobytes():
            raise AssertionError(f"{name}: not NumPy's definition")
        print(f"{name} 2^{opts.log2n} native {best['native'] * 1e3:.2f} ms  interpreter "
              f"{best['interpreter'] * 1e3:.2f} ms  numpy {best['numpy'] * 1e3:.2f} ms  "
              f"ratio {best['native'] / best['numpy']:.2f}x (native) "
              f"{best['interpreter'] / best['numpy']:.2f}x (interp)", flush=True)


if __name__ == "__main__":
    main()
