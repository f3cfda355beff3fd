// RUN: pypto-opt %s | pypto-opt | filecheck %s
// RUN: pypto-opt %s --print-op-generic | pypto-opt | filecheck %s
// RUN: pypto-opt %s --mlir-print-debuginfo | pypto-opt --mlir-print-debuginfo | filecheck %s --check-prefix=LOC

// Round-trip of every pto op and type, through the custom form and through the generic form.
// Both RUN lines end in the custom form, so one set of CHECK lines covers both.

// The kernel marker is a unit attribute on func.func; it must survive printing.
// CHECK-LABEL: func.func @kernel_marker()
// CHECK-SAME:    attributes {pto.kernel}
func.func @kernel_marker() attributes {pto.kernel} {
  func.return
}

// The id ops that take a grid dimension, on each of x, y and z.
// CHECK-LABEL: func.func @dim_ids()
// CHECK-NEXT:    %{{.*}} = pto.get_global_id 0 : i32
// CHECK-NEXT:    %{{.*}} = pto.get_local_id 1 : i32
// CHECK-NEXT:    %{{.*}} = pto.get_block_id 2 : i32
// CHECK-NEXT:    %{{.*}} = pto.get_block_dim 0 : i32
// CHECK-NEXT:    %{{.*}} = pto.get_grid_dim 1 : i32
func.func @dim_ids() -> (i32, i32, i32, i32, i32) {
  %0 = pto.get_global_id 0 : i32
  %1 = pto.get_local_id 1 : i32
  %2 = pto.get_block_id 2 : i32
  %3 = pto.get_block_dim 0 : i32
  %4 = pto.get_grid_dim 1 : i32
  func.return %0, %1, %2, %3, %4 : i32, i32, i32, i32, i32
}

// The warp-level ids take no dimension.
// CHECK-LABEL: func.func @warp_ids()
// CHECK-NEXT:    %{{.*}} = pto.get_warp_id : i32
// CHECK-NEXT:    %{{.*}} = pto.get_lane_id : i32
func.func @warp_ids() -> (i32, i32) {
  %0 = pto.get_warp_id : i32
  %1 = pto.get_lane_id : i32
  func.return %0, %1 : i32, i32
}

// Pointer types of both memory spaces and of every scalar element type.
// CHECK-LABEL: func.func @ptr_types
// CHECK-SAME:    (%{{.*}}: !pto.ptr<f32, global>, %{{.*}}: !pto.ptr<f16, local>,
// CHECK-SAME:     %{{.*}}: !pto.ptr<bf16, global>, %{{.*}}: !pto.ptr<i32, local>,
// CHECK-SAME:     %{{.*}}: !pto.ptr<i64, global>, %{{.*}}: !pto.ptr<i1, local>)
func.func @ptr_types(%a: !pto.ptr<f32, global>, %b: !pto.ptr<f16, local>,
                     %c: !pto.ptr<bf16, global>, %d: !pto.ptr<i32, local>,
                     %e: !pto.ptr<i64, global>, %f: !pto.ptr<i1, local>) {
  func.return
}

// The async-copy token type.
// CHECK-LABEL: func.func @token_type
// CHECK-SAME:    (%{{.*}}: !pto.token)
func.func @token_type(%t: !pto.token) {
  func.return
}

// Pointer arithmetic with i32 and i64 offsets, in HBM and in L1.
// CHECK-LABEL: func.func @addptr
// CHECK-NEXT:    %{{.*}} = pto.addptr %{{.*}}, %{{.*}} : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
// CHECK-NEXT:    %{{.*}} = pto.addptr %{{.*}}, %{{.*}} : !pto.ptr<f16, local>, i64 -> !pto.ptr<f16, local>
func.func @addptr(%p: !pto.ptr<f32, global>, %l: !pto.ptr<f16, local>, %i: i32, %j: i64)
    -> (!pto.ptr<f32, global>, !pto.ptr<f16, local>) {
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %m = pto.addptr %l, %j : !pto.ptr<f16, local>, i64 -> !pto.ptr<f16, local>
  func.return %q, %m : !pto.ptr<f32, global>, !pto.ptr<f16, local>
}

