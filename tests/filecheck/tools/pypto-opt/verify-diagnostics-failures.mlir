// --verify-diagnostics fails (exit 1) on an annotation that no diagnostic meets and on a
// diagnostic that no annotation expects, and says which, at the right line. No traceback.
// RUN: not pypto-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s
// RUN: not pypto-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=NOTRACE
// NOTRACE-NOT: Traceback

// An expected error that is never produced (the op is valid).
// CHECK: verify-diagnostics-failures.mlir:[[# @LINE + 2]]:4: error: expected error "never produced" was not produced
func.func @missing() {
// expected-error @+1 {{never produced}}
  pto.barrier
  func.return
}

// -----
// An error nobody expected.
// CHECK: verify-diagnostics-failures.mlir:[[# @LINE + 2]]:1: error: unexpected error: 'pto.get_lane_id' op Expected attribute i32 but got i64
// CHECK-NEXT: %0 = pto.get_lane_id : i64
%0 = pto.get_lane_id : i64

// -----
// An annotation on the wrong line is both: the error is unexpected where it is, and the
// annotation is not met where it points.
// CHECK: verify-diagnostics-failures.mlir:[[# @LINE + 3]]:1: error: unexpected error: 'pto.get_local_id' op dimension must be 0, 1 or 2, got 3
// CHECK: verify-diagnostics-failures.mlir:[[# @LINE + 1]]:4: error: expected error "dimension must be" was not produced
// expected-error @+2 {{dimension must be}}
%0 = pto.get_local_id 3 : i32

// -----
// The message must contain the annotation text: a different message does not count.
// CHECK: verify-diagnostics-failures.mlir:[[# @LINE + 3]]:1: error: unexpected error: 'pto.get_block_dim' op dimension must be 0, 1 or 2, got 5
// CHECK: verify-diagnostics-failures.mlir:[[# @LINE + 1]]:4: error: expected error "got 6" was not produced
// expected-error @+1 {{got 6}}
%0 = pto.get_block_dim 5 : i32

// -----
// A satisfied chunk among failing ones reports nothing.
// CHECK-NOT: satisfied
%0 = pto.get_block_dim 5 : i32 // expected-error {{got 5}}
