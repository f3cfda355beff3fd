// RUN: pypto-opt %s -p pto-insert-barriers | filecheck %s
// Idempotence: the pass's output is a fixed point of the pass.
// RUN: pypto-opt %s -p pto-insert-barriers | pypto-opt -p pto-insert-barriers | filecheck %s
// Its output passes the verifier.
// RUN: pypto-opt %s -p pto-insert-barriers,pto-verify-barriers | filecheck %s

// Blocks of 256 lanes (the default block-size): 8 warps of 32.

// The article's pitfall: every lane writes its slot, a lane of another warp reads it. Nothing
// separates them: a block barrier lands right before the read.
// CHECK-LABEL: func.func @raw_across_warps
// CHECK:         pto.store %v, %p
// CHECK-NEXT:    %[[C:.*]] = arith.constant 255 : i32
// CHECK-NEXT:    %[[R:.*]] = arith.subi %[[C]], %lid : i32
// CHECK-NEXT:    %[[Q:.*]] = pto.addptr %buf, %[[R]]
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    %w = pto.load %[[Q]]
func.func @raw_across_warps(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  %c255 = arith.constant 255 : i32
  %r = arith.subi %c255, %lid : i32
  %q = pto.addptr %buf, %r : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %w = pto.load %q : !pto.ptr<f32, local> -> f32
  func.return
}

// A write after a read of another warp's slot (WAR) needs the barrier just as much.
// CHECK-LABEL: func.func @war_across_warps
// CHECK:         %w = pto.load %q
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    pto.store %v, %p
func.func @war_across_warps(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %c128 = arith.constant 128 : i32
  %r = arith.xori %lid, %c128 : i32
  %q = pto.addptr %buf, %r : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %w = pto.load %q : !pto.ptr<f32, local> -> f32
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  func.return
}

// Exchanges that stay inside a warp are ordered by the warp barrier alone: lane ^ 1 and the
// first slot of the lane's own warp. Nothing is inserted, the warp barrier stays.
// CHECK-LABEL: func.func @same_warp_exchange
// CHECK-NOT:     pto.barrier_block
// CHECK:         pto.barrier
// CHECK-NOT:     pto.barrier_block
// CHECK:         func.return
func.func @same_warp_exchange(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.barrier
  %one = arith.constant 1 : i32
  %x = arith.xori %lid, %one : i32
  %q = pto.addptr %buf, %x : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %a = pto.load %q : !pto.ptr<f32, local> -> f32
  %c32 = arith.constant 32 : i32
  %c5 = arith.constant 5 : i32
  %wid = arith.floordivsi %lid, %c32 : i32
  %base = arith.muli %wid, %c32 : i32
  %s = arith.addi %base, %c5 : i32
  %r = pto.addptr %buf, %s : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %b = pto.load %r : !pto.ptr<f32, local> -> f32
  func.return
}

// A warp barrier between the write and the read is upgraded rather than a second barrier
// added next to it.
// CHECK-LABEL: func.func @upgrade_warp_barrier
// CHECK:         pto.store %v, %p
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    %[[C:.*]] = arith.constant 255 : i32
// CHECK-NOT:     pto.barrier
// CHECK:         func.return
func.func @upgrade_warp_barrier(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.barrier
  %c255 = arith.constant 255 : i32
  %r = arith.subi %c255, %lid : i32
  %q = pto.addptr %buf, %r : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %w = pto.load %q : !pto.ptr<f32, local> -> f32
  func.return
}

// A block barrier in one branch of a (uniform) `if` does not order the write before the join
// with the read after it: a barrier goes after the `if`, and the one in the branch, which now
// orders nothing, is removed.
// CHECK-LABEL: func.func @barrier_in_one_branch
// CHECK:         scf.if %flag {
// CHECK-NEXT:      %{{.*}} = arith.constant
// CHECK-NEXT:    }
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    %w = pto.load %q
func.func @barrier_in_one_branch(%v: f32, %flag: i1) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  %c255 = arith.constant 255 : i32
  %r = arith.subi %c255, %lid : i32
  %q = pto.addptr %buf, %r : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  scf.if %flag {
    pto.barrier_block
    %unused = arith.constant 0 : i32
  }
  %w = pto.load %q : !pto.ptr<f32, local> -> f32
  func.return
}

// The read of iteration i + 1 sees the write of iteration i (lane l reads slot l + 1, written
// by the next lane: across a warp boundary at lanes 31/32...). Inside one iteration the read
// comes first, so the only repair is a barrier at the top of the body, before the read...
// and the write after the read (WAR in one iteration) needs its own.
// CHECK-LABEL: func.func @loop_carried
// CHECK:         scf.for
// CHECK-NEXT:      pto.barrier_block
// CHECK-NEXT:      %w = pto.load %q
// CHECK-NEXT:      pto.barrier_block
// CHECK-NEXT:      pto.store %w, %p
// CHECK-NEXT:    }
func.func @loop_carried(%n: i32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<257xf32>
  %lid = pto.get_local_id 0 : i32
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  %p = pto.addptr %buf, %lid : !pto.l1buf<257xf32>, i32 -> !pto.ptr<f32, local>
  %next = arith.addi %lid, %one : i32
  %q = pto.addptr %buf, %next : !pto.l1buf<257xf32>, i32 -> !pto.ptr<f32, local>
  scf.for %i = %zero to %n step %one : i32 {
    %w = pto.load %q : !pto.ptr<f32, local> -> f32
    pto.store %w, %p : f32, !pto.ptr<f32, local>
  }
  func.return
}

