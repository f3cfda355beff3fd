# examples/softmax_tiles.py through the default pipeline and down to the npu level: the
# input tile gets two slots (its load runs one row block ahead of the vector work), the tile
# vector instructions take the slot pointer with their static shape, pto-allocate-l1 places the
# tiles, and convert-pto-to-npu makes the copy's flag wait on the VECTOR pipe, where the tile
# instructions that read the slot run.
#
# RUN: %python %s | filecheck %s

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))

import pypto as pto  # noqa: E402
from softmax_tiles import softmax_tiles  # noqa: E402

X = pto.alloc_tensor(64 * 128 * 4)
Y = pto.alloc_tensor(64 * 128 * 4)
ck = pto.compile(softmax_tiles, args=(X, Y, 128, 8, 32), block=64,
                 pipeline="pto-double-buffer,pto-allocate-l1,pto-verify-barriers,"
                          "convert-pto-to-npu")
print(ck.mlir, end="")

# CHECK-LABEL: func.func @softmax_tiles
# CHECK-DAG:     %m = pto.alloc_local shape(8, 1) {offset = {{[0-9]+}} : i64} : !pto.l1buf<8xf32>
# CHECK-DAG:     %y = pto.alloc_local shape(8, 128) {offset = {{[0-9]+}} : i64} : !pto.l1buf<1024xf32>
# CHECK-DAG:     %x = pto.alloc_local {pto.slots = 2 : i64, offset = {{[0-9]+}} : i64} : !pto.l1buf<2048xf32>
# CHECK:         npu.copy_in %x_1
# CHECK:         scf.for
# CHECK:           npu.copy_in %x_2
# CHECK:           npu.wait_flag %{{.*}} "MTE_IN" -> "VECTOR"
# CHECK-NEXT:      pto.trowmax %m, %[[SLOT:.*]] shape(8, 128) : !pto.l1buf<8xf32>, !pto.ptr<f32, local>
# CHECK-NEXT:      pto.trowexpandexpdif %y, %[[SLOT]], %m shape(8, 128)
# CHECK-NEXT:      pto.trowsum %m, %y shape(8, 128)
# CHECK-NEXT:      pto.trowexpanddiv %y, %y, %m shape(8, 128)
# CHECK:           npu.copy_out %{{.*}}, %y
