// RUN: pypto-opt %s -p pto-insert-barriers | filecheck %s
// RUN: pypto-opt %s -p pto-insert-barriers,pto-verify-barriers | filecheck %s
// RUN: not pypto-opt %s -p pto-verify-barriers 2>&1 | filecheck %s --check-prefix=ERR

// A tile vector instruction reads its tiles through the vector unit, which does not wait for
// the lanes' stores (docs/barriers.md#tile-vector-instructions): lanes write a tile, then
// pto.tadds reads it. The verifier says so; the insertion pass puts a block barrier before it.
// ERR: error: RAW hazard on L1 tile 't': lanes write it at {{.*}} and pto.tadds at {{.*}} reads it through the vector unit, which does not wait for lane stores; put pto.barrier_block() between them
// CHECK-LABEL: func.func @lanes_then_tile
// CHECK:         pto.store %v, %p
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    pto.tadds %u, %t, %v shape(8, 32)
func.func @lanes_then_tile(%v: f32) attributes {pto.kernel} {
  %t = pto.alloc_local shape(8, 32) : !pto.l1buf<256xf32>
  %u = pto.alloc_local shape(8, 32) : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %t, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.tadds %u, %t, %v shape(8, 32) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, f32
  func.return
}

// Lanes writing another tile than the ones the instruction touches: no barrier.
// CHECK-LABEL: func.func @other_tile
// CHECK:         pto.store %v, %p
// CHECK-NOT:     pto.barrier_block
// CHECK:         func.return
func.func @other_tile(%v: f32) attributes {pto.kernel} {
  %t = pto.alloc_local shape(8, 32) : !pto.l1buf<256xf32>
  %u = pto.alloc_local shape(8, 32) : !pto.l1buf<256xf32>
  %w = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %w, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.tadds %u, %t, %v shape(8, 32) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, f32
  func.return
}


// The other way round: the lanes do not wait for the vector unit either. pto.tadds writes u,
// then lanes read it: a barrier before the load (a tile instruction is not a barrier).
// CHECK-LABEL: func.func @tile_then_lanes
// CHECK:         pto.tadds %u, %t, %v shape(8, 32)
// CHECK-NEXT:    %p = pto.addptr %u, %lid
// CHECK-NEXT:    pto.barrier_block
// CHECK-NEXT:    %x = pto.load %p
func.func @tile_then_lanes(%v: f32, %out: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %t = pto.alloc_local shape(8, 32) : !pto.l1buf<256xf32>
  %u = pto.alloc_local shape(8, 32) : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  pto.tadds %u, %t, %v shape(8, 32) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, f32
  %p = pto.addptr %u, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %x = pto.load %p : !pto.ptr<f32, local> -> f32
  %q = pto.addptr %out, %lid : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  pto.store %x, %q : f32, !pto.ptr<f32, global>
  func.return
}
