// The module records the passes that ran on it (pto.passes, docs/pypto-opt.md#passes-already-run).
// Running a transforming pass again warns, naming the fix; the IR is still printed.
// RUN: pypto-opt %s -p 'pto-double-buffer{stages=3}' 2> %t.err | filecheck %s --check-prefix=RECORD
// RUN: filecheck %s --check-prefix=WARN --input-file %t.err
// --strict makes it an error: exit status 1, no traceback, no IR.
// RUN: not pypto-opt %s -p 'pto-double-buffer{stages=3}' --strict > %t.out 2> %t.strict
// RUN: filecheck %s --check-prefix=STRICT --input-file %t.strict
// RUN: diff %t.out /dev/null
// Cleanups and checks (rerun_safe) run again without a word, and are recorded too.
// RUN: pypto-opt %s -p canonicalize,cse,pto-verify-barriers 2> %t.safe | filecheck %s --check-prefix=SAFE
// RUN: diff %t.safe /dev/null
// A pass given twice in one pipeline is a second run too.
// RUN: pypto-opt %s -p 'pto-allocate-l1,pto-allocate-l1' 2>&1 >/dev/null | filecheck %s --check-prefix=TWICE

// RECORD: builtin.module attributes {pto.passes = ["pto-double-buffer", "canonicalize", "pto-double-buffer{stages=3}"]} {
// WARN: passes-already-run.mlir:[[# @LINE + 5]]:1: warning: pass 'pto-double-buffer' already ran on this IR (recorded in pto.passes as 'pto-double-buffer');
// WARN-SAME: to get the IR before the pipeline, use pto.compile(..., pipeline="").mlir and run the passes on that (--strict makes this an error)
// STRICT: passes-already-run.mlir:[[# @LINE + 3]]:1: error: pass 'pto-double-buffer' already ran on this IR
// STRICT-NOT: Traceback
// SAFE: builtin.module attributes {pto.passes = ["pto-double-buffer", "canonicalize", "canonicalize", "cse", "pto-verify-barriers"]} {
builtin.module attributes {pto.passes = ["pto-double-buffer", "canonicalize"]} {
  func.func @k(%p: !pto.ptr<f32, global>) attributes {pto.kernel} {
    %i = pto.get_global_id 0 : i32
    %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    %v = pto.load %q : !pto.ptr<f32, global> -> f32
    pto.store %v, %q : f32, !pto.ptr<f32, global>
    func.return
  }
}
// TWICE: warning: pass 'pto-allocate-l1' already ran on this IR (recorded in pto.passes as 'pto-allocate-l1{{.*}}')
