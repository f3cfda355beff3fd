// RUN: pypto-opt %s -p npu-fuse-load-mma | filecheck %s
// The distance is target data: a file allowing 4 instructions fuses the padded case too.
// RUN: pypto-opt %s -p 'npu-fuse-load-mma{target="%S/Inputs/fusion-far.toml"}' | filecheck %s --check-prefix=FAR
// A target that fuses nothing leaves every MMA alone.
// RUN: pypto-opt %s -p 'npu-fuse-load-mma{target="%S/Inputs/fusion-none.toml"}' | filecheck %s --check-prefix=NONE
// NONE-NOT: npu.load_mma

// The firmware's case: a tile load, its flags, the MMA reading the tile. The copy and its flags
// disappear into one npu.load_mma that loads operand B, then multiplies.
// CHECK-LABEL: func.func @adjacent
// CHECK-NOT:     npu.copy_in
// CHECK-NOT:     npu.set_flag
// CHECK-NOT:     npu.wait_flag
// CHECK:         npu.load_mma %c, %a, %b, %B, %n rows %one strides(%len, %len) shape(16, 16, 16) into "b"
// CHECK-NEXT:    func.return
func.func @adjacent(%B: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %a = pto.alloc_local : !pto.l1buf<256xf32>
  %b = pto.alloc_local : !pto.l1buf<256xf32>
  %c = pto.alloc_local : !pto.l1buf<256xf32>
  %n = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %t = npu.copy_in %b, %B, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  npu.set_flag %t "MTE_IN" -> "CUBE"
  npu.wait_flag %t "MTE_IN" -> "CUBE"
  npu.mma %c, %a, %b shape(16, 16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}

// The article's pitfall: three instructions padded between the load and its MMA (to "align" it
// for the simulator) put it beyond the firmware's fusion distance (2): no fusion.
// CHECK-LABEL: func.func @padded
// CHECK:         npu.copy_in
// CHECK:         npu.mma %c, %a, %b
// FAR-LABEL: func.func @padded
// FAR:         npu.load_mma %c, %a, %b, %B
func.func @padded(%B: !pto.ptr<f32, global>, %x: i32) attributes {pto.kernel} {
  %a = pto.alloc_local : !pto.l1buf<256xf32>
  %b = pto.alloc_local : !pto.l1buf<256xf32>
  %c = pto.alloc_local : !pto.l1buf<256xf32>
  %n = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %t = npu.copy_in %b, %B, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  npu.set_flag %t "MTE_IN" -> "CUBE"
  %p1 = arith.addi %x, %one : i32
  %p2 = arith.addi %p1, %one : i32
  %p3 = arith.addi %p2, %one : i32
  npu.wait_flag %t "MTE_IN" -> "CUBE"
  npu.mma %c, %a, %b shape(16, 16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}

// Two loads, one wait for both: the nearer load (A) fuses, the other stays a copy.
// CHECK-LABEL: func.func @two_loads
// CHECK:         %{{.*}} = npu.copy_in %b, %B
// CHECK:         npu.wait_flag_all
// CHECK-NEXT:    npu.load_mma %c, %a, %b, %A, %n rows %one strides(%len, %len) shape(16, 16, 16) into "a"
func.func @two_loads(%A: !pto.ptr<f32, global>, %B: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %a = pto.alloc_local : !pto.l1buf<256xf32>
  %b = pto.alloc_local : !pto.l1buf<256xf32>
  %c = pto.alloc_local : !pto.l1buf<256xf32>
  %n = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %tb = npu.copy_in %b, %B, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  npu.set_flag %tb "MTE_IN" -> "SCALAR"
  %ta = npu.copy_in %a, %A, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  npu.set_flag %ta "MTE_IN" -> "SCALAR"
  npu.wait_flag_all
  npu.mma %c, %a, %b shape(16, 16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}

// Something that may touch memory in between (a lane store) blocks fusion at any distance.
// CHECK-LABEL: func.func @store_between
// CHECK:         npu.copy_in
// CHECK:         npu.mma
// FAR-LABEL: func.func @store_between
// FAR:         npu.mma
func.func @store_between(%B: !pto.ptr<f32, global>, %v: f32, %l: !pto.ptr<f32, local>) attributes {pto.kernel} {
  %a = pto.alloc_local : !pto.l1buf<256xf32>
  %b = pto.alloc_local : !pto.l1buf<256xf32>
  %c = pto.alloc_local : !pto.l1buf<256xf32>
  %n = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %t = npu.copy_in %b, %B, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  npu.set_flag %t "MTE_IN" -> "CUBE"
  npu.store %v, %l : f32, !pto.ptr<f32, local>
  npu.wait_flag %t "MTE_IN" -> "CUBE"
  npu.mma %c, %a, %b shape(16, 16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}

// A copy in the previous loop iteration is not in straight-line code with the MMA.
// CHECK-LABEL: func.func @across_loop
// CHECK:         npu.mma
// CHECK-NOT:     npu.load_mma
func.func @across_loop(%B: !pto.ptr<f32, global>, %k: i32) attributes {pto.kernel} {
  %a = pto.alloc_local : !pto.l1buf<256xf32>
  %b = pto.alloc_local : !pto.l1buf<256xf32>
  %c = pto.alloc_local : !pto.l1buf<256xf32>
  %n = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %zero = arith.constant 0 : i32
  %t = npu.copy_in %b, %B, %n rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  npu.set_flag %t "MTE_IN" -> "CUBE"
  npu.wait_flag %t "MTE_IN" -> "CUBE"
  scf.for %i = %zero to %k step %one : i32 {
    npu.mma %c, %a, %b shape(16, 16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  }
  func.return
}

// Operands that are block arguments (no op defines them) have no feeding load: the MMA stays.
// (The fuzzer's case: the pass asked a block argument's owner, a Block, for its regions.)
// CHECK-LABEL: func.func @block_argument_operands
// CHECK-NEXT:    npu.mma %c, %a, %b
func.func @block_argument_operands(%c: !pto.l1buf<256xf32>, %a: !pto.l1buf<256xf32>, %b: !pto.l1buf<256xf32>) {
  npu.mma %c, %a, %b shape(16, 16, 16) : !pto.l1buf<256xf32>, !pto.l1buf<256xf32>, !pto.l1buf<256xf32>
  func.return
}
