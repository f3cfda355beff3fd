// RUN: pypto-opt %s -p pto-double-buffer 2>/dev/null | filecheck %s
// RUN: pypto-opt %s -p pto-double-buffer 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: pypto-opt %s -p 'pto-double-buffer{model=table}' 2>&1 >/dev/null | filecheck %s --check-prefix=TABLE
// The fusion-aware default, without costing (what a module without a launch record gets):
// RUN: pypto-opt %s -p 'pto-double-buffer{choose=fusion}' 2>&1 >/dev/null | filecheck %s --check-prefix=FUSION
// One candidate, forced:
// RUN: pypto-opt %s -p 'pto-double-buffer{prefetch=a_tile}' 2>&1 >/dev/null | filecheck %s --check-prefix=FORCED

// The matmul of pto-double-buffer-fusion.mlir, with the launch `pto.compile` records
// (`pto.launch`: the block, each tensor's elements, each scalar): the pass costs its candidate
// schedules on one block of that launch (docs/passes.md#choosing-by-the-cost-model) and keeps
// the cheapest. Here the copies (4 KiB each) keep MTE_IN busier than the 32^3 MMA keeps the
// Cube: prefetching both tiles hides more of them than keeping B's load next to its MMA for
// the fusion, under both models.

// CHECK-LABEL: func.func @matmul
// CHECK:         pto.alloc_local {pto.slots = 2 : i64} : !pto.l1buf<2048xf16>
// CHECK-NEXT:    pto.alloc_local {pto.slots = 2 : i64} : !pto.l1buf<2048xf16>
// Prologue: both tiles of the first iteration.
// CHECK:         pto.async_load
// CHECK:         pto.async_load
// CHECK:         scf.for
// Kernel: the next iteration's two loads, then the waits and the MMA.
// CHECK:           pto.async_load
// CHECK:           pto.async_load
// CHECK:           pto.wait
// CHECK-NEXT:      pto.wait
// CHECK-NEXT:      pto.mma

// REMARK: remark: pto-double-buffer: loop: chose prefetch 'a_tile', 'b_tile' with 2 stages ({{[0-9]+}} cycles, model 'fused', one block of the recorded launch); runner-up prefetch {{.*}} ({{[0-9]+}} cycles); 2 candidates
// REMARK: remark: pto-double-buffer: loop: 2 slots for 'a_tile', 'b_tile'; loads run 1 iteration ahead
// REMARK: remark: pto-double-buffer: loop: the load of 'a_tile' is prefetched: it would not fuse with the MMA (one load per MMA fuses, and the load of 'b_tile' is nearer)
// REMARK: remark: pto-double-buffer: loop: the load of 'b_tile' is prefetched although the firmware would fuse it with the MMA: the model prices the prefetch cheaper

// TABLE: remark: pto-double-buffer: loop: chose prefetch 'a_tile', 'b_tile' with 2 stages ({{[0-9]+}} cycles, model 'table', one block of the recorded launch); runner-up
// TABLE: 2 slots for 'a_tile', 'b_tile'

// FUSION-NOT: chose
// FUSION: 2 slots for 'a_tile'; loads run 1 iteration ahead
// FUSION: the load of 'b_tile' stays next to its MMA (operand B)

// FORCED-NOT: chose
// FORCED: 2 slots for 'a_tile'; loads run 1 iteration ahead
// FORCED: the load of 'b_tile' stays next to its MMA (operand B)
builtin.module attributes {pto.launch = {block = array<i64: 64, 1, 1>, args = {A = 2048 : i64, B = 2048 : i64, K = 256 : i64}}} {
func.func @matmul(%A: !pto.ptr<f16, global> {pto.noalias}, %B: !pto.ptr<f16, global> {pto.noalias}, %K: i32) attributes {pto.kernel} {
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
}
