"""`pto-double-buffer`'s choices, as remark lines: the check that a change to how candidate
schedules are costed (docs/passes.md#choosing-by-the-cost-model) changes no choice and no cycle.

One line per remark of the pass, `label | target | model | stages | remark`, over the article's
matmul at 256..1024 with several tiles and dtypes, stages 2 and 3, the matmul with a fill
between B's wait and its MMA (tests/passes/test_double_buffer_choice.py), and every kernel of
the zoo (tests/kernels/zoo.py, quick scale), on both shipped targets and under both models
(240 lines on the tree of issue 31). The remark of a choice names the schedule chosen and the
runner-up with their cycles, so two trees that print the same lines chose the same schedules
at the same modelled cost. Run it on both trees and compare:

    python bench/schedules.py > after.txt
    python bench/schedules.py --compare before.txt      # exit status 1 when a line differs

Run from the root of the tree to check (it imports that tree's pypto). Each line is one compile
(a few minutes in all); there is no NumPy counterpart: the lines are compared between trees.
"""

from __future__ import annotations

import argparse
import difflib
import io
import os
import sys
from contextlib import redirect_stdout

ROOT = os.getcwd()
sys.path[:0] = [ROOT, os.path.join(ROOT, "examples")]

import numpy as np  # noqa: E402

import pypto as pto  # noqa: E402
from pipeline_matmul import matmul_tile  # noqa: E402
from tests.kernels import zoo  # noqa: E402
from tests.passes.test_double_buffer_choice import matmul_with_fill  # noqa: E402

MATMULS = ((256, (64, 64, 64), np.float32), (512, (128, 128, 64), np.float16),
           (512, (64, 64, 64), np.float32), (1024, (128, 128, 64), np.float16),
           (384, (128, 128, 32), np.float16))


def dump(label: str, kernel, args, block, target, model: str, stages: int = 2) -> None:
    pipe = f"pto-double-buffer{{model={model} stages={stages}}},pto-allocate-l1,pto-verify-barriers"
    try:
        ck = pto.compile(pto.kernel(kernel.fn), args=args, block=block, pipeline=pipe,
                         target=target)
        msgs = [r.message for r in ck.remarks if "double-buffer" in r.message]
    except Exception as e:  # noqa: BLE001 - a failing compile is a line to compare too
        msgs = [f"ERROR {type(e).__name__}: {str(e).splitlines()[0]}"]
    for m in msgs:
        print(f"{label} | {target} | {model} | s{stages} | {m}")


def tensor(a: np.ndarray):
    d = pto.alloc_tensor(a.nbytes, dtype=a.dtype)
    pto.memcpy_h2d(d, a)
    return d


def lines() -> None:
    assert pto.__file__.startswith(ROOT), f"run from the tree to check: imported {pto.__file__}"
    for target in (None, "ascend910b"):
        for model in ("fused", "table"):
            for size, tile, dt in MATMULS:
                a = pto.alloc_tensor(size * size * np.dtype(dt).itemsize, dtype=dt)
                c = pto.alloc_tensor(size * size * 4, dtype=np.float32)
                args = (a, a, c, size, size, size, *tile)
                name = f"{size} {tile} {np.dtype(dt).name}"
                for stages in (2, 3):
                    dump(f"matmul {name}", matmul_tile, args, 64, target, model, stages)
                dump(f"matmul+fill {name}", matmul_with_fill, args, 64, target, model)
            for case in zoo.cases("quick"):
                host = case.inputs(np.random.default_rng(0))
                args = case.lead + tuple(tensor(a) for a in host.values()) + \
                    tuple(case.scalars(host))
                dump(f"zoo {case.name} {case.size}", case.kernel, args, case.block, target,
                     model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", metavar="FILE",
                        help="compare with the lines of another tree instead of printing them")
    options = parser.parse_args()
    if options.compare is None:
        lines()
        return
    out = io.StringIO()
    with redirect_stdout(out):
        lines()
    with open(options.compare) as f:
        before = f.read().splitlines()
    after = out.getvalue().splitlines()
    diff = list(difflib.unified_diff(before, after, options.compare, "this tree", lineterm=""))
    print("\n".join(diff) if diff else f"identical: {len(after)} remark lines")
    sys.exit(1 if diff else 0)


if __name__ == "__main__":
    main()
