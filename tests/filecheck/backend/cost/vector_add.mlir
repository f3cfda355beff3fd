// RUN: pypto-opt %s --emit=timeline --grid 4 --block 256 | filecheck %s
// RUN: pypto-opt %s --emit=timeline --grid 4 --block 256 --model table | filecheck %s --check-prefix=TABLE
// RUN: pypto-opt %s --emit=cost --grid 4096 --block 256 | filecheck %s --check-prefix=COST

// Golden timeline of the article's vector_add (docs/cost-model.md#quick-start): the firmware view ('fused', lowered to
// the npu level first) and the simulator's table. Each 256-lane LOAD is 4 repeats of 256 bytes
// on the VECTOR pipe: latency + 3 cycles; the second LOAD queues behind the first, the FMA waits
// for the second's value, which arrives the HBM latency (200 cycles) after its LOAD; the block
// ends when its store has landed (another 200). The launch adds its fixed 1000 cycles and each
// block its 16-cycle start.

// CHECK:      # modelled by the pypto cost model (not measured): model 'fused'
// CHECK-SAME: target pto-default ({{.*}}default.toml)
// CHECK:      # the pto-level input was lowered first: convert-pto-to-npu{block-dims=256,1,1 warp-size=32 max-block-lanes=1024},npu-fuse-load-mma
// CHECK:      Total: vector_add: 1440 cycles, bound by compute (compute 440 cycles
// CHECK:      Instruction timeline of block 0 (424 cycles):
// CHECK-NEXT: Cycle 0: Lane 0-255: GET_GLOBAL_ID
// CHECK-NEXT: Cycle 1: Lane 0-255: CMPI
// CHECK-NEXT: Cycle 2: Lane 0-255: ADDPTR
// CHECK-NEXT: Cycle 3: Lane 0-255: ADDPTR
// CHECK-NEXT: Cycle 4: Lane 0-255: LOAD
// CHECK-NEXT: Cycle 5: Lane 0-255: ADDPTR
// CHECK-NEXT: Cycle 10: Lane 0-255: LOAD
// CHECK-NEXT: Cycle 216: Lane 0-255: FMA
// The ruler labels every tenth column with the cycle it starts at (3 cycles per column here).
// CHECK:      Timeline view (D dispatched, = waiting, e executing, E last cycle; 3 cycles per column):
// CHECK-NEXT: {{^ +}}0.........30........60........90........120.......150.......180.......210..{{$}}
// CHECK:      [  4]  VECTOR    eeE
// CHECK-SAME: LOAD (va.py:6)
// CHECK:      [  7]  VECTOR     D======
// CHECK-SAME: =eeE  FMA (va.py:6)
// CHECK:      Resource pressure per pipe (block 0):
// CHECK:      LOAD: 3 cycles (x8 on VECTOR, 48 pipe cycles)
// CHECK-NEXT: FMA: 5 cycles (x4 on VECTOR, 32 pipe cycles)
// CHECK:      Bubbles (3):
// CHECK-NEXT: VECTOR idle for 200 cycles (16-216) before FMA at va.py:6: waits for its operand produced by LOAD at va.py:6:46 (data from HBM: 200 cycles of latency after the LOAD) [x4 blocks]

// TABLE:      model 'table'
// TABLE:      Total: vector_add: 1445 cycles
// TABLE:      Cycle 4: Lane 0-255: LOAD
// TABLE-NEXT: Cycle 5: Lane 0-255: ADDPTR
// TABLE-NEXT: Cycle 11: Lane 0-255: LOAD
// TABLE-NEXT: Cycle 218: Lane 0-255: FMA
// TABLE:      LOAD: 4 cycles
// TABLE-NEXT: FMA: 8 cycles

// At 2^20 lanes (4096 blocks of 256, 128 per core) every block pays the HBM latency of its
// loads and of its store: the launch is bound by that latency, not by HBM's bandwidth (12 bytes
// per lane at 1200 B/cycle would take 10486 cycles).
// COST:      total_cycles: 57320
// COST-NEXT: # vector_add: 57320 cycles, bound by compute (compute 56320 cycles: 4096 block(s) on 32 core(s) in 128 wave(s), 1 distinct block behaviour(s); HBM 12582912 bytes at 1200 B/cycle = 10486 cycles)
// COST:      bubble: VECTOR idle for 200 cycles (16-216) before FMA at va.py:6: waits for its operand produced by LOAD at va.py:6:46 (data from HBM: 200 cycles of latency after the LOAD)

func.func @vector_add(%a: !pto.ptr<f32, global> loc("va.py":3:16), %b: !pto.ptr<f32, global> loc("va.py":3:19), %o: !pto.ptr<f32, global> loc("va.py":3:22), %n: i32 loc("va.py":3:25)) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32 loc("va.py":4:9)
  %0 = arith.cmpi slt, %i, %n : i32 loc("va.py":5:8)
  scf.if %0 {
    %1 = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global> loc("va.py":6:17)
    %2 = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global> loc("va.py":6:33)
    %3 = pto.load %2 : !pto.ptr<f32, global> -> f32 loc("va.py":6:24)
    %4 = pto.addptr %b, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global> loc("va.py":6:55)
    %5 = pto.load %4 : !pto.ptr<f32, global> -> f32 loc("va.py":6:46)
    %6 = arith.constant 1.000000e+00 : f32 loc("va.py":6:9)
    pto.fma %1, %3, %6, %5 : !pto.ptr<f32, global>, f32 loc("va.py":6:9)
  } loc("va.py":5:5)
  func.return loc("va.py":5:5)
} loc("va.py":3:1)