// Lane loads and stores, from/to HBM and L1, float and integer.
// CHECK-LABEL: func.func @load_store
// CHECK-NEXT:    %[[V:.*]] = pto.load %{{.*}} : !pto.ptr<f32, global> -> f32
// CHECK-NEXT:    pto.store %[[V]], %{{.*}} : f32, !pto.ptr<f32, local>
// CHECK-NEXT:    %[[W:.*]] = pto.load %{{.*}} : !pto.ptr<i64, local> -> i64
// CHECK-NEXT:    pto.store %[[W]], %{{.*}} : i64, !pto.ptr<i64, global>
// CHECK-NEXT:    %[[B:.*]] = pto.load %{{.*}} : !pto.ptr<i1, global> -> i1
// CHECK-NEXT:    pto.store %[[B]], %{{.*}} : i1, !pto.ptr<i1, global>
func.func @load_store(%g: !pto.ptr<f32, global>, %l: !pto.ptr<f32, local>,
                      %gi: !pto.ptr<i64, global>, %li: !pto.ptr<i64, local>,
                      %gb: !pto.ptr<i1, global>) {
  %v = pto.load %g : !pto.ptr<f32, global> -> f32
  pto.store %v, %l : f32, !pto.ptr<f32, local>
  %w = pto.load %li : !pto.ptr<i64, local> -> i64
  pto.store %w, %gi : i64, !pto.ptr<i64, global>
  %b = pto.load %gb : !pto.ptr<i1, global> -> i1
  pto.store %b, %gb : i1, !pto.ptr<i1, global>
  func.return
}

// Fused multiply-add with fused store, on a float and on an integer destination.
// CHECK-LABEL: func.func @fma
// CHECK-NEXT:    pto.fma %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !pto.ptr<f32, global>, f32
// CHECK-NEXT:    pto.fma %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !pto.ptr<i32, local>, i32
func.func @fma(%d: !pto.ptr<f32, global>, %a: f32, %b: f32, %c: f32,
               %di: !pto.ptr<i32, local>, %x: i32) {
  pto.fma %d, %a, %b, %c : !pto.ptr<f32, global>, f32
  pto.fma %di, %x, %x, %x : !pto.ptr<i32, local>, i32
  func.return
}

// Warp and block barriers.
// The checked step of a SIMT loop, i32 and i64.
// CHECK-LABEL: func.func @loop_step
// CHECK:         %{{.*}} = pto.loop_step %a : i32
// CHECK:         %{{.*}} = pto.loop_step %b : i64
func.func @loop_step(%a: i32, %b: i64) -> (i32, i64) {
  %s = pto.loop_step %a : i32
  %t = pto.loop_step %b : i64
  func.return %s, %t : i32, i64
}

// CHECK-LABEL: func.func @barriers()
// CHECK-NEXT:    pto.barrier
// CHECK-NEXT:    pto.barrier_block
func.func @barriers() {
  pto.barrier
  pto.barrier_block
  func.return
}

// L1 buffer types of every scalar element type, and the largest count L1 could hold.
// CHECK-LABEL: func.func @l1buf_types
// CHECK-SAME:    (%{{.*}}: !pto.l1buf<256xf32>, %{{.*}}: !pto.l1buf<1xf16>,
// CHECK-SAME:     %{{.*}}: !pto.l1buf<64xbf16>, %{{.*}}: !pto.l1buf<8xi32>,
// CHECK-SAME:     %{{.*}}: !pto.l1buf<8xi64>, %{{.*}}: !pto.l1buf<32xi1>,
// CHECK-SAME:     %{{.*}}: !pto.l1buf<49152xf32>)
func.func @l1buf_types(%a: !pto.l1buf<256xf32>, %b: !pto.l1buf<1xf16>,
                       %c: !pto.l1buf<64xbf16>, %d: !pto.l1buf<8xi32>,
                       %e: !pto.l1buf<8xi64>, %f: !pto.l1buf<32xi1>,
                       %g: !pto.l1buf<49152xf32>) {
  func.return
}

// Offsetting an L1 buffer gives a local pointer of its element type.
// CHECK-LABEL: func.func @addptr_l1buf
// CHECK-NEXT:    %{{.*}} = pto.addptr %{{.*}}, %{{.*}} : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
// CHECK-NEXT:    %{{.*}} = pto.addptr %{{.*}}, %{{.*}} : !pto.l1buf<16xi64>, i64 -> !pto.ptr<i64, local>
func.func @addptr_l1buf(%b: !pto.l1buf<256xf32>, %c: !pto.l1buf<16xi64>, %i: i32, %j: i64)
    -> (!pto.ptr<f32, local>, !pto.ptr<i64, local>) {
  %p = pto.addptr %b, %i : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
  %q = pto.addptr %c, %j : !pto.l1buf<16xi64>, i64 -> !pto.ptr<i64, local>
  func.return %p, %q : !pto.ptr<f32, local>, !pto.ptr<i64, local>
}

