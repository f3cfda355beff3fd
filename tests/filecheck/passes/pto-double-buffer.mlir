// RUN: pypto-opt %s -p 'pto-double-buffer{target="%S/Inputs/fusion-none.toml"}' --split-input-file 2>/dev/null | filecheck %s
// RUN: pypto-opt %s -p 'pto-double-buffer{stages=3 target="%S/Inputs/fusion-none.toml"}' --split-input-file 2>/dev/null | filecheck %s --check-prefix=THREE
// Every decision is a remark at the loop (or at what stops the rewrite):
// RUN: pypto-opt %s -p 'pto-double-buffer{target="%S/Inputs/fusion-none.toml"}' --split-input-file --verify-diagnostics
// The output is valid, race-free (pto-verify-barriers), and needs no barrier between slots:
// RUN: pypto-opt %s -p 'pto-double-buffer{target="%S/Inputs/fusion-none.toml"},pto-insert-barriers' --split-input-file 2>/dev/null | filecheck %s --check-prefix=NOBARRIER
// NOBARRIER-NOT: pto.barrier_block
// RUN: pypto-opt %s -p 'pto-double-buffer{stages=3 target="%S/Inputs/fusion-none.toml"},pto-verify-barriers' --split-input-file 2>/dev/null

// These cases pin the mechanics of the rewrite for a firmware that fuses nothing
// (Inputs/fusion-none.toml: every load is prefetched); pto-double-buffer-fusion.mlir shows the
// default target, whose firmware fuses a tile load with its MMA.

// In the style of MLIR's loop-pipelining tests: the prologue issues the loads of the first
// iteration(s), the kernel loop issues the loads of iteration it + stages - 1 into slot
// (it + stages - 1) % stages before it waits for the tokens of slot it % stages and computes on
// it, the epilogue computes the last stages - 1 iterations. The trip count is a run-time value.

