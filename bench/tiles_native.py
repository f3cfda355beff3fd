"""Kernels written with tile vector instructions on the native backend: native vs interpreter vs
NumPy, side by side in the same run (docs/native.md#tile-vector-instructions).

One line per figure:
  <kernel> <size> native <ms> ms  interpreter <ms> ms  numpy <ms> ms  ratio <x> (native) <x> (interp)

The kernels are the kernel zoo's tile kernels (tests/kernels/zoo.py `TILE_KERNELS`) plus the
example's softmax (examples/softmax_tiles.py) with one row block per block and no
`pto.pipeline` (the double-buffered one carries a copy's token through the loop, which the
native backend does not compile yet, docs/native.md#collectives). Each repetition launches the kernel
on each backend (launch + sync timed, race detector off: "auto" would run the interpreter while
it is on) and runs its NumPy equivalent on the same inputs, interleaved; the figure is the
minimum over repetitions (CPU time of this process by default). The outputs of both backends
are compared bit for bit and checked against NumPy by the zoo's check.
Run:  python bench/tiles_native.py [--repeat N] [--only NAME] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import pypto as pto  # noqa: E402
from pypto.backend.native.jit import NativeUnsupported  # noqa: E402
from tests.kernels.zoo import TILE_KERNELS, Case, cases  # noqa: E402
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


@pto.kernel
def softmax_rows(X, Y, n_cols: pto.constexpr, tile_rows: pto.constexpr):
    """examples/softmax_tiles.py's four tile instructions, one row block per block (no loop:
    the native backend compiles a block-level store inside a loop only when it is the
    tensor's one write outside loops, docs/native.md#what-is-compiled-the-support-check)."""
    row0 = pto.get_block_id() * tile_rows
    m = pto.alloc_tile(tile_rows, 1)
    x = pto.alloc_tile(tile_rows, n_cols)
    pto.wait(pto.async_load(x, X + row0 * n_cols, tile_rows * n_cols * 4))
    pto.trowmax(m, x)
    pto.trowexpandexpdif(x, x, m)
    pto.trowsum(m, x)
    pto.trowexpanddiv(x, x, m)
    pto.store(Y + row0 * n_cols, x, tile_rows * n_cols * 4)


def _with_row_softmax(all_cases: list[Case]) -> list[Case]:
    out = []
    for case in all_cases:
        if case.name not in TILE_KERNELS:
            continue
        out.append(case)
        if case.name.startswith("softmax"):
            side = int(case.size.split("x")[0])
            tile_rows = 8
            out.append(Case("softmax (tile ops, a row block per block)", case.size,
                            softmax_rows, side // tile_rows, case.block, case.inputs,
                            lambda d, n=side, t=tile_rows: (n, t), case.numpy, case.check,
                            case.lead))
    return out


def run(case: Case, repeat: int, now) -> dict[str, float] | str:
    rng = np.random.default_rng(0)
    host = case.inputs(rng)
    tensors = {be: {k: pto.tensor(a) for k, a in host.items()}
               for be in ("native", "interpreter")}
    args = {be: case.lead + tuple(t.values()) + tuple(case.scalars(host))
            for be, t in tensors.items()}
    kernels = {be: pto.compile(case.kernel, args=args[be], block=case.block, race_check=False)
               for be in tensors}
    try:
        pto.launch(kernels["native"], grid=case.grid, block=case.block, args=args["native"],
                   backend="native")
        pto.sync()
    except NativeUnsupported as exc:
        return str(exc).split(": ", 2)[-1]
    best = {"native": float("inf"), "interpreter": float("inf"), "numpy": float("inf")}
    for rep in range(repeat + 1):  # the first is a warm-up
        order = ("native", "interpreter") if rep % 2 else ("interpreter", "native")
        for be in order:
            t0 = now()
            pto.launch(kernels[be], grid=case.grid, block=case.block, args=args[be],
                       backend=be)
            pto.sync()
            if rep:
                best[be] = min(best[be], now() - t0)
        t0 = now()
        case.numpy(host)
        if rep:
            best["numpy"] = min(best["numpy"], now() - t0)
    outs = {be: {k: t.numpy() for k, t in ts.items()} for be, ts in tensors.items()}
    for k in host:
        if outs["native"][k].tobytes() != outs["interpreter"][k].tobytes():
            raise AssertionError(f"{case.name}: the backends differ in '{k}'")
    case.check(outs["native"], host)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--only", default="", help="a name prefix")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    opts = parser.parse_args()
    for case in _with_row_softmax(cases("full")):
        if not case.name.startswith(opts.only):
            continue
        b = run(case, opts.repeat, CLOCKS[opts.clock])
        if isinstance(b, str):
            print(f"{case.name} {case.size} native: not compiled ({b})", flush=True)
            continue
        print(f"{case.name} {case.size} native {b['native'] * 1e3:.2f} ms  interpreter "
              f"{b['interpreter'] * 1e3:.2f} ms  numpy {b['numpy'] * 1e3:.2f} ms  "
              f"ratio {b['native'] / b['numpy']:.2f}x (native) "
              f"{b['interpreter'] / b['numpy']:.2f}x (interp)", flush=True)


if __name__ == "__main__":
    main()
