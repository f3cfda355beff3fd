// A pto pass after the native lowering's convert-scf-to-cf: a diagnostic naming the pass and the
// function (found by the fuzzer: pto-allocate-l1 crashed on a function of several blocks).
// RUN: not pypto-opt %s -p 'convert-scf-to-cf,pto-allocate-l1' 2>&1 | filecheck %s
// RUN: not pypto-opt %s -p 'convert-scf-to-cf,cse,pto-double-buffer' 2>&1 | filecheck %s --check-prefix=DB
// RUN: pypto-opt %s -p 'convert-scf-to-cf,cse,canonicalize' | filecheck %s --check-prefix=OK
// The L1 map (liveness) likewise (the fuzzer's emit target, seed 6 input 6659, was a traceback):
// RUN: not pypto-opt %s -p convert-scf-to-cf --emit=l1-map 2>&1 | filecheck %s --check-prefix=MAP
// RUN: not pypto-opt %s -p convert-scf-to-cf --emit=l1-map-svg 2>&1 | filecheck %s --check-prefix=MAP

// CHECK: structured-passes.mlir:[[# @LINE + 6]]:1: error: pass 'pto-allocate-l1' works on structured control flow (scf), but function @helper has 3 blocks (lowered by convert-scf-to-cf?); put the pto passes and analyses before the native backend's lowering passes (docs/native.md#the-pipeline)
// DB: error: pass 'pto-double-buffer' works on structured control flow (scf), but function @helper has 3 blocks
// MAP: structured-passes.mlir:[[# @LINE + 4]]:1: error: the L1 map works on structured control flow (scf), but function @helper has 3 blocks
// MAP-NOT: Traceback
// OK: cf.cond_br
// OK-NOT: error
func.func @helper(%a: !pto.ptr<f32, global>, %c: i1) {
  scf.if %c {
    %v = pto.load %a : !pto.ptr<f32, global> -> f32
    pto.store %v, %a : f32, !pto.ptr<f32, global>
  }
  func.return
}
