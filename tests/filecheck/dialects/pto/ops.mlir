// RUN: pypto-opt %s | pypto-opt | filecheck %s
// RUN: pypto-opt %s --print-op-generic | pypto-opt | filecheck %s
// RUN: pypto-opt %s --mlir-print-debuginfo | pypto-opt --mlir-print-debuginfo | filecheck %s --check-prefix=LOC

// Round-trip of every pto op and type, through the custom form and through the generic form.
// Both RUN lines end in the custom form, so one set of CHECK lines covers both.

// The kernel marker is a unit attribute on func.func; it must survive printing.
// CHECK-LABEL: func.func @kernel_marker()
// CHECK-SAME:    attributes {pto.kernel}
func.func @kernel_marker() attributes {pto.kernel} {
  func.return
}

// The id ops that take a grid dimension, on each of x, y and z.
// CHECK-LABEL: func.func @dim_ids()
// CHECK-NEXT:    %{{.*}} = pto.get_global_id 0 : i32
// CHECK-NEXT:    %{{.*}} = pto.get_local_id 1 : i32
// CHECK-NEXT:    %{{.*}} = pto.get_block_id 2 : i32
// CHECK-NEXT:    %{{.*}} = pto.get_block_dim 0 : i32
// CHECK-NEXT:    %{{.*}} = pto.get_grid_dim 1 : i32
func.func @dim_ids() -> (i32, i32, i32, i32, i32) {
  %0 = pto.get_global_id 0 : i32
  %1 = pto.get_local_id 1 : i32
  %2 = pto.get_block_id 2 : i32
  %3 = pto.get_block_dim 0 : i32
  %4 = pto.get_grid_dim 1 : i32
  func.return %0, %1, %2, %3, %4 : i32, i32, i32, i32, i32
}

// The warp-level ids take no dimension.
// CHECK-LABEL: func.func @warp_ids()
// CHECK-NEXT:    %{{.*}} = pto.get_warp_id : i32
// CHECK-NEXT:    %{{.*}} = pto.get_lane_id : i32
func.func @warp_ids() -> (i32, i32) {
  %0 = pto.get_warp_id : i32
  %1 = pto.get_lane_id : i32
  func.return %0, %1 : i32, i32
}

// Pointer types of both memory spaces and of every scalar element type.
// CHECK-LABEL: func.func @ptr_types
// CHECK-SAME:    (%{{.*}}: !pto.ptr<f32, global>, %{{.*}}: !pto.ptr<f16, local>,
// CHECK-SAME:     %{{.*}}: !pto.ptr<bf16, global>, %{{.*}}: !pto.ptr<i32, local>,
// CHECK-SAME:     %{{.*}}: !pto.ptr<i64, global>, %{{.*}}: !pto.ptr<i1, local>)
func.func @ptr_types(%a: !pto.ptr<f32, global>, %b: !pto.ptr<f16, local>,
                     %c: !pto.ptr<bf16, global>, %d: !pto.ptr<i32, local>,
                     %e: !pto.ptr<i64, global>, %f: !pto.ptr<i1, local>) {
  func.return
}

// The async-copy token type.
// CHECK-LABEL: func.func @token_type
// CHECK-SAME:    (%{{.*}}: !pto.token)
func.func @token_type(%t: !pto.token) {
  func.return
}

// Pointer arithmetic with i32 and i64 offsets, in HBM and in L1.
// CHECK-LABEL: func.func @addptr
// CHECK-NEXT:    %{{.*}} = pto.addptr %{{.*}}, %{{.*}} : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
// CHECK-NEXT:    %{{.*}} = pto.addptr %{{.*}}, %{{.*}} : !pto.ptr<f16, local>, i64 -> !pto.ptr<f16, local>
func.func @addptr(%p: !pto.ptr<f32, global>, %l: !pto.ptr<f16, local>, %i: i32, %j: i64)
    -> (!pto.ptr<f32, global>, !pto.ptr<f16, local>) {
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %m = pto.addptr %l, %j : !pto.ptr<f16, local>, i64 -> !pto.ptr<f16, local>
  func.return %q, %m : !pto.ptr<f32, global>, !pto.ptr<f16, local>
}

// Lane loads and stores, from/to HBM and L1, float and integer.
// CHECK-LABEL: func.func @load_store
// CHECK-NEXT:    %[[V:.*]] = pto.load %{{.*}} : !pto.ptr<f32, global> -> f32
// CHECK-NEXT:    pto.store %[[V]], %{{.*}} : f32, !pto.ptr<f32, local>
// CHECK-NEXT:    %[[W:.*]] = pto.load %{{.*}} : !pto.ptr<i64, local> -> i64
// CHECK-NEXT:    pto.store %[[W]], %{{.*}} : i64, !pto.ptr<i64, global>
// CHECK-NEXT:    %[[B:.*]] = pto.load %{{.*}} : !pto.ptr<i1, global> -> i1
// CHECK-NEXT:    pto.store %[[B]], %{{.*}} : i1, !pto.ptr<i1, global>
func.func @load_store(%g: !pto.ptr<f32, global>, %l: !pto.ptr<f32, local>,
                      %gi: !pto.ptr<i64, global>, %li: !pto.ptr<i64, local>,
                      %gb: !pto.ptr<i1, global>) {
  %v = pto.load %g : !pto.ptr<f32, global> -> f32
  pto.store %v, %l : f32, !pto.ptr<f32, local>
  %w = pto.load %li : !pto.ptr<i64, local> -> i64
  pto.store %w, %gi : i64, !pto.ptr<i64, global>
  %b = pto.load %gb : !pto.ptr<i1, global> -> i1
  pto.store %b, %gb : i1, !pto.ptr<i1, global>
  func.return
}

// Fused multiply-add with fused store, on a float and on an integer destination.
// CHECK-LABEL: func.func @fma
// CHECK-NEXT:    pto.fma %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !pto.ptr<f32, global>, f32
// CHECK-NEXT:    pto.fma %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !pto.ptr<i32, local>, i32
func.func @fma(%d: !pto.ptr<f32, global>, %a: f32, %b: f32, %c: f32,
               %di: !pto.ptr<i32, local>, %x: i32) {
  pto.fma %d, %a, %b, %c : !pto.ptr<f32, global>, f32
  pto.fma %di, %x, %x, %x : !pto.ptr<i32, local>, i32
  func.return
}

// Warp and block barriers.
// CHECK-LABEL: func.func @barriers()
// CHECK-NEXT:    pto.barrier
// CHECK-NEXT:    pto.barrier_block
func.func @barriers() {
  pto.barrier
  pto.barrier_block
  func.return
}

// Every op carries the Python source location it came from; it must survive both forms.
// LOC-LABEL: func.func @python_locations
// LOC:         pto.get_global_id 0 : i32 loc("k.py":3:8)
// LOC:         pto.load %{{.*}} : !pto.ptr<f32, global> -> f32 loc("k.py":4:12)
// LOC:         pto.barrier_block loc("k.py":5:4)
func.func @python_locations(%p: !pto.ptr<f32, global>) {
  %i = pto.get_global_id 0 : i32 loc("k.py":3:8)
  %v = pto.load %p : !pto.ptr<f32, global> -> f32 loc("k.py":4:12)
  pto.barrier_block loc("k.py":5:4)
  func.return
}