// An L1 buffer is an address: load, store and fma reach its first element directly.
// CHECK-LABEL: func.func @lane_memory_on_l1buf
// CHECK-NEXT:    %[[V:.*]] = pto.load %[[B:.*]] : !pto.l1buf<256xf32> -> f32
// CHECK-NEXT:    pto.store %[[V]], %[[B]] : f32, !pto.l1buf<256xf32>
// CHECK-NEXT:    pto.fma %[[B]], %[[V]], %[[V]], %[[V]] : !pto.l1buf<256xf32>, f32
func.func @lane_memory_on_l1buf(%b: !pto.l1buf<256xf32>) {
  %v = pto.load %b : !pto.l1buf<256xf32> -> f32
  pto.store %v, %b : f32, !pto.l1buf<256xf32>
  pto.fma %b, %v, %v, %v : !pto.l1buf<256xf32>, f32
  func.return
}

// atomic_add returns the old value, in HBM and in L1, on integers and floats.
// CHECK-LABEL: func.func @atomic_add
// CHECK-NEXT:    %{{.*}} = pto.atomic_add %{{.*}}, %{{.*}} : !pto.ptr<i32, global>, i32
// CHECK-NEXT:    %{{.*}} = pto.atomic_add %{{.*}}, %{{.*}} : !pto.ptr<f32, local>, f32
// CHECK-NEXT:    %{{.*}} = pto.atomic_add %{{.*}}, %{{.*}} : !pto.l1buf<4xi64>, i64
func.func @atomic_add(%h: !pto.ptr<i32, global>, %x: i32, %l: !pto.ptr<f32, local>, %y: f32,
                      %b: !pto.l1buf<4xi64>, %z: i64) -> (i32, f32, i64) {
  %0 = pto.atomic_add %h, %x : !pto.ptr<i32, global>, i32
  %1 = pto.atomic_add %l, %y : !pto.ptr<f32, local>, f32
  %2 = pto.atomic_add %b, %z : !pto.l1buf<4xi64>, i64
  func.return %0, %1, %2 : i32, f32, i64
}

// alloc_local: the element count and type live in the result type.
// CHECK-LABEL: func.func @alloc_local
// CHECK-NEXT:    %{{.*}} = pto.alloc_local : !pto.l1buf<4096xf32>
// CHECK-NEXT:    %{{.*}} = pto.alloc_local : !pto.l1buf<1xbf16>
func.func @alloc_local() {
  %a = pto.alloc_local : !pto.l1buf<4096xf32>
  %b = pto.alloc_local : !pto.l1buf<1xbf16>
  func.return
}

// The three bulk copies with their 2-D (rows, strides) operands, to and from an L1 buffer or a
// local pointer; the async ones return tokens that wait consumes.
// CHECK-LABEL: func.func @bulk_copies
// CHECK-NEXT:    %[[T1:.*]] = pto.async_load %{{.*}}, %{{.*}}, %{{.*}} rows %{{.*}} strides(%{{.*}}, %{{.*}}) : !pto.l1buf<4096xf16>, !pto.ptr<f16, global>
// CHECK-NEXT:    %[[T2:.*]] = pto.async_load %{{.*}}, %{{.*}}, %{{.*}} rows %{{.*}} strides(%{{.*}}, %{{.*}}) : !pto.ptr<f16, local>, !pto.ptr<f16, global>
// CHECK-NEXT:    pto.wait %[[T1]]
// CHECK-NEXT:    pto.wait %[[T2]]
// CHECK-NEXT:    %[[T3:.*]] = pto.async_store %{{.*}}, %{{.*}}, %{{.*}} rows %{{.*}} strides(%{{.*}}, %{{.*}}) : !pto.ptr<f16, global>, !pto.l1buf<4096xf16>
// CHECK-NEXT:    pto.tile_store %{{.*}}, %{{.*}}, %{{.*}} rows %{{.*}} strides(%{{.*}}, %{{.*}}) : !pto.ptr<f16, global>, !pto.ptr<f16, local>
// CHECK-NEXT:    pto.wait_all
func.func @bulk_copies(%g: !pto.ptr<f16, global>, %b: !pto.l1buf<4096xf16>,
                       %l: !pto.ptr<f16, local>, %n: i32, %r: i32, %s: i32) {
  %t1 = pto.async_load %b, %g, %n rows %r strides(%s, %s) : !pto.l1buf<4096xf16>, !pto.ptr<f16, global>
  %t2 = pto.async_load %l, %g, %n rows %r strides(%s, %s) : !pto.ptr<f16, local>, !pto.ptr<f16, global>
  pto.wait %t1
  pto.wait %t2
  %t3 = pto.async_store %g, %b, %n rows %r strides(%s, %s) : !pto.ptr<f16, global>, !pto.l1buf<4096xf16>
  pto.tile_store %g, %l, %n rows %r strides(%s, %s) : !pto.ptr<f16, global>, !pto.ptr<f16, local>
  pto.wait_all
  func.return
}

