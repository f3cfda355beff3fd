# SIMT loops: the grid-stride loop, while, break/continue and uniform loops, as lowered.
#
# RUN: %python %s | filecheck %s

import pypto as pto


@pto.kernel
def grid_stride(x, o, n):
    for i in range(pto.get_global_id(), n, pto.get_grid_dim() * pto.get_block_dim()):
        pto.store(o + i, pto.load(x + i))


@pto.kernel
def lane_bounds(o, n):
    acc = 0
    for k in range(pto.get_local_id(), n):
        acc += k
    pto.store(o + pto.get_global_id(), acc)


@pto.kernel
def while_break(o, n):
    i = pto.get_global_id()
    while i < n:
        if i % 7 == 3:
            break
        i += 2
    pto.store(o + pto.get_global_id(), i)


@pto.kernel
def uniform_continue(o, n):
    acc = 0
    for k in range(n):
        if k == 2:
            continue
        acc += k
    pto.store(o + pto.get_global_id(), acc)


t = pto.alloc_tensor(4 * 64, dtype=pto.int32)
f = pto.alloc_tensor(4 * 64)
print(pto.compile(grid_stride, args=(f, f, 64), block=64).mlir)
print(pto.compile(lane_bounds, args=(t, 64), block=64).mlir)
print(pto.compile(while_break, args=(t, 64), block=64).mlir)
print(pto.compile(uniform_continue, args=(t, 64), block=64).mlir)

# A run-time step is checked once (pto.loop_step) and its sign picks the comparison; the
# counter is carried by an scf.while whose condition is per lane.
# CHECK-LABEL: func.func @grid_stride
# CHECK:       %[[G:.*]] = pto.get_global_id 0 : i32
# CHECK:       %[[S:.*]] = arith.muli
# CHECK:       %[[STEP:.*]] = pto.loop_step %[[S]] : i32
# CHECK:       %[[UP:.*]] = arith.cmpi sgt, %[[STEP]]
# CHECK:       scf.while (%[[I:.*]] = %[[G]]) : (i32) -> i32 {
# CHECK:         %[[LT:.*]] = arith.cmpi slt, %[[I]], %n
# CHECK:         %[[GT:.*]] = arith.cmpi sgt, %[[I]], %n
# CHECK:         %[[C:.*]] = arith.select %[[UP]], %[[LT]], %[[GT]] : i1
# CHECK:         scf.condition(%[[C]]) %[[I]] : i32
# CHECK:       } do {
# CHECK:       ^bb0(%i: i32):
# CHECK:         pto.load
# CHECK:         pto.store
# CHECK:         %[[NEXT:.*]] = arith.addi %i, %[[STEP]] : i32
# CHECK:         scf.yield %[[NEXT]] : i32
# CHECK:       }

# A compile-time step with a per-lane start: built as scf.for, rewritten to scf.while.
# CHECK-LABEL: func.func @lane_bounds
# CHECK-NOT:   scf.for
# CHECK:       %[[L:.*]] = pto.get_local_id 0 : i32
# CHECK:       %{{.*}}, %[[ACC:.*]] = scf.while (%[[K:.*]] = %[[L]], %[[A:.*]] = %{{.*}}) : (i32, i32) -> (i32, i32) {
# CHECK:         %[[C2:.*]] = arith.cmpi slt, %[[K]], %n : i32
# CHECK:         scf.condition(%[[C2]]) %[[K]], %[[A]] : i32, i32
# CHECK:       } do {
# CHECK:         arith.addi
# CHECK:         %[[K2:.*]] = arith.addi %k, %{{.*}} : i32
# CHECK:         scf.yield %[[K2]], %{{.*}} : i32, i32
# CHECK:       }
# CHECK:       pto.store %[[ACC]],

# `break` is a carried flag: the condition of lanes that broke is not evaluated again, and the
# rest of the iteration is masked off by the rewrite of the body.
# CHECK-LABEL: func.func @while_break
# CHECK:       scf.while ({{.*}}) : (i1, i32) -> (i1, i32) {
# CHECK:         scf.if
# CHECK:         scf.condition
# CHECK:       } do {
# CHECK:         %[[B:.*]], %[[I2:.*]] = scf.if %{{.*}} -> (i1, i32) {
# CHECK:         } else {
# CHECK:           arith.addi
# CHECK:         }
# CHECK:         scf.yield %[[B]], %[[I2]] : i1, i32
# CHECK:       }

# A uniform loop with `continue` stays an scf.for (as fast as before).
# CHECK-LABEL: func.func @uniform_continue
# CHECK-NOT:   scf.while
# CHECK:       scf.for
# CHECK:         scf.if %{{.*}} -> (i32) {
# CHECK:         } else {
# CHECK:           arith.addi
# CHECK:         }
# CHECK-NOT:   scf.while
