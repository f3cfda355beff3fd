// RUN: pypto-opt %s --split-input-file --verify-diagnostics

// One case per verifier error of every pto op and type. Each chunk is parsed and verified on
// its own; the annotation names the message the user sees.

// Grid dimensions are x, y, z only: every dimension-taking id op rejects anything else.
// expected-error @+1 {{'pto.get_global_id' op dimension must be 0, 1 or 2, got 3}}
%0 = pto.get_global_id 3 : i32

// -----
// A negative dimension is no dimension either.
// expected-error @+1 {{'pto.get_local_id' op dimension must be 0, 1 or 2, got -1}}
%0 = pto.get_local_id -1 : i32

// -----
// expected-error @+1 {{'pto.get_block_id' op dimension must be 0, 1 or 2, got 3}}
%0 = pto.get_block_id 3 : i32

// -----
// expected-error @+1 {{'pto.get_block_dim' op dimension must be 0, 1 or 2, got 7}}
%0 = pto.get_block_dim 7 : i32

// -----
// expected-error @+1 {{'pto.get_grid_dim' op dimension must be 0, 1 or 2, got 3}}
%0 = pto.get_grid_dim 3 : i32

// -----
// The generic form must still carry the dimension.
// expected-error @+1 {{'pto.get_global_id' op property 'dim' expected}}
%0 = "pto.get_global_id"() : () -> i32

// -----
// Ids are i32 (SPEC §2): a wider result type is rejected.
// expected-error @+1 {{'pto.get_global_id' op Expected attribute i32 but got i64}}
%0 = pto.get_global_id 0 : i64

// -----
// The warp-level ids are i32 as well.
// expected-error @+1 {{'pto.get_warp_id' op Expected attribute i32 but got i64}}
%0 = pto.get_warp_id : i64

// -----
// expected-error @+1 {{'pto.get_lane_id' op Expected attribute i32 but got f32}}
%0 = pto.get_lane_id : f32

// -----
// Only pointers can be offset.
func.func @addptr_not_a_pointer(%x: i32, %i: i32) {
  // expected-error @+1 {{'pto.addptr' op expected a !pto.ptr operand, got i32}}
  %q = pto.addptr %x, %i : i32, i32
  func.return
}

// -----
// Offsets are i32 or i64 element counts; narrower integers are rejected.
func.func @addptr_i16_offset(%p: !pto.ptr<f32, global>, %i: i16) {
  // expected-error @+1 {{'pto.addptr' op pointer offset must be i32 or i64, got i16}}
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i16
  func.return
}

// -----
// A float offset is not an element count.
func.func @addptr_float_offset(%p: !pto.ptr<f32, global>, %i: f32) {
  // expected-error @+1 {{'pto.addptr' op f32 should be of base attribute integer_type}}
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, f32
  func.return
}

// -----
// Pointer arithmetic never changes the memory space (or the element type).
func.func @addptr_changes_space(%p: !pto.ptr<f32, global>, %i: i32) {
  // expected-error @+1 {{expected from variable 'T', but got !pto.ptr<f32, local>}}
  %q = "pto.addptr"(%p, %i) : (!pto.ptr<f32, global>, i32) -> !pto.ptr<f32, local>
  func.return
}

// -----
// A load yields the pointee type.
func.func @load_wrong_type(%p: !pto.ptr<f32, global>) {
  // expected-error @+1 {{'pto.load' op result type i32 does not match the pointer's element type f32}}
  %v = pto.load %p : !pto.ptr<f32, global> -> i32
  func.return
}

// -----
// A load reads through a pointer, not a scalar.
func.func @load_not_a_pointer(%p: i32) {
  // expected-error @+1 {{'pto.load' op operand 'ptr' at position 0 does not verify: i32 should be of base attribute pto.ptr}}
  %v = "pto.load"(%p) : (i32) -> i32
  func.return
}

// -----
// A store writes the pointee type: no implicit conversion (write a cast).
func.func @store_wrong_type(%p: !pto.ptr<f16, local>, %v: f32) {
  // expected-error @+1 {{'pto.store' op stored value type f32 does not match the pointer's element type f16}}
  pto.store %v, %p : f32, !pto.ptr<f16, local>
  func.return
}

// -----
// A store writes through a pointer, not a scalar.
func.func @store_not_a_pointer(%p: f32, %v: f32) {
  // expected-error @+1 {{'pto.store' op f32 should be of base attribute pto.ptr}}
  pto.store %v, %p : f32, f32
  func.return
}

// -----
// fma computes in the destination's element type.
func.func @fma_wrong_type(%p: !pto.ptr<f32, global>, %v: f16) {
  // expected-error @+1 {{'pto.fma' op operand type f16 does not match the pointer's element type f32}}
  pto.fma %p, %v, %v, %v : !pto.ptr<f32, global>, f16
  func.return
}

// -----
// Multiply-add has no meaning on booleans.
func.func @fma_i1(%p: !pto.ptr<i1, global>, %v: i1) {
  // expected-error @+1 {{'pto.fma' op pto.fma is not defined on i1}}
  pto.fma %p, %v, %v, %v : !pto.ptr<i1, global>, i1
  func.return
}

// -----
// a, b and c share one type (only the generic form can even spell a mismatch).
func.func @fma_mixed_operands(%p: !pto.ptr<f32, global>, %a: f32, %b: f16) {
  // expected-error @+1 {{'pto.fma' op operand 'b' at position 2 does not verify: attribute f32 expected from variable 'T', but got f16}}
  "pto.fma"(%p, %a, %b, %a) : (!pto.ptr<f32, global>, f32, f16, f32) -> ()
  func.return
}

// -----
// A warp barrier takes no operands.
func.func @barrier_operand(%x: i32) {
  // expected-error @+1 {{'pto.barrier' op Expected 0 operands, but got 1}}
  "pto.barrier"(%x) : (i32) -> ()
  func.return
}

// -----
// A block barrier produces nothing.
func.func @barrier_block_result() {
  // expected-error @+1 {{'pto.barrier_block' op Expected 0 results, but got 1}}
  %t = "pto.barrier_block"() : () -> i32
  func.return
}

// -----
// Pointees are scalars: no vectors.
// expected-error @+1 {{!pto.ptr element type must be a scalar (f32, f16, bf16, i32, i64, i1), got vector<4xf32>}}
func.func @ptr_to_vector(%p: !pto.ptr<vector<4xf32>, global>) {
  func.return
}

// -----
// Only the widths the machine has: i8 is not one of them.
// expected-error @+1 {{!pto.ptr element type must be a scalar (f32, f16, bf16, i32, i64, i1), got i8}}
func.func @ptr_to_i8(%p: !pto.ptr<i8, global>) {
  func.return
}

// -----
// The memory spaces are HBM (global) and L1 (local); CUDA's names are not accepted.
// expected-error @+1 {{unknown memory space 'shared'; expected one of: global, local}}
func.func @ptr_shared(%p: !pto.ptr<f32, shared>) {
  func.return
}

// -----
// The memory space is not optional.
// expected-error @+1 {{Expected ','}}
func.func @ptr_without_space(%p: !pto.ptr<f32>) {
  func.return
}

// -----
// A token has no parameters.
// expected-error @+1 {{malformed type}}
func.func @token_with_parameter(%t: !pto.token<f32>) {
  func.return
}
