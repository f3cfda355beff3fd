// RUN: pypto-opt %s -p pto-simt-to-lanes,convert-scf-to-cf,convert-pto-to-llvm | filecheck %s

// A block-level copy (docs/native.md#collectives, pypto/backend/native/copy_loops.py) becomes
// a guarded loop of one llvm.memcpy per row: taken when no error is recorded, rows > 0, nbytes
// a whole number of rows, strides not shorter than a row and both regions in bounds; any
// other case calls the collectives callback, which raises the interpreter's error.
builtin.module {
  func.func @copy(%a: !pto.ptr<f32, global> {pto.noalias}, %o: !pto.ptr<f32, global> {pto.noalias}, %stride: i32) attributes {pto.kernel} {
    %ta = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<64xf32>
    %bytes = arith.constant 256 : i32
    %rows = arith.constant 8 : i32
    %t1 = pto.async_load %ta, %a, %bytes rows %rows strides(%stride, %rows) : !pto.l1buf<64xf32>, !pto.ptr<f32, global>
    pto.wait %t1
    %i = pto.get_local_id 0 : i32
    %p = pto.addptr %ta, %i : !pto.l1buf<64xf32>, i32 -> !pto.ptr<f32, local>
    %v = pto.load %p : !pto.ptr<f32, local> -> f32
    %q = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    pto.store %v, %q : f32, !pto.ptr<f32, global>
    func.return
  }
}

// CHECK: llvm.func @copy(
// CHECK: llvm.icmp "sgt"
// CHECK: llvm.srem
// CHECK: llvm.icmp "sle"
// CHECK: llvm.cond_br %{{.*}}, ^[[LOOP:bb[0-9]+]](%{{.*}} : i64), ^[[SLOW:bb[0-9]+]]
// CHECK: ^[[SLOW]]:
// CHECK-NEXT: llvm.call @pypto_native_collective(
// CHECK: ^[[LOOP]](%[[R:.*]]: i64):
// CHECK: llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(
// CHECK: llvm.icmp "slt"
// CHECK-NEXT: llvm.cond_br %{{.*}}, ^[[LOOP]](%{{.*}} : i64), ^{{bb[0-9]+}}
