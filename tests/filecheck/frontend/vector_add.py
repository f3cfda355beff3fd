# The frontend's IR for the article's vector_add, and its round trips through pypto-opt.
#
# RUN: %python %s | filecheck %s
# RUN: %python %s > %t.mlir
# Fixed point: pypto-opt's output parses and prints back to itself.
# RUN: pypto-opt %t.mlir > %t.1.mlir
# RUN: pypto-opt %t.1.mlir > %t.2.mlir
# RUN: diff %t.1.mlir %t.2.mlir
# RUN: diff %t.mlir %t.1.mlir
# The generic form parses back to the same IR.
# RUN: pypto-opt %t.mlir --print-op-generic | pypto-opt > %t.3.mlir
# RUN: diff %t.1.mlir %t.3.mlir
# Locations: every op carries its Python file:line:col.
# RUN: %python %s --debuginfo | filecheck %s --check-prefix=LOC

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))

import pypto as pto  # noqa: E402
from vector_add import vector_add  # noqa: E402

args = tuple(pto.alloc_tensor(1024 * 4) for _ in range(3)) + (1024,)
ck = pto.compile(vector_add, args=args, block=256)
print(ck.as_text(debuginfo="--debuginfo" in sys.argv), end="")

# CHECK:      func.func @vector_add(%a: !pto.ptr<f32, global> {pto.noalias}, %b: !pto.ptr<f32, global> {pto.noalias}, %o: !pto.ptr<f32, global> {pto.noalias}, %n: i32) attributes {pto.kernel} {
# CHECK-NEXT:   %[[I:.*]] = pto.get_global_id 0 : i32
# CHECK-NEXT:   %[[C:.*]] = arith.cmpi slt, %[[I]], %n : i32
# CHECK-NEXT:   scf.if %[[C]] {
# CHECK-NEXT:     %[[PA:.*]] = pto.addptr %a, %[[I]] : !pto.ptr<f32, global>, i32
# CHECK-NEXT:     %[[A:.*]] = pto.load %[[PA]] : !pto.ptr<f32, global> -> f32
# CHECK-NEXT:     %[[PB:.*]] = pto.addptr %b, %[[I]] : !pto.ptr<f32, global>, i32
# CHECK-NEXT:     %[[B:.*]] = pto.load %[[PB]] : !pto.ptr<f32, global> -> f32
# CHECK-NEXT:     %[[PO:.*]] = pto.addptr %o, %[[I]] : !pto.ptr<f32, global>, i32
# CHECK-NEXT:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
# CHECK-NEXT:     pto.fma %[[PO]], %[[A]], %[[ONE]], %[[B]] : !pto.ptr<f32, global>, f32
# CHECK-NEXT:   }
# CHECK-NEXT:   func.return
# CHECK-NEXT: }

# LOC: pto.get_global_id 0 : i32 loc("{{.*}}examples/vector_add.py":14:9)
# LOC: arith.cmpi slt, {{.*}} loc("{{.*}}examples/vector_add.py":17:8)
# LOC: pto.load {{.*}} loc("{{.*}}examples/vector_add.py":19:17)
# LOC: pto.fma {{.*}} loc("{{.*}}examples/vector_add.py":25:9)
