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


@pto.kernel
def lane_op_between(x, y, A, B, C):
    i = pto.get_global_id()
    u = pto.load(x + i)
    A_tile = pto.alloc_local(256)
    B_tile = pto.alloc_local(256)
    C_tile = pto.alloc_local(256)
    pto.fill(C_tile, 0.0, 256)
    pto.wait(pto.async_load(A_tile, A, 1024))
    pto.wait(pto.async_load(B_tile, B, 1024))
    v = u * 1.5                        # a lane instruction between B's wait and the MMA
    pto.mma(C_tile, A_tile, B_tile, 16, 16, 16)
    pto.store(y + i, v)
    pto.store(C, C_tile, 1024)


@pto.kernel
def scalar_op_between(x, y, A, B, C, n):
    A_tile = pto.alloc_local(256)
    B_tile = pto.alloc_local(256)
    C_tile = pto.alloc_local(256)
    pto.wait(pto.async_load(A_tile, A, 1024))
    pto.wait(pto.async_load(B_tile, B, 1024))
    m = n * 3                          # uniform: the scalar unit's
    pto.mma(C_tile, A_tile, B_tile, 16, 16, 16)
    pto.store(C, C_tile, 1024)
    pto.store(y, m)


def test_no_fusion_across_a_lane_instruction():
    """Fusing would move B's copy and its wait past the lane op, which would then no longer
    wait for the copy (issue 31); a remark says why it is not fused. Results unchanged."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    x = rng.standard_normal(64).astype(np.float32)
    args = (x, np.zeros(64, np.float32), a, b, np.zeros((16, 16), np.float32))
    t = [pto.alloc_tensor(n * 4) for n in (64, 64, 256, 256, 256)]
    ck = pto.compile(lane_op_between, args=tuple(t), block=64, pipeline=FUSED_PIPELINE)
    assert not any(isinstance(op, npu.LoadMmaOp) for op in ck.func.walk())
    assert any("is not fused" in r.message and "the lane instruction 'arith.mulf' at "
               "test_npu_fuse_load_mma.py:" in r.message for r in ck.remarks), \
        [r.message for r in ck.remarks]
    out = run_kernel(lane_op_between, 1, 64, args, pipeline=FUSED_PIPELINE)
    np.testing.assert_allclose(out[4], a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[1], x * np.float32(1.5))


def test_a_uniform_computation_between_still_fuses():
    t = [pto.alloc_tensor(n * 4, dtype=np.int32 if i == 1 else np.float32)
         for i, n in enumerate((64, 64, 256, 256, 256))]
    ck = pto.compile(scalar_op_between, args=(*t, 5), block=64, pipeline=FUSED_PIPELINE)
    assert [op.operand.data for op in ck.func.walk() if isinstance(op, npu.LoadMmaOp)] == ["b"]


@pto.kernel
def matmul_lane_op(A, B, C, out, M, N, K, tile_m, tile_n, tile_k):
    """The article's matmul with a lane computation between the wait and the MMA."""
    tid = pto.get_local_id()
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    for k0 in range(0, K, tile_k):
        with pto.pipeline() as pl:
            with pl.stage("load_a"):
                A_tile = pto.alloc_local(tile_m * tile_k)
                pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * 4, rows=tile_m,
                               src_stride=K)
            with pl.stage("load_b", after="load_a"):
                B_tile = pto.alloc_local(tile_k * tile_n)
                pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * 4, rows=tile_k,
                               src_stride=N)
            with pl.stage("compute", after="load_b"):
                pto.wait_all()
                lane = tid * 3 + k0            # lane-varying: a vector instruction
                pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
                pto.store(out + tid, lane)
        pl.run()
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


def test_the_double_buffer_pass_does_not_keep_a_load_for_a_fusion_across_a_lane_op():
    """pypto.analysis.fusion applies npu-fuse-load-mma's rule: B's load would not fuse across
    the lane computation, so the fusion-aware schedule prefetches it too, and the lowered
    kernel has no fused instruction."""
    m = 64
    f32 = [pto.alloc_tensor(m * m * 4) for _ in range(3)]
    out = pto.alloc_tensor(64 * 4, dtype=np.int32)
    ck = pto.compile(matmul_lane_op, args=(*f32, out, m, m, m, 32, 32, 32), block=64,
                     pipeline="pto-double-buffer{choose=fusion},pto-allocate-l1,"
                              "convert-pto-to-npu,npu-fuse-load-mma")
    said = [r.message for r in ck.remarks]
    assert any("the load of 'B_tile'" in s and "'arith.muli' sits between its wait and the "
               "MMA, which the firmware does not fuse across" in s for s in said), said
    assert any("2 slots for 'A_tile', 'B_tile'" in s for s in said), said
    assert not any(isinstance(op, npu.LoadMmaOp) for op in ck.func.walk())
