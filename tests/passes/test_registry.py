"""The pass registry and pipeline plumbing that `pto.compile()` and pypto-opt share."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass
from pypto.passes.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from pypto.dialects.pto import GetGlobalIdOp
from pypto.errors import PtoError, VerificationError
from pypto.ir import make_context
from pypto.passes import (
    PASSES,
    PassOption,
    PipelineError,
    list_passes,
    parse_pipeline,
    pass_options,
    run_pipeline,
)
from pypto.passes.cse import CSEPass
from pypto.diagnostics import (
    OpDiagnostic,
    attach_op,
    capture_diagnostics,
    emit_remark,
    emit_warning,
    error_op,
    locate_verify_failure,
)
from pypto.tools.parsing import parse_module

KERNEL = """\
func.func @k(%p: !pto.ptr<f32, global>) {
  %a = pto.get_global_id 0 : i32
  %b = pto.get_global_id 0 : i32
  %q = pto.addptr %p, %a : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %r = pto.addptr %p, %b : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %q : !pto.ptr<f32, global> -> f32
  pto.store %v, %r : f32, !pto.ptr<f32, global>
  func.return
}
"""


def parse(text: str = KERNEL) -> builtin.ModuleOp:
    module, _ = parse_module(make_context(), text, "k.mlir")
    return module


@dataclass(frozen=True)
class OptionsPass(ModulePass):
    """Takes options of several types."""

    name = "test-options"
    stages: int = 2
    verbose: bool = False
    mode: str = "fast"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        pass


@pytest.fixture
def options_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PASSES, OptionsPass.name, lambda: OptionsPass)


def test_registry_entries_are_the_named_frozen_passes():
    # A registry key that differs from the pass's own name would make --list-passes and
    # --print-ir-after-all disagree with what the user typed.
    for name, factory in PASSES.items():
        cls = factory()
        assert issubclass(cls, ModulePass)
        assert cls.name == name
        assert dataclasses.is_dataclass(cls)


def test_list_passes_gives_one_line_summaries():
    passes = dict(list_passes())
    assert list(passes) == sorted(passes)
    assert {"canonicalize", "cse"} <= passes.keys()
    for summary in passes.values():
        assert summary and "\n" not in summary


def test_summary_is_first_docstring_line(options_pass):
    assert dict(list_passes())["test-options"] == "Takes options of several types."


@pytest.mark.parametrize("text", [
    "builtin.module(canonicalize,cse)",
    "canonicalize,cse",
    "  builtin.module( canonicalize , cse )  ",
])
def test_both_pipeline_forms(text):
    passes = parse_pipeline(text)
    assert [type(p) for p in passes] == [CanonicalizePass, CSEPass]


@pytest.mark.parametrize("text", ["", "builtin.module()", "   "])
def test_empty_pipeline(text):
    assert parse_pipeline(text) == []


def test_options_are_parsed_and_typed(options_pass):
    (p,) = parse_pipeline("builtin.module(test-options{stages=3 verbose=true mode=exact})")
    assert p == OptionsPass(stages=3, verbose=True, mode="exact")
    (p,) = parse_pipeline("test-options")
    assert p == OptionsPass()


def test_pass_options_describe_fields(options_pass):
    assert pass_options(OptionsPass) == [PassOption("stages", "int", "2"),
                                         PassOption("verbose", "bool", "false"),
                                         PassOption("mode", "str", "fast")]


@pytest.mark.parametrize("text, message, position", [
    ("cse,nope", "unknown pass 'nope'; valid passes: ", 4),
    ("builtin.module(cse,nope)", "unknown pass 'nope'", 19),
    ("cse{x=1}", "pass 'cse' has no option 'x'; it takes no options", 0),
    ("test-options{stage=3}", "pass 'test-options' has no option 'stage'; valid options: "
                              "stages (int, default 2), verbose (bool, default false), "
                              "mode (str, default fast)", 0),
    ("cse,test-options{stages=x}", "invalid value 'x' for option 'stages' of pass "
                                   "'test-options' (expected int)", 4),
    ("cse,,cse", "Expected pass name here", 4),
    ("cse cse", "Expected a comma or pass arguments here", 3),
    ("builtin.module(cse", "balanced parentheses", 0),
    ("builtin.module(func.func(cse))", "nested pass pipelines", 15),
])
def test_pipeline_errors(options_pass, text, message, position):
    with pytest.raises(PipelineError) as info:
        parse_pipeline(text)
    assert message in str(info.value)
    assert info.value.position == position
    assert info.value.pipeline == text


def test_unknown_pass_lists_every_registered_pass():
    with pytest.raises(PipelineError) as info:
        parse_pipeline("nope")
    assert str(info.value) == f"unknown pass 'nope'; valid passes: {', '.join(sorted(PASSES))}"


def test_pipeline_error_is_a_pto_error_and_a_value_error():
    with pytest.raises(PtoError):
        parse_pipeline("nope")
    with pytest.raises(ValueError):
        parse_pipeline("nope")


def test_run_pipeline_applies_passes_and_calls_back():
    module = parse()
    seen: list[str] = []
    run_pipeline(module, parse_pipeline("cse,canonicalize"), make_context(),
                 after_pass=lambda p, m: seen.append(p.name))
    assert seen == ["cse", "canonicalize"]
    assert sum(isinstance(op, GetGlobalIdOp) for op in module.walk()) == 1


@dataclass(frozen=True)
class BreakPass(ModulePass):
    """Sets an id op's dimension to 9."""

    name = "test-break"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        ids = next(o for o in op.walk() if isinstance(o, GetGlobalIdOp))
        ids.properties["dim"] = builtin.IntegerAttr(9, builtin.i64)


def test_run_pipeline_verifies_after_each_pass():
    module = parse()
    calls: list[str] = []
    with pytest.raises(VerificationError) as info:
        run_pipeline(module, [BreakPass(), CommonSubexpressionElimination()], make_context(),
                     after_pass=lambda p, m: calls.append(p.name))
    assert str(info.value) == ("'pto.get_global_id' op dimension must be 0, 1 or 2, got 9 "
                               "(the IR produced by pass 'test-break' does not verify)")
    assert isinstance(error_op(info.value), GetGlobalIdOp)
    assert calls == []  # the callback only sees IR that verifies; cse never ran


def test_locate_verify_failure():
    module = parse()
    assert locate_verify_failure(module) is None
    second = [o for o in module.walk() if isinstance(o, GetGlobalIdOp)][1]
    second.properties["dim"] = builtin.IntegerAttr(3, builtin.i64)
    op, message = locate_verify_failure(module)
    assert op is second
    assert message == "dimension must be 0, 1 or 2, got 3"


def test_emitted_diagnostics_reach_the_handler():
    module = parse()
    got: list[OpDiagnostic] = []
    with capture_diagnostics(got.append):
        emit_warning(module, "w", [("n", None)])
        emit_remark(None, "r")
    assert [(d.severity, d.message, d.op, d.notes) for d in got] == [
        ("warning", "w", module, [("n", None)]), ("remark", "r", None, [])]
    # without a handler: remarks are dropped, warnings become Python warnings
    emit_remark(None, "dropped")
    with pytest.warns(UserWarning, match="unhandled"):
        emit_warning(None, "unhandled")


def test_attach_op_keeps_the_exception():
    module = parse()
    err = attach_op(ValueError("x"), module, [("note", None)])
    assert isinstance(err, ValueError) and error_op(err) is module
    assert err.notes == [("note", None)]  # type: ignore[attr-defined]
