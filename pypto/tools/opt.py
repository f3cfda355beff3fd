"""`pypto-opt`: parse, verify, transform and print pto IR, as `mlir-opt` does for MLIR (docs/pypto-opt.md).

    pypto-opt kernel.mlir -p canonicalize,cse
    pypto-opt kernel.mlir --pass-pipeline='builtin.module(canonicalize,cse)' -o out.mlir
    pypto-opt tests.mlir --split-input-file --verify-diagnostics

It is the tool lit tests are written with, so its behaviour on bad input is part of the product:
every problem with the input, the pipeline or the IR is a `FILE:LINE:COL: error: ...` line on
stderr (with the source line, a caret, and notes) and exit status 1 — never a Python traceback.
Only a crash inside pypto itself prints one, after an "internal error" line, with status 70.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, MultipleSpansParseError, ParseError

from pypto.analysis.dominance import first_dominance_violation
from pypto.errors import PtoError, UsageError
from pypto.compiler import check_settings
from pypto.ir import make_context, print_ir
from pypto.passes import (
    PASSES,
    PipelineError,
    PASSES_ATTR,
    list_passes,
    parse_pipeline,
    pass_options,
    passes_run_again,
    run_pipeline,
)
from pypto.diagnostics import (
    Note,
    OpDiagnostic,
    Severity,
    capture_diagnostics,
    error_message,
    error_notes,
    error_op,
    locate_verify_failure,
    source_loc,
)
from pypto.backend.validation import validate_pipeline
from pypto.tools.expected_diagnostics import check_expectations, parse_expectations
from pypto.tools.parsing import op_offset, parse_module
from pypto.tools.source import (
    SPLIT_MARKER,
    Diagnostic,
    SourceChunk,
    diagnostic_at,
    render,
    split_input_file,
)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_INTERNAL_ERROR = 70
"""sysexits' EX_SOFTWARE: a pypto bug, as opposed to bad input (1) or a bad command line (2)."""

from pypto.backend.cost_model.params import MODELS  # noqa: E402
from pypto.tools.emit_cost import EMITS, EmitError, emit  # noqa: E402

EMIT_KINDS = ("mlir", "l1-map", "l1-map-svg", "llvm", *(e for e in EMITS if e != "mlir"))
"""What `--emit` can print instead of (or as) the IR: the L1 map, or the cost model's outputs."""

PIPELINE_NAME = "<pass-pipeline>"
"""The pseudo file name pipeline syntax errors are reported in."""


def _argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pypto-opt",
        description="Parse, verify, transform and print pto IR (the pypto analogue of mlir-opt).")
    parser.add_argument("input", nargs="?", default="-", metavar="FILE",
                        help="input .mlir file; '-' or nothing reads stdin")
    parser.add_argument("-o", dest="output", metavar="FILE", default="-",
                        help="write the output here instead of stdout")
    pipeline = parser.add_mutually_exclusive_group()
    pipeline.add_argument("--pass-pipeline", metavar="PIPELINE",
                          help="passes to run, e.g. 'builtin.module(canonicalize,cse)'")
    pipeline.add_argument("-p", dest="short_pipeline", metavar="PIPELINE",
                          help="passes to run, short form, e.g. 'canonicalize,cse'")
    parser.add_argument("--list-passes", action="store_true",
                        help="list the available passes and exit")
    parser.add_argument("--split-input-file", action="store_true",
                        help="process each chunk between '// -----' lines independently")
    parser.add_argument("--verify-diagnostics", action="store_true",
                        help="check diagnostics against '// expected-error {{...}}' annotations")
    parser.add_argument("--print-ir-after-all", action="store_true",
                        help="print the IR to stderr after every pass")
    parser.add_argument("--print-op-generic", "--mlir-print-op-generic", action="store_true",
                        dest="print_op_generic", help="print ops in the generic form")
    parser.add_argument("--mlir-print-debuginfo", "--print-debuginfo", action="store_true",
                        dest="print_debuginfo", help="print op locations (loc(...))")
    parser.add_argument("--emit", choices=EMIT_KINDS, default="mlir",
                        help="what to print after the passes: the IR (default), the L1 map of "
                             "each function as a table (l1-map) or as an SVG picture "
                             "(l1-map-svg), or the cost model's modelled cost, llvm-mca-like "
                             "timeline or Chrome/Perfetto trace (cost, timeline, trace)")
    parser.add_argument("--validate", action="store_true",
                        help="translation validation: run each kernel in the interpreter on "
                             "generated inputs before the pipeline and after every pass; report "
                             "the first pass that changes a result")
    parser.add_argument("--validate-block", type=int, default=64, metavar="N",
                        help="lanes per block of the --validate runs (2 blocks; default 64)")
    parser.add_argument("--strict", action="store_true",
                        help="make running a pass again on IR that its pto.passes record says "
                             "it already went through an error (default: a warning)")
    parser.add_argument("--allow-unregistered-dialect", action="store_true",
                        help="accept ops of dialects pypto does not know")
    cost = parser.add_argument_group("cost model outputs (--emit=cost|timeline|trace; "
                                     "modelled, not measured)")
    cost.add_argument("--grid", metavar="X[,Y[,Z]]", help="launch grid (default 1)")
    cost.add_argument("--block", metavar="X[,Y[,Z]]", help="lanes per block (default 1)")
    cost.add_argument("--model", choices=MODELS, default="fused",
                      help="'fused' (firmware view, npu level; default) or 'table' (the "
                           "simulator's latency table, pto level)")
    cost.add_argument("--target", metavar="FILE",
                      help="a target TOML file, merged over the default target, or a shipped "
                           "target's name (ascend910b)")
    cost.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                      help="a kernel argument: elements of a pointer's tensor, or a scalar")
    cost.add_argument("--kernel", metavar="NAME", help="which kernel to cost")
    return parser


