// RUN: not pypto-opt %s -p pto-verify-barriers 2>&1 | filecheck %s

// A tile instruction under a lane-dependent branch: some lanes would skip it.
// CHECK: error: barrier divergence: pto.trelu is a tile instruction (executed once per block, by every warp) but sits under lane-dependent control flow
func.func @divergent(%n: i32) attributes {pto.kernel} {
  %t = pto.alloc_local shape(8, 32) : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %c = arith.cmpi slt, %lid, %n : i32
  scf.if %c {
    pto.trelu %t, %t shape(8, 32) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  }
  func.return
}
