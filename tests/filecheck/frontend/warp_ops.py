# The warp shuffles and votes lower to one pto op each, located at the call: the unrolled
# shfl_down reduction (five shuffles by the constants 16 .. 1), a Python int lane operand
# materialised as an i32 constant, a vote's predicate made an i1 (an int predicate compared
# with 0, as CUDA's), and a vote's result deciding an `if` (warp-uniform, accepted).
#
# RUN: %python %s | filecheck %s

import pypto as pto


@pto.kernel
def warp_ops(x, o):
    i = pto.get_global_id()
    v = x[i]
    for off in (16, 8, 4, 2, 1):
        v += pto.shfl_down(v, off)
    m = pto.ballot(i & 1)
    if pto.vote_all(v > 0.0):
        v = pto.shfl(v, 0)
    o[i] = v + pto.cast(m, pto.float32)


t = pto.alloc_tensor(4 * 64)
print(pto.compile(warp_ops, args=(t, t), block=64).mlir)

# CHECK-LABEL: func.func @warp_ops
# CHECK:       %[[V:.*]] = pto.load
# CHECK:       %[[C16:.*]] = arith.constant 16 : i32
# CHECK-NEXT:  %[[S16:.*]] = pto.shfl_down %[[V]], %[[C16]] : f32
# CHECK-NEXT:  %[[V1:.*]] = arith.addf %[[V]], %[[S16]] : f32
# CHECK:       arith.constant 8 : i32
# CHECK-NEXT:  pto.shfl_down %[[V1]], %{{.*}} : f32
# CHECK:       arith.constant 4 : i32
# CHECK-NEXT:  pto.shfl_down
# CHECK:       arith.constant 2 : i32
# CHECK-NEXT:  pto.shfl_down
# CHECK:       arith.constant 1 : i32
# CHECK-NEXT:  pto.shfl_down
# CHECK-NOT:   pto.shfl_down
# CHECK:       %[[BIT:.*]] = arith.andi
# CHECK:       %[[P:.*]] = arith.cmpi ne, %[[BIT]], %{{.*}} : i32
# CHECK-NEXT:  %{{.*}} = pto.ballot %[[P]] : i32
# CHECK:       %[[ALL:.*]] = pto.vote_all %{{.*}} : i1
# CHECK-NEXT:  %{{.*}} = scf.if %[[ALL]] -> (f32) {
# CHECK:         pto.shfl %{{.*}}, %{{.*}} : f32
# CHECK:       pto.store
