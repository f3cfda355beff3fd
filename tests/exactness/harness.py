"""Build and run the kernels the exactness suite checks: one per operation and dtype.

Each operation gets a generated module (written to a temporary directory so `@pto.kernel` can
read its source) with two kernels:

- `lanes(pa, pb, pc, po, n)`: lane i applies the operation to `pa[i]`, `pb[i]`, `pc[i]` loaded
  from memory, so nothing can be folded: this is the interpreter's arithmetic;
- `folded(po)`: the operation applied to compile-time constants (module globals `X0, Y0, C0, ...`
  changed between compilations), compiled with `canonicalize,cse`: whatever the canonicalizer
  folds must give the value execution gives.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import pypto as pto
from tests.conftest import run_kernel
from tests.exactness.ops import DTYPE_NAMES, Op

SLOTS = 4
"""Constant operand tuples per compilation of `folded`."""


def expr_store(op: Op, ptr: str) -> str:
    if op.name == "fma":
        return f"pto.fma({ptr}, x, y, c)"
    return f"pto.store({ptr}, {op.expr})"


def kernel_source(op: Op) -> str:
    dt = f"pto.{DTYPE_NAMES[op.dtype]}"
    third = f"pto.{DTYPE_NAMES[op.third]}" if op.third is not None else dt
    lines = ["import pypto as pto", "", ""]
    lines += [f"X{j} = Y{j} = C{j} = 0" for j in range(SLOTS)]
    lines += ["", "", "@pto.kernel", "def lanes(pa, pb, pc, po, n):",
              "    i = pto.get_global_id()", "    if i < n:",
              "        x = pto.load(pa + i)", "        y = pto.load(pb + i)",
              "        c = pto.load(pc + i)", f"        {expr_store(op, 'po + i')}",
              "", "", "@pto.kernel", "def folded(po):"]
    for j in range(SLOTS):
        lines += [f"    x = pto.cast(X{j}, {dt})", f"    y = pto.cast(Y{j}, {dt})",
                  f"    c = pto.cast(C{j}, {third})", f"    {expr_store(op, f'po + {j}')}"]
    return "\n".join(lines) + "\n"


_MODULES: dict[str, ModuleType] = {}


def module_for(op: Op, directory: Path) -> ModuleType:
    """The generated kernels of `op` (imported once per session)."""
    mod = _MODULES.get(op.id)
    if mod is None:
        name = "pto_exact_" + op.id.replace("-", "_")
        path = directory / f"{name}.py"
        path.write_text(kernel_source(op))
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        _MODULES[op.id] = mod
    return mod


def third_dtype(op: Op) -> np.dtype:
    return op.third if op.third is not None else op.dtype


def run_lanes(op: Op, mod: ModuleType, xs: np.ndarray, ys: np.ndarray, cs: np.ndarray
              ) -> np.ndarray:
    n = xs.size
    out = np.zeros(n, dtype=op.result_dtype)
    block = 256
    grid = (n + block - 1) // block
    return run_kernel(mod.lanes, grid, block, (xs, ys, cs, out, n))[-1]


def _literal(v: Any) -> Any:
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    return float(v)


def run_folded(op: Op, mod: ModuleType, xs: np.ndarray, ys: np.ndarray, cs: np.ndarray
               ) -> np.ndarray:
    """The operation on up to SLOTS constant tuples, after `canonicalize,cse` (unused slots
    repeat the first tuple)."""
    k = xs.size
    assert 1 <= k <= SLOTS
    for j in range(SLOTS):
        src = j if j < k else 0
        setattr(mod, f"X{j}", _literal(xs[src]))
        setattr(mod, f"Y{j}", _literal(ys[src]))
        setattr(mod, f"C{j}", _literal(cs[src]))
    out = np.zeros(SLOTS, dtype=op.result_dtype)
    d_out = pto.alloc_tensor(out.nbytes, dtype=out.dtype)
    try:
        ck = pto.compile(mod.folded, args=(d_out,), block=1, pipeline="canonicalize,cse")
        pto.launch(ck, grid=1, block=1, args=(d_out,))
        pto.memcpy_d2h(out, d_out)
    finally:
        d_out.free()
    return out[:k]
