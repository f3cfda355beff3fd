// --list-passes prints every registered pass with the first line of its docstring.
// RUN: pypto-opt --list-passes | filecheck %s

// CHECK:      Available passes:
// CHECK:        canonicalize {{ *}}Fold constants
// CHECK:        convert-pto-to-llvm {{ *}}Lower the lane and grid functions (in cf form) to the llvm dialect, accesses checked.
// CHECK:        convert-pto-to-npu {{ *}}Lower pto to the npu firmware level: pipes, flags for copies, lane accesses staged in L1.
// CHECK-NEXT:     block-size: int = 256
// CHECK:        convert-scf-to-cf {{ *}}Lower scf.if/for/while/index_switch to blocks and cf branches (xDSL's pass + while).
// CHECK:        cse {{ *}}Common subexpression elimination
// CHECK:        npu-fuse-load-mma {{ *}}Fuse an MMA with the tile load feeding it (npu.load_mma), as the target's firmware does.
// CHECK-NEXT:     target: str =
// CHECK:        pto-allocate-l1 {{ *}}Place L1 buffers at byte offsets, reusing dead buffers' bytes; L1CapacityError if too big.
// CHECK-NEXT:     l1-bytes: int = 0
// CHECK-NEXT:     align: int = 0
// CHECK-NEXT:   pto-double-buffer {{ *}}Give load-stage buffers of pipelined loops N slots and issue loads N-1 iterations ahead.
// CHECK-NEXT:     l1-bytes: int = 0
// CHECK-NEXT:     align: int = 0
// CHECK-NEXT:     stages: int = 2
