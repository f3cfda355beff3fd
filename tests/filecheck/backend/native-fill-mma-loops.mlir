// RUN: pypto-opt %s -p pto-simt-to-lanes,convert-scf-to-cf,convert-pto-to-llvm | filecheck %s

// A block-level fill (docs/native.md#collectives, pypto/backend/native/fill_loops.py) becomes a
// guarded store loop: taken when no error is recorded, count > 0 and the destination in
// bounds (a float32 value rounded from the callback's float64, as NumPy's cast); else the
// collectives callback, which raises the interpreter's error. An int32 mma
// (pypto/backend/native/mma_calls.py) becomes loops into a malloc'ed scratch tile, then
// C += T; its callback stays for an out-of-bounds tile.
builtin.module {
  func.func @fm(%o: !pto.ptr<i32, global> {pto.noalias}, %v: f32) attributes {pto.kernel} {
    %tf = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<64xf32>
    %ta = pto.alloc_local {offset = 256 : i64} : !pto.l1buf<64xi32>
    %tc = pto.alloc_local {offset = 512 : i64} : !pto.l1buf<64xi32>
    %n = arith.constant 64 : i32
    pto.fill %tf, %v, %n : !pto.l1buf<64xf32>, f32
    %one = arith.constant 1 : i32
    pto.fill %ta, %one, %n : !pto.l1buf<64xi32>, i32
    pto.fill %tc, %one, %n : !pto.l1buf<64xi32>, i32
    pto.mma %tc, %ta, %ta shape(8, 8, 8) : !pto.l1buf<64xi32>, !pto.l1buf<64xi32>, !pto.l1buf<64xi32>
    %i = pto.get_local_id 0 : i32
    %p = pto.addptr %tc, %i : !pto.l1buf<64xi32>, i32 -> !pto.ptr<i32, local>
    %x = pto.load %p : !pto.ptr<i32, local> -> i32
    %q = pto.addptr %o, %i : !pto.ptr<i32, global>, i32 -> !pto.ptr<i32, global>
    pto.store %x, %q : i32, !pto.ptr<i32, global>
    func.return
  }
}

// CHECK: llvm.func @fm(
// The float32 fill: its callback in the slow path, the value rounded from float64, a store loop.
// CHECK: llvm.fptrunc %{{.*}} : f64 to f32
// CHECK: llvm.call @pypto_native_collective(
// CHECK: llvm.store %{{.*}} : f32, !llvm.ptr
// The int32 fills: the value itself.
// CHECK: llvm.call @pypto_native_collective(
// CHECK: llvm.store %one, %{{.*}} : i32, !llvm.ptr
// CHECK: llvm.call @pypto_native_collective(
// CHECK: llvm.store %one, %{{.*}} : i32, !llvm.ptr
// The int32 mma: callback for errors, else a scratch tile, wrapping products and sums, C += T.
// CHECK: llvm.call @pypto_native_collective(
// CHECK: llvm.call @pypto_native_malloc(
// CHECK: llvm.mul %{{.*}} : i32
// CHECK: llvm.add %{{.*}} : i32
// CHECK: llvm.add %{{.*}} : i32
// CHECK: llvm.call @pypto_native_free(
// CHECK-NOT: llvm.call @pypto_native_sgemm(
