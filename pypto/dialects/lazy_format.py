"""`op_definition`: xDSL's `irdl_op_definition`, with the declarative assembly format parsed at
the op's first textual parse or print instead of at import.

xDSL compiles an op's `assembly_format` into a `FormatProgram` when the class is defined: for
the pto and npu dialects that was ~6 ms of every `import pypto` (and of every process that
imports them), spent on text that most programs never print or parse (a launch builds, verifies
and interprets IR without printing it). Here the class is defined without the format, then
`parse` / `print` are the format's, compiled on first use and kept. The op's definition is
otherwise the one xDSL makes (same operands, properties, traits, verifier); `assembly_format`
and `get_irdl_definition().assembly_format` read as declared. A malformed format is reported
by `check_formats()` (run by the test suite) rather than at import.
"""

from __future__ import annotations

from typing import Any, TypeVar

from xdsl.irdl import IRDLOperation, irdl_op_definition
from xdsl.irdl.operations import PyRDLOpDefinitionError
from xdsl.ir import Operation
from xdsl.utils.exceptions import ParseError

OpT = TypeVar("OpT", bound=type[IRDLOperation])

_LAZY: list[type[IRDLOperation]] = []
"""Every op class defined here with a format (for `check_formats`)."""


def op_definition(cls: OpT) -> OpT:
    """`@irdl_op_definition` with a lazily compiled assembly format (see the module doc)."""
    fmt = getattr(cls, "assembly_format", None)
    if fmt is None:
        return irdl_op_definition(cls)
    if "print" in cls.__dict__ or "parse" in cls.__dict__:
        raise PyRDLOpDefinitionError(
            "Cannot define both an assembly format (with the assembly_format variable) and "
            "the print and parse methods.")
    cls.assembly_format = None  # type: ignore[misc] # IRDL: no format to compile now
    defined = irdl_op_definition(cls)
    defined.assembly_format = fmt  # type: ignore[misc]
    op_def = defined.get_irdl_definition()
    op_def.assembly_format = fmt
    program: list[Any] = []

    def compiled() -> Any:
        if not program:
            from xdsl.irdl.declarative_assembly_format import FormatProgram

            try:
                program.append(FormatProgram.from_str(fmt, op_def))
            except ParseError as e:
                raise PyRDLOpDefinitionError(
                    f"Error during the parsing of the assembly format of {op_def.name}: ",
                    e.args) from e
        return program[0]

    @classmethod  # type: ignore[misc]
    def parse(op_type: type[IRDLOperation], parser: Any) -> IRDLOperation:
        return compiled().parse(parser, op_type)

    def print_(self: Operation, printer: Any) -> None:
        return compiled().print(printer, self)

    defined.parse = parse  # type: ignore[method-assign, assignment]
    defined.print = print_  # type: ignore[method-assign, assignment]
    defined._format_program = staticmethod(compiled)  # type: ignore[attr-defined]
    _LAZY.append(defined)
    return defined


def check_formats() -> list[str]:
    """Compile every lazily defined format now; the names of the ops whose format is invalid
    (empty when all are fine)."""
    bad = []
    for cls in _LAZY:
        try:
            cls._format_program()  # type: ignore[attr-defined]
        except PyRDLOpDefinitionError:
            bad.append(cls.get_irdl_definition().name)
    return bad
