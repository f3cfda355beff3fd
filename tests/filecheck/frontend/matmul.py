# The frontend's IR for the article's pipelined matmul: sizes specialised to constants, the
# k-loop around a pto.pipeline whose stages pass their L1 tiles and tokens on, 2-D copies.
#
# RUN: %python %s | filecheck %s
# RUN: %python %s | pypto-opt | filecheck %s

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))

import numpy as np  # noqa: E402

import pypto as pto  # noqa: E402
from pipeline_matmul import matmul_tile  # noqa: E402

A = pto.alloc_tensor(128 * 96 * 2, dtype=np.float16)
B = pto.alloc_tensor(96 * 64 * 2, dtype=np.float16)
C = pto.alloc_tensor(128 * 64 * 4)
# pipeline="": the frontend's own output (the default pipeline double-buffers the loop, see
# tests/filecheck/passes/pto-double-buffer-matmul.py)
ck = pto.compile(matmul_tile, args=(A, B, C, 128, 64, 96, 64, 64, 32), block=64, pipeline="")
print(ck.mlir, end="")

# CHECK-LABEL: func.func @matmul_tile(%A: !pto.ptr<f16, global> {pto.noalias}, %B: !pto.ptr<f16, global> {pto.noalias}, %C: !pto.ptr<f32, global> {pto.noalias}
# CHECK:         %[[BY:.*]] = pto.get_block_id 1 : i32
# CHECK:         %[[ROW0:.*]] = arith.muli %[[BY]], %{{.*}} : i32
# Tile sizes became compile-time constants: the accumulator is a 64x64 f32 L1 buffer.
# CHECK:         %[[CT:.*]] = pto.alloc_local : !pto.l1buf<4096xf32>
# CHECK:         pto.fill %[[CT]], %{{.*}}, %{{.*}} : !pto.l1buf<4096xf32>, f32
# CHECK:         scf.for %[[K0:.*]] = %{{.*}} to %K step %{{.*}} : i32 {
# CHECK-NEXT:      %{{.*}} = pto.pipeline -> (!pto.l1buf<2048xf16>, !pto.token, !pto.l1buf<2048xf16>, !pto.token) {
# CHECK-NEXT:        %[[AT:.*]], %{{.*}} = pto.stage "load_a" -> (!pto.l1buf<2048xf16>, !pto.token) {
# CHECK:               %[[ABUF:.*]] = pto.alloc_local : !pto.l1buf<2048xf16>
# CHECK:               %[[TA:.*]] = pto.async_load %[[ABUF]], %{{.*}}, %{{.*}} rows %{{.*}} strides(%K, %{{.*}}) : !pto.l1buf<2048xf16>, !pto.ptr<f16, global>
# CHECK:               pto.yield %[[ABUF]], %[[TA]] : !pto.l1buf<2048xf16>, !pto.token
# CHECK:             %[[BT:.*]], %{{.*}} = pto.stage "load_b" after ["load_a"] -> (!pto.l1buf<2048xf16>, !pto.token) {
# CHECK:               pto.async_load {{.*}} strides(%N, %{{.*}})
# CHECK:             pto.stage "compute" after ["load_b"] {
# CHECK-NEXT:          pto.wait_all
# CHECK-NEXT:          pto.mma %[[CT]], %[[AT]], %[[BT]] shape(64, 64, 32) : !pto.l1buf<4096xf32>, !pto.l1buf<2048xf16>, !pto.l1buf<2048xf16>
# CHECK-NEXT:          pto.yield
# CHECK-NEXT:        }
# CHECK:           }
# CHECK:         }
# CHECK:         pto.tile_store %{{.*}}, %[[CT]], %{{.*}} rows %{{.*}} strides(%{{.*}}, %N) : !pto.ptr<f32, global>, !pto.l1buf<4096xf32>
# CHECK-NEXT:    func.return