// The article's matmul: two load stages, a compute stage that waits for everything.
// CHECK-LABEL: func.func @two_loads
// CHECK:         %[[ACC:.*]] = pto.alloc_local : !pto.l1buf<1024xf32>
// CHECK-NEXT:    %[[BA:.*]] = pto.alloc_local {pto.slots = 2 : i64} : !pto.l1buf<2048xf16>
// CHECK-NEXT:    %[[BB:.*]] = pto.alloc_local {pto.slots = 2 : i64} : !pto.l1buf<2048xf16>
// No iteration, nothing at all:
// CHECK-NEXT:    %[[ANY:.*]] = arith.cmpi slt, %c0, %K : i32
// CHECK-NEXT:    scf.if %[[ANY]] {
// CHECK:           %[[TRIPS:.*]] = arith.floordivsi
// Prologue: iteration 0 into slot 0.
// CHECK:           %[[A0:.*]] = pto.addptr %[[BA]], %{{.*}} : !pto.l1buf<2048xf16>, i32 -> !pto.ptr<f16, local>
// CHECK:           %[[B0:.*]] = pto.addptr %[[BB]], %{{.*}} : !pto.l1buf<2048xf16>, i32 -> !pto.ptr<f16, local>
// CHECK:           %[[TA0:.*]] = pto.async_load %[[A0]], %{{.*}} : !pto.ptr<f16, local>, !pto.ptr<f16, global>
// CHECK:           %[[TB0:.*]] = pto.async_load %[[B0]], %{{.*}} : !pto.ptr<f16, local>, !pto.ptr<f16, global>
// Kernel: the tokens of the slot in flight are carried.
// CHECK:           %[[KT:.*]] = arith.subi %[[TRIPS]], %{{.*}} : i32
// CHECK:           %[[RA:.*]], %[[RB:.*]] = scf.for %[[IT:.*]] = %{{.*}} to %[[KT]] step %{{.*}} iter_args(%[[QA:.*]] = %[[TA0]], %[[QB:.*]] = %[[TB0]]) -> (!pto.token, !pto.token) : i32 {
// CHECK:             %[[K:.*]] = arith.addi %c0, %{{.*}} : i32
// CHECK-NEXT:        %[[C32:.*]] = arith.constant 32 : i32
// CHECK-NEXT:        %[[KNEXT:.*]] = arith.addi %[[K]], %[[C32]] : i32
// CHECK:             %[[NEXTSLOT:.*]] = arith.remsi %{{.*}}, %{{.*}} : i32
// CHECK:             %[[AN:.*]] = pto.addptr %[[BA]], %{{.*}}
// CHECK:             %[[BN:.*]] = pto.addptr %[[BB]], %{{.*}}
// CHECK:             %[[SRC:.*]] = pto.addptr %A, %[[KNEXT]]
// CHECK-NEXT:        %[[TA:.*]] = pto.async_load %[[AN]], %[[SRC]]
// CHECK:             %[[TB:.*]] = pto.async_load %[[BN]]
// CHECK-NEXT:        %[[C2:.*]] = arith.constant 2 : i32
// CHECK-NEXT:        %[[SLOT:.*]] = arith.remsi %[[IT]], %[[C2]] : i32
// CHECK:             %[[AC:.*]] = pto.addptr %[[BA]], %{{.*}}
// CHECK:             %[[BC:.*]] = pto.addptr %[[BB]], %{{.*}}
// The wait_all became waits on this slot's tokens (not on the loads just issued):
// CHECK-NEXT:        pto.wait %[[QA]]
// CHECK-NEXT:        pto.wait %[[QB]]
// CHECK-NEXT:        pto.mma %[[ACC]], %[[AC]], %[[BC]] shape(32, 32, 32)
// CHECK-NEXT:        scf.yield %[[TA]], %[[TB]] : !pto.token, !pto.token
// CHECK-NEXT:      }
// Epilogue: the last iteration, no load.
// CHECK-NEXT:      %[[EL:.*]] = arith.maxsi %[[KT]], %{{.*}} : i32
// CHECK-NEXT:      %[[FA:.*]], %[[FB:.*]] = scf.for %[[EIT:.*]] = %[[EL]] to %[[TRIPS]] step %{{.*}} iter_args(%[[EA:.*]] = %[[RA]], %[[EB:.*]] = %[[RB]])
// CHECK-NOT:         pto.async_load
// CHECK:             %[[ESLOT:.*]] = arith.remsi %[[EIT]]
// CHECK:             pto.wait %[[EA]]
// CHECK-NEXT:        pto.wait %[[EB]]
// CHECK-NEXT:        pto.mma %[[ACC]]
// CHECK-NEXT:        scf.yield %[[EA]], %[[EB]]
// CHECK-NEXT:      }
// Nothing is in flight any more; the IR says so (no-op waits):
// CHECK-NEXT:      pto.wait %[[FA]]
// CHECK-NEXT:      pto.wait %[[FB]]
// CHECK-NEXT:    } else {
// CHECK-NEXT:    }
// CHECK-NOT:     pto.wait_all
// CHECK-NOT:     pto.pipeline
// CHECK:         func.return
func.func @two_loads(%A: !pto.ptr<f16, global>, %B: !pto.ptr<f16, global>, %K: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %nbytes = arith.constant 2048 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 1024 : i32
  %acc = pto.alloc_local : !pto.l1buf<1024xf32>
  // expected-remark @+1 {{pto-double-buffer: loop: 2 slots for 'buf', 'buf'; loads run 1 iteration ahead}}
  scf.for %k = %c0 to %K step %c32 : i32 {
    pto.pipeline {
      %a, %ta = pto.stage "load_a" -> (!pto.l1buf<1024xf16>, !pto.token) {
        %buf = pto.alloc_local : !pto.l1buf<1024xf16>
        %src = pto.addptr %A, %k : !pto.ptr<f16, global>, i32 -> !pto.ptr<f16, global>
        %t = pto.async_load %buf, %src, %nbytes rows %one strides(%len, %len) : !pto.l1buf<1024xf16>, !pto.ptr<f16, global>
        pto.yield %buf, %t : !pto.l1buf<1024xf16>, !pto.token
      }
      %b, %tb = pto.stage "load_b" after ["load_a"] -> (!pto.l1buf<1024xf16>, !pto.token) {
        %buf = pto.alloc_local : !pto.l1buf<1024xf16>
        %src = pto.addptr %B, %k : !pto.ptr<f16, global>, i32 -> !pto.ptr<f16, global>
        %t = pto.async_load %buf, %src, %nbytes rows %one strides(%len, %len) : !pto.l1buf<1024xf16>, !pto.ptr<f16, global>
        pto.yield %buf, %t : !pto.l1buf<1024xf16>, !pto.token
      }
      pto.stage "compute" after ["load_b"] {
        pto.wait_all
        pto.mma %acc, %a, %b shape(32, 32, 32) : !pto.l1buf<1024xf32>, !pto.l1buf<1024xf16>, !pto.l1buf<1024xf16>
        pto.yield
      }
      pto.yield
    }
  }
  func.return
}

// -----

