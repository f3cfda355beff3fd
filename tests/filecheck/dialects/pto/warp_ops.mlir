// RUN: pypto-opt %s | pypto-opt | filecheck %s
// RUN: pypto-opt %s --print-op-generic | pypto-opt | filecheck %s

// Round-trip of the warp shuffles and votes (docs/isa.md#warp-shuffles-and-votes), through the
// custom form and through the generic form: every value type a shuffle moves, the i32 lane
// operand, the votes' i1 / i32 results.

// CHECK-LABEL: func.func @shuffles(
// CHECK-NEXT:    %{{.*}} = pto.shfl %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %{{.*}} = pto.shfl_up %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    %{{.*}} = pto.shfl_down %{{.*}}, %{{.*}} : f16
// CHECK-NEXT:    %{{.*}} = pto.shfl_xor %{{.*}}, %{{.*}} : bf16
// CHECK-NEXT:    %{{.*}} = pto.shfl_down %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:    %{{.*}} = pto.shfl_xor %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %{{.*}} = pto.shfl %{{.*}}, %{{.*}} : i1
func.func @shuffles(%f: f32, %i: i32, %h: f16, %b: bf16, %l: i64, %d: f64, %p: i1, %k: i32)
    -> (f32, i32, f16, bf16, i64, f64, i1) {
  %0 = pto.shfl %f, %k : f32
  %1 = pto.shfl_up %i, %k : i32
  %2 = pto.shfl_down %h, %k : f16
  %3 = pto.shfl_xor %b, %k : bf16
  %4 = pto.shfl_down %l, %k : i64
  %5 = pto.shfl_xor %d, %k : f64
  %6 = pto.shfl %p, %k : i1
  func.return %0, %1, %2, %3, %4, %5, %6 : f32, i32, f16, bf16, i64, f64, i1
}

// CHECK-LABEL: func.func @votes(
// CHECK-NEXT:    %{{.*}} = pto.ballot %{{.*}} : i32
// CHECK-NEXT:    %{{.*}} = pto.vote_any %{{.*}} : i1
// CHECK-NEXT:    %{{.*}} = pto.vote_all %{{.*}} : i1
func.func @votes(%p: i1) -> (i32, i1, i1) {
  %0 = pto.ballot %p : i32
  %1 = pto.vote_any %p : i1
  %2 = pto.vote_all %p : i1
  func.return %0, %1, %2 : i32, i1, i1
}
