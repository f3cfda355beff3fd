// RUN: pypto-opt %s -p cse | filecheck %s
// RUN: pypto-opt %s -p canonicalize,cse | filecheck %s --check-prefix=CANON

// pypto's `cse` (xDSL's decisions in linear time; pypto/passes/cse.py). Which ops write memory
// comes from the ops' declared effects (pypto/dialects/traits.py).

// Identical loads with no write in between merge; a store ends the stretch.
// CHECK-LABEL: func.func @loads
// CHECK-NEXT:    %x = pto.load %a
// CHECK-NEXT:    %s = arith.addf %x, %x
// CHECK-NEXT:    pto.store %s, %o
// CHECK-NEXT:    %z = pto.load %a
// CHECK-NEXT:    func.return %s, %z
func.func @loads(%a: !pto.ptr<f32, global>, %o: !pto.ptr<f32, global>) -> (f32, f32) {
  %x = pto.load %a : !pto.ptr<f32, global> -> f32
  %y = pto.load %a : !pto.ptr<f32, global> -> f32
  %s = arith.addf %x, %y : f32
  pto.store %s, %o : f32, !pto.ptr<f32, global>
  %z = pto.load %a : !pto.ptr<f32, global> -> f32
  func.return %s, %z : f32, f32
}

// An `scf.if` that only reads is no write; one that stores is.
// CHECK-LABEL: func.func @through_ifs
// CHECK:         %x = pto.load %a
// CHECK:         scf.if %c
// CHECK:         scf.if %c
// CHECK:           pto.store
// CHECK:         %z = pto.load %a
// CHECK-NEXT:    func.return %x, %r, %z
func.func @through_ifs(%a: !pto.ptr<f32, global>, %o: !pto.ptr<f32, global>, %c: i1)
    -> (f32, f32, f32) {
  %x = pto.load %a : !pto.ptr<f32, global> -> f32
  %r = scf.if %c -> (f32) {
    %in = pto.load %o : !pto.ptr<f32, global> -> f32
    scf.yield %in : f32
  } else {
    scf.yield %x : f32
  }
  %y = pto.load %a : !pto.ptr<f32, global> -> f32
  scf.if %c {
    pto.store %y, %o : f32, !pto.ptr<f32, global>
  }
  %z = pto.load %a : !pto.ptr<f32, global> -> f32
  func.return %y, %r, %z : f32, f32, f32
}

// The bulk copies declare their effects: a tile store to HBM separates two loads of it, a
// wait orders everything; two identical allocations are two buffers.
// CHECK-LABEL: func.func @copies
// CHECK:         %b1 = pto.alloc_local
// CHECK-NEXT:    %b2 = pto.alloc_local
// CHECK:         %x = pto.load %a
// CHECK-NEXT:    pto.tile_store %a, %b1
// CHECK-NEXT:    %y = pto.load %a
// CHECK-NEXT:    %t = pto.async_load %b2, %a
// CHECK-NEXT:    pto.wait %t
// CHECK-NEXT:    %z = pto.load %a
func.func @copies(%a: !pto.ptr<f32, global>) -> (f32, f32, f32) {
  %b1 = pto.alloc_local : !pto.l1buf<256xf32>
  %b2 = pto.alloc_local : !pto.l1buf<256xf32>
  %n = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %x = pto.load %a : !pto.ptr<f32, global> -> f32
  pto.tile_store %a, %b1, %n rows %one strides(%len, %len)
      : !pto.ptr<f32, global>, !pto.l1buf<256xf32>
  %y = pto.load %a : !pto.ptr<f32, global> -> f32
  %t = pto.async_load %b2, %a, %n rows %one strides(%len, %len)
      : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  pto.wait %t
  %z = pto.load %a : !pto.ptr<f32, global> -> f32
  func.return %x, %y, %z : f32, f32, f32
}

// An empty stage that a later stage runs after is kept (it orders that stage); an empty stage
// nobody waits for has no effect and goes.
// CANON-LABEL: func.func @stages
// CANON:         pto.pipeline {
// CANON-NEXT:      pto.stage "first" {
// CANON-NEXT:        pto.yield
// CANON-NEXT:      }
// CANON-NEXT:      pto.stage "second" after ["first"] {
// CANON-NEXT:        pto.wait_all
// CANON-NEXT:        pto.yield
// CANON-NEXT:      }
// CANON-NEXT:      pto.yield
// CANON-NEXT:    }
func.func @stages() {
  pto.pipeline {
    pto.stage "first" {
      pto.yield
    }
    pto.stage "second" after ["first"] {
      pto.wait_all
      pto.yield
    }
    pto.stage "unused" {
      pto.yield
    }
    pto.yield
  }
  func.return
}
