// RUN: pypto-opt %s -p convert-pto-to-npu | filecheck %s
// RUN: pypto-opt %s -p 'convert-pto-to-npu{block-size=64}' | filecheck %s --check-prefix=B64
// Its output round-trips.
// RUN: pypto-opt %s -p convert-pto-to-npu | pypto-opt | filecheck %s

// The article's vector_add: both HBM loads and the fused store are staged through L1 slots of
// one element per lane (256 lanes by default, the block-size option otherwise), allocated at
// the top of the kernel, one per staged instruction.
// CHECK-LABEL: func.func @vector_add
// CHECK-NEXT:    %slot = pto.alloc_local : !pto.l1buf<256xf32>
// CHECK-NEXT:    %slot_1 = pto.alloc_local : !pto.l1buf<256xf32>
// CHECK-NEXT:    %slot_2 = pto.alloc_local : !pto.l1buf<256xf32>
// CHECK:         %x = npu.load %pa via %slot : !pto.ptr<f32, global>, !pto.l1buf<256xf32> -> f32
// CHECK:         %y = npu.load %pb via %slot_1
// CHECK:         npu.fma %po, %x, %one, %y via %slot_2
// CHECK-NOT:     pto.load
// B64-LABEL: func.func @vector_add
// B64-NEXT:    pto.alloc_local : !pto.l1buf<64xf32>
func.func @vector_add(%a: !pto.ptr<f32, global>, %b: !pto.ptr<f32, global>,
                      %o: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %pa = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %x = pto.load %pa : !pto.ptr<f32, global> -> f32
  %pb = pto.addptr %b, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %y = pto.load %pb : !pto.ptr<f32, global> -> f32
  %one = arith.constant 1.0 : f32
  %po = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  pto.fma %po, %x, %one, %y : !pto.ptr<f32, global>, f32
  func.return
}

// L1 accesses are not staged (the vector unit works on L1); a store to HBM is, and so is its
// value's element type (i32 here).
// CHECK-LABEL: func.func @l1_unstaged
// CHECK-NEXT:    %slot = pto.alloc_local : !pto.l1buf<256xi32>
// CHECK-NEXT:    %buf = pto.alloc_local : !pto.l1buf<256xi32>
// CHECK:         npu.store %v, %p : i32, !pto.ptr<i32, local>
// CHECK-NEXT:    npu.pipe_barrier
// CHECK-NEXT:    %w = npu.load %p : !pto.ptr<i32, local> -> i32
// CHECK-NEXT:    npu.warp_barrier
// CHECK-NEXT:    npu.store %w, %out via %slot : i32, !pto.ptr<i32, global>, !pto.l1buf<256xi32>
func.func @l1_unstaged(%v: i32, %out: !pto.ptr<i32, global>) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xi32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %buf, %lid : !pto.l1buf<256xi32>, i32 -> !pto.ptr<i32, local>
  pto.store %v, %p : i32, !pto.ptr<i32, local>
  pto.barrier_block
  %w = pto.load %p : !pto.ptr<i32, local> -> i32
  pto.barrier
  pto.store %w, %out : i32, !pto.ptr<i32, global>
  func.return
}

// A tile load feeding an MMA: the copy on MTE_IN, its flag set on MTE_IN and waited for by the
// CUBE pipe, the MMA's pipe. The async store's flag is awaited by nothing after it: SCALAR.
// CHECK-LABEL: func.func @copies
// CHECK:         %t = npu.copy_in %ta, %a, %n rows %one strides(%len, %len)
// CHECK-NEXT:    npu.set_flag %t "MTE_IN" -> "CUBE"
// CHECK-NEXT:    npu.wait_flag %t "MTE_IN" -> "CUBE"
// CHECK-NEXT:    npu.mma %tc, %ta, %ta shape(16, 16, 16)
// CHECK-NEXT:    %s = npu.copy_out %a, %tc, %n rows %one strides(%len, %len)
// CHECK-NEXT:    npu.set_flag %s "MTE_OUT" -> "SCALAR"
// CHECK-NEXT:    npu.wait_flag_all
func.func @copies(%a: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %ta = pto.alloc_local : !pto.l1buf<256xf32>
  %tc = pto.alloc_local : !pto.l1buf<256xf32>
  %n = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %t = pto.async_load %ta, %a, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  pto.wait %t
  pto.mma %tc, %ta, %ta shape(16, 16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  %s = pto.async_store %a, %tc, %n rows %one strides(%len, %len) : !pto.ptr<f32, global>, !pto.l1buf<256xf32>
  pto.wait_all
  func.return
}

// A synchronous tile store is a copy and its flag pair, back to back; a tile load whose first
// consumer is a lane load hands its flag to the VECTOR pipe.
// CHECK-LABEL: func.func @sync_store
// CHECK:         %[[T:.*]] = npu.copy_in %tile, %a
// CHECK-NEXT:    npu.set_flag %[[T]] "MTE_IN" -> "VECTOR"
// CHECK-NEXT:    npu.wait_flag %[[T]] "MTE_IN" -> "VECTOR"
// CHECK-NEXT:    %{{.*}} = npu.load %tile : !pto.l1buf<256xf32> -> f32
// CHECK:         %[[S:.*]] = npu.copy_out %a, %tile
// CHECK-NEXT:    npu.set_flag %[[S]] "MTE_OUT" -> "SCALAR"
// CHECK-NEXT:    npu.wait_flag %[[S]] "MTE_OUT" -> "SCALAR"
// CHECK-NOT:     pto.tile_store
func.func @sync_store(%a: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %tile = pto.alloc_local : !pto.l1buf<256xf32>
  %n = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %t = pto.async_load %tile, %a, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  pto.wait %t
  %v = pto.load %tile : !pto.l1buf<256xf32> -> f32
  pto.tile_store %a, %tile, %n rows %one strides(%len, %len) : !pto.ptr<f32, global>, !pto.l1buf<256xf32>
  func.return
}

// A copy waited for by a `wait_all` hands its flag to the pipe of the first memory instruction
// after that wait (the MMA's CUBE), not to SCALAR; a next tile's copy on MTE_IN in between is
// on the copy's own pipe and does not count.
// CHECK-LABEL: func.func @wait_all_consumer
// CHECK:         %ta = npu.copy_in
// CHECK-NEXT:    npu.set_flag %ta "MTE_IN" -> "CUBE"
// CHECK:         %tb = npu.copy_in
// CHECK-NEXT:    npu.set_flag %tb "MTE_IN" -> "CUBE"
// CHECK:         npu.wait_flag_all
func.func @wait_all_consumer(%a: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %x = pto.alloc_local : !pto.l1buf<256xf32>
  %y = pto.alloc_local : !pto.l1buf<256xf32>
  %z = pto.alloc_local : !pto.l1buf<256xf32>
  %c = pto.alloc_local : !pto.l1buf<256xf32>
  %n = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %ta = pto.async_load %x, %a, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  %tb = pto.async_load %y, %a, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  pto.wait_all
  %tz = pto.async_load %z, %a, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  pto.mma %c, %x, %y shape(16, 16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  pto.wait %tz
  func.return
}
