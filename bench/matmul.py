"""The pipelined matmul at 512 (tile 64) against NumPy, and where its time goes.

Same method as bench/zoo.py: fresh inputs each repetition (uploaded untimed), pypto's
`launch + sync` and NumPy's `a @ b` in the same repetition, the figure the median of the
per-repetition ratios; one BLAS thread (set OPENBLAS_NUM_THREADS=1 before NumPy loads, as the
report does). Beside it, in the same repetitions, the memory and BLAS work the semantics
require done by NumPy alone with no interpreter: 512 tile products of 64^3 (one BLAS call each),
accumulated into C tile by tile in the accumulator's L1 layout, C zeroed first and stored at the
end (the tiles read in place from A and B, as the interpreter's lazy loads do). Then pypto's
launch by part (the interpreter's functions timed from outside, CPU time).

Output: one line per figure.
Run:  OPENBLAS_NUM_THREADS=1 python bench/matmul.py [--repeat N] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import pypto as pto  # noqa: E402
from pipeline_matmul import matmul_tile  # noqa: E402
from pypto.backend.interpreter import tile_unit, tiles  # noqa: E402
pto.set_backend("interpreter")  # (its figures are the interpreter's, not the default "tiered"
# policy switching mid-run: docs/performance.md#which-backend-by-default)

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
SIZE, TILE = 512, 64


def numpy_alone(a: np.ndarray, b: np.ndarray, arena: np.ndarray, out: np.ndarray,
                products_only: bool = False) -> None:
    """The required work without the interpreter: C tiles in an arena laid out like the
    kernel's L1 (one 64 KiB block after another), zeroed, 8 k steps of 64 tile products each
    added in place, stored to `out`."""
    t, g = TILE, SIZE // TILE
    ext = arena.size // (g * g)
    c = np.ndarray((g, g, t, t), np.float32, buffer=arena, offset=2 * t * t * 4,
                   strides=(g * ext * 4, ext * 4, t * 4, 4))
    av, bv = a.reshape(g, t, g, t), b.reshape(g, t, g, t)
    if not products_only:
        c[...] = 0
    for k in range(g):
        p = av[:, :, k, :][:, None] @ bv[k].transpose(1, 0, 2)[None]
        if not products_only:
            np.add(c, p, out=c)
    if not products_only:
        out.reshape(g, t, g, t).transpose(0, 2, 1, 3)[...] = c


def by_part(clock: Callable[[], float]) -> tuple[Counter, Callable[[], None]]:
    """Time the interpreter's tile functions from outside (their CPU time per launch); the
    returned function puts them back."""
    spent: Counter = Counter()
    saved = []
    for owner, name, label in ((tile_unit.TileUnit, "mma", "mma (BLAS, accumulation, checks)"),
                               (tiles.BlockMemory, "copy", "copies (16 loads, 1 store of C)"),
                               (tile_unit.TileUnit, "fill", "fill of C")):
        f = getattr(owner, name)
        saved.append((owner, name, f))

        def timed(*args: Any, _f: Any = f, _label: str = label, **kw: Any) -> Any:
            t0 = clock()
            try:
                return _f(*args, **kw)
            finally:
                spent[_label] += clock() - t0

        setattr(owner, name, timed)

    def restore() -> None:
        for owner, name, f in saved:
            setattr(owner, name, f)

    return spent, restore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu")
    opts = parser.parse_args()
    now = CLOCKS[opts.clock]
    rng = np.random.default_rng(0)
    n, t = SIZE, TILE
    ta, tb, tc = (pto.alloc_tensor(n * n * 4, dtype=np.float32) for _ in range(3))
    args = (ta, tb, tc, n, n, n, t, t, t)
    kernel = pto.compile(matmul_tile, args=args, block=64)
    arena = np.zeros((n // t) ** 2 * 4 * t * t, np.float32)
    out = np.empty((n, n), np.float32)
    times: dict[str, list[float]] = {"pypto": [], "numpy": [], "alone": [], "products": []}
    spent: Counter = Counter()
    total = 0.0
    a = b = np.zeros((n, n), np.float32)

    def launch() -> None:
        pto.launch(kernel, grid=(n // t, n // t), block=64, args=args)
        pto.sync()

    for rep in range(opts.repeat + 1):
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        pto.memcpy_h2d(ta, a)
        pto.memcpy_h2d(tb, b)
        pto.sync()
        steps = (("pypto", launch),
                 ("numpy", lambda: a @ b),
                 ("alone", lambda: numpy_alone(a, b, arena, out)),
                 ("products", lambda: numpy_alone(a, b, arena, out, products_only=True)))
        for key, step in steps:
            t0 = now()
            step()
            if rep:  # the first repetition warms caches up
                times[key].append(now() - t0)
        if rep:  # one more launch, its parts timed
            parts, restore = by_part(now)
            t0 = now()
            launch()
            total += now() - t0
            restore()
            spent.update(parts)
    c = np.empty((n, n), np.float32)
    pto.memcpy_d2h(c, tc)
    assert np.array_equal(c, out), "pypto's C differs from the tile-by-tile NumPy reference"
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}

    def ratio(key: str) -> float:
        return statistics.median(x / y for x, y in zip(times[key], times["numpy"]))

    print(f"matmul {n}^3 tile {t}: pypto {med['pypto']:.2f} ms  numpy a @ b {med['numpy']:.2f} "
          f"ms  ratio {ratio('pypto'):.2f}x")
    print(f"the same work in NumPy alone (zero C, 512 BLAS calls of {t}^3, accumulate, store "
          f"C): {med['alone']:.2f} ms  ratio {ratio('alone'):.2f}x")
    print(f"the 512 tile products alone: {med['products']:.2f} ms  ratio "
          f"{ratio('products'):.2f}x")
    launches = opts.repeat
    parts = "  ".join(f"{k} {v / launches * 1e3:.2f} ms" for k, v in spent.items())
    rest = total - sum(spent.values())
    print(f"pypto by part (mean of {launches} launches): {parts}  the rest (generated code, "
          f"launch) {rest / launches * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
