// The native passes and --emit=llvm on what they cannot lower: located diagnostics (exit 1),
// never a traceback.
// RUN: not pypto-opt %s -p pto-simt-to-lanes 2>&1 | filecheck %s --check-prefix=NOTCOMPILED
// RUN: not pypto-opt %s --emit=llvm 2>&1 | filecheck %s --check-prefix=NOTCOMPILED
// RUN: not pypto-opt %s -p convert-pto-to-llvm 2>&1 | filecheck %s --check-prefix=ORDER

// NOTCOMPILED: :{{[0-9]+}}:{{[0-9]+}}: error: {{.*}}kernel 'block_reverse' is not compiled by the native backend: here: 'pto.barrier_block' is not compiled by the native backend yet; run it on the interpreter
// ORDER: error: convert-pto-to-llvm: function 'block_reverse' is not a lane or grid function; run pto-simt-to-lanes and convert-scf-to-cf first

func.func @block_reverse(%a: !pto.ptr<f32, global> {pto.noalias}, %o: !pto.ptr<f32, global> {pto.noalias}) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %p = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %p : !pto.ptr<f32, global> -> f32
  pto.barrier_block
  %q = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  pto.store %v, %q : f32, !pto.ptr<f32, global>
  func.return
}
