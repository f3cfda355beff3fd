// -o writes the output to a file and nothing to stdout.
// RUN: pypto-opt %s -o %t.out > %t.stdout
// RUN: filecheck %s --input-file %t.out
// RUN: diff %t.stdout /dev/null

// No file, or '-', reads stdin.
// RUN: pypto-opt < %s | filecheck %s
// RUN: pypto-opt - < %s | filecheck %s

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%{{.*}}: !pto.ptr<f32, global>) attributes {pto.kernel} {
// CHECK-NEXT:     pto.barrier_block
// CHECK-NEXT:     func.return
func.func @k(%p: !pto.ptr<f32, global>) attributes {pto.kernel} {
  pto.barrier_block
  func.return
}
