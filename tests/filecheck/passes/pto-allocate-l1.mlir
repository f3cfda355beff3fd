// RUN: pypto-opt %s -p pto-allocate-l1 --split-input-file 2>/dev/null | filecheck %s
// The remarks (peak usage) and the capacity error, as diagnostics at their ops:
// RUN: pypto-opt %s -p 'pto-allocate-l1{l1-bytes=4096}' --split-input-file --verify-diagnostics
// Idempotence: allocating an allocated kernel changes nothing.
// RUN: pypto-opt %s -p pto-allocate-l1 --split-input-file 2>/dev/null | pypto-opt -p pto-allocate-l1 --split-input-file 2>/dev/null | filecheck %s

// Buffers live at the same time get disjoint offsets, largest first; offsets are multiples of
// the target's l1_align_bytes (32), so the 3-element buffer's 12 bytes take 32.
// CHECK-LABEL: func.func @together
// CHECK:         %big = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<256xf32>
// CHECK-NEXT:    %odd = pto.alloc_local {offset = 1056 : i64} : !pto.l1buf<3xf32>
// CHECK-NEXT:    %small = pto.alloc_local {offset = 1024 : i64} : !pto.l1buf<8xf32>
// expected-remark @+1 {{peak 1088 of 4096 bytes (26.6%), 3 buffers}}
func.func @together(%v: f32) attributes {pto.kernel} {
  %big = pto.alloc_local : !pto.l1buf<256xf32>
  %odd = pto.alloc_local : !pto.l1buf<3xf32>
  %small = pto.alloc_local : !pto.l1buf<8xf32>
  %c0 = arith.constant 0 : i32
  %p = pto.addptr %big, %c0 : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %q = pto.addptr %small, %c0 : !pto.l1buf<8xf32>, i32 -> !pto.ptr<f32, local>
  %r = pto.addptr %odd, %c0 : !pto.l1buf<3xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.store %v, %q : f32, !pto.ptr<f32, local>
  pto.store %v, %r : f32, !pto.ptr<f32, local>
  %w = pto.load %p : !pto.ptr<f32, local> -> f32
  %x = pto.load %q : !pto.ptr<f32, local> -> f32
  %y = pto.load %r : !pto.ptr<f32, local> -> f32
  func.return
}

// -----

// Two phases separated by a block barrier: the second buffer reuses the first one's bytes.
// CHECK-LABEL: func.func @phases
// CHECK:         %first = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<512xf32>
// CHECK:         %second = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<512xf32>
// expected-remark @+1 {{peak 2048 of 4096 bytes (50.0%), 2 buffers, 2048 bytes shared by buffers never live together}}
func.func @phases(%v: f32) attributes {pto.kernel} {
  %first = pto.alloc_local : !pto.l1buf<512xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %first, %lid : !pto.l1buf<512xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  %w = pto.load %p : !pto.ptr<f32, local> -> f32
  pto.barrier_block
  %second = pto.alloc_local : !pto.l1buf<512xf32>
  %q = pto.addptr %second, %lid : !pto.l1buf<512xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %w, %q : f32, !pto.ptr<f32, local>
  func.return
}

// -----

// The same two phases with only a warp barrier between them: a fast warp could write the
// second buffer while a slow one still reads the first, so they must not share bytes.
// CHECK-LABEL: func.func @phases_without_block_sync
// CHECK:         %first = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<512xf32>
// CHECK:         %second = pto.alloc_local {offset = 2048 : i64} : !pto.l1buf<512xf32>
// expected-remark @+1 {{peak 4096 of 4096 bytes (100.0%), 2 buffers}}
func.func @phases_without_block_sync(%v: f32) attributes {pto.kernel} {
  %first = pto.alloc_local : !pto.l1buf<512xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %first, %lid : !pto.l1buf<512xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  %w = pto.load %p : !pto.ptr<f32, local> -> f32
  pto.barrier
  %second = pto.alloc_local : !pto.l1buf<512xf32>
  %q = pto.addptr %second, %lid : !pto.l1buf<512xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %w, %q : f32, !pto.ptr<f32, local>
  func.return
}