def _costing(passes: Sequence[ModulePass]) -> Any:
    """`pto-double-buffer` chooses its schedules by the cost model on IR that records its
    launch (docs/passes.md#choosing-by-the-cost-model), as under `pto.compile`."""
    if not any(p.name == "pto-double-buffer" for p in passes):
        return contextlib.nullcontext()
    from pypto.backend.cost_model.schedule import ScheduleCoster
    from pypto.passes.double_buffer import costing_schedules

    return costing_schedules(ScheduleCoster())


def main(argv: list[str] | None = None) -> int:
    """Run pypto-opt with `argv` (default: the process arguments); returns the exit status."""
    try:
        args = _argument_parser().parse_args(argv)
    except SystemExit as exit_:  # --help, or a bad flag (argparse has printed why)
        return exit_.code if isinstance(exit_.code, int) else EXIT_FAILURE
    try:
        check_settings()  # every PYPTO_* setting, before anything reads one (pypto/settings.py)
        return _Driver(args, sys.stdout, sys.stderr).run()
    except UsageError as error:  # a bad environment setting (or another misuse), wherever read
        where = "<environment>" if getattr(error, "setting", None) else "pypto-opt"
        sys.stderr.write(render(Diagnostic("error", str(error)), where, None))
        return EXIT_FAILURE
    except _PassCrash as crash:
        sys.stderr.write(f"pypto-opt: internal error in pass '{crash.pass_name}', please report "
                         f"it with the input that triggers it:\n")
        sys.stderr.write("".join(traceback.format_exception(crash.__cause__ or crash)))
        return EXIT_INTERNAL_ERROR
    except BrokenPipeError:  # e.g. `pypto-opt big.mlir | head`: not an error
        return EXIT_OK
    except Exception:  # noqa: BLE001 - last resort: say it is our bug, not the user's input
        sys.stderr.write("pypto-opt: internal error, please report it with the input that "
                         "triggers it:\n")
        sys.stderr.write(traceback.format_exc())
        return EXIT_INTERNAL_ERROR


class _PassCrash(Exception):
    """A pass raised something that is not a diagnostic: a bug in the pass."""

    def __init__(self, pass_name: str):
        super().__init__(pass_name)
        self.pass_name = pass_name


@dataclass
class _ChunkResult:
    output: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list[Diagnostic])

    @property
    def failed(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)