// The operands of a copy keep their order: dst, src, nbytes, rows, src_stride, dst_stride.
// CHECK-LABEL: func.func @copy_operand_order
// CHECK-NEXT:    %{{.*}} = pto.async_load %[[D:[^,]*]], %[[S:[^,]*]], %[[N:[^ ]*]] rows %[[R:[^ ]*]] strides(%[[SS:[^,]*]], %[[DS:[^)]*]])
func.func @copy_operand_order(%dst: !pto.l1buf<64xf32>, %src: !pto.ptr<f32, global>, %n: i32,
                              %r: i32, %ss: i32, %ds: i32) -> !pto.token {
  %t = pto.async_load %dst, %src, %n rows %r strides(%ss, %ds) : !pto.l1buf<64xf32>, !pto.ptr<f32, global>
  func.return %t : !pto.token
}

// fill takes an L1 buffer or a local pointer and a value of its element type.
// CHECK-LABEL: func.func @fill
// CHECK-NEXT:    pto.fill %{{.*}}, %{{.*}}, %{{.*}} : !pto.l1buf<256xf32>, f32
// CHECK-NEXT:    pto.fill %{{.*}}, %{{.*}}, %{{.*}} : !pto.ptr<i32, local>, i32
func.func @fill(%b: !pto.l1buf<256xf32>, %f: f32, %l: !pto.ptr<i32, local>, %x: i32, %n: i32) {
  pto.fill %b, %f, %n : !pto.l1buf<256xf32>, f32
  pto.fill %l, %x, %n : !pto.ptr<i32, local>, i32
  func.return
}

// Every supported mma type combination; buffers may be larger than the tile, and local pointers
// (whose extent is unknown) are accepted.
// CHECK-LABEL: func.func @mma
// CHECK-NEXT:    pto.mma %{{.*}}, %{{.*}}, %{{.*}} shape(64, 64, 64) : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>
// CHECK-NEXT:    pto.mma %{{.*}}, %{{.*}}, %{{.*}} shape(64, 64, 64) : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf16>, !pto.l1buf<4096xf16>
// CHECK-NEXT:    pto.mma %{{.*}}, %{{.*}}, %{{.*}} shape(16, 8, 32) : !pto.l1buf<4096xf32>, !pto.l1buf<512xbf16>, !pto.l1buf<256xbf16>
// CHECK-NEXT:    pto.mma %{{.*}}, %{{.*}}, %{{.*}} shape(1, 1, 1) : !pto.l1buf<1xf16>, !pto.l1buf<1xf16>, !pto.l1buf<1xf16>
// CHECK-NEXT:    pto.mma %{{.*}}, %{{.*}}, %{{.*}} shape(8, 8, 8) : !pto.ptr<i32, local>, !pto.ptr<i32, local>, !pto.l1buf<64xi32>
func.func @mma(%c: !pto.l1buf<4096xf32>, %a32: !pto.l1buf<4096xf32>, %a16: !pto.l1buf<4096xf16>,
               %abf: !pto.l1buf<512xbf16>, %bbf: !pto.l1buf<256xbf16>, %h: !pto.l1buf<1xf16>,
               %ci: !pto.ptr<i32, local>, %bi: !pto.l1buf<64xi32>) {
  pto.mma %c, %a32, %a32 shape(64, 64, 64) : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>
  pto.mma %c, %a16, %a16 shape(64, 64, 64) : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf16>, !pto.l1buf<4096xf16>
  pto.mma %c, %abf, %bbf shape(16, 8, 32) : !pto.l1buf<4096xf32>, !pto.l1buf<512xbf16>, !pto.l1buf<256xbf16>
  pto.mma %h, %h, %h shape(1, 1, 1) : !pto.l1buf<1xf16>, !pto.l1buf<1xf16>, !pto.l1buf<1xf16>
  pto.mma %ci, %ci, %bi shape(8, 8, 8) : !pto.ptr<i32, local>, !pto.ptr<i32, local>, !pto.l1buf<64xi32>
  func.return
}

