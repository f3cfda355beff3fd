# pto.reduce lowers to the pto ops an author would write: an L1 scratch buffer filled with the
# identity at the kernel's entry, lane stores and loads, and (block scope) the halving tree
# between barrier_blocks. The helper `twice` is inlined.
#
# RUN: %python %s | filecheck %s

import pypto as pto


def twice(v):
    return v + v


@pto.kernel
def warp_max(x, o):
    i = pto.get_global_id()
    pto.store(o + i, pto.reduce(twice(pto.load(x + i)), op="max"))


@pto.kernel
def block_sum(x, o):
    i = pto.get_global_id()
    pto.store(o + i, pto.reduce(pto.load(x + i), scope="block"))


t = pto.alloc_tensor(4 * 64)
print(pto.compile(warp_max, args=(t, t), block=64).mlir)
print(pto.compile(block_sum, args=(t, t), block=64).mlir)

# Warp scope: no barrier (a warp is lockstep), 32 loads of the warp's slots, 31 maxima, the
# lane's slot reset to the identity (-inf).
# CHECK-LABEL: func.func @warp_max
# CHECK:       %[[BUF:.*]] = pto.alloc_local {{.*}}: !pto.l1buf<64xf32>
# CHECK:       %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
# CHECK:       pto.fill %[[BUF]], %[[NEGINF]]
# CHECK:       arith.addf
# CHECK-NOT:   pto.barrier
# CHECK-COUNT-31: arith.maximumf
# CHECK-NOT:   pto.barrier
# CHECK:       pto.store
# CHECK:       func.return

# Block scope: slots for 64 lanes, -0.0 as the identity of a float sum, 6 tree levels.
# CHECK-LABEL: func.func @block_sum
# CHECK:       %[[B:.*]] = pto.alloc_local {{.*}}: !pto.l1buf<64xf32>
# CHECK:       %[[Z:.*]] = arith.constant -0.000000e+00 : f32
# CHECK:       pto.fill %[[B]], %[[Z]]
# CHECK:       pto.store
# CHECK-NEXT:  pto.barrier_block
# CHECK:       %[[C32:.*]] = arith.constant 32 : i32
# CHECK:       scf.if
# CHECK:         pto.load
# CHECK:         pto.load
# CHECK:         arith.addf
# CHECK:         pto.store
# CHECK:       }
# CHECK-NEXT:  pto.barrier_block
# CHECK-COUNT-5: pto.barrier_block
# CHECK:       pto.load %[[B]]
# CHECK-NEXT:  pto.barrier_block
