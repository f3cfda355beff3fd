"""pypto-opt, driven in-process through `main(argv)` and, where the process boundary matters
(exit status, stdin, no traceback), as a subprocess.

Every bad input must give `FILE:LINE:COL: error: ...`, exit status 1 and no traceback; these
tests pin the messages users and lit tests rely on.
"""

from __future__ import annotations

import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass

from pypto.dialects.pto import GetGlobalIdOp, LoadOp
from pypto.errors import BarrierError
from pypto.passes import PASSES
from pypto.diagnostics import attach_op, emit_remark, emit_warning
from pypto.tools.opt import EXIT_INTERNAL_ERROR, main

VALID = """\
func.func @k(%p: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %q : !pto.ptr<f32, global> -> f32 loc("k.py":7:8)
  pto.store %v, %q : f32, !pto.ptr<f32, global>
  func.return
}
"""

BAD_LOAD = """\
func.func @k(%p: !pto.ptr<f32, global>) {
  %v = pto.load %p : !pto.ptr<f32, global> -> i32 loc("k.py":12:8)
  func.return
}
"""


@dataclass
class Run:
    code: int
    out: str
    err: str


def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str,
        stdin: str | None = None) -> Run:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err or code == EXIT_INTERNAL_ERROR
    return Run(code, captured.out, captured.err)


def run_process(*argv: str, stdin: str | None = None) -> Run:
    proc = subprocess.run([sys.executable, "-m", "pypto.tools.opt", *argv], input=stdin,
                          capture_output=True, text=True, timeout=60)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def write(tmp_path: Path, text: str, name: str = "in.mlir") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# -- test passes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StagesPass(ModulePass):
    """A do-nothing pass with an option, to test option parsing."""

    name = "test-stages"
    stages: int = 2

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class BreakIRPass(ModulePass):
    """Leaves invalid IR behind: gives the first id op a dimension that does not exist."""

    name = "test-break-ir"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        ids = next(o for o in op.walk() if isinstance(o, GetGlobalIdOp))
        ids.properties["dim"] = builtin.IntegerAttr(7, builtin.i64)


@dataclass(frozen=True)
class RejectPass(ModulePass):
    """Rejects the input with a pass diagnostic attached to an op, as pto-verify-barriers does."""

    name = "test-reject"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        load = next(o for o in op.walk() if isinstance(o, LoadOp))
        ids = next(o for o in op.walk() if isinstance(o, GetGlobalIdOp))
        raise attach_op(BarrierError("read of L1 buffer races with a write"), load,
                        [("the other access", ids)])


@dataclass(frozen=True)
class ChattyPass(ModulePass):
    """Emits a warning and a remark without failing."""

    name = "test-chatty"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        ids = next(o for o in op.walk() if isinstance(o, GetGlobalIdOp))
        emit_warning(ids, "id used as offset")
        emit_remark(None, "peak L1 usage: 0 bytes")


@dataclass(frozen=True)
class CrashPass(ModulePass):
    """A pass with a bug."""

    name = "test-crash"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        raise KeyError("oops")


@pytest.fixture
def test_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    for cls in (StagesPass, BreakIRPass, RejectPass, ChattyPass, CrashPass):
        monkeypatch.setitem(PASSES, cls.name, lambda cls=cls: cls)


# -- basic operation -------------------------------------------------------------------------


def test_file_in_custom_form_out(capsys, monkeypatch, tmp_path):
    result = run(capsys, monkeypatch, write(tmp_path, VALID))
    assert result.code == 0
    assert result.err == ""
    assert result.out.startswith("builtin.module {\n")
    assert "%v = pto.load %q : !pto.ptr<f32, global> -> f32\n" in result.out
    assert "loc(" not in result.out


def test_debuginfo_and_generic(capsys, monkeypatch, tmp_path):
    path = write(tmp_path, VALID)
    result = run(capsys, monkeypatch, path, "--mlir-print-debuginfo")
    assert 'loc("k.py":7:8)' in result.out
    result = run(capsys, monkeypatch, path, "--print-op-generic")
    assert '"pto.load"(%q) : (!pto.ptr<f32, global>) -> f32' in result.out


