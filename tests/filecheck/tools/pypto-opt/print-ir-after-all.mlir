// --print-ir-after-all dumps the module to stderr after every pass, under MLIR's header.
// RUN: pypto-opt %s -p canonicalize,cse --print-ir-after-all -o %t 2>&1 | filecheck %s

// After canonicalize the constants are folded but the duplicate id is still there...
// Each dump's module records the passes run so far (pto.passes).
// CHECK:      // -----// IR Dump After canonicalize //----- //
// CHECK-NEXT: builtin.module attributes {pto.passes = ["canonicalize"]} {
// CHECK:        arith.constant 3 : i32
// CHECK:        pto.get_global_id 0
// CHECK:        pto.get_global_id 0
// ...and cse merges it.
// CHECK:      // -----// IR Dump After cse //----- //
// CHECK-NEXT: builtin.module attributes {pto.passes = ["canonicalize", "cse"]} {
// CHECK:        pto.get_global_id 0
// CHECK-NOT:    pto.get_global_id
// CHECK:      }
func.func @k() -> (i32, i32, i32) {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %s = arith.addi %c1, %c2 : i32
  %a = pto.get_global_id 0 : i32
  %b = pto.get_global_id 0 : i32
  func.return %a, %b, %s : i32, i32, i32
}
