// RUN: pypto-opt %s --split-input-file --verify-diagnostics

// One case per verifier error of the npu ops.

// An HBM lane access must say where it is staged.
func.func @unstaged(%p: !pto.ptr<f32, global>) {
  // expected-error @+1 {{'npu.load' op an HBM access is staged through an L1 slot: write `via %slot` (a !pto.l1buf with one element per lane)}}
  %v = npu.load %p : !pto.ptr<f32, global> -> f32
  func.return
}

// -----
// L1 is where the vector unit works: no slot for an L1 access.
func.func @l1_staged(%l: !pto.ptr<f32, local>, %s: !pto.l1buf<256xf32>, %v: f32) {
  // expected-error @+1 {{'npu.store' op an L1 access needs no staging slot (the vector unit reads L1 directly): drop `via %slot`}}
  npu.store %v, %l via %s : f32, !pto.ptr<f32, local>, !pto.l1buf<256xf32>
  func.return
}

// -----
// The slot holds the staged value's type.
func.func @slot_type(%p: !pto.ptr<f32, global>, %s: !pto.l1buf<256xi32>, %v: f32) {
  // expected-error @+1 {{'npu.fma' op slot element type i32 does not match the staged value's type f32}}
  npu.fma %p, %v, %v, %v via %s : !pto.ptr<f32, global>, f32, !pto.l1buf<256xi32>
  func.return
}

// -----
func.func @value_type(%p: !pto.ptr<f32, global>, %s: !pto.l1buf<256xf32>, %v: i32) {
  // expected-error @+1 {{'npu.store' op stored value type i32 does not match the address's element type f32}}
  npu.store %v, %p via %s : i32, !pto.ptr<f32, global>, !pto.l1buf<256xf32>
  func.return
}

// -----
// Flags name real pipes...
func.func @bad_pipe(%t: !pto.token) {
  // expected-error @+1 {{'npu.set_flag' op unknown pipe 'MTE3' for dst pipe; pipes: SCALAR, VECTOR, CUBE, MTE_IN, MTE_OUT}}
  npu.set_flag %t "MTE_IN" -> "MTE3"
  func.return
}

// -----
// ... and two different ones.
func.func @same_pipe(%t: !pto.token) {
  // expected-error @+1 {{'npu.wait_flag' op a flag orders two different pipes (one pipe is already in order)}}
  npu.wait_flag %t "CUBE" -> "CUBE"
  func.return
}

// -----
// copy_in moves HBM to L1, not the other way.
func.func @copy_in_direction(%a: !pto.ptr<f32, global>, %b: !pto.l1buf<64xf32>, %n: i32) {
  // expected-error @+1 {{'npu.copy_in' op destination must be in L1 (a !pto.l1buf or a !pto.ptr<T, local>), got !pto.ptr<f32, global>}}
  %t = npu.copy_in %a, %b, %n rows %n strides(%n, %n) : !pto.ptr<f32, global>, !pto.l1buf<64xf32>
  func.return
}

// -----
func.func @copy_out_types(%a: !pto.ptr<f16, global>, %b: !pto.l1buf<64xf32>, %n: i32) {
  // expected-error @+1 {{'npu.copy_out' op source element type f32 differs from destination element type f16; a copy moves bytes, it does not convert}}
  %t = npu.copy_out %a, %b, %n rows %n strides(%n, %n) : !pto.ptr<f16, global>, !pto.l1buf<64xf32>
  func.return
}

// -----
func.func @mma_small(%c: !pto.l1buf<64xf32>) {
  // expected-error @+1 {{'npu.mma' op operand C needs 256 elements but its buffer holds 64}}
  npu.mma %c, %c, %c shape(16, 16, 4) : !pto.l1buf<64xf32>, !pto.l1buf<64xf32>, !pto.l1buf<64xf32>
  func.return
}

// -----
// The fused load writes operand A or B, never the accumulator.
func.func @fused_operand(%c: !pto.l1buf<4096xf32>, %A: !pto.ptr<f32, global>, %n: i32) {
  // expected-error @+1 {{'npu.load_mma' op the fused load writes operand "a" or "b", got "c"}}
  npu.load_mma %c, %c, %c, %A, %n rows %n strides(%n, %n) shape(64, 64, 64) into "c" : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.ptr<f32, global>
  func.return
}

// -----
func.func @fused_source(%c: !pto.l1buf<4096xf32>, %n: i32) {
  // expected-error @+1 {{'npu.load_mma' op the fused load reads HBM, got !pto.l1buf<4096xf32>}}
  npu.load_mma %c, %c, %c, %c, %n rows %n strides(%n, %n) shape(64, 64, 64) into "a" : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>
  func.return
}
