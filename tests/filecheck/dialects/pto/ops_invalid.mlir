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
// Ids are i32 (docs/isa.md#ids): a wider result type is rejected.
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
// Only addresses (pointers and L1 buffers) can be offset.
func.func @addptr_not_a_pointer(%x: i32, %i: i32) {
  // expected-error @+1 {{'pto.addptr' op expected an address (a !pto.ptr or a !pto.l1buf), got i32}}
  %q = pto.addptr %x, %i : i32, i32 -> !pto.ptr<f32, global>
  func.return
}

// -----
// Offsets are i32 or i64 element counts; narrower integers are rejected.
func.func @addptr_i16_offset(%p: !pto.ptr<f32, global>, %i: i16) {
  // expected-error @+1 {{'pto.addptr' op pointer offset must be i32 or i64, got i16}}
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i16 -> !pto.ptr<f32, global>
  func.return
}

// -----
// A float offset is not an element count.
func.func @addptr_float_offset(%p: !pto.ptr<f32, global>, %i: f32) {
  // expected-error @+1 {{'pto.addptr' op f32 should be of base attribute integer_type}}
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, f32 -> !pto.ptr<f32, global>
  func.return
}

// -----
// Pointer arithmetic never changes the memory space...
func.func @addptr_changes_space(%p: !pto.ptr<f32, global>, %i: i32) {
  // expected-error @+1 {{'pto.addptr' op result type must be !pto.ptr<f32, global> (same element type and memory space as the address), got !pto.ptr<f32, local>}}
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, local>
  func.return
}

// -----
// ...nor the element type (that would be a reinterpreting cast).
func.func @addptr_changes_element_type(%p: !pto.ptr<f32, global>, %i: i32) {
  // expected-error @+1 {{'pto.addptr' op result type must be !pto.ptr<f32, global> (same element type and memory space as the address), got !pto.ptr<i32, global>}}
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<i32, global>
  func.return
}

// -----
// An offset L1 buffer is a pointer into L1, never into HBM.
func.func @addptr_l1buf_to_global(%b: !pto.l1buf<64xf32>, %i: i32) {
  // expected-error @+1 {{'pto.addptr' op result type must be !pto.ptr<f32, local> (same element type and memory space as the address), got !pto.ptr<f32, global>}}
  %q = pto.addptr %b, %i : !pto.l1buf<64xf32>, i32 -> !pto.ptr<f32, global>
  func.return
}

