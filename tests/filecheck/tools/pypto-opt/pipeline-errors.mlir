// A bad pipeline is reported against the pipeline text, names what is valid, and exits 1
// before any input is read.

// An unknown pass lists the valid ones.
// RUN: not pypto-opt %s -p canonicalize,bogus 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN:      <pass-pipeline>:1:14: error: unknown pass 'bogus'; valid passes: {{.*}}canonicalize{{.*}}cse
// UNKNOWN-NEXT: canonicalize,bogus
// UNKNOWN-NEXT: {{^             \^$}}

// The same in the MLIR form, where the column counts from the start of the text.
// RUN: not pypto-opt %s --pass-pipeline='builtin.module(cse,bogus)' 2>&1 | filecheck %s --check-prefix=LONG
// LONG: <pass-pipeline>:1:20: error: unknown pass 'bogus'

// An unknown option says which options the pass has.
// RUN: not pypto-opt %s -p 'cse{depth=2}' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION: <pass-pipeline>:1:1: error: pass 'cse' has no option 'depth'; it takes no options

// Syntax errors point into the pipeline.
// RUN: not pypto-opt %s -p 'cse,,canonicalize' 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX: <pass-pipeline>:1:5: error: invalid pass pipeline 'cse,,canonicalize': Expected pass name here

// Nested pipelines do not exist in pypto: say so instead of a syntax error.
// RUN: not pypto-opt %s --pass-pipeline='builtin.module(func.func(cse))' 2>&1 | filecheck %s --check-prefix=NESTED
// NESTED: error: nested pass pipelines ('func.func(...)') are not supported

func.func @k() {
  func.return
}
