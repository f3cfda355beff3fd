// RUN: pypto-opt %s --split-input-file --verify-diagnostics

// The verifier errors of the warp shuffles and votes.

// A shuffle moves a scalar: a pointer is not one (shuffle the offset instead).
func.func @shuffle_a_pointer(%p: !pto.ptr<f32, global>, %k: i32) -> !pto.ptr<f32, global> {
  // expected-error @+1 {{'pto.shfl' op pto.shfl moves a scalar (i1, i32, i64, f16, bf16, f32, f64), got !pto.ptr<f32, global>}}
  %0 = pto.shfl %p, %k : !pto.ptr<f32, global>
  func.return %0 : !pto.ptr<f32, global>
}

// -----
// The source lane, delta or mask is an i32.
func.func @i64_delta(%v: f32, %k: i64) -> f32 {
  // expected-error @+1 {{'pto.shfl_down' op operand 'lane' at position 1 does not verify}}
  %0 = "pto.shfl_down"(%v, %k) : (f32, i64) -> f32
  func.return %0 : f32
}

// -----
// The result has the shuffled value's type.
func.func @result_type(%v: f32, %k: i32) -> f16 {
  // expected-error @+1 {{'pto.shfl_xor' op result 'result' at position 0 does not verify}}
  %0 = "pto.shfl_xor"(%v, %k) : (f32, i32) -> f16
  func.return %0 : f16
}

// -----
// A vote takes an i1 predicate: compare an integer with 0 first.
func.func @ballot_of_int(%v: i32) -> i32 {
  // expected-error @+1 {{'pto.ballot' op operand 'pred' at position 0 does not verify}}
  %0 = "pto.ballot"(%v) : (i32) -> i32
  func.return %0 : i32
}

// -----
// A ballot is an int32 bitmask.
func.func @ballot_type(%p: i1) -> i64 {
  // expected-error @+1 {{'pto.ballot' op result 'result' at position 0 does not verify}}
  %0 = "pto.ballot"(%p) : (i1) -> i64
  func.return %0 : i64
}

// -----
// vote_any and vote_all give an i1.
func.func @vote_type(%p: i1) -> i32 {
  // expected-error @+1 {{'pto.vote_all' op result 'result' at position 0 does not verify}}
  %0 = "pto.vote_all"(%p) : (i1) -> i32
  func.return %0 : i32
}
