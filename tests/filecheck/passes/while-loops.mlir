// The barrier passes on SIMT loops (scf.while): an access goes round the back edge of a while
// loop, so a hazard between the end of one iteration and the start of the next is found, and
// pto-insert-barriers puts the block barrier inside the loop body.
// RUN: pypto-opt %s -p pto-insert-barriers | filecheck %s --check-prefix=INSERT
// RUN: pypto-opt %s -p pto-insert-barriers,pto-verify-barriers | filecheck %s --check-prefix=INSERT
// RUN: not pypto-opt %s -p pto-verify-barriers 2>&1 | filecheck %s --check-prefix=VERIFY
// L1 allocation and the npu lowering keep the loop and its carried values.
// RUN: pypto-opt %s -p pto-insert-barriers,pto-allocate-l1,convert-pto-to-npu | filecheck %s --check-prefix=NPU

// Blocks of 256 lanes: each iteration writes the lane's slot, a block barrier, and reads the
// mirrored one (another warp's). The read of iteration k and the write of iteration k + 1 race
// (WAR) round the back edge unless a block barrier separates them.
// VERIFY: error: WAR hazard on L1 buffer 'buf' [0, 256): read by lanes 0-255 (warps 0-7) at k.py:12:16 in an earlier iteration of the loop at k.py:8:5, written by lanes 0-255 (warps 0-7) at k.py:10:9; no pto.barrier_block() separates them on the way round the loop
// The inserted barrier lands before the write (WAR with the previous iteration's read).
// INSERT-LABEL: func.func @mirror
// INSERT:         scf.while
// INSERT:         } do {
// INSERT:           pto.barrier_block
// INSERT-NEXT:      pto.store %v, %p
// INSERT-NEXT:      pto.barrier_block
// INSERT:           %w = pto.load %q
// INSERT-NOT:       pto.barrier_block
// INSERT:           scf.yield
// NPU-LABEL: func.func @mirror
// NPU:           scf.while
// NPU:           scf.condition
// NPU:           } do {
// NPU:           npu.pipe_barrier
// NPU:           npu.store %v, %p
// NPU:           npu.load %q
// NPU:           scf.yield
func.func @mirror(%x: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c255 = arith.constant 255 : i32
  %zero = arith.constant 0.0 : f32
  %r:2 = scf.while (%k = %c0, %acc = %zero) : (i32, f32) -> (i32, f32) {
    %go = arith.cmpi slt, %k, %n : i32 loc("k.py":9:5)
    scf.condition(%go) %k, %acc : i32, f32
  } do {
  ^bb0(%k2: i32, %acc2: f32):
    %off = arith.addi %lid, %k2 : i32
    %src = pto.addptr %x, %off : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    %v = pto.load %src : !pto.ptr<f32, global> -> f32
    %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
    pto.store %v, %p : f32, !pto.ptr<f32, local> loc("k.py":10:9)
    pto.barrier_block loc("k.py":11:9)
    %m = arith.subi %c255, %lid : i32
    %q = pto.addptr %buf, %m : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
    %w = pto.load %q : !pto.ptr<f32, local> -> f32 loc("k.py":12:16)
    %acc3 = arith.addf %acc2, %w : f32
    %k3 = arith.addi %k2, %c1 : i32
    scf.yield %k3, %acc3 : i32, f32
  } loc("k.py":8:5)
  %out = pto.addptr %x, %lid : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  pto.store %r#1, %out : f32, !pto.ptr<f32, global>
  func.return
}
