// RUN: pypto-opt %s -p pto-simt-to-lanes | filecheck %s --check-prefix=GRID
// RUN: pypto-opt %s -p pto-simt-to-lanes,convert-scf-to-cf,convert-pto-to-llvm | filecheck %s --check-prefix=LLVM

// Block-level instructions (docs/native.md#collectives) run once per block in the grid
// function, between the lane loops of the phases: the fill, the copy (complete at issue, so
// its wait has nothing left to do and disappears) and the mma; then each becomes a call of
// the runtime's collectives callback, its pointers as (element pointer, count, offset).
builtin.module {
  func.func @mm(%a: !pto.ptr<f32, global> {pto.noalias}, %b: !pto.ptr<f32, global> {pto.noalias}, %o: !pto.ptr<f32, global> {pto.noalias}) attributes {pto.kernel} {
    %ta = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<64xf32>
    %tb = pto.alloc_local {offset = 256 : i64} : !pto.l1buf<64xf32>
    %tc = pto.alloc_local {offset = 512 : i64} : !pto.l1buf<64xf32>
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant 64 : i32
    pto.fill %tc, %zero, %n : !pto.l1buf<64xf32>, f32
    %bytes = arith.constant 256 : i32
    %rows = arith.constant 8 : i32
    %t1 = pto.async_load %ta, %a, %bytes rows %rows strides(%rows, %rows) : !pto.l1buf<64xf32>, !pto.ptr<f32, global>
    %t2 = pto.async_load %tb, %b, %bytes rows %rows strides(%rows, %rows) : !pto.l1buf<64xf32>, !pto.ptr<f32, global>
    pto.wait %t1
    pto.wait %t2
    pto.mma %tc, %ta, %tb shape(8, 8, 8) : !pto.l1buf<64xf32>, !pto.l1buf<64xf32>, !pto.l1buf<64xf32>
    %i = pto.get_local_id 0 : i32
    %p = pto.addptr %tc, %i : !pto.l1buf<64xf32>, i32 -> !pto.ptr<f32, local>
    %v = pto.load %p : !pto.ptr<f32, local> -> f32
    %q = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    pto.store %v, %q : f32, !pto.ptr<f32, global>
    func.return
  }
}

// GRID: func.func private @mm.p0.lane(
// GRID: pto.load
// GRID: func.func @mm(
// GRID: pto.fill
// GRID: pto.async_load
// GRID: pto.async_load
// GRID-NOT: pto.wait
// GRID: pto.mma
// GRID: func.call @mm.p0.lane

// LLVM: llvm.func @pypto_native_collective(!llvm.ptr, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, i64, i64, i64, i64, f64) -> i32
// LLVM: llvm.func @mm(
// LLVM-COUNT-4: llvm.call @pypto_native_collective(
