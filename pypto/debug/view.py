"""What the debugger prints: lane sets, and one executed instruction as trace lines.

A trace line has the article's shape, `[Lane 0] LOAD d_a[0] -> L1[0] (4 bytes)`. Lanes whose
accesses follow one pattern (consecutive lanes, addresses moving by a constant step) are folded
into one line, `[Lanes 0-255] LOAD d_a[0..255] -> L1[0..255] (4 bytes each)`, so that stepping a
256-lane block prints one line, not 256. This is display code: it runs once per executed
instruction the user asked to see, never inside the executor.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from pypto.dialects.traits import offset_base


class Lanes:
    """A set of lane ids (within a block), kept as sorted runs; `str` gives `0-255`, `7` or
    `0-39,64-71`."""

    def __init__(self, ids: Iterable[int] | np.ndarray):
        arr = np.unique(np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids,
                                   dtype=np.int64))
        self.ids = arr
        runs: list[tuple[int, int]] = []
        if arr.size:
            breaks = np.nonzero(np.diff(arr) != 1)[0]
            starts = np.concatenate(([0], breaks + 1))
            ends = np.concatenate((breaks, [arr.size - 1]))
            runs = [(int(arr[s]), int(arr[e])) for s, e in zip(starts, ends)]
        self.runs = runs

    @property
    def first(self) -> int:
        return int(self.ids[0])

    @property
    def last(self) -> int:
        return int(self.ids[-1])

    def __len__(self) -> int:
        return int(self.ids.size)

    def __iter__(self) -> Iterator[int]:
        return (int(i) for i in self.ids)

    def __contains__(self, lane: object) -> bool:
        return bool(np.any(self.ids == lane))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Lanes):
            return self.runs == other.runs
        if isinstance(other, range | list | tuple):
            return self.runs == Lanes(other).runs
        return NotImplemented

    def __str__(self) -> str:
        return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in self.runs) or "none"

    def __repr__(self) -> str:
        return f"Lanes({self})"

    def label(self) -> str:
        """`Lane 3` or `Lanes 0-255` (the prefix of trace lines)."""
        return f"Lane {self}" if len(self) == 1 else f"Lanes {self}"


@dataclass
class Access:
    """A per-lane address column of a trace line: `name[index]`."""

    name: str
    index: np.ndarray  # per active lane (int64)
    itemsize: int = 0  # bytes per element
    unit: str = ""     # appended text, e.g. " (L1)"


@dataclass
class Executed:
    """One instruction as executed by the lanes of the focus: what a trace line shows."""

    op_id: int
    kind: str                 # LOAD, STORE, FMA, MMA, CMPI, ...
    lanes: Lanes              # active lanes (ids within the block)
    line: int | None
    location: str
    text: str = ""            # for non-memory ops: operands -> result
    src: Access | None = None
    dst: list[Access] = field(default_factory=list)
    nbytes: int = 0           # bytes per lane moved by a lane memory op (0: not one)
    expr: str = ""            # FMA: "a_val * 1.0 + b_val"; STORE: the stored value's name
    update: str = ""          # ATOMIC_ADD: "+= 1" (read-modify-write of src)


_CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}
_CMPF = {1: "==", 2: ">", 3: ">=", 4: "<", 5: "<=", 6: "!=", 8: "==", 9: ">", 10: ">=", 11: "<",
         12: "<=", 13: "!="}
_BINARY = {"arith.addf": "+", "arith.addi": "+", "arith.subf": "-", "arith.subi": "-",
           "arith.mulf": "*", "arith.muli": "*", "arith.divf": "/", "arith.floordivsi": "//",
           "arith.remsi": "%"}


def value_name(v: SSAValue, depth: int = 0) -> str:
    """How an operand reads in a trace line: its Python name, a constant, or `%N`."""
    if v.name_hint:
        return v.name_hint
    owner = v.owner
    if isinstance(owner, arith.ConstantOp):
        attr = owner.value
        data = getattr(attr, "value", None)
        inner = getattr(data, "data", None)
        if isinstance(inner, float):
            return repr(inner)
        if isinstance(inner, int):
            return str(inner)
    if isinstance(owner, Operation) and offset_base(owner) is not None:
        return f"{value_name(owner.operands[0])} + {value_name(owner.operands[1])}"
    if isinstance(owner, arith.CmpiOp | arith.CmpfOp) and depth < 2:
        table = _CMPI if isinstance(owner, arith.CmpiOp) else _CMPF
        sym = table.get(owner.predicate.value.data, "?")
        return f"{value_name(owner.lhs, depth + 1)} {sym} {value_name(owner.rhs, depth + 1)}"
    sym = _BINARY.get(owner.name) if isinstance(owner, Operation) else None
    if sym is not None and depth < 2 and len(owner.operands) == 2:
        a, b = owner.operands
        return f"({value_name(a, depth + 1)} {sym} {value_name(b, depth + 1)})"
    if isinstance(v, OpResult):
        return f"%{owner.name.split('.', 1)[-1]}"
    if isinstance(v, BlockArgument):
        return f"%arg{v.index}"
    return "%?"


def _runs(lanes: np.ndarray, columns: Sequence[np.ndarray]) -> list[tuple[int, int]]:
    """Split lane positions [0, n) into maximal runs where lanes are consecutive and every
    column moves by a constant step."""
    n = lanes.size
    if n == 0:
        return []
    out = []
    start = 0
    while start < n:
        end = start
        if start + 1 < n and lanes[start + 1] == lanes[start] + 1:
            steps = [c[start + 1] - c[start] for c in columns]
            end = start + 1
            while end + 1 < n and lanes[end + 1] == lanes[end] + 1 and all(
                    c[end + 1] - c[end] == s for c, s in zip(columns, steps)):
                end += 1
        out.append((start, end))
        start = end + 1
    return out


def _index_text(col: np.ndarray, a: int, b: int) -> str:
    lo, hi = int(col[a]), int(col[b])
    if a == b or lo == hi and np.all(col[a:b + 1] == lo):
        return f"{lo}"
    step = int(col[a + 1] - col[a])
    if step == 1:
        return f"{lo}..{hi}"
    return f"{lo}..{hi} step {step}"


def render(rec: Executed, fold: bool = True, max_lines: int = 32) -> list[str]:
    """Trace lines of one executed instruction."""
    if rec.src is None and not rec.dst:
        return [f"[{rec.lanes.label()}] {rec.kind}{' ' + rec.text if rec.text else ''}"]
    lanes = rec.lanes.ids
    cols = ([rec.src.index] if rec.src is not None else []) + [d.index for d in rec.dst]
    if fold:
        runs = _runs(lanes, cols)
    else:
        runs = [(i, i) for i in range(lanes.size)]
    lines = []
    for a, b in runs:
        lane_text = Lanes(lanes[a:b + 1]).label()
        parts = []
        if rec.src is not None:
            parts.append(f"{rec.src.name}[{_index_text(rec.src.index, a, b)}]{rec.src.unit}"
                         + (f" {rec.update}" if rec.update else ""))
        elif rec.expr:
            parts.append(rec.expr)
        for d in rec.dst:
            parts.append(f"{d.name}[{_index_text(d.index, a, b)}]{d.unit}")
        if rec.src is not None and rec.expr:  # a load into a named value at the pto level
            parts.append(rec.expr)
        size = ""
        if rec.nbytes:
            size = f" ({rec.nbytes} bytes{' each' if b > a else ''})"
        lines.append(f"[{lane_text}] {rec.kind} {' -> '.join(parts)}{size}")
    if len(lines) > max_lines:
        hidden = len(lines) - max_lines
        lines = lines[:max_lines] + [f"... ({hidden} more lines)"]
    return lines


def source_context(filename: str, line: int, around: int = 2) -> list[str]:
    """`around` lines either side of `line`, the current one marked `->` (as pdb's `list`)."""
    import linecache

    out = []
    for n in range(max(1, line - around), line + around + 1):
        text = linecache.getline(filename, n)
        if not text and n > line:
            break
        out.append(f"{n:>5} {'->' if n == line else '  '} {text.rstrip()}".rstrip())
    return out


def lane_values_text(values: np.ndarray, lanes: Sequence[int], active: np.ndarray | None,
                     limit: int = 16) -> str:
    """`[lane 0] 0.5  [lane 1] 1.5 ...` folded into runs of equal values."""
    parts = []
    vals = np.asarray(values)
    i = 0
    n = len(lanes)
    counting = vals.dtype.kind in "iu"
    while i < n:
        j = i
        while j + 1 < n and lanes[j + 1] == lanes[j] + 1 and _same(vals[j + 1], vals[i]) and (
                active is None or active[j + 1] == active[i]):
            j += 1
        if j == i and counting:  # lane ids, indices: values counting up with the lanes
            while j + 1 < n and lanes[j + 1] == lanes[j] + 1 and vals[j + 1] == vals[j] + 1 \
                    and (active is None or active[j + 1] == active[i]):
                j += 1
        label = f"{lanes[i]}" if i == j else f"{lanes[i]}-{lanes[j]}"
        shown = "(inactive)" if active is not None and not active[i] else _fmt(vals[i])
        if j > i and not _same(vals[j], vals[i]) and shown != "(inactive)":
            shown = f"{_fmt(vals[i])}..{_fmt(vals[j])}"
        parts.append(f"[{label}] {shown}")
        i = j + 1
        if len(parts) >= limit and i < n:
            parts.append(f"... ({n - i} more lanes)")
            break
    return "  ".join(parts)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float | np.floating) and np.isnan(a) and np.isnan(b):
        return True
    return bool(a == b)


def _fmt(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):.7g}"
    return str(v)


__all__ = ["Access", "Executed", "Lanes", "render", "source_context", "value_name"]
