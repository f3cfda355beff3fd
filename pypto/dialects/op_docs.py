"""The docstring format of the dialects' ops and types, read by the ISA reference
(`pypto.tools.isa_doc` -> docs/isa.md) and by the kernel language's builtins (their docstrings
and stubs): one source for both.

The first line is the summary, then prose and these fields, each starting a line and running
until the next one: `semantics:`, `syntax:`, `python:`, `example:` (see `pypto.dialects.pto`).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

FIELDS = ("semantics", "syntax", "python", "example")
"""Docstring fields, in the order the dialect writes them; each starts a line (`syntax: ...`)."""

_FIELD_LINE = re.compile(r"^(?P<field>%s):(?:\s(?P<rest>.*)|)$" % "|".join(FIELDS))


@dataclass(frozen=True)
class DocEntry:
    """The parts of one op or type docstring."""

    summary: str
    semantics: str
    """Prose before the fields and the `semantics:` field, as one text (may be empty)."""
    syntax: str
    python: str
    example: str
    """The `example:` block, dedented (may be empty)."""


def parse_docstring(doc: str | None) -> DocEntry:
    """Split a dialect docstring into summary, semantics, syntax, python form and example.

    The first line is the summary. A line starting with `semantics:`, `syntax:`, `python:` or
    `example:` opens that field, which runs until the next field; lines before the first field
    are prose, which precedes the semantics.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    if not lines or not lines[0].strip():
        return DocEntry("", "", "", "", "")
    summary = lines[0].strip()
    fields: dict[str, list[str]] = {"prose": []}
    current = "prose"
    for line in lines[1:]:
        match = _FIELD_LINE.match(line)
        if match:
            current = match.group("field")
            fields[current] = [match.group("rest")] if match.group("rest") else []
        else:
            fields[current].append(line)

    def text(name: str) -> str:
        return " ".join(" ".join(fields.get(name, [])).split())

    semantics = "\n\n".join(part for part in (_paragraphs(fields["prose"]),
                                              _paragraphs(fields.get("semantics", []))) if part)
    example = inspect.cleandoc("\n".join(fields.get("example", [])))
    return DocEntry(summary, semantics, text("syntax"), text("python"), example)


def _paragraphs(lines: list[str]) -> str:
    """Lines re-joined into paragraphs (blank lines separate them), each on one line."""
    paragraphs, current = [], []
    for line in lines + [""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    return "\n\n".join(paragraphs)