// One load stage, a token waited explicitly, a value carried by the loop (the wrapping scf.if
// yields the epilogue's result, or the initial value when there is no iteration).
// CHECK-LABEL: func.func @one_load
// CHECK:         %[[BUF:.*]] = pto.alloc_local {pto.slots = 2 : i64} : !pto.l1buf<512xf32>
// CHECK:         %sum = scf.if %{{.*}} -> (i32) {
// CHECK:           %[[T0:.*]] = pto.async_load
// CHECK:           scf.for %{{.*}} iter_args(%[[Q:.*]] = %[[T0]], %[[ACC:.*]] = %c0) -> (!pto.token, i32)
// CHECK:             %[[T1:.*]] = pto.async_load
// CHECK:             pto.wait %[[Q]]
// CHECK:             %[[A:.*]] = arith.addi %[[ACC]], %c1 : i32
// CHECK-NEXT:        scf.yield %[[T1]], %[[A]] : !pto.token, i32
// CHECK:           %{{.*}}, %[[E:.*]] = scf.for
// CHECK:           scf.yield %[[E]] : i32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %c0 : i32
// CHECK-NEXT:    }

// With three stages: iteration 1 is loaded in the prologue only when it exists (otherwise the
// scf.if hands on the first token, which nothing waits for again); two tokens are in flight
// and rotate through the iter_args.
// THREE-LABEL: func.func @one_load
// THREE:         %[[BUF:.*]] = pto.alloc_local {pto.slots = 3 : i64} : !pto.l1buf<768xf32>
// THREE:         %[[TRIPS:.*]] = arith.floordivsi
// THREE:         %[[T0:.*]] = pto.async_load
// THREE:         %[[HAS1:.*]] = arith.cmpi slt, %{{.*}}, %[[TRIPS]] : i32
// THREE-NEXT:    %[[T1:.*]] = scf.if %[[HAS1]] -> (!pto.token) {
// THREE:           %[[T:.*]] = pto.async_load
// THREE-NEXT:      scf.yield %[[T]] : !pto.token
// THREE-NEXT:    } else {
// THREE-NEXT:      scf.yield %[[T0]] : !pto.token
// THREE-NEXT:    }
// THREE:         scf.for %[[IT:.*]] = %{{.*}} iter_args(%[[Q0:.*]] = %[[T0]], %[[Q1:.*]] = %[[T1]], %{{.*}} = %c0) -> (!pto.token, !pto.token, i32)
// THREE:           %[[TN:.*]] = pto.async_load
// THREE:           %[[C3:.*]] = arith.constant 3 : i32
// THREE-NEXT:      %{{.*}} = arith.remsi %[[IT]], %[[C3]] : i32
// THREE:           pto.wait %[[Q0]]
// THREE:           scf.yield %[[Q1]], %[[TN]], %{{.*}} : !pto.token, !pto.token, i32
// THREE:         scf.for {{.*}} iter_args(%[[E0:.*]] = %{{.*}}, %[[E1:.*]] = %{{.*}}, %{{.*}} = %{{.*}})
// THREE-NOT:       pto.async_load
// THREE:           pto.wait %[[E0]]
// THREE:           scf.yield %[[E1]], %[[E0]], %{{.*}} : !pto.token, !pto.token, i32
func.func @one_load(%x: !pto.ptr<f32, global> {pto.noalias}, %y: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %nbytes = arith.constant 1024 : i32
  %len = arith.constant 256 : i32
  %out = pto.alloc_local : !pto.l1buf<256xf32>
  // expected-remark @+1 {{2 slots for 'buf'; loads run 1 iteration ahead}}
  %sum = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %c0) -> (i32) : i32 {
    %r = pto.pipeline -> (i32) {
      %tile, %t = pto.stage "load" -> (!pto.l1buf<256xf32>, !pto.token) {
        %buf = pto.alloc_local : !pto.l1buf<256xf32>
        %off = arith.muli %k, %len : i32
        %src = pto.addptr %x, %off : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
        %tok = pto.async_load %buf, %src, %nbytes rows %c1 strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
        pto.yield %buf, %tok : !pto.l1buf<256xf32>, !pto.token
      }
      %next = pto.stage "compute" after ["load"] -> (i32) {
        pto.wait %t
        %lid = pto.get_local_id 0 : i32
        %p = pto.addptr %tile, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
        %v = pto.load %p : !pto.ptr<f32, local> -> f32
        %q = pto.addptr %y, %lid : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
        pto.store %v, %q : f32, !pto.ptr<f32, global>
        %a = arith.addi %acc, %c1 : i32
        pto.yield %a : i32
      }
      pto.yield %next : i32
    }
    scf.yield %r : i32
  }
  func.return
}

