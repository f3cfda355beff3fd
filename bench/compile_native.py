"""First-compile time of the native backend (docs/native.md#compile-time), split in phases.

One line per kernel: the pto -> llvm lowering (`llvm_module`: the native pipeline, xDSL's
translation to llvmlite IR, printed), LLVM (`object_code`: parse, O3, object code) and the whole
first launch's compile (`NativeKernel` with an empty disk cache: the analyses, lowering, LLVM,
JIT), CPU milliseconds, each the minimum of --repeat compiles. Kernels: the
exactness suite's one-operation `lanes` kernels (tests/exactness/harness.py) for a spread of
operations and dtypes, and a kernel applying eight operations. There is no NumPy equivalent of
compiling: the figures stand alone; the last line is the sum, and the machine's load.

Run:  python bench/compile_native.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pypto as pto  # noqa: E402
from tests.exactness.harness import module_for, third_dtype  # noqa: E402
from tests.exactness.ops import all_ops  # noqa: E402

OPS = ("add-float32", "mul-int32", "floordiv-int32", "div-float16", "lt-bfloat16",
       "cast-float32-to-int32", "sqrt-float32", "fma-float32", "shl-int64", "and-bool_")

EIGHT = '''import pypto as pto


@pto.kernel
def eight(pa, pb, pc, po, n):
    i = pto.get_global_id()
    if i < n:
        x = pto.load(pa + i)
        y = pto.load(pb + i)
        c = pto.load(pc + i)
        pto.store(po + i, x + y)
        pto.store(po + i + n, x * y - c)
        pto.store(po + i + 2 * n, x // y)
        pto.store(po + i + 3 * n, x % y)
        pto.store(po + i + 4 * n, min(x, y))
        pto.store(po + i + 5 * n, x << (y & 7))
        pto.store(po + i + 6 * n, x ^ c)
        pto.store(po + i + 7 * n, pto.select(x > y, c, x))
'''


def _compiled(kernel: Any, dtypes: tuple[Any, ...], block: int = 256) -> Any:
    n = 1024
    args = tuple(pto.empty(n * 8, dtype) for dtype in dtypes) + (n,)
    return pto.compile(kernel, args=args, block=block)


def _phases(compiled: Any) -> tuple[float, float, float]:
    """(lowering, LLVM, whole NativeKernel with an empty disk cache), CPU seconds."""
    from pypto.backend.native import jit

    t0 = time.process_time()
    text = str(jit.llvm_module(compiled.func))
    t1 = time.process_time()
    jit.object_code(text)
    t2 = time.process_time()
    saved = os.environ.get(jit.CACHE_ENV)
    with tempfile.TemporaryDirectory() as cache:
        os.environ[jit.CACHE_ENV] = cache
        try:
            t3 = time.process_time()
            jit.NativeKernel(compiled.func, compiled.name, compiled.block)
            t4 = time.process_time()
        finally:
            if saved is None:
                os.environ.pop(jit.CACHE_ENV, None)
            else:
                os.environ[jit.CACHE_ENV] = saved
    return t1 - t0, t2 - t1, t4 - t3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ops", default=",".join(OPS))
    args = parser.parse_args()
    ops = {op.id: op for op in all_ops()}
    kernels = []
    with tempfile.TemporaryDirectory() as d:
        for name in args.ops.split(","):
            op = ops[name]
            kernels.append((f"exact {name}", _compiled(
                module_for(op, Path(d)).lanes, (op.dtype, op.dtype, third_dtype(op),
                                                op.result_dtype))))
        path = Path(d) / "pto_eight_ops.py"
        path.write_text(EIGHT)
        import importlib.util
        spec = importlib.util.spec_from_file_location("pto_eight_ops", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["pto_eight_ops"] = mod
        spec.loader.exec_module(mod)
        kernels.append(("eight int32 ops", _compiled(mod.eight, (np.int32,) * 4)))
        _phases(kernels[0][1])  # warm-up: imports, xDSL's caches
        total = [0.0, 0.0, 0.0]
        for label, compiled in kernels:
            runs = [_phases(compiled) for _ in range(args.repeat)]
            best = [min(r[k] for r in runs) for k in range(3)]
            for k in range(3):
                total[k] += best[k]
            print(f"native first compile {label:30s} lowering {best[0] * 1e3:6.1f} ms  "
                  f"LLVM {best[1] * 1e3:6.1f} ms  NativeKernel {best[2] * 1e3:6.1f} ms")
        print(f"native first compile: sum lowering {total[0] * 1e3:.0f} ms  LLVM "
              f"{total[1] * 1e3:.0f} ms  NativeKernel {total[2] * 1e3:.0f} ms  "
              f"(load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
