// RUN: not pypto-opt %s -p pto-verify-barriers 2>&1 | filecheck %s
// RUN: not pypto-opt %s -p pto-double-buffer,pto-allocate-l1,pto-verify-barriers 2>&1 | filecheck %s

// A shuffle under a condition that differs between the lanes of a warp: the lanes that skip it
// would leave the others waiting. The error names the shuffle and the condition.
// CHECK: error: warp divergence: pto.shfl_down is a warp collective (every lane of the warp executes it together) but sits in an 'if' whose condition at 'arith.cmpi' (noted below) may differ between the lanes of a warp
func.func @divergent(%v: f32, %n: i32) -> f32 attributes {pto.kernel} {
  %lane = pto.get_lane_id : i32
  %c = arith.cmpi slt, %lane, %n : i32
  %r = scf.if %c -> (f32) {
    %one = arith.constant 1 : i32
    %d = pto.shfl_down %v, %one : f32
    scf.yield %d : f32
  } else {
    scf.yield %v : f32
  }
  func.return %r : f32
}

// CHECK: note: the condition that differs within a warp
// CHECK-NEXT: %c = arith.cmpi slt, %lane, %n : i32
