"""A batch's L1 starts unpoisoned and is poisoned lazily (`tiles.FreshL1`) when only tile
instructions touch it: the bytes a copy or fill overwrites whole are never poisoned first."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from pypto.backend.interpreter.strategies import base
from pypto.backend.interpreter.modes import BATCH
from pypto.dialects.traits import declares_buffer


@dataclass(frozen=True)
class Decision(base.Decision):
    """A batch's L1 may be poisoned lazily."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """An L1 buffer declaration, in batch mode."""
    return Decision() if facts.mode == BATCH and declares_buffer(op) else None


def applies(decision: Decision | None, blocks: int, tile_only: bool) -> bool:
    """The run-time part: an arena of several blocks whose L1 only tile instructions touch."""
    return decision is not None and blocks > 1 and tile_only
