"""`--verify-diagnostics`: check the diagnostics of a run against annotations in the input.

MLIR's syntax and semantics, so tests read the same as upstream ones:

    %v = pto.load %p : !pto.ptr<f32, global> -> i32   // expected-error {{does not match}}
    // expected-error @+1 {{dimension must be 0, 1 or 2}}
    %i = pto.get_global_id 3 : i32

`expected-error`, `expected-warning`, `expected-note` and `expected-remark` name the severity;
without `@` the diagnostic is expected on the annotation's own line, `@+N` / `@-N` on the line N
below / above it. The text between `{{` and `}}` must be a substring of the message. Every
error, warning and remark must be expected, and every annotation must be met; notes are checked
when annotated but may go unannotated (every op built from Python carries a "from Python source"
note, which would otherwise clutter every test).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pypto.tools.source import Diagnostic, SourceChunk

_ANNOTATION = re.compile(
    r"expected-(?P<severity>error|warning|note|remark)"
    r"[ \t]*(?:@(?P<offset>[+-][0-9]+))?[ \t]*\{\{(?P<text>.*)\}\}[ \t]*$")
_MENTION = re.compile(r"expected-(?:error|warning|note|remark)\b")


@dataclass
class Expectation:
    """One `expected-*` annotation: what is expected, on which line, and where it is written."""

    severity: str
    text: str
    line: int
    """The file line the diagnostic is expected on."""
    annotation_line: int
    annotation_col: int
    met: bool = False


def parse_expectations(chunk: SourceChunk) -> tuple[list[Expectation], list[Diagnostic]]:
    """The annotations of a chunk, and an error for each malformed one."""
    expectations: list[Expectation] = []
    errors: list[Diagnostic] = []
    for index, line_text in enumerate(chunk.text.split("\n")):
        line = chunk.first_line + index
        for mention in _MENTION.finditer(line_text):
            col = mention.start() + 1
            match = _ANNOTATION.match(line_text, mention.start())
            if match is None:
                errors.append(Diagnostic(
                    "error", "malformed diagnostic annotation; expected "
                    f"'{mention.group(0)} {{{{message}}}}' or "
                    f"'{mention.group(0)} @+N {{{{message}}}}'", line, col,
                    len(line_text) - col + 1))
                continue
            target = line + int(match.group("offset") or 0)
            expectations.append(
                Expectation(match.group("severity"), match.group("text"), target, line, col))
    return expectations, errors


def _flatten(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    flat: list[Diagnostic] = []
    for diag in diagnostics:
        flat.append(diag)
        flat.extend(_flatten(diag.notes))
    return flat


def check_expectations(expectations: list[Expectation],
                       diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Match diagnostics to annotations; returns one error per mismatch (empty: all good)."""
    failures: list[Diagnostic] = []
    for diag in _flatten(diagnostics):
        found = next((e for e in expectations
                      if not e.met and e.severity == diag.severity and e.line == diag.line
                      and e.text in diag.message), None)
        if found is not None:
            found.met = True
        elif diag.severity != "note":
            failures.append(Diagnostic("error", f"unexpected {diag.severity}: {diag.message}",
                                       diag.line, diag.col, diag.length))
    for expectation in expectations:
        if not expectation.met:
            failures.append(Diagnostic(
                "error", f'expected {expectation.severity} "{expectation.text}" was not produced',
                expectation.annotation_line, expectation.annotation_col))
    return failures
