// RUN: pypto-opt %s | filecheck %s
// Round trip: the printed form parses back to the same text.
// RUN: pypto-opt %s | pypto-opt | filecheck %s
// The generic form too.
// RUN: pypto-opt %s --print-op-generic | pypto-opt | filecheck %s

// One of each family of tile vector instructions (docs/isa.md#tile-vector-instructions).
// CHECK-LABEL: func.func @softmax_rows
// CHECK:         %t = pto.alloc_local shape(16, 64) : !pto.l1buf<1024xf32>
// CHECK-NEXT:    %m = pto.alloc_local shape(16, 1) : !pto.l1buf<16xf32>
// CHECK-NEXT:    pto.trowmax %m, %t shape(16, 64) : !pto.l1buf<16xf32>, !pto.l1buf<1024xf32>
// CHECK-NEXT:    pto.trowexpandexpdif %t, %t, %m shape(16, 64) : !pto.l1buf<1024xf32>, !pto.l1buf<1024xf32>, !pto.l1buf<16xf32>
// CHECK-NEXT:    pto.trowsum %m, %t shape(16, 64) : !pto.l1buf<16xf32>, !pto.l1buf<1024xf32>
// CHECK-NEXT:    pto.trowexpanddiv %t, %t, %m shape(16, 64) : !pto.l1buf<1024xf32>, !pto.l1buf<1024xf32>, !pto.l1buf<16xf32>
func.func @softmax_rows() {
  %t = pto.alloc_local shape(16, 64) : !pto.l1buf<1024xf32>
  %m = pto.alloc_local shape(16, 1) : !pto.l1buf<16xf32>
  pto.trowmax %m, %t shape(16, 64) : !pto.l1buf<16xf32>, !pto.l1buf<1024xf32>
  pto.trowexpandexpdif %t, %t, %m shape(16, 64) : !pto.l1buf<1024xf32>, !pto.l1buf<1024xf32>, !pto.l1buf<16xf32>
  pto.trowsum %m, %t shape(16, 64) : !pto.l1buf<16xf32>, !pto.l1buf<1024xf32>
  pto.trowexpanddiv %t, %t, %m shape(16, 64) : !pto.l1buf<1024xf32>, !pto.l1buf<1024xf32>, !pto.l1buf<16xf32>
  func.return
}

// Comparison, select, conversion with a rounding mode, iota, transpose, a scalar operand.
// CHECK-LABEL: func.func @the_rest
// CHECK:         pto.tcmp %mask, %a, %b "lt" shape(8, 32)
// CHECK-NEXT:    pto.tsel %a, %mask, %a, %b shape(8, 32)
// CHECK-NEXT:    pto.tcvt %h, %a "rz" shape(8, 32) : !pto.l1buf<256xf16>, !pto.l1buf<256xf32>
// CHECK-NEXT:    pto.tci %i, %start shape(8, 32) : !pto.l1buf<256xi32>, i32
// CHECK-NEXT:    pto.ttrans %b, %a shape(8, 32)
// CHECK-NEXT:    pto.taxpy %b, %a, %s shape(8, 32)
func.func @the_rest(%s: f32, %start: i32) {
  %a = pto.alloc_local shape(8, 32) : !pto.l1buf<256xf32>
  %b = pto.alloc_local : !pto.l1buf<256xf32>
  %mask = pto.alloc_local shape(8, 32) : !pto.l1buf<256xi32>
  %h = pto.alloc_local shape(8, 32) : !pto.l1buf<256xf16>
  %i = pto.alloc_local shape(8, 32) : !pto.l1buf<256xi32>
  pto.tcmp %mask, %a, %b "lt" shape(8, 32) : !pto.l1buf<256xi32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  pto.tsel %a, %mask, %a, %b shape(8, 32) : !pto.l1buf<256xf32>, !pto.l1buf<256xi32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  pto.tcvt %h, %a "rz" shape(8, 32) : !pto.l1buf<256xf16>, !pto.l1buf<256xf32>
  pto.tci %i, %start shape(8, 32) : !pto.l1buf<256xi32>, i32
  pto.ttrans %b, %a shape(8, 32) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  pto.taxpy %b, %a, %s shape(8, 32) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, f32
  func.return
}
