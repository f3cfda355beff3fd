// RUN: pypto-opt %s -p pto-simt-to-lanes | filecheck %s --check-prefix=GRID
// RUN: pypto-opt %s -p pto-simt-to-lanes,convert-scf-to-cf,convert-pto-to-llvm | filecheck %s --check-prefix=LLVM

// Tile vector instructions (docs/native.md#tile-vector-instructions) run once per block in the
// grid function: a simple one (tadds on tiles that are pto.alloc_local themselves) becomes a
// loop nest of unchecked L1 loads and stores with the lanes' arith op; trowsum a loop per fold
// step on a scratch line (an alloca hoisted to the entry); texp a loop widening the elements
// into a float64 scratch array, one call of NumPy's float64 loop (declared at the top: the
// interpreter's definition) per 1,024 elements, a loop rounding the results; trowmax a loop per row with arith.maximumf and a NaN flag, and, when
// the tile held a NaN, the call of the tile callback (the interpreter's NumPy definition, each
// tile as (buffer address, element offset)).
builtin.module {
  func.func @t(%o: !pto.ptr<f32, global> {pto.noalias}) attributes {pto.kernel} {
    %x = pto.alloc_local {offset = 0 : i64, shape = array<i64: 4, 8>} : !pto.l1buf<32xf32>
    %y = pto.alloc_local {offset = 128 : i64, shape = array<i64: 4, 8>} : !pto.l1buf<32xf32>
    %s = pto.alloc_local {offset = 256 : i64, shape = array<i64: 4, 1>} : !pto.l1buf<4xf32>
    %one = arith.constant 1.000000e+00 : f32
    pto.texpands %x, %one shape(4, 8) : !pto.l1buf<32xf32>, f32
    pto.tadds %y, %x, %one shape(4, 8) : !pto.l1buf<32xf32>, !pto.l1buf<32xf32>, f32
    pto.texp %y, %y shape(4, 8) : !pto.l1buf<32xf32>, !pto.l1buf<32xf32>
    pto.trowmax %s, %y shape(4, 8) : !pto.l1buf<4xf32>, !pto.l1buf<32xf32>
    pto.trowsum %s, %y shape(4, 8) : !pto.l1buf<4xf32>, !pto.l1buf<32xf32>
    %bytes = arith.constant 16 : i32
    %rows = arith.constant 1 : i32
    %len = arith.constant 4 : i32
    pto.tile_store %o, %s, %bytes rows %rows strides(%len, %len) : !pto.ptr<f32, global>, !pto.l1buf<4xf32>
    func.return
  }
}

// GRID: llvm.func @pypto_numpy_exp(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// GRID: func.func @t(
// GRID: llvm.alloca
// GRID: scf.for
// GRID: scf.for
// GRID: pto.store {{.*}}pto.native_unchecked
// GRID: arith.addf
// GRID-NOT: pto.texp
// GRID: arith.extf {{.*}} : f32 to f64
// GRID: llvm.call @pypto_numpy_exp(
// GRID: arith.truncf {{.*}} : f64 to f32
// GRID: arith.maximumf
// GRID: arith.cmpf uno
// GRID: scf.if
// GRID-NEXT: pto.trowmax
// GRID-NOT: pto.trowsum
// GRID: pto.tile_store

// LLVM: llvm.func @pypto_native_tile(!llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, i64, f64) -> i32
// LLVM: llvm.func @t(
// LLVM: llvm.call @pypto_numpy_exp(
// LLVM-COUNT-1: llvm.call @pypto_native_tile(
// LLVM-NOT: llvm.call @pypto_native_tile(
