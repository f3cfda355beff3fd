// RUN: pypto-opt %s -p pto-double-buffer | filecheck %s
// RUN: pypto-opt %s -p pto-allocate-l1 | filecheck %s
// RUN: pypto-opt %s -p pto-verify-barriers | filecheck %s
// RUN: pypto-opt %s -p pto-double-buffer,pto-allocate-l1,pto-verify-barriers | filecheck %s
// RUN: pypto-opt %s -p pto-insert-barriers | filecheck %s
// RUN: pypto-opt %s -p canonicalize | filecheck %s
// RUN: pypto-opt %s -p cse | filecheck %s --check-prefix=CSE
// RUN: pypto-opt %s -p convert-pto-to-npu | filecheck %s --check-prefix=NPU

// The warp reduction of every CUDA tutorial, then a ballot, through each pass of the default
// pipeline and the others: the shuffles and votes stay where they are, in order (they are
// warp collectives: not moved into or out of control flow, not barriers, no memory).

// CHECK-LABEL: func.func @warp_sum
// CHECK:         pto.shfl_down %{{.*}}, %{{.*}} : f32
// CHECK:         pto.shfl_down %{{.*}}, %{{.*}} : f32
// CHECK:         pto.shfl %{{.*}}, %{{.*}} : f32
// CHECK:         pto.ballot %{{.*}} : i32
// CHECK:         pto.vote_all %{{.*}} : i1
// CHECK:         scf.if
// CHECK:           pto.shfl_xor %{{.*}}, %{{.*}} : f32
// CHECK:         pto.store

// Two identical shuffles of the same value are one (no memory effect: CSE merges them).
// CSE-LABEL: func.func @warp_sum
// CSE-COUNT-1: pto.shfl_down %{{.*}}, %[[S16:.*]] : f32
// CSE-NOT:     pto.shfl_down %{{.*}}, %[[S16]] : f32

// At the npu level they are unchanged pto ops (one instruction each on the vector pipe); the
// HBM load and store go through slots.
// NPU-LABEL: func.func @warp_sum
// NPU:         npu.load
// NPU:         pto.shfl_down
// NPU:         pto.ballot
// NPU:         npu.store
func.func @warp_sum(%x: !pto.ptr<f32, global>, %o: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %p = pto.addptr %x, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %p : !pto.ptr<f32, global> -> f32
  %c16 = arith.constant 16 : i32
  %a = pto.shfl_down %v, %c16 : f32
  %a2 = pto.shfl_down %v, %c16 : f32
  %s = arith.addf %a, %a2 : f32
  %c8 = arith.constant 8 : i32
  %b = pto.shfl_down %s, %c8 : f32
  %t = arith.addf %s, %b : f32
  %zero = arith.constant 0 : i32
  %r = pto.shfl %t, %zero : f32
  %fz = arith.constant 0.0 : f32
  %pos = arith.cmpf ogt, %r, %fz : f32
  %m = pto.ballot %pos : i32
  %all = pto.vote_all %pos : i1
  %out = scf.if %all -> (f32) {
    %one = arith.constant 1 : i32
    %x1 = pto.shfl_xor %r, %one : f32
    scf.yield %x1 : f32
  } else {
    scf.yield %r : f32
  }
  %q = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %mf = arith.sitofp %m : i32 to f32
  %w = arith.addf %out, %mf : f32
  pto.store %w, %q : f32, !pto.ptr<f32, global>
  func.return
}
