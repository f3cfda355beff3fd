// The native passes and --emit=llvm on what they cannot lower: located diagnostics (exit 1),
// never a traceback.
// RUN: not pypto-opt %s -p pto-simt-to-lanes 2>&1 | filecheck %s --check-prefix=NOTCOMPILED
// RUN: not pypto-opt %s --emit=llvm 2>&1 | filecheck %s --check-prefix=NOTCOMPILED
// RUN: not pypto-opt %s -p convert-pto-to-llvm 2>&1 | filecheck %s --check-prefix=ORDER

// A barrier in a `while` loop's condition region cannot be split into phases (the body can,
// docs/native.md#while-loops): the kernel stays on the interpreter, with the reason at the loop.
// NOTCOMPILED: :{{[0-9]+}}:{{[0-9]+}}: error: {{.*}}kernel 'spin' is not compiled by the native backend: here: a barrier or L1 write in the condition of a while loop (the native backend splits its body only); run it on the interpreter
// ORDER: error: convert-pto-to-llvm: function 'spin' is not a lane or grid function; run pto-simt-to-lanes and convert-scf-to-cf first

func.func @spin(%a: !pto.ptr<i32, global> {pto.noalias}, %n: i32) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %z = arith.constant 0 : i32
  %r = scf.while (%v = %z) : (i32) -> i32 {
    pto.barrier
    %more = arith.cmpi slt, %v, %i : i32
    scf.condition(%more) %v : i32
  } do {
  ^bb0(%w: i32):
    %one = arith.constant 1 : i32
    %next = arith.addi %w, %one : i32
    scf.yield %next : i32
  }
  %p = pto.addptr %a, %i : !pto.ptr<i32, global>, i32 -> !pto.ptr<i32, global>
  pto.store %r, %p : i32, !pto.ptr<i32, global>
  func.return
}
