// Every problem with the input is FILE:LINE:COL: error: ..., with the source line and a caret,
// on stderr, exit status 1, and never a Python traceback.

// RUN: not pypto-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: not pypto-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=NOTRACE
// NOTRACE-NOT: Traceback
// RUN: not pypto-opt --split-input-file < %s 2>&1 | filecheck %s --check-prefix=STDIN
// RUN: not pypto-opt %t.does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING

// MISSING: does-not-exist.mlir: error: could not read input file: No such file or directory

// A syntax error points at the offending token.
// CHECK:      input-errors.mlir:[[# @LINE + 5]]:28: error: Expected ':'
// CHECK-NEXT:   %0 = pto.get_global_id 0 i32
// CHECK-NEXT: {{^                           \^}}
// STDIN: <stdin>:[[# @LINE + 2]]:28: error: Expected ':'
func.func @syntax_error() {
  %0 = pto.get_global_id 0 i32
  func.return
}

// -----

// An unknown op is named.
// CHECK: input-errors.mlir:[[# @LINE + 2]]:3: error: 'pto.frobnicate' is not an operation of the pto dialect
func.func @unknown_op() {
  pto.frobnicate
  func.return
}

// -----

// A verifier error points at the failing op (its first token, as in MLIR), not at Python
// source; the Python source location the op carries is given as a note.
// CHECK:      input-errors.mlir:[[# @LINE + 5]]:3: error: 'pto.load' op result type i64 does not match the pointer's element type f32
// CHECK-NEXT:   %v = pto.load %p : !pto.ptr<f32, global> -> i64 loc("kernel.py":12:8)
// CHECK-NEXT: {{^  \^$}}
// CHECK-NEXT: input-errors.mlir:[[# @LINE + 2]]:3: note: from Python source "kernel.py":12:8
func.func @verifier_error(%p: !pto.ptr<f32, global>) {
  %v = pto.load %p : !pto.ptr<f32, global> -> i64 loc("kernel.py":12:8)
  func.return
}

// -----

// An undefined value is reported once the whole chunk is read.
// CHECK: input-errors.mlir:{{[0-9]+}}:{{[0-9]+}}: error: values used but not defined: [%undefined]
func.func @undefined_value(%p: !pto.ptr<f32, global>) {
  pto.store %undefined, %p : f32, !pto.ptr<f32, global>
  func.return
}
