// RUN: pypto-opt %s -p pto-simt-to-lanes | filecheck %s --check-prefix=PHASES
// RUN: pypto-opt %s -p pto-simt-to-lanes,convert-scf-to-cf,convert-pto-to-llvm | filecheck %s --check-prefix=LLVM
// RUN: pypto-opt %s -p pto-simt-to-lanes | filecheck %s --check-prefix=FAST

// Fast phases (docs/native.md#fast-phases): each phase also gets a fast lane function (its
// lane-affine accesses unchecked) and a range function; the grid function calls the range
// function with the lanes along x the phase's guard admits (`tid < s`: [0, min(s, block)))
// and runs the fast lane loop, or else the checked one.
// FAST: func.func private @tree.p1.fast.lane(
// FAST: pto.load %q {pto.native_unchecked}
// FAST: pto.load %r {pto.native_unchecked}
// FAST: func.func @tree.p1.range({{.*}}) -> i32 attributes {pto.native_range}
// FAST: func.func @tree(
// FAST: %[[OK:.*]] = func.call @tree.p1.range(
// FAST: arith.cmpi ne, %[[OK]]
// FAST: func.call @tree.p1.fast.lane(
// FAST: } else {
// FAST: func.call @tree.p1.lane(

// Phase splitting (docs/native.md#phases): the L1 store ends the first phase (p0, which
// reads no L1), the barrier ends the next; the tree loop has uniform bounds, so it runs at block
// level in the grid function with each phase of its body a lane loop; `tid < s` is
// lane-dependent, so its body is guard-split (p1 loads, p2 stores — a phase of its own, since
// p1 reads L1 — both under the condition).
// The loaded values cross phases in spill slots (the addition, pure, is recomputed where
// used); `s` (uniform) is carried by the
// block-level loop and passed to the phases that use it.
builtin.module {
  func.func @tree(%x: !pto.ptr<f32, global> {pto.noalias}, %o: !pto.ptr<f32, global> {pto.noalias}) attributes {pto.kernel} {
    %tid = pto.get_local_id 0 : i32
    %i = pto.get_global_id 0 : i32
    %buf = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<64xf32>
    %p = pto.addptr %x, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    %v = pto.load %p : !pto.ptr<f32, global> -> f32
    %b = pto.addptr %buf, %tid : !pto.l1buf<64xf32>, i32 -> !pto.ptr<f32, local>
    pto.store %v, %b : f32, !pto.ptr<f32, local>
    pto.barrier_block
    %c0 = arith.constant 0 : i32
    %c6 = arith.constant 6 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %s = scf.for %k = %c0 to %c6 step %c1 iter_args(%s1 = %c32) -> (i32) : i32 {
      %lt = arith.cmpi slt, %tid, %s1 : i32
      scf.if %lt {
        %q = pto.addptr %buf, %tid : !pto.l1buf<64xf32>, i32 -> !pto.ptr<f32, local>
        %a = pto.load %q : !pto.ptr<f32, local> -> f32
        %r = pto.addptr %q, %s1 : !pto.ptr<f32, local>, i32 -> !pto.ptr<f32, local>
        %c = pto.load %r : !pto.ptr<f32, local> -> f32
        %sum = arith.addf %a, %c : f32
        pto.store %sum, %q : f32, !pto.ptr<f32, local>
      }
      pto.barrier_block
      %c2 = arith.constant 2 : i32
      %s2 = arith.divui %s1, %c2 : i32
      scf.yield %s2 : i32
    }
    %z = arith.constant 0 : i32
    %first = arith.cmpi eq, %tid, %z : i32
    scf.if %first {
      %bid = pto.get_block_id 0 : i32
      %out = pto.addptr %o, %bid : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
      %t = pto.load %buf : !pto.l1buf<64xf32> -> f32
      pto.store %t, %out : f32, !pto.ptr<f32, global>
    }
    func.return
  }
}

// PHASES: func.func private @tree.p0.lane({{.*}}, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, {{.*}}) -> i32 attributes {pto.native_arena = {{[0-9]+}} : i64, pto.native_lane}
// PHASES: pto.load
// PHASES: pto.store
// PHASES: func.func private @tree.p1.lane(
// PHASES: scf.if
// PHASES: pto.load
// PHASES: llvm.store
// PHASES: pto.load
// PHASES: llvm.store
// PHASES: func.func private @tree.p2.lane(
// PHASES: llvm.load
// PHASES: llvm.load
// PHASES: %sum = arith.addf
// PHASES: scf.if
// PHASES-NEXT: pto.store %sum
// PHASES: func.func private @tree.p3.lane(
// The grid function records the split's spill slots per lane (the two loaded values p1 passes
// to p2), which the JIT reads instead of splitting the kernel again (docs/native.md#compile-time).
// PHASES: func.func @tree({{.*}}) -> i32 attributes {pto.native_arena = {{[0-9]+}} : i64, pto.native_grid, pto.native_spill_slots = 2 : i64}
// PHASES: func.call @tree.p0.lane
// PHASES: scf.for {{.*}} iter_args
// PHASES: func.call @tree.p1.lane
// PHASES: func.call @tree.p2.lane
// PHASES: arith.divui
// PHASES: scf.yield
// PHASES: func.call @tree.p3.lane

// LLVM: llvm.func internal @tree.p0.lane(
// LLVM: llvm.getelementptr %{{.*}}[0] : (!llvm.ptr) -> !llvm.ptr, i8
// LLVM: llvm.icmp "ult"
// LLVM: llvm.store
// LLVM: llvm.func @tree(