// Each iteration writes its own slot and the next one reads only what the same lane wrote:
// there is no hazard across iterations, nothing is inserted.
// CHECK-LABEL: func.func @loop_same_lane
// CHECK-NOT:     pto.barrier_block
// CHECK:         func.return
func.func @loop_same_lane(%n: i32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  scf.for %i = %zero to %n step %one : i32 {
    %w = pto.load %p : !pto.ptr<f32, local> -> f32
    pto.store %w, %p : f32, !pto.ptr<f32, local>
  }
  func.return
}

// A tree reduction: `if tid < s: buf[tid] += buf[tid + s]` with s = 128, 64, ..., 1. The lanes
// that read buf[tid + s] are not those that write it (tid < s), so within one step there is no
// hazard; between steps there is, and the user's barrier at the end of the body is exactly what
// it needs: nothing changes.
// CHECK-LABEL: func.func @tree_reduction
// CHECK:         scf.for
// CHECK:           scf.if
// CHECK:             pto.store
// CHECK-NEXT:      }
// CHECK-NEXT:      pto.barrier_block
// CHECK-NEXT:      %{{.*}} = arith.floordivsi
// CHECK-NEXT:      scf.yield
func.func @tree_reduction(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %tid = pto.get_local_id 0 : i32
  %p = pto.addptr %buf, %tid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.barrier_block
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %eight = arith.constant 8 : i32
  %s0 = arith.constant 128 : i32
  %sf = scf.for %i = %zero to %eight step %one iter_args(%s = %s0) -> (i32) : i32 {
    %active = arith.cmpi slt, %tid, %s : i32
    scf.if %active {
      %a = pto.load %p : !pto.ptr<f32, local> -> f32
      %j = arith.addi %tid, %s : i32
      %q = pto.addptr %buf, %j : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
      %b = pto.load %q : !pto.ptr<f32, local> -> f32
      %sum = arith.addf %a, %b : f32
      pto.store %sum, %p : f32, !pto.ptr<f32, local>
    }
    pto.barrier_block
    %half = arith.floordivsi %s, %two : i32
    scf.yield %half : i32
  }
  func.return
}

// Same reduction without the barrier: step i + 1 reads what step i wrote from other warps.
// The barrier lands at the top of the body, before the `if` (never inside lane-dependent
// control flow). The loop runs 8 times, so that barrier also orders the store before the loop
// with the first step, and the barrier after the store, now useless, goes.
// CHECK-LABEL: func.func @tree_reduction_missing_barrier
// CHECK:         pto.store %v, %p
// CHECK-NOT:     pto.barrier_block
// CHECK:         scf.for
// CHECK-NEXT:      %active = arith.cmpi slt, %tid, %s : i32
// CHECK-NEXT:      pto.barrier_block
// CHECK-NEXT:      scf.if %active {
// CHECK-NOT:         pto.barrier_block
// CHECK:           }
// CHECK-NEXT:      %{{.*}} = arith.floordivsi
func.func @tree_reduction_missing_barrier(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %tid = pto.get_local_id 0 : i32
  %p = pto.addptr %buf, %tid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.barrier_block
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %eight = arith.constant 8 : i32
  %s0 = arith.constant 128 : i32
  %sf = scf.for %i = %zero to %eight step %one iter_args(%s = %s0) -> (i32) : i32 {
    %active = arith.cmpi slt, %tid, %s : i32
    scf.if %active {
      %a = pto.load %p : !pto.ptr<f32, local> -> f32
      %j = arith.addi %tid, %s : i32
      %q = pto.addptr %buf, %j : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
      %b = pto.load %q : !pto.ptr<f32, local> -> f32
      %sum = arith.addf %a, %b : f32
      pto.store %sum, %p : f32, !pto.ptr<f32, local>
    }
    %half = arith.floordivsi %s, %two : i32
    scf.yield %half : i32
  }
  func.return
}

// Block barriers that order nothing go: two in a row (the first is enough, the second orders
// nothing), one between accesses of the same lane, one at the end of the kernel.
// CHECK-LABEL: func.func @redundant_barriers_removed
// CHECK:         pto.store %v, %p
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    %[[C:.*]] = arith.constant 255 : i32
// CHECK-NOT:     pto.barrier_block
// CHECK:         func.return
func.func @redundant_barriers_removed(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.barrier_block
  pto.barrier_block
  %c255 = arith.constant 255 : i32
  %r = arith.subi %c255, %lid : i32
  %q = pto.addptr %buf, %r : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %w = pto.load %q : !pto.ptr<f32, local> -> f32
  pto.barrier_block
  %own = pto.load %p : !pto.ptr<f32, local> -> f32
  pto.barrier_block
  func.return
}

