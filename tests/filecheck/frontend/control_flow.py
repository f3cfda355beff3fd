# if/elif/else with values merged through scf.if results; weak-typed literals; constant folding.
#
# RUN: %python %s | filecheck %s

import pypto as pto

SCALE = 3  # module-level constant: folded at compile time
DEBUG = False


@pto.kernel
def branches(x, o, n):
    i = pto.get_global_id()
    v = pto.load(x + i)
    if v > 0.5:
        r = v * 2.0
    elif v > 0.25:
        r = v - 1.0
    else:
        r = -v
    if DEBUG:
        r = r + 1000.0
    pto.store(o + i, r + SCALE * 2)


t = pto.alloc_tensor(64 * 2, dtype=pto.float16)
print(pto.compile(branches, args=(t, t, 64), block=64).mlir)

# CHECK-LABEL: func.func @branches(%x: !pto.ptr<f16, global>, %o: !pto.ptr<f16, global>, %n: i32)
# CHECK:       %[[V:.*]] = pto.load {{.*}} -> f16
# CHECK:       %[[HALF:.*]] = arith.constant 5.000000e-01 : f16
# CHECK:       %[[C1:.*]] = arith.cmpf ogt, %[[V]], %[[HALF]] : f16
# CHECK:       %[[R:.*]] = scf.if %[[C1]] -> (f16) {
# CHECK:         arith.mulf
# CHECK:         scf.yield %{{.*}} : f16
# CHECK:       } else {
# CHECK:         %[[R2:.*]] = scf.if %{{.*}} -> (f16) {
# CHECK:           arith.subf
# CHECK:         } else {
# CHECK:           arith.negf
# CHECK:         }
# CHECK:         scf.yield %[[R2]] : f16
# CHECK:       }
# The DEBUG branch is folded away and SCALE * 2 becomes one f16 constant.
# CHECK-NOT:   1.000000e+03
# CHECK:       %[[SIX:.*]] = arith.constant 6.000000e+00 : f16
# CHECK:       arith.addf %[[R]], %[[SIX]] : f16