// The article's four-stage pipeline in a loop: stages without results, `after` with one name.
// CHECK-LABEL: func.func @pipeline_in_loop
// CHECK:         scf.for
// CHECK-NEXT:      pto.pipeline {
// CHECK-NEXT:        pto.stage "load_a" {
// CHECK-NEXT:          pto.yield
// CHECK-NEXT:        }
// CHECK-NEXT:        pto.stage "load_b" after ["load_a"] {
// CHECK-NEXT:          pto.yield
// CHECK-NEXT:        }
// CHECK-NEXT:        pto.stage "compute" after ["load_b"] {
// CHECK-NEXT:          pto.yield
// CHECK-NEXT:        }
// CHECK-NEXT:        pto.stage "store" after ["compute"] {
// CHECK-NEXT:          pto.yield
// CHECK-NEXT:        }
// CHECK-NEXT:        pto.yield
// CHECK-NEXT:      }
func.func @pipeline_in_loop(%lo: index, %hi: index, %step: index) {
  scf.for %k = %lo to %hi step %step {
    pto.pipeline {
      pto.stage "load_a" {
        pto.yield
      }
      pto.stage "load_b" after ["load_a"] {
        pto.yield
      }
      pto.stage "compute" after ["load_b"] {
        pto.yield
      }
      pto.stage "store" after ["compute"] {
        pto.yield
      }
      pto.yield
    }
  }
  func.return
}

// Values flow out of stages into later stages and out of the pipeline; `after` lists several
// names (a DAG, not a chain).
// CHECK-LABEL: func.func @pipeline_values
// CHECK-NEXT:    %[[R0:[^,]*]], %[[R1:[^ ]*]] = pto.pipeline -> (!pto.l1buf<64xf32>, f32) {
// CHECK-NEXT:      %[[A:[^,]*]], %[[T:[^ ]*]] = pto.stage "load_a" -> (!pto.l1buf<64xf32>, !pto.token) {
// CHECK:             pto.yield %{{.*}}, %{{.*}} : !pto.l1buf<64xf32>, !pto.token
// CHECK-NEXT:      }
// CHECK-NEXT:      %{{.*}} = pto.stage "load_b" -> (!pto.l1buf<64xf32>) {
// CHECK:           %[[V:.*]] = pto.stage "compute" after ["load_a", "load_b"] -> (f32) {
// CHECK-NEXT:        pto.wait %[[T]]
// CHECK-NEXT:        %{{.*}} = pto.load %[[A]] : !pto.l1buf<64xf32> -> f32
// CHECK:           pto.yield %[[A]], %[[V]] : !pto.l1buf<64xf32>, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R0]], %[[R1]] : !pto.l1buf<64xf32>, f32
func.func @pipeline_values(%g: !pto.ptr<f32, global>, %n: i32) -> (!pto.l1buf<64xf32>, f32) {
  %r:2 = pto.pipeline -> (!pto.l1buf<64xf32>, f32) {
    %a, %t = pto.stage "load_a" -> (!pto.l1buf<64xf32>, !pto.token) {
      %buf = pto.alloc_local : !pto.l1buf<64xf32>
      %tok = pto.async_load %buf, %g, %n rows %n strides(%n, %n) : !pto.l1buf<64xf32>, !pto.ptr<f32, global>
      pto.yield %buf, %tok : !pto.l1buf<64xf32>, !pto.token
    }
    %b = pto.stage "load_b" -> (!pto.l1buf<64xf32>) {
      %buf = pto.alloc_local : !pto.l1buf<64xf32>
      pto.yield %buf : !pto.l1buf<64xf32>
    }
    %v = pto.stage "compute" after ["load_a", "load_b"] -> (f32) {
      pto.wait %t
      %x = pto.load %a : !pto.l1buf<64xf32> -> f32
      pto.store %x, %b : f32, !pto.l1buf<64xf32>
      pto.yield %x : f32
    }
    pto.yield %a, %v : !pto.l1buf<64xf32>, f32
  }
  func.return %r#0, %r#1 : !pto.l1buf<64xf32>, f32
}

