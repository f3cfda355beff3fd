// RUN: pypto-opt %s --split-input-file --verify-diagnostics

// --verify-diagnostics succeeds (exit 0, nothing on stderr) when every diagnostic is annotated
// and every annotation is met. These cases exercise each way of writing an annotation.

// On the diagnostic's own line.
%0 = pto.get_global_id 3 : i32 // expected-error {{dimension must be 0, 1 or 2}}

// -----
// On the line above, pointing down.
// expected-error @+1 {{'pto.get_grid_dim' op dimension must be 0, 1 or 2, got 9}}
%0 = pto.get_grid_dim 9 : i32

// -----
// Several lines below, pointing up.
%0 = pto.get_block_id 4 : i32

// expected-error @-2 {{got 4}}

// -----
// The Python source note of an op built from a kernel can be checked too (it may also be left
// unannotated; only errors, warnings and remarks must be).
func.func @python_note(%p: !pto.ptr<f16, local>, %x: f32) {
  // expected-error @+2 {{stored value type f32 does not match the pointer's element type f16}}
  // expected-note @+1 {{from Python source "softmax.py":41:4}}
  pto.store %x, %p : f32, !pto.ptr<f16, local> loc("softmax.py":41:4)
  func.return
}

// -----
// Parse errors are diagnostics like any other.
func.func @parse_error() {
  // expected-error @+1 {{unknown memory space 'hbm'}}
  %0 = "pto.get_warp_id"() : () -> !pto.ptr<f32, hbm>
  func.return
}

// -----
// A chunk without diagnostics and without annotations is fine too.
func.func @valid() {
  pto.barrier
  func.return
}