// -----

// Refused: a recurrence through HBM. Iteration k stores tile k + 1 of x, which iteration k + 1
// loads: issued one iteration ahead, that load would read the old tile (x[k+1] = f(x[k])).
// CHECK-LABEL: func.func @hbm_recurrence
// CHECK:         scf.for
// CHECK-NEXT:      pto.pipeline {
// CHECK-NOT:     pto.slots
func.func @hbm_recurrence(%x: !pto.ptr<f32, global> {pto.noalias}, %n: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %nbytes = arith.constant 1024 : i32
  %len = arith.constant 256 : i32
  scf.for %k = %c0 to %n step %c1 : i32 {
    pto.pipeline {
      %tile, %t = pto.stage "load" -> (!pto.l1buf<256xf32>, !pto.token) {
        %buf = pto.alloc_local : !pto.l1buf<256xf32>
        %off = arith.muli %k, %len : i32
        %src = pto.addptr %x, %off : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
        // expected-remark @+1 {{left as it is: the pto.async_load of the next iteration may read HBM that 'pto.store' of iteration i writes (a dependence through memory)}}
        %tok = pto.async_load %buf, %src, %nbytes rows %c1 strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
        pto.yield %buf, %tok : !pto.l1buf<256xf32>, !pto.token
      }
      pto.stage "compute" after ["load"] {
        pto.wait %t
        %lid = pto.get_local_id 0 : i32
        %p = pto.addptr %tile, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
        %v = pto.load %p : !pto.ptr<f32, local> -> f32
        %k1 = arith.addi %k, %c1 : i32
        %o1 = arith.muli %k1, %len : i32
        %o2 = arith.addi %o1, %lid : i32
        %q = pto.addptr %x, %o2 : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
        pto.store %v, %q : f32, !pto.ptr<f32, global>
        pto.yield
      }
      pto.yield
    }
  }
  func.return
}

// -----

// Refused: without `pto.noalias` (which pto.compile puts on every tensor passed once), two
// pointer parameters may be the same tensor, so the store through %y may write what the next
// load through %x reads.
// CHECK-LABEL: func.func @may_alias
// CHECK:         scf.for
// CHECK-NEXT:      pto.pipeline {
// CHECK-NOT:     pto.slots
func.func @may_alias(%x: !pto.ptr<f32, global>, %y: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %nbytes = arith.constant 1024 : i32
  %len = arith.constant 256 : i32
  scf.for %k = %c0 to %n step %c1 : i32 {
    pto.pipeline {
      %tile, %t = pto.stage "load" -> (!pto.l1buf<256xf32>, !pto.token) {
        %buf = pto.alloc_local : !pto.l1buf<256xf32>
        %off = arith.muli %k, %len : i32
        %src = pto.addptr %x, %off : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
        // expected-remark @+1 {{left as it is: the pto.async_load of the next iteration may read HBM that 'pto.store' of iteration i writes (a dependence through memory)}}
        %tok = pto.async_load %buf, %src, %nbytes rows %c1 strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
        pto.yield %buf, %tok : !pto.l1buf<256xf32>, !pto.token
      }
      pto.stage "compute" after ["load"] {
        pto.wait %t
        %lid = pto.get_local_id 0 : i32
        %p = pto.addptr %tile, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
        %v = pto.load %p : !pto.ptr<f32, local> -> f32
        %q = pto.addptr %y, %lid : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
        pto.store %v, %q : f32, !pto.ptr<f32, global>
        pto.yield
      }
      pto.yield
    }
  }
  func.return
}

// -----

// Refused: the compute stage scales the loaded tile in place, so the next slot's load could not
// be issued ahead of that write. The loop is left exactly as it was.
// CHECK-LABEL: func.func @in_place
// CHECK:         scf.for
// CHECK-NEXT:      pto.pipeline {
// CHECK-NOT:     pto.slots
func.func @in_place(%x: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %nbytes = arith.constant 1024 : i32
  %len = arith.constant 256 : i32
  scf.for %k = %c0 to %n step %c1 : i32 {
    pto.pipeline {
      %tile, %t = pto.stage "load" -> (!pto.l1buf<256xf32>, !pto.token) {
        %buf = pto.alloc_local : !pto.l1buf<256xf32>
        %tok = pto.async_load %buf, %x, %nbytes rows %c1 strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
        pto.yield %buf, %tok : !pto.l1buf<256xf32>, !pto.token
      }
      pto.stage "compute" after ["load"] {
        pto.wait %t
        %lid = pto.get_local_id 0 : i32
        %p = pto.addptr %tile, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
        %v = pto.load %p : !pto.ptr<f32, local> -> f32
        // expected-remark @+1 {{left as it is: buffer 'buf' is filled by a load stage and also written by compute stage 'compute' ('pto.store'); its slots could not be refilled ahead of that write}}
        pto.store %v, %p : f32, !pto.ptr<f32, local>
        pto.yield
      }
      pto.yield
    }
  }
  func.return
}

