// RUN: pypto-opt %s -p pto-simt-to-lanes | filecheck %s
// RUN: pypto-opt %s -p pto-simt-to-lanes,convert-scf-to-cf,convert-pto-to-llvm | filecheck %s --check-prefix=LLVM

// While loops around cuts (docs/native.md#while-loops). @tree's `while s > 0` has a uniform
// condition: the grid function runs it as its own `scf.while`, carrying `s` and a trip counter
// (i64) checked against the watchdog's limit (err[10]; the time-limit flag err[11]), the
// condition `s > 0` computed at block level, the guard-split body a lane loop per phase.
// CHECK-LABEL: func.func @tree(
// CHECK: scf.while ({{.*}}) : (i32, i64) -> (i32, i64) {
// CHECK: llvm.getelementptr %{{.*}}[10]
// CHECK: arith.cmpi ult
// CHECK: llvm.getelementptr %{{.*}}[11]
// CHECK: arith.cmpi sgt
// CHECK: scf.condition
// CHECK: func.call @tree.p1.range(
// CHECK: func.call @tree.p2.range(
// CHECK: arith.floordivsi

// @fill's `while i < n` differs between lanes (`i` starts at the lane id): only the trip
// counter is carried at block level; the condition's phase (p1) writes each lane's active flag
// (an i1 spill slot), the grid loops while some lane's flag is set (an `or` over the block's
// lanes), and the body's L1 store (p2) runs under the flag.
// CHECK-LABEL: func.func private @fill.p1.lane(
// CHECK: arith.cmpi slt
// CHECK: llvm.store %{{.*}} : i1, !llvm.ptr
// CHECK-LABEL: func.func @fill(
// CHECK: scf.while ({{.*}}) : (i64) -> i64 {
// CHECK: arith.cmpi ult
// CHECK: func.call @fill.p1.range(
// CHECK: scf.for {{.*}} -> (i1) : i32 {
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> i1
// CHECK: arith.ori
// CHECK: scf.condition
// CHECK: func.call @fill.p2.range(

// A run-time range() step (`pto.loop_step`, uniform) becomes its operand and a division by it
// whose result nothing uses: its zero check (the interpreter's "step of this range() is 0"
// error, docs/native.md#while-loops) survives convert-scf-to-cf, which keeps dead ops in a
// function holding one.
// CHECK-LABEL: func.func private @stride.lane(
// CHECK: arith.divsi %{{.*}}, %{{.*}} {pto.native_loop_step}
// CHECK-NOT: pto.loop_step

// LLVM: llvm.func @tree(
// LLVM: llvm.func @fill(
// LLVM-LABEL: llvm.func internal @stride.lane(
// LLVM: llvm.icmp "ne" %s, %{{.*}} : i32
// LLVM: llvm.mlir.constant(3) : i64

builtin.module {
  func.func @tree(%x: !pto.ptr<f32, global> {pto.noalias}, %out: !pto.ptr<f32, global> {pto.noalias}) attributes {pto.kernel} {
    %t = pto.get_local_id 0 : i32
    %buf = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<64xf32>
    %0 = pto.addptr %buf, %t : !pto.l1buf<64xf32>, i32 -> !pto.ptr<f32, local>
    %1 = pto.addptr %x, %t : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    %2 = pto.load %1 : !pto.ptr<f32, global> -> f32
    pto.store %2, %0 : f32, !pto.ptr<f32, local>
    pto.barrier_block
    %c32 = arith.constant 32 : i32
    %s = scf.while (%s1 = %c32) : (i32) -> i32 {
      %c0 = arith.constant 0 : i32
      %more = arith.cmpi sgt, %s1, %c0 : i32
      scf.condition(%more) %s1 : i32
    } do {
    ^bb0(%s2: i32):
      %lt = arith.cmpi slt, %t, %s2 : i32
      scf.if %lt {
        %q = pto.addptr %buf, %t : !pto.l1buf<64xf32>, i32 -> !pto.ptr<f32, local>
        %a = pto.load %q : !pto.ptr<f32, local> -> f32
        %r = pto.addptr %q, %s2 : !pto.ptr<f32, local>, i32 -> !pto.ptr<f32, local>
        %b = pto.load %r : !pto.ptr<f32, local> -> f32
        %sum = arith.addf %a, %b : f32
        pto.store %sum, %q : f32, !pto.ptr<f32, local>
      }
      pto.barrier_block
      %c2 = arith.constant 2 : i32
      %s3 = arith.floordivsi %s2, %c2 : i32
      scf.yield %s3 : i32
    }
    %o = pto.addptr %out, %t : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    %v = pto.load %buf : !pto.l1buf<64xf32> -> f32
    pto.store %v, %o : f32, !pto.ptr<f32, global>
    func.return
  }
  func.func @fill(%out: !pto.ptr<f32, global> {pto.noalias}, %n: i32) attributes {pto.kernel} {
    %t = pto.get_local_id 0 : i32
    %buf = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<64xf32>
    %i = scf.while (%i1 = %t) : (i32) -> i32 {
      %lt = arith.cmpi slt, %i1, %n : i32
      scf.condition(%lt) %i1 : i32
    } do {
    ^bb0(%i2: i32):
      %p = pto.addptr %buf, %i2 : !pto.l1buf<64xf32>, i32 -> !pto.ptr<f32, local>
      %one = arith.constant 1.000000e+00 : f32
      pto.store %one, %p : f32, !pto.ptr<f32, local>
      %c16 = arith.constant 16 : i32
      %i3 = arith.addi %i2, %c16 : i32
      scf.yield %i3 : i32
    }
    pto.barrier_block
    %o = pto.addptr %out, %t : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    %q = pto.addptr %buf, %t : !pto.l1buf<64xf32>, i32 -> !pto.ptr<f32, local>
    %v = pto.load %q : !pto.ptr<f32, local> -> f32
    pto.store %v, %o : f32, !pto.ptr<f32, global>
    func.return
  }
  func.func @stride(%x: !pto.ptr<f32, global> {pto.noalias}, %out: !pto.ptr<f32, global> {pto.noalias}, %n: i32, %s: i32) attributes {pto.kernel} {
    %t = pto.get_local_id 0 : i32
    %step = pto.loop_step %s : i32
    %zero = arith.constant 0.000000e+00 : f32
    %acc, %i = scf.while (%a = %zero, %i1 = %t) : (f32, i32) -> (f32, i32) {
      %lt = arith.cmpi slt, %i1, %n : i32
      scf.condition(%lt) %a, %i1 : f32, i32
    } do {
    ^bb0(%a2: f32, %i2: i32):
      %p = pto.addptr %x, %i2 : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
      %v = pto.load %p : !pto.ptr<f32, global> -> f32
      %a3 = arith.addf %a2, %v : f32
      %i3 = arith.addi %i2, %step : i32
      scf.yield %a3, %i3 : f32, i32
    }
    %o = pto.addptr %out, %t : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    pto.store %acc, %o : f32, !pto.ptr<f32, global>
    func.return
  }
}
