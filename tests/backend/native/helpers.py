"""Running one launch on both backends to compare their bytes (the interpreter is the oracle)."""

from __future__ import annotations

import numpy as np

import pypto as pto


def both(kernel, grid, block, arrays, scalars=()):
    """Outputs of one launch on each backend (fresh copies of `arrays` each)."""
    outs = []
    for backend in ("interpreter", "native"):
        copies = [a.copy() for a in arrays]
        pto.launch(kernel, grid, block, (*copies, *scalars), backend=backend)
        outs.append(copies)
    return outs


def same_bits(a, b):
    """Every array of `a` equal to `b`'s byte for byte."""
    return all(np.array_equal(x.view(np.uint8), y.view(np.uint8)) for x, y in zip(a, b))