WHILE_LOOP = """\
func.func @k(%o: !pto.ptr<i32, global>) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32 loc("k.py":4:9)
  %x = scf.while (%a = %i) : (i32) -> i32 {
    %one = arith.constant 1 : i32
    %c = arith.cmpi sgt, %a, %one : i32
    scf.condition(%c) %a : i32
  } do {
  ^bb0(%b: i32):
    %two = arith.constant 2 : i32
    %h = arith.floordivsi %b, %two : i32
    scf.yield %h : i32
  } loc("k.py":6:5)
  %q = pto.addptr %o, %i : !pto.ptr<i32, global>, i32 -> !pto.ptr<i32, global>
  pto.store %x, %q : i32, !pto.ptr<i32, global>
  func.return
}
"""


@pytest.mark.parametrize("generic", [False, True])
def test_debuginfo_output_parses_back(capsys, monkeypatch, tmp_path, generic):
    # xDSL prints an op's loc inside print_operation_type, which scf.while's custom format calls
    # before its regions: `scf.while (...) : (i32) -> i32 loc(...) {` did not parse back
    argv = ["--mlir-print-debuginfo"] + (["--print-op-generic"] if generic else [])
    first = run(capsys, monkeypatch, write(tmp_path, WHILE_LOOP), *argv)
    assert first.code == 0, first.err
    assert 'loc("k.py":6:5)' in first.out
    again_path = tmp_path / "again.mlir"
    again_path.write_text(first.out)
    again = run(capsys, monkeypatch, str(again_path), *argv)
    assert again.code == 0, again.err
    assert again.out == first.out


@pytest.mark.parametrize("argv", [[], ["-"]])
def test_stdin(capsys, monkeypatch, argv):
    result = run(capsys, monkeypatch, *argv, stdin=VALID)
    assert result.code == 0
    assert "pto.get_global_id 0 : i32" in result.out


def test_output_file(capsys, monkeypatch, tmp_path):
    out = tmp_path / "out.mlir"
    result = run(capsys, monkeypatch, write(tmp_path, VALID), "-o", str(out))
    assert (result.code, result.out) == (0, "")
    assert "pto.store %v, %q" in out.read_text()


def test_output_file_not_written_on_error(capsys, monkeypatch, tmp_path):
    out = tmp_path / "out.mlir"
    result = run(capsys, monkeypatch, write(tmp_path, BAD_LOAD), "-o", str(out))
    assert result.code == 1
    assert not out.exists()


def test_list_passes(capsys, monkeypatch, test_passes):
    result = run(capsys, monkeypatch, "--list-passes")
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == "Available passes:"
    assert any(line.split()[:2] == ["cse", "Common"] for line in lines)
    # the first docstring line is the summary; options are listed under their pass
    assert any(line.split() == ["test-stages", "A", "do-nothing", "pass", "with", "an",
                                "option,", "to", "test", "option", "parsing."] for line in lines)
    assert any(line.split() == ["stages:", "int", "=", "2"] for line in lines)


def test_help_and_unknown_flag(capsys, monkeypatch):
    assert run(capsys, monkeypatch, "--help").code == 0
    result = run(capsys, monkeypatch, "--no-such-flag")
    assert result.code == 2
    assert "unrecognized arguments: --no-such-flag" in result.err


# -- errors in the input ---------------------------------------------------------------------


def test_parse_error_location_and_caret(capsys, monkeypatch, tmp_path):
    path = write(tmp_path, "func.func @f() {\n  %0 = pto.get_global_id 0 i32\n}\n")
    result = run(capsys, monkeypatch, path)
    assert result.code == 1
    assert result.out == ""
    assert result.err.splitlines() == [
        f"{path}:2:28: error: Expected ':'",
        "  %0 = pto.get_global_id 0 i32",
        "                           ^~~",
    ]


def test_verifier_error_points_at_op_with_python_note(capsys, monkeypatch, tmp_path):
    path = write(tmp_path, BAD_LOAD)
    result = run(capsys, monkeypatch, path)
    assert result.code == 1
    assert result.err.splitlines() == [
        f"{path}:2:3: error: 'pto.load' op result type i32 does not match the pointer's "
        "element type f32",
        '  %v = pto.load %p : !pto.ptr<f32, global> -> i32 loc("k.py":12:8)',
        "  ^",
        f'{path}:2:3: note: from Python source "k.py":12:8',
    ]


