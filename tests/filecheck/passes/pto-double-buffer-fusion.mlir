// RUN: pypto-opt %s -p pto-double-buffer 2>/dev/null | filecheck %s
// RUN: pypto-opt %s -p pto-double-buffer 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// Lowered, the kept load fuses with its MMA in the kernel loop and in the epilogue:
// RUN: pypto-opt %s -p pto-double-buffer,convert-pto-to-npu,npu-fuse-load-mma 2>/dev/null | filecheck %s --check-prefix=FUSED
// A firmware that fuses nothing: every load is prefetched (pto-double-buffer.mlir):
// RUN: pypto-opt %s -p 'pto-double-buffer{target="%S/Inputs/fusion-none.toml"}' 2>&1 >/dev/null | filecheck %s --check-prefix=NONE
// A firmware whose fusion distance is 0: the wait for A between B's load and the MMA is one
// instruction too many, so fusion cannot be kept and both loads are prefetched:
// RUN: pypto-opt %s -p 'pto-double-buffer{target="%S/Inputs/fusion-distance-0.toml"}' 2>&1 >/dev/null | filecheck %s --check-prefix=NEAR

// The article's matmul under the default target, whose firmware fuses a tile load with the MMA
// it feeds (docs/passes.md#pto-double-bufferstagesn): prefetching B an iteration ahead would separate it from its MMA and lose
// the fusion, so the pass prefetches A (two slots) and keeps B's load in its own iteration,
// issued right before the waits in front of the MMA (one buffer, hoisted out of the loop). In
// the kernel loop the compute comes first and the prefetch after it, so that B's copy does not
// queue on MTE_IN behind a prefetch waiting for the previous MMA to release its slot.

// CHECK-LABEL: func.func @matmul
// CHECK:         %[[BA:.*]] = pto.alloc_local {pto.slots = 2 : i64} : !pto.l1buf<2048xf16>
// CHECK-NEXT:    %[[BB:.*]] = pto.alloc_local : !pto.l1buf<1024xf16>
// Prologue: only A's first tile.
// CHECK:         %[[A0:.*]] = pto.async_load
// CHECK-NOT:     pto.async_load
// CHECK:         scf.for
// Kernel: B's load, the waits, the MMA, then A's next tile.
// CHECK:           %[[TB:.*]] = pto.async_load %[[BB]]
// CHECK-NEXT:      pto.wait
// CHECK-NEXT:      pto.wait %[[TB]]
// CHECK-NEXT:      pto.mma
// CHECK:           %[[NEXT:.*]] = pto.async_load
// CHECK:           scf.yield %[[NEXT]]
// Epilogue: B's load, its MMA, no prefetch.
// CHECK:         scf.for
// CHECK:           %[[EB:.*]] = pto.async_load %[[BB]]
// CHECK-NEXT:      pto.wait
// CHECK-NEXT:      pto.wait %[[EB]]
// CHECK-NEXT:      pto.mma
// CHECK-NOT:       pto.async_load
// CHECK:         func.return

// REMARK: remark: pto-double-buffer: loop{{.*}}: 2 slots for 'a_tile'; loads run 1 iteration ahead
// REMARK: remark: pto-double-buffer: loop{{.*}}: the load of 'a_tile' is prefetched: it would not fuse with the MMA (one load per MMA fuses, and the load of 'b_tile' is nearer)
// REMARK: remark: pto-double-buffer: loop{{.*}}: the load of 'b_tile' stays next to its MMA (operand B): the target's firmware fuses it with the MMA (npu-fuse-load-mma, 1 of at most 2 instructions between); the other operand is prefetched

// FUSED-LABEL: func.func @matmul
// FUSED:         scf.for
// FUSED:           npu.load_mma
// FUSED:           npu.copy_in
// FUSED:         scf.for
// FUSED:           npu.load_mma
// FUSED-NOT:       npu.mma

// NONE: 2 slots for 'a_tile', 'b_tile'
// NONE-NOT: stays next to its MMA

