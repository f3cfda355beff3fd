"""`npu-fuse-load-mma`: results unchanged, fusion driven by the target's data."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from pypto.backend.targets import load_target
from pypto.dialects import npu
from pypto.passes.npu_fuse_load_mma import fusion_rules
from tests.conftest import run_kernel
from tests.kernels.conftest import NPU_PIPELINE, same_bits

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402

FUSED_PIPELINE = "pto-allocate-l1,pto-verify-barriers,convert-pto-to-npu,npu-fuse-load-mma"
"""The matmul as written (no pto-double-buffer, which moves the next B load an iteration away
from its MMA), lowered and fused."""


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fused_matmul_is_bit_identical(dtype):
    rng = np.random.default_rng(5)
    m, n, k = 128, 64, 96
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    args = (a, b, np.zeros((m, n), np.float32), m, n, k, 64, 64, 32)
    pto_c = run_kernel(matmul_tile, (1, 2), 64, args)[2]
    fused_c = run_kernel(matmul_tile, (1, 2), 64, args, pipeline=FUSED_PIPELINE)[2]
    assert same_bits(pto_c, fused_c)
    npu_c = run_kernel(matmul_tile, (1, 2), 64, args, pipeline=NPU_PIPELINE)[2]
    assert same_bits(pto_c, npu_c)
    np.testing.assert_allclose(fused_c, a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-4, atol=1e-4)


def test_the_matmul_fuses_its_b_load():
    t = pto.alloc_tensor(64 * 64 * 4)
    ck = pto.compile(matmul_tile, args=(t, t, t, 64, 64, 64, 64, 64, 64), block=64,
                     pipeline=FUSED_PIPELINE)
    fused = [op for op in ck.func.walk() if isinstance(op, npu.LoadMmaOp)]
    assert [op.operand.data for op in fused] == ["b"]
    assert not any(isinstance(op, npu.MmaOp) for op in ck.func.walk())
    assert sum(isinstance(op, npu.CopyInOp) for op in ck.func.walk()) == 1  # A's load stays


def test_unknown_pair_in_a_target_file_is_an_error(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('[fusion]\npairs = [["npu.load", "npu.fma"]]\n')
    with pytest.raises(ValueError, match="have no fused instruction in the npu dialect"):
        fusion_rules(load_target(path))
