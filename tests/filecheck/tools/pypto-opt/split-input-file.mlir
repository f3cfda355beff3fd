// Each chunk between '// -----' lines is processed on its own and the outputs are joined with
// '// -----'; a failing chunk does not stop the others, and its error carries the line number
// of the original file, not of the chunk.
// RUN: not pypto-opt %s --split-input-file > %t.out 2> %t.err
// RUN: filecheck %s --input-file %t.out
// RUN: filecheck %s --input-file %t.err --check-prefix=ERR

// Names are per chunk: @a is defined in two chunks without a redefinition error.
// CHECK:      func.func @a() {
// CHECK:      // -----
// CHECK:      func.func @a() -> i32 {
// CHECK:      // -----
// CHECK-NEXT: // -----
// CHECK:      func.func @last() {
func.func @a() {
  func.return
}

// -----

func.func @a() -> i32 {
  %0 = pto.get_lane_id : i32
  func.return %0 : i32
}

// -----

// ERR: split-input-file.mlir:[[# @LINE + 2]]:3: error: 'pto.get_block_dim' op dimension must be 0, 1 or 2, got 5
func.func @bad() -> i32 {
  %0 = pto.get_block_dim 5 : i32
  func.return %0 : i32
}

// -----

func.func @last() {
  func.return
}
