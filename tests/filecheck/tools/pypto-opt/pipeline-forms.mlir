// The short form (-p) and the MLIR form (--pass-pipeline='builtin.module(...)') are the same
// pipeline: identical output, byte for byte.
// RUN: pypto-opt %s -p canonicalize,cse > %t.short
// RUN: pypto-opt %s --pass-pipeline='builtin.module(canonicalize,cse)' > %t.long
// RUN: diff %t.short %t.long
// RUN: filecheck %s --input-file %t.short

// An empty pipeline runs nothing and is not an error.
// RUN: pypto-opt %s --pass-pipeline='builtin.module()' | filecheck %s --check-prefix=NONE
// RUN: pypto-opt %s -p '' | filecheck %s --check-prefix=NONE

// Both passes ran: the constants folded (canonicalize) and the duplicate id merged (cse).
// CHECK-LABEL: func.func @k
// CHECK-NEXT:    %[[ID:.*]] = pto.get_global_id 0 : i32
// CHECK-NEXT:    %[[C:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    %[[I:.*]] = arith.addi %[[ID]], %[[C]] : i32
// CHECK-NEXT:    %[[Q:.*]] = pto.addptr %{{.*}}, %[[I]]
// CHECK-NEXT:    %[[V:.*]] = pto.load %[[Q]]
// CHECK-NEXT:    pto.store %[[V]], %[[Q]]
// CHECK-NEXT:    func.return

// NONE-LABEL: func.func @k
// NONE-COUNT-2: pto.get_global_id 0 : i32
// NONE:         arith.constant 1 : i32
func.func @k(%p: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %a = pto.get_global_id 0 : i32
  %b = pto.get_global_id 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %s = arith.addi %c1, %c2 : i32
  %i = arith.addi %a, %s : i32
  %j = arith.addi %b, %s : i32
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %r = pto.addptr %p, %j : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %q : !pto.ptr<f32, global> -> f32
  pto.store %v, %r : f32, !pto.ptr<f32, global>
  func.return
}
