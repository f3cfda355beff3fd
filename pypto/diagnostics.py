"""Diagnostics attached to ops: how passes and the verifier tell *where* something is wrong.

xDSL reports a verifier failure as a bare `VerifyException` that does not say which op failed,
and a pass that rejects its input raises an ordinary exception. Tools need more: `pypto-opt`
points at the failing op's `line:col` in the `.mlir` text and `--verify-diagnostics` matches
diagnostics against `// expected-error` annotations by line. So the convention here is:

* an exception raised by a pass (any `PtoError`, or xDSL's `DiagnosticException`) may carry the
  op it is about in an `op` attribute and extra notes in `notes` — use `attach_op` to set them;
* non-fatal findings (a warning, a remark such as "peak L1 usage: 12 KiB") go through
  `emit_warning` / `emit_remark`, which reach whatever handler the caller installed with
  `capture_diagnostics` (pypto-opt prints or verifies them; `pto.compile()` ignores remarks);
* `locate_verify_failure` finds the op that makes a module fail to verify;
* `source_loc` / `op_location` say where an op came from (its Python `file:line:col`): the one
  formatter every message, table and trace uses.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from xdsl.dialects.builtin import CallSiteLoc, FileLineColLoc
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import DiagnosticException

Severity = Literal["error", "warning", "note", "remark"]

Note = tuple[str, Operation | None]
"""A note's message and the op it points at (None: the op of the diagnostic it belongs to)."""


@dataclass(frozen=True)
class SourceLoc:
    """Where an op came from: a Python (or .mlir) file, line and 1-based column."""

    file: str
    line: int
    column: int

    def text(self, *, short: bool = False, column: bool = True) -> str:
        """`file:line:col`; `short`: the file's base name; `column=False`: `file:line`."""
        name = self.file.rsplit("/", 1)[-1] if short else self.file
        return f"{name}:{self.line}:{self.column}" if column else f"{name}:{self.line}"


def _file_loc(loc: Attribute) -> SourceLoc | None:
    """The file location a location attribute names: itself, or the callee of a call site."""
    while isinstance(loc, CallSiteLoc):
        loc = loc.callee
    if isinstance(loc, FileLineColLoc):
        return SourceLoc(loc.filename.data, loc.line.data, loc.column.data)
    return None


def source_loc(op: Operation) -> SourceLoc | None:
    """The source location of `op`, or None when it has none (IR built without locations).
    For an op inlined from a helper (`loc(callsite("h.py":3:5 at "k.py":10:4))`) it is the
    helper's line; `call_sites` gives the calls."""
    return _file_loc(op.location)


def call_sites(op: Operation) -> list[SourceLoc]:
    """The calls `op` was inlined through, innermost first: for a helper `h` called from the
    kernel at k.py:10:4, `[k.py:10:4]`; for `h2` called from `h` called from the kernel, the
    call in `h`, then the one in the kernel. Empty for an op of the kernel's own body."""
    out: list[SourceLoc] = []
    loc = op.location
    while isinstance(loc, CallSiteLoc):
        loc = loc.caller
        found = _file_loc(loc)
        if found is not None:
            out.append(found)
    return out


def op_location(op: Operation, *, short: bool = False, column: bool = True,
                unknown: str = "<unknown location>") -> str:
    """`file:line:col` of the source `op` came from (see `SourceLoc.text`), else `unknown`."""
    loc = source_loc(op)
    return unknown if loc is None else loc.text(short=short, column=column)


@dataclass
class OpDiagnostic:
    """One diagnostic about an op (or about the whole input when `op` is None)."""

    severity: Severity
    message: str
    op: Operation | None = None
    notes: list[Note] = field(default_factory=list[Note])


DiagnosticHandler = Callable[[OpDiagnostic], None]

_handler: ContextVar[DiagnosticHandler | None] = ContextVar("pypto_diagnostic_handler",
                                                           default=None)


@contextmanager
def capture_diagnostics(handler: DiagnosticHandler) -> Iterator[None]:
    """Route `emit_warning` / `emit_remark` to `handler` for the duration of the block."""
    token = _handler.set(handler)
    try:
        yield
    finally:
        _handler.reset(token)


def _emit(diag: OpDiagnostic) -> None:
    handler = _handler.get()
    if handler is not None:
        handler(diag)
    elif diag.severity == "warning":
        # Nobody is listening (a plain pto.compile()): a warning must still reach the user.
        warnings.warn(diag.message, stacklevel=3)


def emit_warning(op: Operation | None, message: str, notes: Sequence[Note] = ()) -> None:
    """Report a non-fatal problem with `op` (compilation continues)."""
    _emit(OpDiagnostic("warning", message, op, list(notes)))


def emit_remark(op: Operation | None, message: str, notes: Sequence[Note] = ()) -> None:
    """Report an informational finding about `op` (e.g. a pass's statistics)."""
    _emit(OpDiagnostic("remark", message, op, list(notes)))


ExcT = TypeVar("ExcT", bound=BaseException)


def attach_op(error: ExcT, op: Operation, notes: Sequence[Note] = ()) -> ExcT:
    """Record on `error` the op it is about, so tools can point at it; returns `error`.

    Usage in a pass: `raise attach_op(BarrierError(msg, ...), load_op, [("other access", st)])`.
    """
    setattr(error, "op", op)
    setattr(error, "notes", list(getattr(error, "notes", [])) + list(notes))
    return error


def error_op(error: BaseException) -> Operation | None:
    """The op an exception was attached to with `attach_op`, if any."""
    op = getattr(error, "op", None)
    return op if isinstance(op, Operation) else None


def error_notes(error: BaseException) -> list[Note]:
    """The notes attached to an exception with `attach_op` (empty when there are none)."""
    notes = getattr(error, "notes", None)
    if not isinstance(notes, list):
        return []
    return [(str(n[0]), n[1] if isinstance(n[1], Operation) else None)
            for n in notes if isinstance(n, tuple) and len(n) == 2]


def error_message(error: BaseException) -> str:
    """The message of an exception without any location prefix it may carry.

    `CompileError` prefixes its text with the Python `file:line:col: error:`; tools that print
    their own location want the bare message instead.
    """
    bare = getattr(error, "bare_message", None)
    if isinstance(bare, str):
        return bare
    text = str(error)
    return text if text else type(error).__name__


_VERIFY_ERRORS = (DiagnosticException, ValueError)
"""What xDSL's verifiers raise for invalid IR (a few structural checks raise ValueError)."""


def locate_verify_failure(root: Operation) -> tuple[Operation, str] | None:
    """Find the op that makes `root` fail to verify, and the verifier's message.

    `root.verify()` only says *that* something is wrong. This re-verifies op by op, outer ops
    first (as MLIR's verifier checks an op's own invariants before its regions), so the culprit
    is the first op whose own checks fail. Region-level checks (e.g. an empty block in a region
    that needs a terminator) are not part of an op's own checks; they are found by a second,
    innermost-first walk. Returns None when `root` verifies. Only call this on the failure
    path: it costs about two verifications. The message is flattened to one line (xDSL's
    constraint errors span several), which keeps diagnostics greppable and FileCheck-friendly.
    """
    for op in root.walk():
        try:
            op.verify(verify_nested_ops=False)
        except _VERIFY_ERRORS as err:
            return op, " ".join(error_message(err).split())
    for op in root.walk(region_first=True):
        try:
            op.verify()
        except _VERIFY_ERRORS as err:
            return op, " ".join(error_message(err).split())
    return None