def test_nested_op_error_points_at_nested_op(capsys, monkeypatch):
    text = ("func.func @f() {\n  scf.execute_region {\n    %0 = pto.get_local_id 4 : i32\n"
            "    scf.yield\n  }\n  func.return\n}\n")
    result = run(capsys, monkeypatch, stdin=text)
    assert result.code == 1
    assert result.err.startswith("<stdin>:3:5: error: 'pto.get_local_id' op dimension")


def test_empty_block_error_is_located(capsys, monkeypatch):
    # A region-level check (not an op's own verifier): found by the innermost-first search.
    result = run(capsys, monkeypatch, stdin="func.func @f() {\n^bb0:\n}\n")
    assert result.code == 1
    assert result.err.startswith("<stdin>:1:1: error: 'func.func' op")
    assert "terminator" in result.err


@pytest.mark.parametrize("text, message", [
    ("func.func @f(%p: !pto.ptr<f32, l1>) {\n  func.return\n}\n",
     "<stdin>:1:32: error: unknown memory space 'l1'; expected one of: global, local"),
    ("func.func @f(%p: !pto.ptr<i8, global>) {\n  func.return\n}\n",
     "<stdin>:1:18: error: !pto.ptr element type must be a scalar"),
    ("func.func @f(%t: !pto.token<f32>) {\n  func.return\n}\n",
     "<stdin>:1:18: error: malformed type"),
    ("%0 = pto.get_warp_id : i64\n",
     "<stdin>:1:1: error: 'pto.get_warp_id' op Expected attribute i32 but got i64"),
    ("\n  pto.nope\n", "<stdin>:2:3: error: 'pto.nope' is not an operation of the pto dialect"),
    ("gpu.barrier\n", "<stdin>:1:1: error: unknown operation 'gpu.barrier': dialect 'gpu' is "
                      "not loaded"),
    ("}", "<stdin>:1:1: error: Could not parse entire input!"),
    # issue 8 item 11: an unknown type is reported at its name, not at the next token
    ("func.func @k(%a: i32) {\n  %0 = \"arith.constant\"() {value = 0 : i32} : () -> !pto.what\n}\n",
     "<stdin>:2:53: error: unknown type '!pto.what': the pto dialect has no such type"),
    ("func.func @k(%a: !pto.what) {\n  func.return\n}\n",
     "<stdin>:1:18: error: unknown type '!pto.what'"),
])
def test_bad_input_messages(capsys, monkeypatch, text, message):
    result = run(capsys, monkeypatch, stdin=text)
    assert result.code == 1
    assert result.err.startswith(message)


def test_unreadable_input(capsys, monkeypatch, tmp_path):
    missing = str(tmp_path / "missing.mlir")
    result = run(capsys, monkeypatch, missing)
    assert result.code == 1
    assert result.err == (f"{missing}: error: could not read input file: "
                          "No such file or directory\n")
    result = run(capsys, monkeypatch, str(tmp_path))
    assert result.code == 1
    assert result.err == f"{tmp_path}: error: could not read input file: Is a directory\n"
    binary = tmp_path / "binary.mlir"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    result = run(capsys, monkeypatch, str(binary))
    assert result.code == 1
    assert result.err.startswith(f"{binary}: error: could not read input file:")


def test_bad_input_as_a_process_has_no_traceback(tmp_path):
    path = write(tmp_path, BAD_LOAD)
    result = run_process(path)
    assert result.code == 1
    assert "Traceback" not in result.err
    assert result.err.startswith(f"{path}:2:3: error: 'pto.load' op result type i32")

    result = run_process(stdin="func.func @f( {\n")
    assert result.code == 1
    assert "Traceback" not in result.err
    assert result.err.startswith("<stdin>:1:15: error:")


# -- pipelines -------------------------------------------------------------------------------


def test_short_and_long_pipeline_give_same_output(capsys, monkeypatch, tmp_path):
    path = write(tmp_path, VALID.replace("%i = pto.get_global_id 0 : i32",
                                         "%i = pto.get_global_id 0 : i32\n"
                                         "  %dup = pto.get_global_id 0 : i32"))
    short = run(capsys, monkeypatch, path, "-p", "canonicalize,cse")
    long = run(capsys, monkeypatch, path, "--pass-pipeline", "builtin.module(canonicalize,cse)")
    assert short.code == long.code == 0
    assert short.out == long.out
    assert short.out.count("pto.get_global_id") == 1


