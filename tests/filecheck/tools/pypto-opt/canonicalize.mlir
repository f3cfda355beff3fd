// RUN: pypto-opt %s --split-input-file -p canonicalize | filecheck %s

// canonicalize on pto IR: constants fold through arith into pto operands, dead pure ops and
// dead loads disappear, effects (stores, fma, barriers) always stay.

// Constant offsets fold before they reach the pointer arithmetic.
// CHECK-LABEL: func.func @fold_offset
// CHECK-NEXT:    %[[C:.*]] = arith.constant 12 : i32
// CHECK-NEXT:    %[[Q:.*]] = pto.addptr %{{.*}}, %[[C]] : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
// CHECK-NEXT:    func.return %[[Q]]
func.func @fold_offset(%p: !pto.ptr<f32, global>) -> !pto.ptr<f32, global> {
  %c4 = arith.constant 4 : i32
  %c3 = arith.constant 3 : i32
  %o = arith.muli %c4, %c3 : i32
  %q = pto.addptr %p, %o : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  func.return %q : !pto.ptr<f32, global>
}

// -----
// Unused ids, pointer arithmetic and loads are dead: a load only reads.
// CHECK-LABEL: func.func @dead_code
// CHECK-NEXT:    func.return
func.func @dead_code(%p: !pto.ptr<f32, global>) {
  %i = pto.get_global_id 0 : i32
  %w = pto.get_warp_id : i32
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %q : !pto.ptr<f32, global> -> f32
  func.return
}

// -----
// Writes and barriers have effects: nothing is removed even when no value is used.
// CHECK-LABEL: func.func @effects_stay
// CHECK-NEXT:    pto.store
// CHECK-NEXT:    pto.fma
// CHECK-NEXT:    pto.barrier
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    func.return
func.func @effects_stay(%p: !pto.ptr<f32, local>, %x: f32) {
  pto.store %x, %p : f32, !pto.ptr<f32, local>
  pto.fma %p, %x, %x, %x : !pto.ptr<f32, local>, f32
  pto.barrier
  pto.barrier_block
  func.return
}
