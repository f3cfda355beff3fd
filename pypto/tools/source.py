"""Input text, `--split-input-file` chunks, and diagnostics rendered as `FILE:LINE:COL: error:`.

A chunk is parsed on its own, but every line number a user sees must be the one of the original
file: a `SourceChunk` knows the line its text starts at and maps chunk offsets back to file
`line:col` (1-based, as MLIR and compilers print them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pypto.diagnostics import Severity

SPLIT_MARKER = "// -----"
_SPLIT_LINE = re.compile(r"^[ \t]*// -----[ \t]*$")
"""A line holding only the split marker. `// -----// IR Dump After ...` headers are not one."""


@dataclass(frozen=True)
class SourceChunk:
    """A piece of an input file, parsed and processed independently of the others."""

    filename: str
    text: str
    first_line: int = 1
    """1-based line of the original file where `text` starts."""

    def line_col(self, offset: int) -> tuple[int, int]:
        """The 1-based file line and column of a 0-based offset into `text`."""
        offset = max(0, min(offset, len(self.text)))
        line_start = self.text.rfind("\n", 0, offset) + 1
        line_in_chunk = self.text.count("\n", 0, offset)
        return self.first_line + line_in_chunk, offset - line_start + 1

    def line_text(self, line: int) -> str | None:
        """The text of file line `line`, if it lies in this chunk."""
        index = line - self.first_line
        lines = self.text.split("\n")
        if 0 <= index < len(lines):
            return lines[index].rstrip("\r")
        return None

    @property
    def line_count(self) -> int:
        return self.text.count("\n") + 1


def split_input_file(filename: str, text: str) -> list[SourceChunk]:
    """Split `text` at lines that consist of `// -----` only (MLIR's `--split-input-file`)."""
    chunks: list[SourceChunk] = []
    current: list[str] = []
    first_line = 1
    for number, line in enumerate(text.split("\n"), start=1):
        if _SPLIT_LINE.match(line):
            chunks.append(SourceChunk(filename, "\n".join(current), first_line))
            current = []
            first_line = number + 1
        else:
            current.append(line)
    chunks.append(SourceChunk(filename, "\n".join(current), first_line))
    return chunks


@dataclass
class Diagnostic:
    """A message about a place of the input: what tools print and `--verify-diagnostics` checks.

    `line`/`col` are 1-based positions in the input file (None: the message is about the file as
    a whole); `length` is how many characters to underline.
    """

    severity: Severity
    message: str
    line: int | None = None
    col: int | None = None
    length: int = 1
    notes: list[Diagnostic] = field(default_factory=list["Diagnostic"])


def diagnostic_at(chunk: SourceChunk, offset: int, severity: Severity, message: str,
                  length: int = 1) -> Diagnostic:
    """A diagnostic at a 0-based offset into `chunk.text`."""
    line, col = chunk.line_col(offset)
    return Diagnostic(severity, message, line, col, max(1, length))


def render(diag: Diagnostic, filename: str, source: SourceChunk | None,
           parent: Diagnostic | None = None) -> str:
    """`FILE:LINE:COL: severity: message`, the source line and a caret, then the notes.

    A note at the same place as the diagnostic it belongs to does not repeat the source line.
    """
    if diag.line is None:
        text = f"{filename}: {diag.severity}: {diag.message}\n"
    else:
        text = f"{filename}:{diag.line}:{diag.col}: {diag.severity}: {diag.message}\n"
        same_place = parent is not None and (parent.line, parent.col) == (diag.line, diag.col)
        line_text = source.line_text(diag.line) if source is not None and not same_place else None
        if line_text is not None and line_text.strip():
            col = (diag.col or 1) - 1
            width = max(1, min(diag.length, len(line_text) - col))
            prefix = "".join(ch if ch == "\t" else " " for ch in line_text[:col])
            text += f"{line_text}\n{prefix}^{'~' * (width - 1)}\n"
    for note in diag.notes:
        text += render(note, filename, source, diag)
    return text