def test_both_pipeline_flags_is_a_usage_error(capsys, monkeypatch):
    result = run(capsys, monkeypatch, "-p", "cse", "--pass-pipeline", "builtin.module(cse)")
    assert result.code == 2
    assert "not allowed with argument" in result.err


def test_unknown_pass(capsys, monkeypatch, tmp_path):
    result = run(capsys, monkeypatch, write(tmp_path, VALID), "-p", "cse,frobnicate")
    assert result.code == 1
    valid = ", ".join(sorted(PASSES))
    assert result.err.splitlines() == [
        f"<pass-pipeline>:1:5: error: unknown pass 'frobnicate'; valid passes: {valid}",
        "cse,frobnicate",
        "    ^",
    ]


def test_pipeline_error_is_reported_before_reading_input(capsys, monkeypatch, tmp_path):
    result = run(capsys, monkeypatch, str(tmp_path / "missing.mlir"), "-p", "nope")
    assert result.code == 1
    assert "unknown pass 'nope'" in result.err
    assert "could not read" not in result.err


def test_unknown_option_names_the_valid_ones(capsys, monkeypatch, test_passes):
    result = run(capsys, monkeypatch, "-p", "test-stages{depth=3}", stdin=VALID)
    assert result.code == 1
    assert result.err.startswith(
        "<pass-pipeline>:1:1: error: pass 'test-stages' has no option 'depth'; "
        "valid options: stages (int, default 2)")


def test_bad_option_value(capsys, monkeypatch, test_passes):
    result = run(capsys, monkeypatch, "-p", "cse,test-stages{stages=many}", stdin=VALID)
    assert result.code == 1
    assert result.err.startswith("<pass-pipeline>:1:5: error: invalid value 'many' for option "
                                 "'stages' of pass 'test-stages' (expected int)")
    assert "valid options: stages (int, default 2)" in result.err


def test_option_value_reaches_the_pass(capsys, monkeypatch, test_passes):
    result = run(capsys, monkeypatch, "-p", "test-stages{stages=3}", "--print-ir-after-all",
                 stdin=VALID)
    assert result.code == 0
    assert "// -----// IR Dump After test-stages{stages=3} //----- //" in result.err


def test_print_ir_after_all(capsys, monkeypatch):
    result = run(capsys, monkeypatch, "-p", "canonicalize,cse", "--print-ir-after-all",
                 stdin=VALID)
    assert result.code == 0
    headers = [line for line in result.err.splitlines() if line.startswith("// -----//")]
    assert headers == ["// -----// IR Dump After canonicalize //----- //",
                       "// -----// IR Dump After cse //----- //"]
    # each dump shows the passes recorded so far (pto.passes, docs/pypto-opt.md#passes-already-run)
    assert result.err.count('builtin.module attributes {pto.passes = ["canonicalize"]} {') == 1
    assert result.err.count('builtin.module attributes {pto.passes = ["canonicalize", "cse"]} {') \
        == 1


def test_pass_breaking_ir_is_a_verification_error_naming_the_pass(capsys, monkeypatch,
                                                                  test_passes):
    result = run(capsys, monkeypatch, "-p", "test-break-ir", stdin=VALID)
    assert result.code == 1
    first = result.err.splitlines()[0]
    assert first == ("<stdin>:2:3: error: 'pto.get_global_id' op dimension must be 0, 1 or 2, "
                     "got 7 (the IR produced by pass 'test-break-ir' does not verify)")


def test_pass_diagnostic_is_located_with_notes(capsys, monkeypatch, test_passes):
    result = run(capsys, monkeypatch, "-p", "test-reject", stdin=VALID)
    assert result.code == 1
    lines = result.err.splitlines()
    assert lines[0] == "<stdin>:4:3: error: read of L1 buffer races with a write"
    assert '<stdin>:4:3: note: from Python source "k.py":7:8' in lines
    assert "<stdin>:2:3: note: the other access" in lines


def test_warnings_and_remarks_are_printed_but_do_not_fail(capsys, monkeypatch, test_passes):
    result = run(capsys, monkeypatch, "-p", "test-chatty", stdin=VALID)
    assert result.code == 0
    assert "<stdin>:2:3: warning: id used as offset" in result.err
    assert "<stdin>:1:1: remark: peak L1 usage: 0 bytes" in result.err
    assert "builtin.module" in result.out