// NEAR: 2 slots for 'a_tile', 'b_tile'
// NEAR: the load of 'b_tile' is prefetched: it would not fuse with the MMA (1 instructions would sit between it and the MMA, more than the target's fusion distance (0))
func.func @matmul(%A: !pto.ptr<f16, global>, %B: !pto.ptr<f16, global>, %K: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %nbytes = arith.constant 2048 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 1024 : i32
  %acc = pto.alloc_local : !pto.l1buf<1024xf32>
  scf.for %k = %c0 to %K step %c32 : i32 {
    pto.pipeline {
      %a, %ta = pto.stage "load_a" -> (!pto.l1buf<1024xf16>, !pto.token) {
        %a_tile = pto.alloc_local : !pto.l1buf<1024xf16>
        %src = pto.addptr %A, %k : !pto.ptr<f16, global>, i32 -> !pto.ptr<f16, global>
        %t = pto.async_load %a_tile, %src, %nbytes rows %one strides(%len, %len) : !pto.l1buf<1024xf16>, !pto.ptr<f16, global>
        pto.yield %a_tile, %t : !pto.l1buf<1024xf16>, !pto.token
      }
      %b, %tb = pto.stage "load_b" after ["load_a"] -> (!pto.l1buf<1024xf16>, !pto.token) {
        %b_tile = pto.alloc_local : !pto.l1buf<1024xf16>
        %src = pto.addptr %B, %k : !pto.ptr<f16, global>, i32 -> !pto.ptr<f16, global>
        %t = pto.async_load %b_tile, %src, %nbytes rows %one strides(%len, %len) : !pto.l1buf<1024xf16>, !pto.ptr<f16, global>
        pto.yield %b_tile, %t : !pto.l1buf<1024xf16>, !pto.token
      }
      pto.stage "compute" after ["load_b"] {
        pto.wait_all
        pto.mma %acc, %a, %b shape(32, 32, 32) : !pto.l1buf<1024xf32>, !pto.l1buf<1024xf16>, !pto.l1buf<1024xf16>
        pto.yield
      }
      pto.yield
    }
    scf.yield
  }
  func.return
}

// One load stage whose load feeds the MMA: kept next to it, nothing is left to prefetch, and
// the loop stays as written (prefetching it would cost the firmware its fusion).
// REMARK: remark: pto-double-buffer: loop left as it is: every load stays next to the MMA it feeds, where the target's firmware fuses them (npu-fuse-load-mma): nothing left to prefetch
// CHECK-LABEL: func.func @only_b
// CHECK:         scf.for
// CHECK-NEXT:      pto.pipeline
func.func @only_b(%B: !pto.ptr<f16, global>, %K: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %nbytes = arith.constant 2048 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 1024 : i32
  %acc = pto.alloc_local : !pto.l1buf<1024xf32>
  %a = pto.alloc_local : !pto.l1buf<1024xf16>
  scf.for %k = %c0 to %K step %c32 : i32 {
    pto.pipeline {
      %b, %tb = pto.stage "load_b" -> (!pto.l1buf<1024xf16>, !pto.token) {
        %b_tile = pto.alloc_local : !pto.l1buf<1024xf16>
        %src = pto.addptr %B, %k : !pto.ptr<f16, global>, i32 -> !pto.ptr<f16, global>
        %t = pto.async_load %b_tile, %src, %nbytes rows %one strides(%len, %len) : !pto.l1buf<1024xf16>, !pto.ptr<f16, global>
        pto.yield %b_tile, %t : !pto.l1buf<1024xf16>, !pto.token
      }
      pto.stage "compute" after ["load_b"] {
        pto.wait %tb
        pto.mma %acc, %a, %b shape(32, 32, 32) : !pto.l1buf<1024xf32>, !pto.l1buf<1024xf16>, !pto.l1buf<1024xf16>
        pto.yield
      }
      pto.yield
    }
    scf.yield
  }
  func.return
}
