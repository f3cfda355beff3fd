"""`pypto-opt -p canonicalize,cse` at scale: linear in the op count, beside parse + print.

Generates a pto module of about N ops (an unrolled kernel: ids, pointer arithmetic, repeated
loads of the same addresses, lane-dependent `scf.if`s, stores, tile copies) and prints, for each
size, in the same run:

    ops <n>  parse+print <s> s  canonicalize,cse <s> s  ratio <x>  (xdsl cse <s> s)

`parse+print` is what `xdsl-opt` does with the file and no passes (xDSL's `Parser`, one
`verify()`, its `Printer`, with the pto dialect registered: plain `xdsl-opt` cannot read pto IR); `canonicalize,cse` is
`pypto-opt k.mlir -p canonicalize,cse -o out.mlir` run in-process through the tool's `main` (its
own located parser, both passes, verification after each, print). Both read the same file. The
target (issue 13) is a ratio of at most 1.5 at ~11k ops, growing no faster than the op count.
Times are medians over --repeat interleaved runs, the ratio the median of per-run ratios.
`xdsl cse` is the same pipeline with xDSL's stock CSE pass instead of pypto's, for comparison
(skipped with --quick, and above 12k ops, where it is quadratic and takes minutes).

Run:  python bench/opt.py [--quick] [--sizes 2750,5500,11000]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from pypto.ir import make_context
from pypto.passes import run_pipeline
from pypto.tools.opt import main as opt_main
from pypto.tools.parsing import parse_module

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.passes.big_module import CHUNK_OPS, module_text  # noqa: E402  (shared with test_cse)


def count_ops(text: str) -> int:
    module, _ = parse_module(make_context(), text, "<bench>")
    return sum(1 for _ in module.walk()) - 1  # not the module itself


def parse_print(path: Path) -> str:
    """xdsl-opt's path with no passes: xDSL's parser, one verification, the printer."""
    module = Parser(make_context(), path.read_text(), str(path)).parse_module()
    module.verify()
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def pypto_opt(path: Path, out: Path) -> None:
    """`pypto-opt <path> -p canonicalize,cse -o <out>`, in-process."""
    if opt_main([str(path), "-p", "canonicalize,cse", "-o", str(out)]) != 0:
        raise SystemExit("pypto-opt failed on the generated file")


def stock(path: Path) -> str:
    """The same pipeline with xDSL's own CSE pass (the quadratic one), for comparison."""
    ctx = make_context()
    module, _ = parse_module(ctx, path.read_text(), str(path))
    run_pipeline(module, [CanonicalizePass(), CommonSubexpressionElimination()], ctx)
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one size, one repetition")
    parser.add_argument("--sizes", default="2750,5500,11000",
                        help="approximate op counts, comma-separated")
    args = parser.parse_args()
    sizes = [11000] if args.quick else [int(s) for s in args.sizes.split(",")]
    repeat = 1 if args.quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "big.mlir", Path(tmp) / "out.mlir"
        for size in sizes:
            text = module_text(max(1, size // CHUNK_OPS))
            path.write_text(text)
            n = count_ops(text)
            # Interleaved, and the median of per-repetition ratios: robust to a loaded machine.
            pairs = []
            for _ in range(repeat):
                pairs.append((timed(lambda: parse_print(path)), timed(lambda: pypto_opt(path, out))))
            t_pp = statistics.median(p for p, _ in pairs)
            t_opt = statistics.median(o for _, o in pairs)
            ratio = statistics.median(o / p for p, o in pairs)
            line = (f"ops {n}  parse+print {t_pp:.3f} s  canonicalize,cse {t_opt:.3f} s  "
                    f"ratio {ratio:.2f}x")
            if not args.quick and size <= 12000:
                t_stock = timed(lambda: stock(path))
                line += f"  (xdsl cse {t_stock:.3f} s)"
            print(line, flush=True)


if __name__ == "__main__":
    main()