def test_crashing_pass_is_an_internal_error(capsys, monkeypatch, test_passes):
    result = run(capsys, monkeypatch, "-p", "test-crash", stdin=VALID)
    assert result.code == EXIT_INTERNAL_ERROR
    assert result.err.startswith("pypto-opt: internal error in pass 'test-crash', please report")
    assert "KeyError: 'oops'" in result.err


# -- --split-input-file ----------------------------------------------------------------------

SPLIT = """\
func.func @a() {
  func.return
}
// -----
func.func @a() -> i32 {
  %0 = pto.get_lane_id : i32
  func.return %0 : i32
}
// -----

func.func @bad() {
  %0 = pto.get_block_dim 3 : i32
  func.return
}
// -----
func.func @c() {
  func.return
}
"""


def test_split_input_file_line_numbers_and_outputs(capsys, monkeypatch, tmp_path):
    path = write(tmp_path, SPLIT)
    result = run(capsys, monkeypatch, path, "--split-input-file")
    assert result.code == 1
    assert result.err.splitlines()[0] == (
        f"{path}:12:3: error: 'pto.get_block_dim' op dimension must be 0, 1 or 2, got 3")
    chunks = result.out.split("// -----\n")
    assert len(chunks) == 4
    assert "func.func @a()" in chunks[0]
    assert "pto.get_lane_id" in chunks[1]
    assert chunks[2] == ""
    assert "func.func @c()" in chunks[3]


def test_without_split_the_marker_is_a_comment(capsys, monkeypatch):
    result = run(capsys, monkeypatch,
                 stdin=SPLIT.replace("pto.get_block_dim 3", "pto.get_block_dim 0"))
    assert result.code == 1
    assert result.err.startswith("<stdin>:1:1: error: 'builtin.module' op Redefinition of "
                                 'symbol "a"')


@pytest.mark.parametrize("text", ["", "// only a comment\n"])
def test_empty_input_is_an_empty_module(capsys, monkeypatch, text):
    result = run(capsys, monkeypatch, stdin=text)
    assert (result.code, result.out, result.err) == (0, "builtin.module {\n}\n", "")


def test_split_ignores_ir_dump_headers(capsys, monkeypatch):
    text = "// -----// IR Dump After cse //----- //\n" + VALID
    result = run(capsys, monkeypatch, "--split-input-file", stdin=text)
    assert result.code == 0
    assert "// -----" not in result.out


# -- --verify-diagnostics --------------------------------------------------------------------


def test_verify_diagnostics_satisfied(capsys, monkeypatch):
    text = ("%0 = pto.get_grid_dim 3 : i32 // expected-error {{dimension must be 0, 1 or 2}}\n"
            "// -----\n"
            "// expected-error @+1 {{got 4}}\n"
            "%0 = pto.get_grid_dim 4 : i32\n"
            "// -----\n"
            "%0 = pto.get_grid_dim 5 : i32\n"
            "// expected-error @-1 {{got 5}}\n")
    result = run(capsys, monkeypatch, "--split-input-file", "--verify-diagnostics", stdin=text)
    assert (result.code, result.err) == (0, "")


def test_verify_diagnostics_missing(capsys, monkeypatch):
    text = "// expected-error @+1 {{never}}\n%0 = pto.get_grid_dim 0 : i32\n"
    result = run(capsys, monkeypatch, "--verify-diagnostics", stdin=text)
    assert result.code == 1
    assert result.err.splitlines()[0] == (
        '<stdin>:1:4: error: expected error "never" was not produced')


def test_verify_diagnostics_unexpected(capsys, monkeypatch):
    text = "// a comment\n%0 = pto.get_grid_dim 7 : i32\n"
    result = run(capsys, monkeypatch, "--verify-diagnostics", stdin=text)
    assert result.code == 1
    assert result.err.splitlines()[0] == (
        "<stdin>:2:1: error: unexpected error: 'pto.get_grid_dim' op dimension must be 0, 1 "
        "or 2, got 7")


def test_verify_diagnostics_wrong_severity(capsys, monkeypatch):
    text = "%0 = pto.get_grid_dim 7 : i32 // expected-warning {{got 7}}\n"
    result = run(capsys, monkeypatch, "--verify-diagnostics", stdin=text)
    assert result.code == 1
    assert "unexpected error:" in result.err
    assert 'expected warning "got 7" was not produced' in result.err