// -----
// Offsetting a buffer gives a pointer, not another buffer.
func.func @addptr_result_l1buf(%b: !pto.l1buf<64xf32>, %i: i32) {
  // expected-error @+1 {{'pto.addptr' op !pto.l1buf<64xf32> should be of base attribute pto.ptr}}
  %q = pto.addptr %b, %i : !pto.l1buf<64xf32>, i32 -> !pto.l1buf<64xf32>
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
// Through an L1 buffer likewise, and the message says it is the buffer's type.
func.func @load_l1buf_wrong_type(%b: !pto.l1buf<16xf32>) {
  // expected-error @+1 {{'pto.load' op result type f16 does not match the buffer's element type f32}}
  %v = pto.load %b : !pto.l1buf<16xf32> -> f16
  func.return
}

// -----
// A load reads through a pointer, not a scalar.
func.func @load_not_a_pointer(%p: i32) {
  // expected-error @+1 {{'pto.load' op operand 'ptr' at position 0 does not verify: expected an address (a !pto.ptr or a !pto.l1buf), got i32}}
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
  // expected-error @+1 {{'pto.store' op expected an address (a !pto.ptr or a !pto.l1buf), got f32}}
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
  // expected-error @+1 {{'pto.fma' op is not defined on i1 (booleans)}}
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

// -----
// An L1 buffer holds at least one element.
// expected-error @+1 {{!pto.l1buf needs a positive element count, got 0}}
func.func @l1buf_empty(%b: !pto.l1buf<0xf32>) {
  func.return
}

// -----
// A negative count is reported as such, not as a syntax error.
// expected-error @+1 {{!pto.l1buf needs a positive element count, got -4}}
func.func @l1buf_negative(%b: !pto.l1buf<-4xf32>) {
  func.return
}

// -----
// L1 sizes are compile-time values: no dynamic dimension.
// expected-error @+1 {{!pto.l1buf needs a static element count (L1 sizes are compile-time values), got '?'}}
func.func @l1buf_dynamic(%b: !pto.l1buf<?xf32>) {
  func.return
}

// -----
// Buffers are flat; a 2-D tile is a row-major buffer of rows * columns elements.
// expected-error @+1 {{!pto.l1buf is one-dimensional: write its total element count, as in !pto.l1buf<4096xf32>}}
func.func @l1buf_2d(%b: !pto.l1buf<64x64xf32>) {
  func.return
}

// -----
// Buffer elements are the machine's scalars, as pointees are.
// expected-error @+1 {{!pto.l1buf element type must be a scalar (f32, f16, bf16, i32, i64, i1), got i8}}
func.func @l1buf_i8(%b: !pto.l1buf<64xi8>) {
  func.return
}

// -----
// alloc_local makes buffers, not pointers.
func.func @alloc_local_pointer() {
  // expected-error @+1 {{'pto.alloc_local' op !pto.ptr<f32, local> should be of base attribute pto.l1buf}}
  %b = pto.alloc_local : !pto.ptr<f32, local>
  func.return
}

// -----
// The size is in the type, never an operand (it must be a compile-time value).
func.func @alloc_local_operand(%n: i32) {
  // expected-error @+1 {{'pto.alloc_local' op Expected 0 operands, but got 1}}
  %b = "pto.alloc_local"(%n) : (i32) -> !pto.l1buf<64xf32>
  func.return
}

// -----
// Atomic add on booleans has no meaning.
func.func @atomic_add_i1(%p: !pto.ptr<i1, global>, %v: i1) {
  // expected-error @+1 {{'pto.atomic_add' op is not defined on i1 (booleans)}}
  %old = pto.atomic_add %p, %v : !pto.ptr<i1, global>, i1
  func.return
}

// -----
// The added value has the pointee type.
func.func @atomic_add_wrong_type(%p: !pto.ptr<i32, global>, %v: i64) {
  // expected-error @+1 {{'pto.atomic_add' op added value type i64 does not match the pointer's element type i32}}
  %old = pto.atomic_add %p, %v : !pto.ptr<i32, global>, i64
  func.return
}

// -----
// The old value it returns has the added value's type (only the generic form can differ).
func.func @atomic_add_result_type(%p: !pto.ptr<i32, global>, %v: i32) {
  // expected-error @+1 {{'pto.atomic_add' op result 'result' at position 0 does not verify: attribute i32 expected from variable 'T', but got i64}}
  %old = "pto.atomic_add"(%p, %v) : (!pto.ptr<i32, global>, i32) -> i64
  func.return
}

// -----
// async_load copies HBM -> L1: its destination is in L1...
func.func @async_load_dst_global(%d: !pto.ptr<f32, global>, %s: !pto.ptr<f32, global>, %n: i32) {
  // expected-error @+1 {{'pto.async_load' op destination must be in L1 (a !pto.l1buf or a !pto.ptr<T, local>), got !pto.ptr<f32, global>}}
  %t = pto.async_load %d, %s, %n rows %n strides(%n, %n) : !pto.ptr<f32, global>, !pto.ptr<f32, global>
  func.return
}

// -----
// ...and its source in HBM (an L1 -> L1 copy is not an instruction).
func.func @async_load_src_local(%d: !pto.l1buf<64xf32>, %s: !pto.ptr<f32, local>, %n: i32) {
  // expected-error @+1 {{'pto.async_load' op source must be in HBM (a !pto.ptr<T, global>), got !pto.ptr<f32, local>}}
  %t = pto.async_load %d, %s, %n rows %n strides(%n, %n) : !pto.l1buf<64xf32>, !pto.ptr<f32, local>
  func.return
}

// -----
// A copy moves bytes: it does not convert between element types.
func.func @async_load_element_types(%d: !pto.l1buf<64xf16>, %s: !pto.ptr<f32, global>, %n: i32) {
  // expected-error @+1 {{'pto.async_load' op source element type f32 differs from destination element type f16; a copy moves bytes, it does not convert}}
  %t = pto.async_load %d, %s, %n rows %n strides(%n, %n) : !pto.l1buf<64xf16>, !pto.ptr<f32, global>
  func.return
}

// -----
// Byte counts, rows and strides are i32.
func.func @async_load_i64_nbytes(%d: !pto.l1buf<64xf32>, %s: !pto.ptr<f32, global>, %n: i64,
                                 %r: i32) {
  // expected-error @+1 {{'pto.async_load' op operand 'nbytes' at position 2 does not verify: Expected attribute i32 but got i64}}
  %t = "pto.async_load"(%d, %s, %n, %r, %r, %r) : (!pto.l1buf<64xf32>, !pto.ptr<f32, global>, i64, i32, i32, i32) -> !pto.token
  func.return
}

// -----
// An async copy's result is its completion token.
func.func @async_load_result(%d: !pto.l1buf<64xf32>, %s: !pto.ptr<f32, global>, %n: i32) {
  // expected-error @+1 {{'pto.async_load' op result 'token' at position 0 does not verify: i32 should be of base attribute pto.token}}
  %t = "pto.async_load"(%d, %s, %n, %n, %n, %n) : (!pto.l1buf<64xf32>, !pto.ptr<f32, global>, i32, i32, i32, i32) -> i32
  func.return
}

// -----
// async_store copies L1 -> HBM: its destination is in HBM...
func.func @async_store_dst_local(%d: !pto.l1buf<64xf32>, %s: !pto.l1buf<64xf32>, %n: i32) {
  // expected-error @+1 {{'pto.async_store' op destination must be in HBM (a !pto.ptr<T, global>), got !pto.l1buf<64xf32>}}
  %t = pto.async_store %d, %s, %n rows %n strides(%n, %n) : !pto.l1buf<64xf32>, !pto.l1buf<64xf32>
  func.return
}

// -----
// ...and its source in L1 (HBM -> HBM is a host memcpy, not a kernel instruction).
func.func @async_store_src_global(%d: !pto.ptr<f32, global>, %s: !pto.ptr<f32, global>, %n: i32) {
  // expected-error @+1 {{'pto.async_store' op source must be in L1 (a !pto.l1buf or a !pto.ptr<T, local>), got !pto.ptr<f32, global>}}
  %t = pto.async_store %d, %s, %n rows %n strides(%n, %n) : !pto.ptr<f32, global>, !pto.ptr<f32, global>
  func.return
}

// -----
func.func @async_store_element_types(%d: !pto.ptr<i32, global>, %s: !pto.l1buf<64xf32>, %n: i32) {
  // expected-error @+1 {{'pto.async_store' op source element type f32 differs from destination element type i32}}
  %t = pto.async_store %d, %s, %n rows %n strides(%n, %n) : !pto.ptr<i32, global>, !pto.l1buf<64xf32>
  func.return
}

// -----
// The synchronous tile store has async_store's direction: L1 -> HBM.
func.func @tile_store_dst_local(%d: !pto.ptr<f32, local>, %s: !pto.l1buf<64xf32>, %n: i32) {
  // expected-error @+1 {{'pto.tile_store' op destination must be in HBM (a !pto.ptr<T, global>), got !pto.ptr<f32, local>}}
  pto.tile_store %d, %s, %n rows %n strides(%n, %n) : !pto.ptr<f32, local>, !pto.l1buf<64xf32>
  func.return
}

// -----
func.func @tile_store_src_global(%d: !pto.ptr<f32, global>, %s: !pto.ptr<f32, global>, %n: i32) {
  // expected-error @+1 {{'pto.tile_store' op source must be in L1 (a !pto.l1buf or a !pto.ptr<T, local>), got !pto.ptr<f32, global>}}
  pto.tile_store %d, %s, %n rows %n strides(%n, %n) : !pto.ptr<f32, global>, !pto.ptr<f32, global>
  func.return
}

// -----
func.func @tile_store_element_types(%d: !pto.ptr<f16, global>, %s: !pto.l1buf<64xbf16>, %n: i32) {
  // expected-error @+1 {{'pto.tile_store' op source element type bf16 differs from destination element type f16}}
  pto.tile_store %d, %s, %n rows %n strides(%n, %n) : !pto.ptr<f16, global>, !pto.l1buf<64xbf16>
  func.return
}

// -----
// The tile store is complete when it retires: it has no token to wait on.
func.func @tile_store_token(%d: !pto.ptr<f32, global>, %s: !pto.l1buf<64xf32>, %n: i32) {
  // expected-error @+1 {{'pto.tile_store' op Expected 0 results, but got 1}}
  %t = "pto.tile_store"(%d, %s, %n, %n, %n, %n) : (!pto.ptr<f32, global>, !pto.l1buf<64xf32>, i32, i32, i32, i32) -> !pto.token
  func.return
}

// -----
// wait takes a token, not any value.
func.func @wait_not_a_token(%x: i32) {
  // expected-error @+1 {{'pto.wait' op operand 'token' at position 0 does not verify: i32 should be of base attribute pto.token}}
  "pto.wait"(%x) : (i32) -> ()
  func.return
}

// -----
// wait_all waits for everything, so it names nothing.
func.func @wait_all_operand(%t: !pto.token) {
  // expected-error @+1 {{'pto.wait_all' op Expected 0 operands, but got 1}}
  "pto.wait_all"(%t) : (!pto.token) -> ()
  func.return
}

// -----
// fill writes L1 only (HBM is filled by memcpy from the host, or lane stores).
func.func @fill_global(%p: !pto.ptr<f32, global>, %v: f32, %n: i32) {
  // expected-error @+1 {{'pto.fill' op destination must be in L1 (a !pto.l1buf or a !pto.ptr<T, local>), got !pto.ptr<f32, global>}}
  pto.fill %p, %v, %n : !pto.ptr<f32, global>, f32
  func.return
}

// -----
// The fill value has the buffer's element type.
func.func @fill_wrong_type(%b: !pto.l1buf<64xf16>, %v: f32, %n: i32) {
  // expected-error @+1 {{'pto.fill' op fill value type f32 does not match the buffer's element type f16}}
  pto.fill %b, %v, %n : !pto.l1buf<64xf16>, f32
  func.return
}

// -----
// The element count is i32.
func.func @fill_i64_count(%b: !pto.l1buf<64xf32>, %v: f32, %n: i64) {
  // expected-error @+1 {{'pto.fill' op operand 'count' at position 2 does not verify: Expected attribute i32 but got i64}}
  "pto.fill"(%b, %v, %n) : (!pto.l1buf<64xf32>, f32, i64) -> ()
  func.return
}

// -----
// mma works on L1 tiles: an HBM accumulator is rejected...
func.func @mma_c_global(%c: !pto.ptr<f32, global>, %a: !pto.l1buf<64xf32>) {
  // expected-error @+1 {{'pto.mma' op operand C must be in L1 (a !pto.l1buf or a !pto.ptr<T, local>), got !pto.ptr<f32, global>}}
  pto.mma %c, %a, %a shape(8, 8, 8) : !pto.ptr<f32, global>, !pto.l1buf<64xf32>, !pto.l1buf<64xf32>
  func.return
}

// -----
// ...and so are HBM inputs (load them into L1 first).
func.func @mma_b_global(%c: !pto.l1buf<64xf32>, %b: !pto.ptr<f32, global>) {
  // expected-error @+1 {{'pto.mma' op operand B must be in L1 (a !pto.l1buf or a !pto.ptr<T, local>), got !pto.ptr<f32, global>}}
  pto.mma %c, %c, %b shape(8, 8, 8) : !pto.l1buf<64xf32>, !pto.l1buf<64xf32>, !pto.ptr<f32, global>
  func.return
}

// -----
// Tile sizes are positive.
func.func @mma_zero_shape(%c: !pto.l1buf<64xf32>) {
  // expected-error @+1 {{'pto.mma' op shape (m, n, k) must be positive, got (8, 0, 8)}}
  pto.mma %c, %c, %c shape(8, 0, 8) : !pto.l1buf<64xf32>, !pto.l1buf<64xf32>, !pto.l1buf<64xf32>
  func.return
}

// -----
// C is m x n: a 16 x 16 tile does not fit 128 elements.
func.func @mma_c_too_small(%c: !pto.l1buf<128xf32>, %a: !pto.l1buf<256xf32>) {
  // expected-error @+1 {{'pto.mma' op operand C needs 256 elements but its buffer holds 128}}
  pto.mma %c, %a, %a shape(16, 16, 16) : !pto.l1buf<128xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}

// -----
// A is m x k (here 16 x 32 = 512 elements).
func.func @mma_a_too_small(%c: !pto.l1buf<256xf32>, %a: !pto.l1buf<256xf16>, %b: !pto.l1buf<512xf16>) {
  // expected-error @+1 {{'pto.mma' op operand A needs 512 elements but its buffer holds 256}}
  pto.mma %c, %a, %b shape(16, 16, 32) : !pto.l1buf<256xf32>, !pto.l1buf<256xf16>, !pto.l1buf<512xf16>
  func.return
}

// -----
// B is k x n (here 32 x 8 = 256 elements).
func.func @mma_b_too_small(%c: !pto.l1buf<128xf32>, %a: !pto.l1buf<512xf16>, %b: !pto.l1buf<128xf16>) {
  // expected-error @+1 {{'pto.mma' op operand B needs 256 elements but its buffer holds 128}}
  pto.mma %c, %a, %b shape(16, 8, 32) : !pto.l1buf<128xf32>, !pto.l1buf<512xf16>, !pto.l1buf<128xf16>
  func.return
}

// -----
// A and B have one element type.
func.func @mma_mixed_inputs(%c: !pto.l1buf<64xf32>, %a: !pto.l1buf<64xf16>, %b: !pto.l1buf<64xbf16>) {
  // expected-error @+1 {{'pto.mma' op inputs A and B must have one element type, got f16 and bf16}}
  pto.mma %c, %a, %b shape(8, 8, 8) : !pto.l1buf<64xf32>, !pto.l1buf<64xf16>, !pto.l1buf<64xbf16>
  func.return
}

// -----
// The CUBE unit does not narrow: f32 inputs cannot accumulate into f16.
func.func @mma_f16_acc_f32_inputs(%c: !pto.l1buf<64xf16>, %a: !pto.l1buf<64xf32>) {
  // expected-error @+1 {{'pto.mma' op cannot accumulate f32 inputs into f16; supported: f32 += f32/f16/bf16, f16 += f16, i32 += i32}}
  pto.mma %c, %a, %a shape(8, 8, 8) : !pto.l1buf<64xf16>, !pto.l1buf<64xf32>, !pto.l1buf<64xf32>
  func.return
}

// -----
// No bf16 accumulator.
func.func @mma_bf16_acc(%c: !pto.l1buf<64xbf16>) {
  // expected-error @+1 {{'pto.mma' op cannot accumulate bf16 inputs into bf16}}
  pto.mma %c, %c, %c shape(8, 8, 8) : !pto.l1buf<64xbf16>, !pto.l1buf<64xbf16>, !pto.l1buf<64xbf16>
  func.return
}

// -----
// No mixing integer and float (write a cast pass over the tile first).
func.func @mma_int_into_float(%c: !pto.l1buf<64xf32>, %a: !pto.l1buf<64xi32>) {
  // expected-error @+1 {{'pto.mma' op cannot accumulate i32 inputs into f32}}
  pto.mma %c, %a, %a shape(8, 8, 8) : !pto.l1buf<64xf32>, !pto.l1buf<64xi32>, !pto.l1buf<64xi32>
  func.return
}

// -----
// 64-bit integers are not a CUBE type.
func.func @mma_i64(%c: !pto.l1buf<64xi64>) {
  // expected-error @+1 {{'pto.mma' op cannot accumulate i64 inputs into i64}}
  pto.mma %c, %c, %c shape(8, 8, 8) : !pto.l1buf<64xi64>, !pto.l1buf<64xi64>, !pto.l1buf<64xi64>
  func.return
}

// -----
// Stage names identify stages for `after`: they are unique in a pipeline.
func.func @pipeline_duplicate_stage() {
  // expected-error @+1 {{'pto.pipeline' op duplicate stage name 'load'}}
  pto.pipeline {
    pto.stage "load" {
      pto.yield
    }
    pto.stage "load" {
      pto.yield
    }
    pto.yield
  }
  func.return
}

// -----
// `after` names stages of the same pipeline; the message lists the known ones.
func.func @pipeline_unknown_after() {
  // expected-error @+1 {{'pto.pipeline' op stage 'compute' runs after unknown stage 'load_c'; known stages: load_a, compute}}
  pto.pipeline {
    pto.stage "load_a" {
      pto.yield
    }
    pto.stage "compute" after ["load_a", "load_c"] {
      pto.yield
    }
    pto.yield
  }
  func.return
}

// -----
// Dependencies form a DAG: a cycle is named stage by stage.
func.func @pipeline_cycle() {
  // expected-error @+1 {{'pto.pipeline' op stage dependencies form a cycle: a -> b -> a}}
  pto.pipeline {
    pto.stage "a" after ["b"] {
      pto.yield
    }
    pto.stage "b" after ["a"] {
      pto.yield
    }
    pto.yield
  }
  func.return
}

// -----
// A stage cannot run after itself.
func.func @pipeline_self_cycle() {
  // expected-error @+1 {{'pto.pipeline' op stage dependencies form a cycle: a -> a}}
  pto.pipeline {
    pto.stage "a" after ["a"] {
      pto.yield
    }
    pto.yield
  }
  func.return
}

// -----
// Stages run in program order unless optimised, so `after` may only name earlier stages.
func.func @pipeline_forward_after() {
  // expected-error @+1 {{'pto.pipeline' op stage 'compute' runs after 'load', which comes later in the pipeline; stages run in program order, so write 'load' first}}
  pto.pipeline {
    pto.stage "compute" after ["load"] {
      pto.yield
    }
    pto.stage "load" {
      pto.yield
    }
    pto.yield
  }
  func.return
}

// -----
// A pipeline's region ends with pto.yield, even when it yields nothing.
func.func @pipeline_missing_yield() {
  // expected-error @+1 {{'pto.pipeline' op must end with pto.yield, but its region ends with 'pto.stage'}}
  pto.pipeline {
    pto.stage "a" {
      pto.yield
    }
  }
  func.return
}

// -----
// So does a stage's, even an empty one.
func.func @stage_missing_yield() {
  pto.pipeline {
    // expected-error @+1 {{'pto.stage' op stage 'a' must end with pto.yield, but its region ends with nothing}}
    pto.stage "a" {
    }
    pto.yield
  }
  func.return
}

// -----
// A stage that ends with some other op names it.
func.func @stage_ends_with_other_op() {
  pto.pipeline {
    // expected-error @+1 {{'pto.stage' op stage 'a' must end with pto.yield, but its region ends with 'pto.barrier_block'}}
    pto.stage "a" {
      pto.barrier_block
    }
    pto.yield
  }
  func.return
}

// -----
// The pipeline yields exactly its result types...
func.func @pipeline_yield_types(%b: !pto.l1buf<64xf32>) {
  // expected-error @+1 {{'pto.pipeline' op yields (!pto.l1buf<64xf32>) but its result types are (!pto.l1buf<64xf16>)}}
  %r = pto.pipeline -> (!pto.l1buf<64xf16>) {
    pto.yield %b : !pto.l1buf<64xf32>
  }
  func.return
}

// -----
// ...and so does each stage, value for value.
func.func @stage_yield_count(%x: f32) {
  pto.pipeline {
    // expected-error @+1 {{'pto.stage' op stage 's' yields (f32) but its result types are (f32, f32)}}
    %a, %b = pto.stage "s" -> (f32, f32) {
      pto.yield %x : f32
    }
    pto.yield
  }
  func.return
}

// -----
// Stages exist only inside a pipeline.
func.func @stage_outside_pipeline() {
  // expected-error @+1 {{'pto.stage' op 'pto.stage' expects parent op 'pto.pipeline'}}
  pto.stage "a" {
    pto.yield
  }
  func.return
}

// -----
// Stages do not nest.
func.func @stage_in_stage() {
  pto.pipeline {
    pto.stage "outer" {
      // expected-error @+1 {{'pto.stage' op 'pto.stage' expects parent op 'pto.pipeline'}}
      pto.stage "inner" {
        pto.yield
      }
      pto.yield
    }
    pto.yield
  }
  func.return
}

// -----
// pto.yield ends pipeline and stage regions only; a function ends with func.return.
func.func @yield_in_function() {
  // expected-error @+1 {{'pto.yield' op must be the terminator of a pto.pipeline or pto.stage region (a function ends with func.return)}}
  pto.yield
}

// -----
// The generic form of a stage still needs its name.
func.func @stage_without_name() {
  pto.pipeline {
    // expected-error @+1 {{'pto.stage' op property 'stage' expected}}
    "pto.stage"() ({
      "pto.yield"() : () -> ()
    }) : () -> ()
    pto.yield
  }
  func.return
}

// -----
// printf needs one value per conversion...
func.func @printf_too_few(%i: i32) {
  // expected-error @+1 {{'pto.printf' op format string 'i=%d j=%d' does not fit its 1 value(s): not enough arguments for format string}}
  pto.printf "i=%d j=%d" (%i : i32)
  func.return
}

// -----
// ...and no value left over.
func.func @printf_too_many(%i: i32) {
  // expected-error @+1 {{'pto.printf' op format string 'i=%d' does not fit its 2 value(s): not all arguments converted during string formatting}}
  pto.printf "i=%d" (%i, %i : i32, i32)
  func.return
}

// -----
// Unknown conversions are caught at compile time, not when the kernel prints.
func.func @printf_bad_conversion(%i: i32) {
  // expected-error @+1 {{'pto.printf' op format string 'i=%q' does not fit its 1 value(s): unsupported format character 'q'}}
  pto.printf "i=%q" (%i : i32)
  func.return
}

// -----
// A literal percent sign is written %%.
func.func @printf_lone_percent() {
  // expected-error @+1 {{'pto.printf' op format string '100%' does not fit its 0 value(s): incomplete format}}
  pto.printf "100%"
  func.return
}

// -----
// Only scalars print: a token or buffer has no per-lane value to show.
func.func @printf_token(%t: !pto.token) {
  // expected-error @+1 {{'pto.printf' op can only print scalar values (integers and floats), got a value of type !pto.token}}
  pto.printf "%d" (%t : !pto.token)
  func.return
}

// -----
// `after` holds stage names; a malformed list is the stage's error (the pipeline's dependency
// check must not trip over it).
func.func @stage_after_not_names() {
  pto.pipeline {
    // expected-error @+1 {{'pto.stage' op 1 : i64 should be of base attribute string}}
    "pto.stage"() <{stage = "a", after = [1 : i64]}> ({
      "pto.yield"() : () -> ()
    }) : () -> ()
    pto.yield
  }
  func.return
}

// -----
// sigmoid is defined on floats only: an integer needs a pto.cast first.
func.func @sigmoid_of_int(%i: i32) -> i32 {
  // expected-error @+1 {{'pto.sigmoid' op pto.sigmoid works on floats, got i32}}
  %0 = pto.sigmoid %i : i32
  func.return %0 : i32
}

// -----

// A loop step is an i32 or i64 integer.
func.func @loop_step_not_an_integer(%f: f32) -> f32 {
  // expected-error @+1 {{pto.loop_step takes an i32 or i64 step, got f32}}
  %s = pto.loop_step %f : f32
  func.return %s : f32
}
