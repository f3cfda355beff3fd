// When the slots do not fit the target's L1, fewer stages are used and a remark says so.
// RUN: pypto-opt %s -p 'pto-double-buffer{stages=3 l1-bytes=12288 target="%S/Inputs/fusion-none.toml"}' 2>/dev/null | filecheck %s
// RUN: pypto-opt %s -p 'pto-double-buffer{stages=3 l1-bytes=12288 target="%S/Inputs/fusion-none.toml"}' --verify-diagnostics
// RUN: pypto-opt %s -p 'pto-double-buffer{l1-bytes=8192 target="%S/Inputs/fusion-none.toml"}' 2>/dev/null | filecheck %s --check-prefix=SINGLE
// RUN: pypto-opt %s -p 'pto-double-buffer{l1-bytes=8192 target="%S/Inputs/fusion-none.toml"}' 2>&1 >/dev/null | filecheck %s --check-prefix=SINGLE-REMARK

// A 4 KiB accumulator and two 2 KiB tiles: 3 slots each need 4 + 6 + 6 = 16 KiB, 2 slots 12 KiB,
// single buffers 8 KiB.
// CHECK:     pto.alloc_local {pto.slots = 2 : i64} : !pto.l1buf<1024xf32>
// CHECK:     pto.alloc_local {pto.slots = 2 : i64} : !pto.l1buf<1024xf32>
// SINGLE-NOT: pto.slots
// SINGLE:     pto.pipeline
// SINGLE-REMARK: remark: pto-double-buffer: loop: requested 2 stages, only 1 fits in 8 KiB of L1 (2 stages need 12 KiB); the loop stays single-buffered
func.func @matmul(%A: !pto.ptr<f32, global>, %B: !pto.ptr<f32, global>, %K: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %nbytes = arith.constant 2048 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 512 : i32
  %acc = pto.alloc_local : !pto.l1buf<1024xf32>
  // expected-remark @+2 {{requested 3 stages, only 2 fit in 12 KiB of L1 (3 stages need 16 KiB)}}
  // expected-remark @+1 {{2 slots for 'a', 'b'; loads run 1 iteration ahead}}
  scf.for %k = %c0 to %K step %c32 : i32 {
    pto.pipeline {
      %ta, %tb = pto.stage "load" -> (!pto.l1buf<512xf32>, !pto.l1buf<512xf32>) {
        %a = pto.alloc_local : !pto.l1buf<512xf32>
        %sa = pto.addptr %A, %k : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
        %t1 = pto.async_load %a, %sa, %nbytes rows %one strides(%len, %len) : !pto.l1buf<512xf32>, !pto.ptr<f32, global>
        %b = pto.alloc_local : !pto.l1buf<512xf32>
        %sb = pto.addptr %B, %k : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
        %t2 = pto.async_load %b, %sb, %nbytes rows %one strides(%len, %len) : !pto.l1buf<512xf32>, !pto.ptr<f32, global>
        pto.yield %a, %b : !pto.l1buf<512xf32>, !pto.l1buf<512xf32>
      }
      pto.stage "compute" after ["load"] {
        pto.wait_all
        pto.mma %acc, %ta, %tb shape(32, 32, 16) : !pto.l1buf<1024xf32>, !pto.l1buf<512xf32>, !pto.l1buf<512xf32>
        pto.yield
      }
      pto.yield
    }
  }
  func.return
}