def test_verify_diagnostics_malformed_annotation(capsys, monkeypatch):
    text = "%0 = pto.get_grid_dim 7 : i32 // expected-error @1 {{got 7}}\n"
    result = run(capsys, monkeypatch, "--verify-diagnostics", stdin=text)
    assert result.code == 1
    assert result.err.startswith("<stdin>:1:34: error: malformed diagnostic annotation")


def test_verify_diagnostics_per_chunk(capsys, monkeypatch):
    # An annotation only counts for its own chunk, even when it points across the marker.
    text = ("%0 = pto.get_grid_dim 0 : i32\n"
            "// expected-error @+2 {{got 9}}\n"
            "// -----\n"
            "%0 = pto.get_grid_dim 9 : i32\n")
    result = run(capsys, monkeypatch, "--split-input-file", "--verify-diagnostics", stdin=text)
    assert result.code == 1
    lines = [line for line in result.err.splitlines() if "error:" in line]
    assert lines == [
        '<stdin>:2:4: error: expected error "got 9" was not produced',
        "<stdin>:4:1: error: unexpected error: 'pto.get_grid_dim' op dimension must be 0, 1 "
        "or 2, got 9",
    ]


def test_verify_diagnostics_warning_remark_note(capsys, monkeypatch, test_passes):
    annotated = VALID.replace(
        "  %i = pto.get_global_id 0 : i32\n",
        "  // expected-warning @+1 {{id used as offset}}\n  %i = pto.get_global_id 0 : i32\n")
    annotated = "// expected-remark @+1 {{peak L1 usage}}\n" + annotated
    result = run(capsys, monkeypatch, "-p", "test-chatty", "--verify-diagnostics",
                 stdin=annotated)
    assert (result.code, result.err) == (0, "")

    unannotated = run(capsys, monkeypatch, "-p", "test-chatty", "--verify-diagnostics",
                      stdin=VALID)
    assert unannotated.code == 1
    assert "<stdin>:2:3: error: unexpected warning: id used as offset" in unannotated.err
    assert "<stdin>:1:1: error: unexpected remark: peak L1 usage: 0 bytes" in unannotated.err

    noted = BAD_LOAD.replace("  %v = pto.load", "  // expected-error @+2 {{does not match}}\n"
                             '  // expected-note @+1 {{from Python source "k.py":12:8}}\n'
                             "  %v = pto.load")
    assert run(capsys, monkeypatch, "--verify-diagnostics", stdin=noted).code == 0
    wrong_note = noted.replace('"k.py":12:8}}', '"k.py":99:8}}')
    result = run(capsys, monkeypatch, "--verify-diagnostics", stdin=wrong_note)
    assert result.code == 1
    assert 'expected note "from Python source \\"k.py\\":99:8"' not in result.err
    assert "expected note \"from Python source \"k.py\":99:8\" was not produced" in result.err


def test_verify_diagnostics_as_a_process():
    text = "// expected-error @+1 {{got 4}}\n%0 = pto.get_grid_dim 4 : i32\n"
    assert run_process("--verify-diagnostics", stdin=text).code == 0
    result = run_process("--verify-diagnostics", stdin=text.replace("got 4", "got 5"))
    assert result.code == 1
    assert "Traceback" not in result.err
    assert 'expected error "got 5" was not produced' in result.err


# issue 22: machine output alone on stdout, hostile pipelines and IR --------------------------

PRINTING = """\
func.func @k(%p: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  pto.printf "lane %d\\n" (%i : i32)
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %q : !pto.ptr<f32, global> -> f32
  pto.store %v, %q : f32, !pto.ptr<f32, global>
  func.return
}
"""


@pytest.mark.parametrize("emit", ["trace", "cost", "timeline"])
def test_printf_goes_to_stderr_under_the_cost_outputs(tmp_path, capsys, monkeypatch, emit):
    """printf lines came first on stdout: `--emit=trace` was not valid JSON."""
    import json

    path = tmp_path / "p.mlir"
    path.write_text(PRINTING)
    result = run(capsys, monkeypatch, str(path), f"--emit={emit}", "--block", "4")
    assert result.code == 0, result.err
    assert "] lane " not in result.out
    assert [line for line in result.err.splitlines() if "] lane " in line] == [
        f"[block (0, 0, 0) lane ({k}, 0, 0)] lane {k}" for k in range(4)]
    if emit == "trace":
        assert isinstance(json.loads(result.out), dict | list)


