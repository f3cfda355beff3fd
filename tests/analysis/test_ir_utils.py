"""pypto/analysis/ir_utils.py: the small IR questions every analysis asks, on hand-written IR."""

from __future__ import annotations

from xdsl.dialects import func

from pypto.analysis.ir_utils import (
    constant_int,
    kernel_of,
    kernels,
    passes_yield,
    root_alloc,
    yielded,
)
from pypto.ir import make_context
from pypto.tools.parsing import parse_module

IR = """
func.func @k(%a: !pto.ptr<f32, global>, %c: i1) attributes {pto.kernel} {
  %four = arith.constant 4 : i32
  %x = arith.constant 1.5 : f32
  %r = pto.pipeline -> (!pto.ptr<f32, local>) {
    %s = pto.stage "alloc" -> (!pto.ptr<f32, local>) {
      %buf = pto.alloc_local : !pto.l1buf<64xf32>
      %p = pto.addptr %buf, %four : !pto.l1buf<64xf32>, i32 -> !pto.ptr<f32, local>
      pto.yield %p : !pto.ptr<f32, local>
    }
    pto.yield %s : !pto.ptr<f32, local>
  }
  %q = pto.addptr %r, %four : !pto.ptr<f32, local>, i32 -> !pto.ptr<f32, local>
  %other = pto.alloc_local : !pto.l1buf<64xf32>
  %sel = scf.if %c -> (!pto.l1buf<64xf32>) {
    scf.yield %other : !pto.l1buf<64xf32>
  } else {
    scf.yield %other : !pto.l1buf<64xf32>
  }
  %g = pto.addptr %a, %four : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  func.return
}

func.func private @declared(i32)

func.func @helper() {
  func.return
}
"""


def _module():
    module, _ = parse_module(make_context(), IR, "ir_utils.mlir")
    return module


def _by_name(module) -> dict:
    return {r.name_hint: r for op in module.walk() for r in op.results if r.name_hint}


def test_root_alloc_follows_pointer_arithmetic_and_stage_results() -> None:
    values = _by_name(_module())
    buf = values["buf"]
    assert root_alloc(values["p"]) is buf
    assert root_alloc(values["s"]) is buf
    assert root_alloc(values["r"]) is buf
    assert root_alloc(values["q"]) is buf
    assert root_alloc(values["other"]) is values["other"]


def test_root_alloc_is_none_for_hbm_and_for_branches() -> None:
    values = _by_name(_module())
    assert root_alloc(values["g"]) is None  # a kernel parameter, not a declaration
    assert root_alloc(values["sel"]) is None  # a choice: not one declaration


def test_yielded_and_passes_yield() -> None:
    module = _module()
    values = _by_name(module)
    stage, pipeline, branch = values["s"].op, values["r"].op, values["sel"].op
    assert yielded(stage, 0) == [values["p"]]
    assert yielded(pipeline, 0) == [values["s"]]
    assert yielded(branch, 0) == [values["other"], values["other"]]
    assert yielded(branch, 1) == []
    assert passes_yield(stage) and passes_yield(pipeline) and passes_yield(branch)
    assert not passes_yield(values["q"].op)


def test_constant_int() -> None:
    values = _by_name(_module())
    assert constant_int(values["four"]) == 4
    assert constant_int(values["x"]) is None  # a float constant
    assert constant_int(values["q"]) is None


def test_kernels_are_the_functions_with_a_body_and_kernel_of_finds_them() -> None:
    module = _module()
    found = list(kernels(module))
    assert [f.sym_name.data for f in found] == ["k", "helper"]
    values = _by_name(module)
    assert kernel_of(values["p"].op) is found[0]
    assert kernel_of(found[1]) is found[1]
    assert kernel_of(module) is None
    assert all(isinstance(f, func.FuncOp) for f in found)
