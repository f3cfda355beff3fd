// The native passes and --emit=llvm on what they cannot lower: located diagnostics (exit 1),
// never a traceback.
// RUN: not pypto-opt %s -p pto-simt-to-lanes 2>&1 | filecheck %s --check-prefix=NOTCOMPILED
// RUN: not pypto-opt %s --emit=llvm 2>&1 | filecheck %s --check-prefix=NOTCOMPILED
// RUN: not pypto-opt %s -p convert-pto-to-llvm 2>&1 | filecheck %s --check-prefix=ORDER

// A barrier in a `for` loop whose trip count depends on the lane cannot be split into phases
// (a uniform `for` and any `while` can, docs/native.md#while-loops): the kernel stays on the
// interpreter, with the reason at the loop.
// NOTCOMPILED: :{{[0-9]+}}:{{[0-9]+}}: error: {{.*}}kernel 'spin' is not compiled by the native backend: here: a barrier or L1 write inside a for loop whose bounds depend on the lane; run it on the interpreter
// ORDER: error: convert-pto-to-llvm: function 'spin' is not a lane or grid function; run pto-simt-to-lanes and convert-scf-to-cf first

func.func @spin(%a: !pto.ptr<i32, global> {pto.noalias}, %n: i32) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %r = scf.for %k = %z to %i step %one iter_args(%v = %z) -> (i32) : i32 {
    pto.barrier
    %next = arith.addi %v, %one : i32
    scf.yield %next : i32
  }
  %p = pto.addptr %a, %i : !pto.ptr<i32, global>, i32 -> !pto.ptr<i32, global>
  pto.store %r, %p : i32, !pto.ptr<i32, global>
  func.return
}
