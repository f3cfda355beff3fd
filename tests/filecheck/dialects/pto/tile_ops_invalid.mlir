// RUN: pypto-opt %s --split-input-file --verify-diagnostics

// One case per verifier error of the tile vector instructions and of a tile's shape.

// A tile's shape must match its element count.
// expected-error @+1 {{'pto.alloc_local' op a 16 x 16 tile holds 256 elements, but its type !pto.l1buf<128xf32> holds 128}}
%t = pto.alloc_local shape(16, 16) : !pto.l1buf<128xf32>

// -----
// An operand smaller than the tile it stands for.
func.func @small(%a: !pto.l1buf<256xf32>, %d: !pto.l1buf<128xf32>) {
  // expected-error @+1 {{'pto.tadd' op tile operand 'dst' needs 16 x 16 = 256 elements but its buffer holds 128}}
  pto.tadd %d, %a, %a shape(16, 16) : !pto.l1buf<128xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}

// -----
// Tiles live in L1: an HBM pointer is rejected.
func.func @hbm(%a: !pto.l1buf<256xf32>, %d: !pto.ptr<f32, global>) {
  // expected-error @+1 {{'pto.tadd' op tile operand 'dst' must be in L1}}
  pto.tadd %d, %a, %a shape(16, 16) : !pto.ptr<f32, global>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}

// -----
// Mixed element types: a tile instruction does not convert.
func.func @mixed(%a: !pto.l1buf<256xf32>, %b: !pto.l1buf<256xf16>) {
  // expected-error @+1 {{'pto.tadd' op tile operand 'b' holds f16 but 'a' holds f32: a tile instruction does not convert (use pto.tcvt)}}
  pto.tadd %a, %a, %b shape(16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf16>
  func.return
}

// -----
// Transcendentals are float-only.
func.func @int_exp(%a: !pto.l1buf<256xi32>) {
  // expected-error @+1 {{'pto.texp' op pto.texp works on f32, f16, bf16 tiles, got i32}}
  pto.texp %a, %a shape(16, 16) : !pto.l1buf<256xi32>, !pto.l1buf<256xi32>
  func.return
}

// -----
// Bitwise ops are integer-only.
func.func @float_and(%a: !pto.l1buf<256xf32>) {
  // expected-error @+1 {{'pto.tand' op pto.tand works on i32, i64 tiles, got f32}}
  pto.tand %a, %a, %a shape(16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}

// -----
// Arg-reductions write int32 indices.
func.func @argmax_float(%a: !pto.l1buf<256xf32>, %d: !pto.l1buf<16xf32>) {
  // expected-error @+1 {{'pto.trowargmax' op pto.trowargmax writes i32 tiles, got f32}}
  pto.trowargmax %d, %a shape(16, 16) : !pto.l1buf<16xf32>, !pto.l1buf<256xf32>
  func.return
}

// -----
// The scalar of a tile-scalar op has the tile's type.
func.func @scalar_type(%a: !pto.l1buf<256xf32>, %s: f16) {
  // expected-error @+1 {{'pto.tadds' op the scalar 's' is f16 but the tile holds f32}}
  pto.tadds %a, %a, %s shape(16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, f16
  func.return
}

// -----
// Unknown comparison.
func.func @bad_cmp(%a: !pto.l1buf<256xf32>, %m: !pto.l1buf<256xi32>) {
  // expected-error @+1 {{'pto.tcmp' op comparison must be one of eq, ne, lt, le, gt, ge, got 'lesser'}}
  pto.tcmp %m, %a, %a "lesser" shape(16, 16) : !pto.l1buf<256xi32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}

// -----
// A mask holds integers.
func.func @float_mask(%a: !pto.l1buf<256xf32>) {
  // expected-error @+1 {{'pto.tsel' op a mask tile holds integers (1 = true), got f32}}
  pto.tsel %a, %a, %a, %a shape(16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}

// -----
// Unknown rounding mode.
func.func @bad_rounding(%a: !pto.l1buf<256xf32>, %h: !pto.l1buf<256xf16>) {
  // expected-error @+1 {{'pto.tcvt' op rounding must be one of rne, rz, rp, rm, got 'up'}}
  pto.tcvt %h, %a "up" shape(16, 16) : !pto.l1buf<256xf16>, !pto.l1buf<256xf32>
  func.return
}

// -----
// A shape is positive.
func.func @zero(%a: !pto.l1buf<256xf32>) {
  // expected-error @+1 {{'pto.tneg' op tile shape must be positive, got 0 x 16}}
  pto.tneg %a, %a shape(0, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}
