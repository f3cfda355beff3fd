// RUN: pypto-opt %s --split-input-file -p canonicalize | filecheck %s

// Float constants fold exactly in their own type (pypto's canonicalize; issue 8): the folded
// value is what executing the op gives.

// bfloat16: 1 + 2**-8 is a tie between 1 and 1 + 2**-7; nearest-even gives 1.
// CHECK-LABEL: func.func @bf16_add
// CHECK-NEXT:    %[[C:.*]] = arith.constant 1.000000e+00 : bf16
// CHECK-NEXT:    func.return %[[C]]
func.func @bf16_add() -> bf16 {
  %a = arith.constant 1.0 : bf16
  %b = arith.constant 0.00390625 : bf16
  %s = arith.addf %a, %b : bf16
  func.return %s : bf16
}

// -----
// float16: 60000 + 60000 overflows to +inf (xDSL raised OverflowError).
// CHECK-LABEL: func.func @f16_overflow
// CHECK-NEXT:    %[[C:.*]] = arith.constant 0x7c00 : f16
// CHECK-NEXT:    func.return %[[C]]
func.func @f16_overflow() -> f16 {
  %a = arith.constant 60000.0 : f16
  %s = arith.addf %a, %a : f16
  func.return %s : f16
}

// -----
// float32 division by zero folds to the IEEE result.
// CHECK-LABEL: func.func @f32_div_zero
// CHECK-NEXT:    %[[C:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:    func.return %[[C]]
func.func @f32_div_zero() -> f32 {
  %a = arith.constant -1.0 : f32
  %z = arith.constant 0.0 : f32
  %s = arith.divf %a, %z : f32
  func.return %s : f32
}
