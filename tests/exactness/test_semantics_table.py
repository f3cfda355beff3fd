"""docs/language.md's table of exact semantics and the exactness suite describe the same thing.

Every row of the table (operation names, dtypes, bound) must be an operation the suite checks
with that bound, and every operation the suite checks must have its row: a new operation, dtype
or changed bound cannot land in one place only.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.exactness import reference as R
from tests.exactness.ops import DTYPE_NAMES, all_ops

DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"
NAMES = {v: k for k, v in DTYPE_NAMES.items()}


def _table_rows() -> list[list[str]]:
    text = DOC.read_text()
    start = text.index("| op | Python | dtypes | semantics | bound |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows.append(cells)
    return rows


def _bound(text: str, kind: str) -> float | None:
    """'exact' -> None, '1 ulp' -> 1.0, 'floats: 1 ulp; ints: exact' -> per kind."""
    parts = dict(p.split(": ") for p in text.split("; ")) if ":" in text else {kind: text}
    value = parts[kind]
    return None if value == "exact" else float(value.split()[0])


def documented() -> dict[tuple[str, str], float | None]:
    """(op name, dtype name) -> bound, from the table."""
    found: dict[tuple[str, str], float | None] = {}
    for op_cell, _python, dtypes_cell, _semantics, bound_cell in _table_rows():
        names = re.findall(r"`(\w+)`", op_cell)
        main, _, extra = dtypes_cell.partition("(")
        if main.startswith("every pair of"):
            listed = re.findall(r"\w+", main.removeprefix("every pair of"))
            for name in names:
                for src in listed:
                    for dst in listed:
                        if src != dst:
                            found[(f"{name}-to-{dst}", src)] = None
            continue
        listed = [d for d in re.findall(r"\w+", main) if d in NAMES]
        for name in names:
            for dt in listed:
                kind = "floats" if NAMES[dt].kind == "f" or NAMES[dt] == R.BF16 else "ints"
                found[(name, dt)] = _bound(bound_cell, kind)
        if extra:  # "(`eq`, `ne` also bool_)"
            also = re.findall(r"`(\w+)`", extra)
            for dt in re.findall(r"also (\w+)", extra):
                for name in also:
                    found[(name, dt)] = None
    return found


def checked_by_suite() -> dict[tuple[str, str], float | None]:
    found: dict[tuple[str, str], float | None] = {}
    for op in all_ops():
        if op.name == "chain":  # not an operation: a folding check of rounding between steps
            continue
        name = op.name if op.name != "cast" else f"cast-to-{DTYPE_NAMES[op.out]}"
        found[(name, DTYPE_NAMES[op.dtype])] = op.ulps
    return found


def test_table_and_suite_agree():
    doc, suite = documented(), checked_by_suite()
    assert len(doc) > 100
    only_doc = sorted(set(doc) - set(suite))
    only_suite = sorted(set(suite) - set(doc))
    assert not only_doc, f"documented but not checked by tests/exactness: {only_doc}"
    assert not only_suite, f"checked but missing from docs/language.md's table: {only_suite}"
    differ = {k: (doc[k], suite[k]) for k in doc if doc[k] != suite[k]}
    assert not differ, f"bounds differ (docs, suite): {differ}"
