// RUN: pypto-opt %s --split-input-file -p cse | filecheck %s

// cse on pto IR: ids and pointer arithmetic are pure and merge; loads merge only when nothing
// may write memory between them; stores and barriers never merge.

// The same id of the same dimension is the same value.
// CHECK-LABEL: func.func @same_id
// CHECK-NEXT:    %[[A:.*]] = pto.get_global_id 0 : i32
// CHECK-NEXT:    %[[W:.*]] = pto.get_warp_id : i32
// CHECK-NEXT:    func.return %[[A]], %[[A]], %[[W]], %[[W]]
func.func @same_id() -> (i32, i32, i32, i32) {
  %a = pto.get_global_id 0 : i32
  %b = pto.get_global_id 0 : i32
  %w = pto.get_warp_id : i32
  %x = pto.get_warp_id : i32
  func.return %a, %b, %w, %x : i32, i32, i32, i32
}

// -----
// Different dimensions are different values: nothing to merge.
// CHECK-LABEL: func.func @different_dims
// CHECK-NEXT:    pto.get_local_id 0 : i32
// CHECK-NEXT:    pto.get_local_id 1 : i32
func.func @different_dims() -> (i32, i32) {
  %a = pto.get_local_id 0 : i32
  %b = pto.get_local_id 1 : i32
  func.return %a, %b : i32, i32
}

// -----
// Identical pointer arithmetic merges.
// CHECK-LABEL: func.func @same_addptr
// CHECK-NEXT:    %[[Q:.*]] = pto.addptr
// CHECK-NEXT:    func.return %[[Q]], %[[Q]]
func.func @same_addptr(%p: !pto.ptr<f32, global>, %i: i32)
    -> (!pto.ptr<f32, global>, !pto.ptr<f32, global>) {
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %r = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  func.return %q, %r : !pto.ptr<f32, global>, !pto.ptr<f32, global>
}

// -----
// Two loads of one address with no write in between read the same value.
// CHECK-LABEL: func.func @loads_merge
// CHECK-NEXT:    %[[V:.*]] = pto.load
// CHECK-NEXT:    pto.fma %{{.*}}, %[[V]], %[[V]], %[[V]]
func.func @loads_merge(%p: !pto.ptr<f32, local>, %d: !pto.ptr<f32, global>) {
  %a = pto.load %p : !pto.ptr<f32, local> -> f32
  %b = pto.load %p : !pto.ptr<f32, local> -> f32
  pto.fma %d, %a, %b, %a : !pto.ptr<f32, global>, f32
  func.return
}

// -----
// A store between the loads may change the value: both loads stay.
// CHECK-LABEL: func.func @store_between_loads
// CHECK-NEXT:    pto.load
// CHECK-NEXT:    pto.store
// CHECK-NEXT:    pto.load
func.func @store_between_loads(%p: !pto.ptr<f32, local>, %x: f32) -> (f32, f32) {
  %a = pto.load %p : !pto.ptr<f32, local> -> f32
  pto.store %x, %p : f32, !pto.ptr<f32, local>
  %b = pto.load %p : !pto.ptr<f32, local> -> f32
  func.return %a, %b : f32, f32
}

// -----
// A barrier orders other lanes' writes before the second load: both loads stay, and the two
// barriers are not merged either.
// CHECK-LABEL: func.func @barrier_between_loads
// CHECK-NEXT:    pto.load
// CHECK-NEXT:    pto.barrier
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    pto.load
func.func @barrier_between_loads(%p: !pto.ptr<f32, local>) -> (f32, f32) {
  %a = pto.load %p : !pto.ptr<f32, local> -> f32
  pto.barrier
  pto.barrier_block
  pto.barrier_block
  %b = pto.load %p : !pto.ptr<f32, local> -> f32
  func.return %a, %b : f32, f32
}

// -----
// Stores are effects, never common subexpressions.
// CHECK-LABEL: func.func @stores_stay
// CHECK-NEXT:    pto.store
// CHECK-NEXT:    pto.store
// CHECK-NEXT:    pto.fma
// CHECK-NEXT:    pto.fma
func.func @stores_stay(%p: !pto.ptr<f32, global>, %x: f32) {
  pto.store %x, %p : f32, !pto.ptr<f32, global>
  pto.store %x, %p : f32, !pto.ptr<f32, global>
  pto.fma %p, %x, %x, %x : !pto.ptr<f32, global>, f32
  pto.fma %p, %x, %x, %x : !pto.ptr<f32, global>, f32
  func.return
}
