"""Moved to `pypto.diagnostics` (below the analyses and the passes, which both report through
it). This alias keeps `from pypto.passes.diagnostics import ...` in branches written before the
move working; new code imports `pypto.diagnostics`."""

from pypto.diagnostics import (  # noqa: F401 - re-exported
    DiagnosticHandler,
    Note,
    OpDiagnostic,
    Severity,
    attach_op,
    capture_diagnostics,
    emit_remark,
    emit_warning,
    error_message,
    error_notes,
    error_op,
    locate_verify_failure,
)