// A pipeline need not be in a loop, and may hold a single stage.
// CHECK-LABEL: func.func @pipeline_single_stage
// CHECK-NEXT:    pto.pipeline {
// CHECK-NEXT:      pto.stage "only" {
// CHECK-NEXT:        pto.barrier_block
// CHECK-NEXT:        pto.yield
func.func @pipeline_single_stage() {
  pto.pipeline {
    pto.stage "only" {
      pto.barrier_block
      pto.yield
    }
    pto.yield
  }
  func.return
}

// Discardable attributes on the region ops (as passes attach them) survive, after the keyword.
// CHECK-LABEL: func.func @pipeline_attributes
// CHECK-NEXT:    pto.pipeline attributes {pto.stages = 2 : i64} {
// CHECK-NEXT:      pto.stage "r" {
// CHECK-NEXT:        pto.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      pto.stage "s" after ["r"] attributes {tag = "x"} {
func.func @pipeline_attributes() {
  pto.pipeline attributes {pto.stages = 2 : i64} {
    pto.stage "r" {
      pto.yield
    }
    pto.stage "s" after ["r"] attributes {tag = "x"} {
      pto.yield
    }
    pto.yield
  }
  func.return
}

// printf with values of several types, and with none; the format string keeps its escapes.
// CHECK-LABEL: func.func @printf
// CHECK-NEXT:    pto.printf "i=%d v=%.3f b=%d" (%{{.*}}, %{{.*}}, %{{.*}} : i32, f32, i1)
// CHECK-NEXT:    pto.printf "100%% done\0A"
func.func @printf(%i: i32, %v: f32, %b: i1) {
  pto.printf "i=%d v=%.3f b=%d" (%i, %v, %b : i32, f32, i1)
  pto.printf "100%% done\n"
  func.return
}

// Every op carries the Python source location it came from; it must survive both forms.
// LOC-LABEL: func.func @python_locations
// LOC:         pto.get_global_id 0 : i32 loc("k.py":3:8)
// LOC:         pto.load %{{.*}} : !pto.ptr<f32, global> -> f32 loc("k.py":4:12)
// LOC:         pto.barrier_block loc("k.py":5:4)
func.func @python_locations(%p: !pto.ptr<f32, global>) {
  %i = pto.get_global_id 0 : i32 loc("k.py":3:8)
  %v = pto.load %p : !pto.ptr<f32, global> -> f32 loc("k.py":4:12)
  pto.barrier_block loc("k.py":5:4)
  func.return
}

// Tile instructions and the pipeline region ops keep their Python locations too.
// LOC-LABEL: func.func @python_locations_tile_ops
// LOC:         pto.pipeline {
// LOC:           pto.stage "load" {
// LOC-NEXT:        %{{.*}} = pto.alloc_local : !pto.l1buf<64xf32> loc("k.py":9:14)
// LOC-NEXT:        %{{.*}} = pto.async_load {{.*}} loc("k.py":10:14)
// LOC-NEXT:        pto.wait %{{.*}} loc("k.py":11:8)
// LOC-NEXT:        pto.yield loc("k.py":8:8)
// LOC-NEXT:      } loc("k.py":8:8)
// LOC-NEXT:      pto.yield loc("k.py":7:4)
// LOC-NEXT:    } loc("k.py":7:4)
// LOC-NEXT:    pto.printf "done" loc("k.py":12:4)
func.func @python_locations_tile_ops(%g: !pto.ptr<f32, global>, %n: i32) {
  pto.pipeline {
    pto.stage "load" {
      %b = pto.alloc_local : !pto.l1buf<64xf32> loc("k.py":9:14)
      %t = pto.async_load %b, %g, %n rows %n strides(%n, %n) : !pto.l1buf<64xf32>, !pto.ptr<f32, global> loc("k.py":10:14)
      pto.wait %t loc("k.py":11:8)
      pto.yield loc("k.py":8:8)
    } loc("k.py":8:8)
    pto.yield loc("k.py":7:4)
  } loc("k.py":7:4)
  pto.printf "done" loc("k.py":12:4)
  func.return
}

// The elementwise sigmoid keeps its operand's float type.
// CHECK-LABEL: func.func @sigmoid(
// CHECK-NEXT:    %{{.*}} = pto.sigmoid %{{.*}} : f32
// CHECK-NEXT:    %{{.*}} = pto.sigmoid %{{.*}} : bf16
func.func @sigmoid(%x: f32, %h: bf16) -> (f32, bf16) {
  %0 = pto.sigmoid %x : f32
  %1 = pto.sigmoid %h : bf16
  func.return %0, %1 : f32, bf16
}