class _Driver:
    """One invocation of pypto-opt: the parsed arguments and where to write."""

    def __init__(self, args: argparse.Namespace, stdout: TextIO, stderr: TextIO):
        self.args = args
        self.stdout = stdout
        self.stderr = stderr

    def run(self) -> int:
        if self.args.list_passes:
            self.stdout.write(_format_pass_list())
            return EXIT_OK
        pipeline_text = self.args.pass_pipeline or self.args.short_pipeline or ""
        try:
            passes = parse_pipeline(pipeline_text)
        except PipelineError as err:
            self._report_pipeline_error(err)
            return EXIT_FAILURE
        if self.args.emit in ("cost", "timeline", "trace") and self.args.model != "fused":
            # pto-double-buffer chooses its schedule under the model being costed, as
            # pto.profile(model=...) has it (docs/passes.md#choosing-by-the-cost-model)
            passes = [dataclasses.replace(p, model=self.args.model)
                      if p.name == "pto-double-buffer" and getattr(p, "model", "") == "fused"
                      else p for p in passes]

        filename, text = self._read_input()
        if text is None:
            return EXIT_FAILURE
        chunks = (split_input_file(filename, text) if self.args.split_input_file
                  else [SourceChunk(filename, text, 1)])

        outputs: list[str] = []
        failed = False
        for chunk in chunks:
            result = self._process(chunk, passes)
            outputs.append(result.output)
            if self.args.verify_diagnostics:
                failed |= self._verify_diagnostics(chunk, result)
            else:
                for diag in result.diagnostics:
                    self.stderr.write(render(diag, filename, chunk))
                failed |= result.failed

        output = f"{SPLIT_MARKER}\n".join(outputs)
        if self.args.output == "-":
            self.stdout.write(output)
            self.stdout.flush()
        elif not failed:
            try:
                with open(self.args.output, "w", encoding="utf-8") as out:
                    out.write(output)
            except OSError as err:
                self.stderr.write(render(Diagnostic(
                    "error", f"could not write output file: {err.strerror or err}"),
                    self.args.output, None))
                return EXIT_FAILURE
        return EXIT_FAILURE if failed else EXIT_OK

    # -- input ----------------------------------------------------------------------------------

    def _read_input(self) -> tuple[str, str | None]:
        path = self.args.input
        try:
            if path == "-":
                path = "<stdin>"
                return path, sys.stdin.read()
            with open(path, encoding="utf-8") as source:
                return path, source.read()
        except (OSError, UnicodeDecodeError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            self.stderr.write(render(Diagnostic(
                "error", f"could not read input file: {reason}"), path, None))
            return path, None

    def _report_pipeline_error(self, err: PipelineError) -> None:
        position = err.position
        chunk = SourceChunk(PIPELINE_NAME, err.pipeline)
        if position is None:
            diag = Diagnostic("error", error_message(err))
        else:
            diag = diagnostic_at(chunk, position, "error", error_message(err))
        self.stderr.write(render(diag, PIPELINE_NAME, chunk))

    # -- one chunk ------------------------------------------------------------------------------

    def _process(self, chunk: SourceChunk, passes: Sequence[ModulePass]) -> _ChunkResult:
        result = _ChunkResult()
        ctx = make_context()
        ctx.allow_unregistered = self.args.allow_unregistered_dialect
        try:
            module, offsets = parse_module(ctx, chunk.text, chunk.filename)
        except ParseError as err:
            result.diagnostics.append(_parse_error_diagnostic(chunk, err))
            return result
        locate = _OpLocator(chunk, offsets, module)

        try:
            module.verify()
        except Exception as err:  # noqa: BLE001 - any verifier failure is a user error here
            found = locate_verify_failure(module)
            op, message = found if found is not None else (module, error_message(err))
            result.diagnostics.append(locate.diagnostic("error", f"'{op.name}' op {message}", op))
            return result
        undominated = first_dominance_violation(module)
        if undominated is not None:
            op, message = undominated
            result.diagnostics.append(locate.diagnostic("error", f"'{op.name}' op {message}", op))
            return result

        severity: Severity = "error" if self.args.strict else "warning"
        for again, earlier in passes_run_again(module, passes):
            result.diagnostics.append(locate.diagnostic(severity, _rerun_message(
                again.name, earlier, self.args.strict), None))
        if result.failed:
            return result

        def collect(diag: OpDiagnostic) -> None:
            result.diagnostics.append(
                locate.diagnostic(diag.severity, diag.message, diag.op, diag.notes))

        def apply(target: ModuleOp, module_pass: ModulePass) -> None:
            try:
                run_pipeline(target, [module_pass], ctx, after_pass=self._after_pass)
            except (PtoError, DiagnosticException):
                raise
            except Exception as err:
                raise _PassCrash(module_pass.name) from err

        with capture_diagnostics(collect), _costing(passes):
            try:
                if self.args.validate:
                    report = validate_pipeline(module, passes, ctx, apply,
                                               block=(max(1, self.args.validate_block), 1, 1))
                    for skipped in report.skipped:
                        result.diagnostics.append(locate.diagnostic(
                            "warning", f"--validate could not check kernel {skipped}", None))
                else:
                    for module_pass in passes:
                        apply(module, module_pass)
            except (PtoError, DiagnosticException) as err:
                result.diagnostics.append(_pass_error_diagnostic(locate, err))
                return result

        if self.args.emit in EMITS and self.args.emit != "mlir":
            try:
                result.output = emit(module, self.args.emit, grid=self.args.grid,
                                     block=self.args.block, model=self.args.model,
                                     target=self.args.target, arg_values=self.args.arg,
                                     kernel_name=self.args.kernel)
            except (EmitError, PtoError, ValueError) as err:
                result.diagnostics.append(locate.diagnostic(
                    "error", f"cannot emit {self.args.emit}: {error_message(err)}", None))
        elif self.args.emit == "llvm":
            try:
                result.output = _llvm_ir(module)
            except (PtoError, DiagnosticException) as err:
                result.diagnostics.append(locate.diagnostic(
                    "error", f"cannot emit llvm: {error_message(err)}", None))
        elif self.args.emit == "mlir":
            result.output = print_ir(module, debuginfo=self.args.print_debuginfo,
                                     generic=self.args.print_op_generic)
        else:
            try:
                result.output = _l1_maps(module, svg=self.args.emit == "l1-map-svg")
            except PtoError as err:
                result.diagnostics.append(_pass_error_diagnostic(locate, err))
        return result

    def _after_pass(self, module_pass: ModulePass, module: ModuleOp) -> None:  # noqa: D102
        if self.args.print_ir_after_all:
            self.stderr.write(f"// -----// IR Dump After {module_pass} //----- //\n")
            self.stderr.write(print_ir(module, debuginfo=self.args.print_debuginfo,
                                       generic=self.args.print_op_generic))
            self.stderr.write("\n")

    def _verify_diagnostics(self, chunk: SourceChunk, result: _ChunkResult) -> bool:
        """Check a chunk's diagnostics against its annotations; True when they disagree."""
        expectations, failures = parse_expectations(chunk)
        failures += check_expectations(expectations, result.diagnostics)
        for failure in failures:
            self.stderr.write(render(failure, chunk.filename, chunk))
        return bool(failures)


# -- diagnostics ------------------------------------------------------------------------------


class _OpLocator:
    """Turns "something about this op" into a diagnostic at the op's place in the .mlir text."""

    def __init__(self, chunk: SourceChunk, offsets: dict[Operation, int], module: ModuleOp):
        self.chunk = chunk
        self.offsets = offsets
        self.fallback = offsets.get(module, _first_code_offset(chunk.text))

    def offset(self, op: Operation | None) -> int:
        found = op_offset(op, self.offsets) if op is not None else None
        return self.fallback if found is None else found

    def diagnostic(self, severity: Severity, message: str, op: Operation | None,
                   notes: Sequence[Note] = ()) -> Diagnostic:
        diag = diagnostic_at(self.chunk, self.offset(op), severity, message)
        python_source = _python_source(op)
        if python_source is not None:
            diag.notes.append(Diagnostic("note", f"from Python source {python_source}",
                                         diag.line, diag.col))
        for text, note_op in notes:
            target = note_op if note_op is not None else op
            note = diagnostic_at(self.chunk, self.offset(target), "note", text)
            if note_op is not None and (where := _python_source(note_op)) is not None:
                note.message += f" (Python source {where})"
            diag.notes.append(note)
        return diag


def _rerun_message(name: str, earlier: str, strict: bool) -> str:
    """Why running pass `name` again (after `earlier`, its recorded run) is suspect, and the
    fix (docs/pypto-opt.md#passes-already-run)."""
    return (f"pass '{name}' already ran on this IR (recorded in {PASSES_ATTR} as '{earlier}'); "
            f"a second run works on its output instead of redoing it with the new options; "
            f"to get the IR before "
            f"the pipeline, use pto.compile(..., pipeline=\"\").mlir and run the passes on "
            f"that" + ("" if strict else " (--strict makes this an error)"))


def _python_source(op: Operation | None) -> str | None:
    """`"k.py":12:8` when the op remembers the Python line it was generated from."""
    loc = None if op is None else source_loc(op)
    if loc is None:
        return None
    return f'"{loc.file}":{loc.line}:{loc.column}'


def _first_code_offset(text: str) -> int:
    """Offset of the first line that is neither blank nor a comment (where a chunk 'starts')."""
    offset = 0
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith("//"):
            return offset + len(line) - len(line.lstrip())
        offset += len(line) + 1
    return 0


def _parse_error_diagnostic(chunk: SourceChunk, err: ParseError) -> Diagnostic:
    span = err.span
    diag = diagnostic_at(chunk, span.start, "error", err.msg, span.end - span.start)
    if isinstance(err, MultipleSpansParseError):
        for ref_span, ref_msg in err.refs:
            diag.notes.append(diagnostic_at(chunk, ref_span.start, "note",
                                            ref_msg or "see here", ref_span.end - ref_span.start))
    return diag


def _pass_error_diagnostic(locate: _OpLocator, err: BaseException) -> Diagnostic:
    """A diagnostic for an error a pass raised on purpose (or a verify failure after a pass)."""
    diag = locate.diagnostic("error", error_message(err), error_op(err), error_notes(err))
    filename, line = getattr(err, "filename", None), getattr(err, "line", None)
    if error_op(err) is None and filename is not None and line is not None:
        col = (getattr(err, "col", None) or 0) + 1
        diag.notes.append(Diagnostic("note", f'from Python source "{filename}":{line}:{col}',
                                     diag.line, diag.col))
    return diag


def _l1_maps(module: ModuleOp, *, svg: bool) -> str:
    """The L1 map of every function with L1 buffers, for the default target."""
    from pypto.analysis.l1_liveness import functions
    from pypto.analysis.l1_map import l1_map
    from pypto.backend.targets import default_target

    target = default_target()
    maps = [l1_map(f, capacity=target.l1_bytes, align=target.l1_align_bytes)
            for f in functions(module)]
    maps = [m for m in maps if m.buffers]
    if svg:
        return "".join(m.to_svg() for m in maps)
    if not maps:
        return "no L1 buffers\n"
    return "\n".join(m.to_text() for m in maps)


def _format_pass_list() -> str:
    passes = list_passes()
    width = max((len(name) for name, _ in passes), default=0)
    text = "Available passes:\n"
    for name, summary in passes:
        text += f"  {name.ljust(width)}  {summary}".rstrip() + "\n"
        for option in pass_options(PASSES[name]()):
            default = f" = {option.default}" if option.default is not None else ""
            text += f"  {'':{width}}    {option.name}: {option.type}{default}\n"
    return text


if __name__ == "__main__":
    sys.exit(main())


def _llvm_ir(module: ModuleOp) -> str:
    """`--emit=llvm`: LLVM IR of the native backend (docs/native.md): each pto kernel lowered
    by its pipeline, or a module already in the llvm dialect translated as it is."""
    from xdsl.backend.llvm.convert import convert_module
    from xdsl.dialects import func as func_dialect
    from xdsl.utils.exceptions import LLVMTranslationException

    from pypto.backend.native.jit import llvm_ir

    kernels = [op for op in module.ops
               if isinstance(op, func_dialect.FuncOp) and "pto.kernel" in op.attributes]
    if kernels:
        return "\n".join(llvm_ir(k) for k in kernels)
    from xdsl.dialects import llvm as llvm_dialect

    for op in module.ops:
        if not isinstance(op, llvm_dialect.FuncOp | llvm_dialect.GlobalOp):
            raise DiagnosticException(
                f"the input has no pto kernel and is not in the llvm dialect ('{op.name}' at "
                f"the top level); give pto kernels, or lower with "
                f"-p pto-simt-to-lanes,convert-scf-to-cf,convert-pto-to-llvm")
    try:
        return str(convert_module(module, fallback_target_triple=None))
    except (NotImplementedError, LLVMTranslationException) as exc:  # ops xDSL cannot translate
        raise DiagnosticException(f"xDSL's llvm translation: {exc}") from exc
