"""A batch's L1 starts unpoisoned and is poisoned lazily (`FreshL1`, its run-time part) when only
tile instructions touch it: the bytes a copy or fill overwrites whole are never poisoned first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Operation

from pypto.backend.interpreter.copies import Region
from pypto.backend.interpreter.strategies import base
from pypto.backend.interpreter.modes import BATCH
from pypto.dialects.traits import declares_buffer

if TYPE_CHECKING:
    from pypto.backend.interpreter.l1 import L1Arena


@dataclass(frozen=True)
class Decision(base.Decision):
    """A batch's L1 may be poisoned lazily."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """An L1 buffer declaration, in batch mode."""
    return Decision() if facts.mode == BATCH and declares_buffer(op) else None


def applies(decision: Decision | None, blocks: int, tile_only: bool) -> bool:
    """The run-time part: an arena of several blocks whose L1 only tile instructions touch."""
    return decision is not None and blocks > 1 and tile_only


class FreshL1:
    """The poisoning of fresh L1 (l1.py `L1Arena.poison`), deferred. Only in batch mode for
    kernels whose L1 only tile instructions touch (`L1Layout.tile_only`): every access to L1
    is then a tile instruction (tiles.py, tile_unit.py), which poisons the bytes it reads
    first (`materialise`), and bytes a tile write covers whole never need it (`overwrite`). `ranges` holds, per buffer
    slot in the order `poison` goes through them (where slots share bytes the later one's
    poison wins), the block-local byte ranges still to poison: whole elements of the slot."""

    __slots__ = ("arena", "ranges")

    def __init__(self, arena: L1Arena):
        self.arena = arena
        self.ranges = [(slot, slot.offset, slot.end) for slot in arena.layout.slots.values()]

    def materialise(self, lo: int | None = None, hi: int | None = None) -> None:
        """Poison what is pending in bytes lo..hi-1 (all of it without bounds), widened to
        whole elements of each slot (still pending bytes: poisoning them early is harmless)."""
        self._settle(0 if lo is None else lo, self.arena_end() if hi is None else hi, True)

    def overwrite(self, span: Region) -> None:
        """Bytes `span` are about to be written whole in every block: they need no poison.
        A region with gaps between its rows, or ends inside a slot's element, is poisoned
        first instead (the write then lands on it)."""
        if span.rows > 1 and span.stride != span.row_len:
            self.materialise(span.lo, span.hi)
            return
        self._settle(span.lo, span.hi, False)

    def arena_end(self) -> int:
        return max((b for _, _, b in self.ranges), default=0)

    def _settle(self, lo: int, hi: int, poison: bool) -> None:
        """Take bytes lo..hi-1, widened to whole elements of each slot, out of the pending
        ranges; poison them when `poison`, or when the widening reached outside lo..hi (a
        write that ends inside an element leaves the rest of it poisoned)."""
        keep = []
        for slot, a, b in self.ranges:
            x, y = max(a, lo), min(b, hi)
            if x >= y:
                keep.append((slot, a, b))
                continue
            isz = slot.dtype.itemsize
            wx, wy = x - (x - slot.offset) % isz, y + -(y - slot.offset) % isz
            if poison or (wx, wy) != (x, y):
                self.arena.poison_bytes(slot, wx, wy)
            if a < wx:
                keep.append((slot, a, wx))
            if wy < b:
                keep.append((slot, wy, b))
        self.ranges = keep

