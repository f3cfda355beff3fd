"""Kernels running one tile vector instruction on whole tiles, for the exactness suite.

`run_tile(name, dst_dtype, ins, scalar, props, dst_shape)` writes a kernel module (so that
`@pto.kernel` can read its source) that copies the input tiles into L1, runs
`pto.<name>(...)` once and stores the destination tile, then launches it on one block.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tests.conftest import run_kernel
from tests.exactness.ops import DTYPE_NAMES

_MODULES: dict[str, Any] = {}


def _source(name: str, shapes: list[tuple[int, int]], dtypes: list[np.dtype],
            scalar: str | None, props: str) -> str:
    """Operand 0 is the destination; the others are inputs loaded from `p1`, `p2`, ..."""
    params = ", ".join(f"p{i}" for i in range(len(shapes)))
    lines = ["import pypto as pto", "", "", "@pto.kernel", f"def tile_kernel({params}, s):"]
    for i, ((rows, cols), dt) in enumerate(zip(shapes, dtypes)):
        lines.append(f"    t{i} = pto.alloc_tile({rows}, {cols}, dtype=pto.{DTYPE_NAMES[dt]})")
        nbytes = rows * cols * np.dtype(dt).itemsize
        lines.append(f"    pto.wait(pto.async_load(t{i}, p{i}, {nbytes}))")
    args = [f"t{i}" for i in range(len(shapes))]
    if scalar is not None:  # passed as a Python number, given the tile's type in the kernel
        lines.append(f"    sv = pto.cast(s, pto.{scalar})")
        args.insert(scalar_index(name), "sv")
    call = ", ".join(args) + (f", {props}" if props else "")
    lines.append(f"    pto.{name}({call})")
    rows, cols = shapes[0]
    nbytes = rows * cols * np.dtype(dtypes[0]).itemsize
    lines.append(f"    pto.store(p0, t0, {nbytes})")
    return "\n".join(lines) + "\n"


def scalar_index(name: str) -> int:
    """Where a tile instruction takes its uniform value."""
    return 1 if name in ("texpands", "tci") else 2


def run_tile(name: str, directory: Path, dst: np.ndarray, ins: list[np.ndarray],
             scalar: Any = None, props: str = "") -> np.ndarray:
    """`pto.<name>(dst, *ins[, scalar][, props])` on one block; the destination's contents
    afterwards. Tiles are 2-D arrays (their shapes are the tiles')."""
    shapes = [a.shape for a in (dst, *ins)]
    dtypes = [a.dtype for a in (dst, *ins)]
    sdt = None
    if scalar is not None:
        sdt = np.asarray(scalar).dtype
    key = repr((name, shapes, [str(d) for d in dtypes], str(sdt), props))
    mod = _MODULES.get(key)
    if mod is None:
        modname = f"pto_tile_exact_{len(_MODULES)}"
        path = directory / f"{modname}.py"
        path.write_text(_source(name, shapes, dtypes,
                                None if scalar is None else DTYPE_NAMES[sdt], props))
        spec = importlib.util.spec_from_file_location(modname, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        spec.loader.exec_module(mod)
        _MODULES[key] = mod
    s = 0 if scalar is None else (float(scalar) if sdt.kind == "f" or sdt.name == "bfloat16"
                                  else int(scalar))
    out = run_kernel(mod.tile_kernel, 1, 32, (dst.copy(), *ins, s))
    return out[0]