// -----

// Refused: the load stage runs after the compute stage (a DAG that forbids the overlap).
// CHECK-LABEL: func.func @load_after_compute
// CHECK-NOT:     pto.slots
// CHECK:         pto.pipeline
func.func @load_after_compute(%x: !pto.ptr<f32, global>, %n: i32, %acc: !pto.l1buf<256xf32>) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %nbytes = arith.constant 1024 : i32
  %len = arith.constant 256 : i32
  %f = arith.constant 0.0 : f32
  scf.for %k = %c0 to %n step %c1 : i32 {
    pto.pipeline {
      pto.stage "init" {
        pto.fill %acc, %f, %len : !pto.l1buf<256xf32>, f32
        pto.yield
      }
      // expected-remark @+1 {{left as it is: load stage 'load' runs after compute stage 'init': its loads cannot be issued ahead of that compute}}
      %tile, %t = pto.stage "load" after ["init"] -> (!pto.l1buf<256xf32>, !pto.token) {
        %buf = pto.alloc_local : !pto.l1buf<256xf32>
        %tok = pto.async_load %buf, %x, %nbytes rows %c1 strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
        pto.yield %buf, %tok : !pto.l1buf<256xf32>, !pto.token
      }
      pto.stage "compute" after ["load"] {
        pto.wait_all
        pto.mma %acc, %tile, %tile shape(16, 16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
        pto.yield
      }
      pto.yield
    }
  }
  func.return
}

// -----

// Refused: where the load reads depends on a value the loop carries from one iteration to the
// next (the iteration i + 1 address is not known before iteration i has run).
// CHECK-LABEL: func.func @carried_address
// CHECK-NOT:     pto.slots
func.func @carried_address(%x: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %nbytes = arith.constant 1024 : i32
  %len = arith.constant 256 : i32
  %last = scf.for %k = %c0 to %n step %c1 iter_args(%off = %c0) -> (i32) : i32 {
    %r = pto.pipeline -> (i32) {
      %tile, %t = pto.stage "load" -> (!pto.l1buf<256xf32>, !pto.token) {
        %buf = pto.alloc_local : !pto.l1buf<256xf32>
        %src = pto.addptr %x, %off : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
        // expected-remark @+1 {{left as it is: the pto.async_load depends on 'off', which the loop carries from one iteration to the next}}
        %tok = pto.async_load %buf, %src, %nbytes rows %c1 strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
        pto.yield %buf, %tok : !pto.l1buf<256xf32>, !pto.token
      }
      %next = pto.stage "compute" after ["load"] -> (i32) {
        pto.wait %t
        %n2 = arith.addi %off, %len : i32
        pto.yield %n2 : i32
      }
      pto.yield %next : i32
    }
    scf.yield %r : i32
  }
  func.return
}

// -----

// Refused: a block barrier in the loop body outside the pipeline (only pure ops may sit there).
// CHECK-LABEL: func.func @effects_outside
// CHECK-NOT:     pto.slots
func.func @effects_outside(%x: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %nbytes = arith.constant 1024 : i32
  %len = arith.constant 256 : i32
  scf.for %k = %c0 to %n step %c1 : i32 {
    // expected-remark @+1 {{left as it is: the loop body has 'pto.barrier_block' outside its pto.pipeline; move it into a stage}}
    pto.barrier_block
    pto.pipeline {
      %tile, %t = pto.stage "load" -> (!pto.l1buf<256xf32>, !pto.token) {
        %buf = pto.alloc_local : !pto.l1buf<256xf32>
        %tok = pto.async_load %buf, %x, %nbytes rows %c1 strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
        pto.yield %buf, %tok : !pto.l1buf<256xf32>, !pto.token
      }
      pto.stage "compute" after ["load"] {
        pto.wait %t
        pto.yield
      }
      pto.yield
    }
  }
  func.return
}
