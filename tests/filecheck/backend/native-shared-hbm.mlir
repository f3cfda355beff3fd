// RUN: pypto-opt %s -p pto-simt-to-lanes | filecheck %s

// Lanes sharing HBM elements (docs/native.md#shared-hbm-elements): `y[i] = y[(i + 1) % n]` reads
// another lane's element, so the store is a cut of its own, as an L1 write: phase p0 loads
// (every lane), phase p1 stores (every lane), the loaded value crossing in a spill slot.
// CHECK: func.func private @shift.p0.lane(
// CHECK-NOT: pto.store
// CHECK: pto.load
// CHECK-NOT: pto.store
// CHECK: func.func private @shift.p1.lane(
// CHECK-NOT: pto.load %
// CHECK: pto.store
// CHECK: func.func @shift({{.*}}pto.native_grid, pto.native_spill_slots = 1 : i64
// CHECK: func.call @shift.p0.lane(
// CHECK: func.call @shift.p1.lane(
builtin.module {
  func.func @shift(%y: !pto.ptr<f32, global> {pto.noalias}, %n: i32) attributes {pto.kernel} {
    %i = pto.get_global_id 0 : i32
    %one = arith.constant 1 : i32
    %j = arith.addi %i, %one : i32
    %k = arith.remsi %j, %n : i32
    %p = pto.addptr %y, %k : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    %v = pto.load %p : !pto.ptr<f32, global> -> f32
    %q = pto.addptr %y, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    pto.store %v, %q : f32, !pto.ptr<f32, global>
    func.return
  }
}
