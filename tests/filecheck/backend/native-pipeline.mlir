// RUN: pypto-opt %s -p pto-simt-to-lanes | filecheck %s --check-prefix=LANES
// RUN: pypto-opt %s -p pto-simt-to-lanes,convert-scf-to-cf,convert-pto-to-llvm | filecheck %s --check-prefix=LLVM
// RUN: pypto-opt %s --emit=llvm | filecheck %s --check-prefix=IR
// RUN: pypto-opt %s -p convert-scf-to-cf | filecheck %s --check-prefix=KEEP

// The native backend's pipeline on vector_add with a while loop: a lane function whose ids
// come from its coordinates, a grid function looping over blocks and lanes, a watchdog in
// the loop, then the llvm dialect with each access bounds-checked.
builtin.module {
  func.func @k(%a: !pto.ptr<f32, global> {pto.noalias}, %o: !pto.ptr<f32, global> {pto.noalias}, %n: i32) attributes {pto.kernel} {
    %i = pto.get_global_id 0 : i32
    %c = arith.cmpi slt, %i, %n : i32
    scf.if %c {
      %p = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
      %x = pto.load %p : !pto.ptr<f32, global> -> f32
      %y = scf.while (%v = %x) : (f32) -> f32 {
        %one = arith.constant 1.000000e+00 : f32
        %gt = arith.cmpf ogt, %v, %one : f32
        scf.condition(%gt) %v : f32
      } do {
      ^bb0(%w: f32):
        %h = arith.constant 5.000000e-01 : f32
        %m = arith.mulf %w, %h : f32
        scf.yield %m : f32
      }
      %q = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
      pto.store %y, %q : f32, !pto.ptr<f32, global>
    }
    func.return
  }
}

// LANES: func.func private @k.lane({{.*}}) -> i32 attributes {pto.native_lane}
// LANES: %[[MUL:.*]] = arith.muli
// LANES-NEXT: %i = arith.addi %[[MUL]]
// LANES: cf.assert {{.*}}, "pto-watchdog:0"
// LANES: func.func @k({{.*}}) -> i32 attributes {pto.native_grid}
// LANES: func.call @k.lane

// LLVM: llvm.func internal @k.lane(%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %n: i32
// LLVM: llvm.icmp "ult"
// LLVM: llvm.load
// The fast lane function: its lane-affine accesses unchecked, the offset's arithmetic nsw.
// LLVM: llvm.func internal @k.fast.lane(
// LLVM: llvm.add {{.*}} overflow<nsw> : i32
// LLVM-NOT: llvm.icmp "ult"
// LLVM: llvm.load
// LLVM: llvm.func internal @k.range(
// LLVM: llvm.func @k.checked(
// LLVM: llvm.call @k.lane
// The grid function: per block, the range check chooses the fast lanes or the checked block.
// LLVM: llvm.func @k(
// LLVM: llvm.call @k.range
// LLVM: llvm.call @k.fast.lane
// LLVM: llvm.call @k.checked

// IR: define internal i32 @"k.lane"
// IR: load float
// IR: store float
// IR: define i32 @"k"

// A pto kernel stays structured under convert-scf-to-cf (the pto level needs scf); only the
// lane and grid functions of the native pipeline are lowered.
// KEEP: func.func @k
// KEEP: scf.if
// KEEP: scf.while
