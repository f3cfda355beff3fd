"""A batch's fill of one value at one offset in every block is one lazy fill (`LazyFill`, its
run-time part), moved into L1 only when something else needs those bytes. "All values equal" is
data: the run time checks it (`tile_unit.TileUnit._fill_blocks`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.ir import Operation

from pypto.backend.interpreter.copies import Region, span_key
from pypto.backend.interpreter.strategies import base
from pypto.dialects.traits import FillFootprint


@dataclass(frozen=True)
class Decision(base.Decision):
    """A fill whose blocks all fill one value may be lazy."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """A fill instruction (its tile footprint is a fill's)."""
    return Decision() if op.has_trait(FillFootprint) else None


class LazyFill:
    """A batch-mode `pto.fill` of the same elements with one value in every block, not done
    yet: an `mma` whose C tile is exactly those elements adds its products to the value
    instead of reading it back from L1 (`value + A @ B`, the bits of the fill then the
    accumulation); anything else touching the bytes does the fill first (`materialise`)."""

    __slots__ = ("buf", "start", "n", "value", "span", "key")
    source = None  # no HBM behind it

    def __init__(self, buf: Any, start: int, n: int, value: Any):
        self.buf, self.start, self.n, self.value = buf, start, n, value
        isz = buf.data.itemsize
        self.span = Region(buf.offset + start * isz, 1, n * isz, n * isz)
        self.key = (span_key(self.span), buf.data.dtype)

    def materialise(self) -> None:
        self.buf.grid()[:, self.start:self.start + self.n] = self.value