// Tile instructions are block-level collectives (every warp reaches them), so they order lane
// accesses like a block barrier: nothing is inserted across the fill, and the barrier right
// before it is useless.
// CHECK-LABEL: func.func @tile_op_acts_as_barrier
// CHECK:         pto.store %v, %p
// CHECK-NEXT:    pto.fill
// CHECK-NOT:     pto.barrier_block
// CHECK:         func.return
func.func @tile_op_acts_as_barrier(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %other = pto.alloc_local : !pto.l1buf<64xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %zero = arith.constant 0.0 : f32
  %c64 = arith.constant 64 : i32
  %c255 = arith.constant 255 : i32
  %r = arith.subi %c255, %lid : i32
  %q = pto.addptr %buf, %r : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.barrier_block
  pto.fill %other, %zero, %c64 : !pto.l1buf<64xf32>, f32
  %w = pto.load %q : !pto.ptr<f32, local> -> f32
  func.return
}

// Lanes 0-127 write (under a lane-dependent `if`), lanes 128-255 then read under another: the
// barrier cannot go inside either `if` (some lanes would skip it), so it goes before the
// outermost divergent `if` around the read.
// CHECK-LABEL: func.func @divergent_read
// CHECK:         %hi = arith.cmpi sge, %lid, %c128 : i32
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    scf.if %hi {
// CHECK-NOT:       pto.barrier_block
// CHECK:           pto.load
func.func @divergent_read(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<128xf32>
  %lid = pto.get_local_id 0 : i32
  %c128 = arith.constant 128 : i32
  %lo = arith.cmpi slt, %lid, %c128 : i32
  scf.if %lo {
    %p = pto.addptr %buf, %lid : !pto.l1buf<128xf32>, i32 -> !pto.ptr<f32, local>
    pto.store %v, %p : f32, !pto.ptr<f32, local>
  }
  %hi = arith.cmpi sge, %lid, %c128 : i32
  scf.if %hi {
    %j = arith.subi %lid, %c128 : i32
    %q = pto.addptr %buf, %j : !pto.l1buf<128xf32>, i32 -> !pto.ptr<f32, local>
    %w = pto.load %q : !pto.ptr<f32, local> -> f32
  }
  func.return
}

// Only warp 0 touches the buffer: it runs in lockstep, whatever the indices (here a loaded,
// unknown one). No barrier.
// CHECK-LABEL: func.func @one_warp_only
// CHECK-NOT:     pto.barrier_block
// CHECK:         func.return
func.func @one_warp_only(%v: f32, %idx: !pto.ptr<i32, global>) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<32xf32>
  %wid = pto.get_warp_id : i32
  %lane = pto.get_lane_id : i32
  %zero = arith.constant 0 : i32
  %first = arith.cmpi eq, %wid, %zero : i32
  scf.if %first {
    %ip = pto.addptr %idx, %lane : !pto.ptr<i32, global>, i32 -> !pto.ptr<i32, global>
    %i = pto.load %ip : !pto.ptr<i32, global> -> i32
    %p = pto.addptr %buf, %i : !pto.l1buf<32xf32>, i32 -> !pto.ptr<f32, local>
    pto.store %v, %p : f32, !pto.ptr<f32, local>
    %q = pto.addptr %buf, %lane : !pto.l1buf<32xf32>, i32 -> !pto.ptr<f32, local>
    %w = pto.load %q : !pto.ptr<f32, local> -> f32
  }
  func.return
}

// An index loaded from memory cannot be analysed: the accesses are conservatively separated.
// CHECK-LABEL: func.func @unknown_index
// CHECK:         pto.store %v, %p
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    %w = pto.load %buf
func.func @unknown_index(%v: f32, %idx: !pto.ptr<i32, global>) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %ip = pto.addptr %idx, %lid : !pto.ptr<i32, global>, i32 -> !pto.ptr<i32, global>
  %i = pto.load %ip : !pto.ptr<i32, global> -> i32
  %p = pto.addptr %buf, %i : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  %w = pto.load %buf : !pto.l1buf<256xf32> -> f32
  func.return
}

// Different buffers never alias: writing one and reading the other needs nothing, and the
// barrier between them goes.
// CHECK-LABEL: func.func @distinct_buffers
// CHECK-NOT:     pto.barrier_block
// CHECK:         func.return
func.func @distinct_buffers(%v: f32) attributes {pto.kernel} {
  %a = pto.alloc_local : !pto.l1buf<256xf32>
  %b = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %a, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.barrier_block
  %w = pto.load %b : !pto.l1buf<256xf32> -> f32
  func.return
}

// Warps exchanging data through HBM are ordered by the block barrier too: it stays.
// CHECK-LABEL: func.func @hbm_ordering_kept
// CHECK:         pto.store %v, %p
// CHECK-NEXT:    pto.barrier_block
func.func @hbm_ordering_kept(%v: f32, %out: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %out, %lid : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  pto.store %v, %p : f32, !pto.ptr<f32, global>
  pto.barrier_block
  %w = pto.load %out : !pto.ptr<f32, global> -> f32
  func.return
}