def test_l1_map_svg_is_svg(capsys, monkeypatch, tmp_path):
    import xml.etree.ElementTree as ET

    path = Path(__file__).resolve().parents[1] / "filecheck"
    sources = [p for p in path.rglob("*.mlir") if "alloc_local" in p.read_text()]
    assert sources
    result = run(capsys, monkeypatch, str(sources[0]), "--split-input-file",
                 "--emit=l1-map-svg")
    svgs = [chunk for chunk in result.out.split("// -----\n") if chunk.strip()]
    assert svgs
    for chunk in svgs:
        for picture in chunk.split("</svg>")[:-1]:
            ET.fromstring(picture + "</svg>")


ZERO_STEP = """\
func.func @k(%p: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
  %c0 = arith.constant 0 : i32
  %c4 = arith.constant 4 : i32
  scf.for %j = %c0 to %c4 step %STEP : i32 {
    %i = pto.get_global_id 0 : i32
    %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    %v = pto.load %q : !pto.ptr<f32, global> -> f32
    pto.store %v, %q : f32, !pto.ptr<f32, global>
  }
  func.return
}
"""


@pytest.mark.parametrize("flags", [[], ["--validate"], ["--emit=cost"]])
def test_a_constant_zero_step_is_a_verifier_error_at_the_loop(capsys, monkeypatch, tmp_path,
                                                              flags):
    """It verified, then --validate / --emit=cost said "internal interpreter error"."""
    path = tmp_path / "z.mlir"
    path.write_text(ZERO_STEP.replace("%STEP", "%c0"))
    result = run(capsys, monkeypatch, str(path), *flags)
    assert result.code == 1
    assert result.err.startswith(f"{path}:4:3: error: 'scf.for' op constant step operand must "
                                 f"not be 0")
    assert "internal" not in result.err


def test_a_zero_step_at_run_time_is_a_kernel_error(capsys, monkeypatch, tmp_path):
    path = tmp_path / "z.mlir"
    path.write_text(ZERO_STEP.replace("%STEP", "%n"))
    result = run(capsys, monkeypatch, str(path), "--emit=cost", "--arg", "n=0")
    assert result.code == 1
    assert "the loop step is 0: it must be a non-zero integer" in result.err
    assert "internal" not in result.err


def test_a_5000_digit_option_is_reported_at_the_value(capsys, monkeypatch):
    value = "9" * 5000
    pipeline = f"cse,pto-verify-barriers{{warp-size={value}}}"
    result = run(capsys, monkeypatch, "-", "-p", pipeline, stdin=VALID)
    assert result.code == 1
    first = result.err.splitlines()[0]
    col = pipeline.index(value) + 1
    assert first.startswith(f"<pass-pipeline>:1:{col}: error: option 'warp-size' of pass "
                            f"'pto-verify-barriers' must be an integer of at most 4300 digits, "
                            f"got one of 5000 digits; pass 'pto-verify-barriers' says: "
                            f"warp-size and max-block-lanes must be at most 1048576")


def test_a_32k_character_pass_name_is_quick_and_echoed_once(capsys, monkeypatch):
    import time

    name = "x" * 32_000
    started = time.process_time()
    result = run(capsys, monkeypatch, "-", "-p", f"cse,{name}", stdin=VALID)
    spent = time.process_time() - started
    assert result.code == 1
    assert result.err.count(name) == 1  # the source line under the diagnostic only
    assert "unknown pass 'xxxx" in result.err and "(32000 characters)" in result.err
    assert spent < 30, spent  # 48 s before (a quadratic regex); a hang guard, not a benchmark


def test_nesting_too_deep_to_parse_says_so(capsys, monkeypatch):
    depth = 400
    lines = ["func.func @k(%p: !pto.ptr<f32, global>) attributes {pto.kernel} {",
             "  %c = arith.constant true"]
    lines += ["  " * (d + 1) + "scf.if %c {" for d in range(depth)]
    lines += ["  " * (d + 1) + "}" for d in reversed(range(depth))]
    lines += ["  func.return", "}"]
    result = run(capsys, monkeypatch, "-", stdin="\n".join(lines) + "\n")
    assert result.code == 1
    assert "'scf.if' op is nested too deeply to parse" in result.err
    assert "malformed" not in result.err and "RecursionError" not in result.err
