"""Kernels written with tile vector instructions: pypto vs NumPy, side by side in the same run.

One line per figure:  <kernel> <size> pypto <ms> ms (race check off) <ms> ms (on)  numpy <ms> ms
ratio <x> (off) <x> (on)  [numpy same bits <ms> ms ratio <x> (off)]

The kernels are the kernel zoo's (tests/kernels/zoo.py, `tiles`): each repetition launches the
kernel (launch + sync timed, race detector off, then on) and runs its NumPy equivalent on the
same inputs, interleaved; the figure is the *minimum* over repetitions of each (CPU time of this
process by default), which a loaded machine inflates least. The last outputs are checked against
NumPy by the zoo's check, so a fast wrong answer cannot pass.

The issue's target is against plain NumPy (the zoo's `numpy`: float32 `np.exp`, pairwise
`np.sum`). For softmax and layernorm the line also gives *NumPy computing the same bits*
(`SAME_BITS`): the steps the tile instructions specify (docs/language.md#tile-vector-instructions)
written as vectorised NumPy, `exp` evaluated in float64 and rounded once, row sums folding
halves; its output must equal the kernel's bit for bit, which the bench checks. `--breakdown`
prints, per kernel, what those two semantic choices cost in NumPy itself (each step timed
alone on the kernel's data, plain against exact) and the kernel's launch with the tile
instructions' arithmetic replaced by nothing (copies, waits and the interpreter's own work).
Run:  python bench/tiles.py [--repeat N] [--only NAME] [--clock cpu|wall] [--breakdown]
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
from tests.kernels.test_layernorm import EPS  # noqa: E402
from tests.kernels.zoo import TILE_KERNELS, cases  # noqa: E402
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def fold_rows(x: np.ndarray) -> np.ndarray:
    """Row sums folding halves (the tile instructions' order), one NumPy add per step."""
    n = x.shape[1]
    while n > 1:
        h = n // 2
        r = x[:, :h] + x[:, h:2 * h]
        x = np.concatenate((r, x[:, 2 * h:n]), axis=1) if n % 2 else r
        n -= h
    return x


def exp_exact(x: np.ndarray) -> np.ndarray:
    """`np.exp` in float64 rounded once to float32 (as `texp`, `trowexpandexpdif`), in place."""
    return np.exp(x, out=x, dtype=np.float64, casting="same_kind")


def softmax_same_bits(d: dict[str, np.ndarray]) -> np.ndarray:
    x = d["x"]
    e = exp_exact(x - x.max(axis=1, keepdims=True))
    return e / fold_rows(e)


def layernorm_same_bits(d: dict[str, np.ndarray]) -> np.ndarray:
    x = d["x"]
    n = np.float32(x.shape[1])
    dev = x - fold_rows(x) / n
    var = fold_rows(dev * dev) / n + np.float32(EPS)
    rstd = (1.0 / np.sqrt(var.astype(np.float64))).astype(np.float32)
    return dev * rstd * d["gamma"] + d["beta"]


SAME_BITS = {"softmax (tile ops, double-buffered)": ("y", softmax_same_bits),
             "layernorm (tile ops)": ("y", layernorm_same_bits)}
"""NumPy computing the kernel's bits (output name, function), beside plain NumPy."""


def best_of(fn, repeat: int, now) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = now()
        fn()
        best = min(best, now() - t0)
    return best


def breakdown(case, host: dict[str, np.ndarray], kernel, args, repeat: int, now) -> None:
    """The semantic costs in NumPy itself, and the launch without the tile arithmetic."""
    x = host["x"]
    rows = x - x.max(axis=1, keepdims=True)
    scratch = np.empty_like(x)
    steps = {"exp float32": lambda: np.exp(rows, out=scratch),
             "exp via float64": lambda: np.exp(rows, out=scratch, dtype=np.float64,
                                               casting="same_kind"),
             "np.sum rows": lambda: x.sum(axis=1),
             "fold rows": lambda: fold_rows(x)}
    t = {k: best_of(f, repeat, now) * 1e3 for k, f in steps.items()}
    print(f"  {case.name} numpy steps on {x.shape[0]}x{x.shape[1]}: exp float32 "
          f"{t['exp float32']:.2f} ms, via float64 rounded once {t['exp via float64']:.2f} ms; "
          f"row sums np.sum {t['np.sum rows']:.2f} ms, folding halves {t['fold rows']:.2f} ms",
          flush=True)
    from pypto.backend.interpreter import tile_unit
    real = tile_unit.compute_into  # the tile unit's (interpreter/tile_unit.py) one entry
    per_op: dict[str, float] = {}
    launch_ops: dict[str, float] = {}

    def timed(name: str, *a) -> None:
        t0 = now()
        real(name, *a)
        launch_ops[name] = launch_ops.get(name, 0.0) + now() - t0

    def launch() -> None:
        launch_ops.clear()
        pto.launch(kernel, grid=case.grid, block=case.block, args=args)
        pto.sync()
        for name, v in launch_ops.items():
            per_op[name] = min(per_op.get(name, float("inf")), v)
    try:
        tile_unit.compute_into = timed  # each instruction's arithmetic, summed per launch
        best_of(launch, repeat, now)
        tile_unit.compute_into = lambda *a: None  # no arithmetic at all
        bare = best_of(launch, repeat, now) * 1e3
    finally:
        tile_unit.compute_into = real
    ops = ", ".join(f"{name} {v * 1e3:.2f}" for name, v in per_op.items())
    print(f"  {case.name} per launch: each tile instruction's arithmetic (ms, summed over the "
          f"launch) {ops}; the launch with no tile arithmetic (copies, waits, interpreter) "
          f"{bare:.2f} ms", flush=True)


def run(case, repeat: int, now, show_breakdown: bool = False) -> dict[str, float]:
    rng = np.random.default_rng(0)
    host = case.inputs(rng)
    tensors = {k: pto.alloc_tensor(a.nbytes, dtype=a.dtype) for k, a in host.items()}
    for k, a in host.items():
        pto.memcpy_h2d(tensors[k], a)
    args = case.lead + tuple(tensors.values()) + tuple(case.scalars(host))
    kernels = {on: pto.compile(case.kernel, args=args, block=case.block, race_check=on)
               for on in (False, True)}
    best = {"off": float("inf"), "on": float("inf"), "numpy": float("inf"),
            "same": float("inf")}
    same = SAME_BITS.get(case.name)
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
        if same is not None:
            t0 = now()
            same_out = same[1](host)
            if rep:
                best["same"] = min(best["same"], now() - t0)
    outs = {}
    for k, t in tensors.items():
        o = np.empty_like(host[k])
        pto.memcpy_d2h(o, t)
        outs[k] = o
    case.check(outs, host)
    if same is not None:  # the same bits, or it is not the reference it claims to be
        np.testing.assert_array_equal(outs[same[0]].view(np.uint32), same_out.view(np.uint32))
    if show_breakdown and same is not None:
        breakdown(case, host, kernels[False], args, repeat, now)
    for t in tensors.values():
        t.free()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--only", default="", help="a name prefix")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    parser.add_argument("--breakdown", action="store_true",
                        help="also the semantic costs in NumPy and the launch's bare cost")
    opts = parser.parse_args()
    for case in cases("full"):
        if case.name not in TILE_KERNELS or not case.name.startswith(opts.only):
            continue
        b = run(case, opts.repeat, CLOCKS[opts.clock], opts.breakdown)
        same = (f"  numpy same bits {b['same'] * 1e3:.2f} ms ratio "
                f"{b['off'] / b['same']:.2f}x (off)" if b["same"] < float("inf") else "")
        print(f"{case.name} {case.size} pypto {b['off'] * 1e3:.2f} ms (race check off) "
              f"{b['on'] * 1e3:.2f} ms (on)  numpy {b['numpy'] * 1e3:.2f} ms  "
              f"ratio {b['off'] / b['numpy']:.2f}x (off) {b['on'] / b['numpy']:.2f}x (on)"
              f"{same}", flush=True)


if __name__ == "__main__":
    main()
