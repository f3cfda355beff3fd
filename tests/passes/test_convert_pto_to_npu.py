"""`convert-pto-to-npu`: the npu level runs bit-identically to the pto level.

The zoo (tests/kernels) checks every kernel at both levels through its `run` fixture; these add
the article's matmul (launched by the example's own helper), a warp-interleaved run and the
things the lowering must show: staged slots hold the lanes' values, tile stores are synchronous.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from pypto.dialects import npu
from pypto.dialects.pto import AllocLocalOp
from tests.conftest import run_kernel
from tests.kernels.conftest import NPU_PIPELINE, same_bits

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402


def _matmul(a, b, tile, pipeline=None):
    (m, k), (_, n) = a.shape, b.shape
    c = np.zeros((m, n), np.float32)
    args = (a, b, c, m, n, k, *tile)
    options = {} if pipeline is None else {"pipeline": pipeline}
    return run_kernel(matmul_tile, (n // tile[1], m // tile[0]), 64, args, **options)[2]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul_bit_identical_at_npu_level(dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 64)).astype(dtype)
    b = rng.standard_normal((64, 192)).astype(dtype)
    pto_c = _matmul(a, b, (64, 64, 32))
    npu_c = _matmul(a, b, (64, 64, 32), NPU_PIPELINE)
    assert same_bits(pto_c, npu_c)
    np.testing.assert_allclose(npu_c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4,
                               atol=1e-4)


@pto.kernel
def reverse_in_block(x, out):
    buf = pto.alloc_local(64)
    lid = pto.get_local_id()
    i = pto.get_global_id()
    pto.store(buf + lid, pto.load(x + i) * 2.0)
    pto.barrier_block()
    pto.store(out + i, pto.load(buf + (63 - lid)))


@pytest.mark.parametrize("schedule", [None, "reverse", "random:3"])
def test_warp_schedules_at_npu_level(schedule):
    x = np.arange(128, dtype=np.float32)
    out = run_kernel(reverse_in_block, 2, 64, (x, np.zeros(128, np.float32)),
                     pipeline=NPU_PIPELINE, schedule=schedule, check_uninitialized=True)[1]
    expected = (x.reshape(2, 64)[:, ::-1] * 2.0).ravel()
    assert np.array_equal(out, expected)


@pto.kernel
def copy_kernel(x, out):
    i = pto.get_global_id()
    pto.store(out + i, pto.load(x + i) + 1.0)


def test_lowered_ir_has_no_pto_lane_instructions_and_one_slot_per_staged_access():
    x = pto.alloc_tensor(64 * 4)
    ck = pto.compile(copy_kernel, args=(x, x), block=64, pipeline=NPU_PIPELINE)
    names = [op.name for op in ck.func.walk()]
    assert "pto.load" not in names and "pto.store" not in names
    assert names.count("npu.load") == 1 and names.count("npu.store") == 1
    slots = [op for op in ck.func.walk() if isinstance(op, AllocLocalOp)]
    assert [s.result.type.size for s in slots] == [64, 64]
    staged = [op for op in ck.func.walk() if isinstance(op, npu.LoadOp | npu.StoreOp)]
    assert all(op.slot is not None for op in staged)
