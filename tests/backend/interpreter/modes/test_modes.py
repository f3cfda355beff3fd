"""Every execution mode computes the same thing: batch (blocks side by side), block (one at a
time), warp (interleaved warps) — checked bit for bit on kernels of the zoo."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter import Executable

from tests.kernels.test_reduction import block_sum
from tests.kernels.test_transpose import ROWS, TILE, transpose

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402

_RNG = np.random.default_rng(5)


def _outputs(func, grid, block, host_args, **options):
    tensors = []
    args = []
    for a in host_args:
        if isinstance(a, np.ndarray):
            t = pto.alloc_tensor(a.nbytes, dtype=a.dtype)
            pto.memcpy_h2d(t, a)
            pto.sync()
            tensors.append(t)
            args.append(t)
        else:
            args.append(a)
    exe = Executable(func, **options)
    exe.run(grid, block, args)
    outs = []
    for t in tensors:
        out = np.empty(t.size, dtype=t.data.dtype)
        pto.memcpy_d2h(out, t)
        outs.append(out)
    return exe.mode, outs


CASES = {
    "reduction": (block_sum, lambda: (np.random.default_rng(0).random(5000, dtype=np.float32),
                                      np.zeros(20, np.float32), 5000, 256, 8), 20, 256),
    "matmul": (matmul_tile, lambda: (_RNG.standard_normal(128 * 96).astype(np.float16),
                                     _RNG.standard_normal(96 * 192).astype(np.float16),
                                     np.zeros(128 * 192, np.float32), 128, 192, 96, 64, 64, 32),
               (3, 2), 64),
    "transpose": (transpose, lambda: (np.arange(40 * 70, dtype=np.float32),
                                      np.zeros(40 * 70, np.float32), 40, 70),
                  (3, 2), (TILE, ROWS)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_batch_block_and_warp_modes_agree_bit_for_bit(name):
    kernel, make_args, grid, block = CASES[name]
    args = make_args()
    device_args = tuple(pto.alloc_tensor(a.nbytes, dtype=a.dtype) if isinstance(a, np.ndarray)
                        else a for a in args)
    ck = pto.compile(kernel, args=device_args, block=block)
    grid3 = grid if isinstance(grid, tuple) else (grid,)
    grid3 = tuple(grid3) + (1,) * (3 - len(grid3))
    block3 = block if isinstance(block, tuple) else (block,)
    block3 = tuple(block3) + (1,) * (3 - len(block3))
    results = {}
    for label, options in {"batch": {}, "block": {"batch_blocks": False},
                           "warp": {"schedule": "random:3"}}.items():
        mode, outs = _outputs(ck.func, grid3, block3, args, **options)
        assert mode == label
        results[label] = outs
    for label in ("block", "warp"):
        for a, b in zip(results["batch"], results[label]):
            np.testing.assert_array_equal(a, b)