// -----

// A buffer used inside a loop is live over the whole loop: `x` carries values from one
// iteration to the next, so `y`, used after a block barrier in the same iteration, must not take
// its bytes (it would overwrite what the next iteration reads).
// CHECK-LABEL: func.func @loop
// CHECK:         %x = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<256xf32>
// CHECK-NEXT:    %y = pto.alloc_local {offset = 1024 : i64} : !pto.l1buf<256xf32>
// expected-remark @+1 {{peak 2048 of 4096 bytes (50.0%), 2 buffers}}
func.func @loop(%v: f32, %n: i32) attributes {pto.kernel} {
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %lid = pto.get_local_id 0 : i32
  %x = pto.alloc_local : !pto.l1buf<256xf32>
  %y = pto.alloc_local : !pto.l1buf<256xf32>
  scf.for %k = %zero to %n step %one : i32 {
    %p = pto.addptr %x, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
    %old = pto.load %p : !pto.ptr<f32, local> -> f32
    pto.store %v, %p : f32, !pto.ptr<f32, local>
    pto.barrier_block
    %q = pto.addptr %y, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
    pto.store %old, %q : f32, !pto.ptr<f32, local>
    %r = pto.load %q : !pto.ptr<f32, local> -> f32
  }
  func.return
}

// -----

// An async copy keeps its destination busy until its wait: the buffer filled after the wait
// may reuse the bytes, the one filled before it may not.
// CHECK-LABEL: func.func @copy_until_wait
// CHECK:         %tile = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<256xf32>
// CHECK:         %during = pto.alloc_local {offset = 1024 : i64} : !pto.l1buf<256xf32>
// CHECK:         %later = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<256xf32>
// expected-remark @+1 {{peak 2048 of 4096 bytes (50.0%), 3 buffers, 1024 bytes shared by buffers never live together}}
func.func @copy_until_wait(%g: !pto.ptr<f32, global>, %v: f32) attributes {pto.kernel} {
  %nbytes = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %tile = pto.alloc_local : !pto.l1buf<256xf32>
  %t = pto.async_load %tile, %g, %nbytes rows %one strides(%len, %len) : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  %during = pto.alloc_local : !pto.l1buf<256xf32>
  pto.fill %during, %v, %len : !pto.l1buf<256xf32>, f32
  pto.wait %t
  %later = pto.alloc_local : !pto.l1buf<256xf32>
  pto.fill %later, %v, %len : !pto.l1buf<256xf32>, f32
  func.return
}

// -----

// More than the target's L1 (l1-bytes=4096 in the second RUN line; 192 KiB by default): an
// L1CapacityError naming the buffers live together at the peak, their sizes and the peak.
// CHECK-LABEL: func.func @too_big
// CHECK:         %a = pto.alloc_local {offset = 0 : i64} : !pto.l1buf<768xf32>
// CHECK:         %b = pto.alloc_local {offset = 3072 : i64} : !pto.l1buf<512xf32>
func.func @too_big(%v: f32) attributes {pto.kernel} {
  %a = pto.alloc_local : !pto.l1buf<768xf32>
  // expected-error @+1 {{kernel 'too_big' needs 5120 bytes of L1 (5 KiB) but the target has 4096 (4 KiB); live together at the peak: 'a' 3072 bytes at offset 0 (pto.alloc_local), 'b' 2048 bytes at offset 3072 (pto.alloc_local); use smaller tiles}}
  %b = pto.alloc_local : !pto.l1buf<512xf32>
  %lid = pto.get_local_id 0 : i32
  %p = pto.addptr %a, %lid : !pto.l1buf<768xf32>, i32 -> !pto.ptr<f32, local>
  %q = pto.addptr %b, %lid : !pto.l1buf<512xf32>, i32 -> !pto.ptr<f32, local>
  pto.store %v, %p : f32, !pto.ptr<f32, local>
  pto.store %v, %q : f32, !pto.ptr<f32, local>
  %x = pto.load %p : !pto.ptr<f32, local> -> f32
  %y = pto.load %q : !pto.ptr<f32, local> -> f32
  func.return
}
