// RUN: pypto-opt %s | pypto-opt | filecheck %s
// RUN: pypto-opt %s --print-op-generic | pypto-opt | filecheck %s

// Round-trip of every npu op, through the custom form and through the generic form. Both RUN
// lines end in the custom form, so one set of CHECK lines covers both.

// Lane accesses: HBM ones are staged through an L1 slot (`via`), L1 ones are not.
// CHECK-LABEL: func.func @lane_accesses
// CHECK:         %v = npu.load %p via %s0 : !pto.ptr<f32, global>, !pto.l1buf<256xf32> -> f32
// CHECK-NEXT:    npu.store %v, %p via %s1 : f32, !pto.ptr<f32, global>, !pto.l1buf<256xf32>
// CHECK-NEXT:    npu.fma %p, %v, %v, %v via %s1 : !pto.ptr<f32, global>, f32, !pto.l1buf<256xf32>
// CHECK-NEXT:    %l = pto.addptr %s0, %i
// CHECK-NEXT:    %w = npu.load %l : !pto.ptr<f32, local> -> f32
// CHECK-NEXT:    npu.store %w, %l : f32, !pto.ptr<f32, local>
// CHECK-NEXT:    npu.fma %l, %w, %w, %w : !pto.ptr<f32, local>, f32
func.func @lane_accesses(%p: !pto.ptr<f32, global>, %i: i32) attributes {pto.kernel} {
  %s0 = pto.alloc_local : !pto.l1buf<256xf32>
  %s1 = pto.alloc_local : !pto.l1buf<256xf32>
  %v = npu.load %p via %s0 : !pto.ptr<f32, global>, !pto.l1buf<256xf32> -> f32
  npu.store %v, %p via %s1 : f32, !pto.ptr<f32, global>, !pto.l1buf<256xf32>
  npu.fma %p, %v, %v, %v via %s1 : !pto.ptr<f32, global>, f32, !pto.l1buf<256xf32>
  %l = pto.addptr %s0, %i : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %w = npu.load %l : !pto.ptr<f32, local> -> f32
  npu.store %w, %l : f32, !pto.ptr<f32, local>
  npu.fma %l, %w, %w, %w : !pto.ptr<f32, local>, f32
  func.return
}

// Copies on the MTE pipes with their flags, the pipe barriers, the MMA and the fused op.
// CHECK-LABEL: func.func @copies_flags_and_cube
// CHECK:         %t = npu.copy_in %a, %A, %n rows %c64 strides(%c64, %c64) : !pto.l1buf<4096xf32>, !pto.ptr<f32, global>
// CHECK-NEXT:    npu.set_flag %t "MTE_IN" -> "CUBE"
// CHECK-NEXT:    npu.wait_flag %t "MTE_IN" -> "CUBE"
// CHECK-NEXT:    npu.mma %c, %a, %b shape(64, 64, 64) : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>
// CHECK-NEXT:    npu.load_mma %c, %a, %b, %A, %n rows %c64 strides(%c64, %c64) shape(64, 64, 64) into "b" : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.ptr<f32, global>
// CHECK-NEXT:    %u = npu.copy_out %A, %c, %n rows %c64 strides(%c64, %c64) : !pto.ptr<f32, global>, !pto.l1buf<4096xf32>
// CHECK-NEXT:    npu.set_flag %u "MTE_OUT" -> "SCALAR"
// CHECK-NEXT:    npu.wait_flag_all
// CHECK-NEXT:    npu.pipe_barrier
// CHECK-NEXT:    npu.warp_barrier
func.func @copies_flags_and_cube(%A: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %a = pto.alloc_local : !pto.l1buf<4096xf32>
  %b = pto.alloc_local : !pto.l1buf<4096xf32>
  %c = pto.alloc_local : !pto.l1buf<4096xf32>
  %n = arith.constant 16384 : i32
  %c64 = arith.constant 64 : i32
  %t = npu.copy_in %a, %A, %n rows %c64 strides(%c64, %c64) : !pto.l1buf<4096xf32>, !pto.ptr<f32, global>
  npu.set_flag %t "MTE_IN" -> "CUBE"
  npu.wait_flag %t "MTE_IN" -> "CUBE"
  npu.mma %c, %a, %b shape(64, 64, 64) : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>
  npu.load_mma %c, %a, %b, %A, %n rows %c64 strides(%c64, %c64) shape(64, 64, 64) into "b" : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.ptr<f32, global>
  %u = npu.copy_out %A, %c, %n rows %c64 strides(%c64, %c64) : !pto.ptr<f32, global>, !pto.l1buf<4096xf32>
  npu.set_flag %u "MTE_OUT" -> "SCALAR"
  npu.wait_flag_all
  npu.pipe_barrier
  npu.warp_barrier
  func.return
}
