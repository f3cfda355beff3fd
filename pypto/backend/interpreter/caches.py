"""Every memo of the interpreter's run time, per `Executable` (`RunCache`): nothing is cached
process-wide, so one kernel's launches never see another's entries and dropping an Executable
drops them all.

Two kinds of table:
- **by value**: arrays and facts that depend only on the shape of a lane vector or access
  (lane ramps, all-True / all-False masks, per-block id patterns and masks: `geometry`;
  planned views, race patterns and their summaries, block-copy offsets), shared read-only by
  every vector and launch of that shape;
- **by identity**: what is worked out about such a shared read-only mask — whether a branch
  on it runs on no lane, some or every lane (`lanes.mask_and`), its lane window
  (`LaneContext.lane_window`) and its window of warps times lanes in the warp
  (`windows.warp_window`); each entry holds its mask, so no other array can have its id while
  the entry exists.

Launches of one Executable from several threads share its RunCache without a lock (so a fork
can never inherit one held by another thread): a lookup is one dict read and a store one
`dict.setdefault`, each atomic under the GIL; a miss computes its value first, and a full table
is cleared before the store, so a table stays near its bound (`LIMITS`; two threads clearing
at once clear twice). Two threads missing at once compute the same value; the first stored is
kept and returned to both, and either is correct (values are pure functions of their keys,
read-only arrays).
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy as np

MAX_ENTRIES = 64

LIMITS = {"outcomes": MAX_ENTRIES, "windows": MAX_ENTRIES, "warp_windows": MAX_ENTRIES,
          "offsets": MAX_ENTRIES, "shapes": MAX_ENTRIES, "ramps": MAX_ENTRIES, "full": 16,
          "views": 4096, "summaries": 256, "patterns": 256, "box_ids": 256}
"""Entries each table holds at most (then it starts over)."""


class RunCache:
    """Every run-time memo of the launches of one Executable."""

    __slots__ = ("outcomes", "windows", "warp_windows", "offsets", "shapes", "ramps",
                 "full", "views", "summaries", "patterns", "box_ids", "numbers")

    def __init__(self) -> None:
        self.outcomes: dict[int, tuple[Any, Any]] = {}  # id(mask) -> (mask, mask_and(None, mask))
        self.windows: dict[int, tuple[Any, Any]] = {}  # id(mask) -> (mask, lane window)
        # id(mask) -> (mask, (warps x lanes-in-warp window, the mask on it)): windows.py
        self.warp_windows: dict[int, tuple[Any, Any]] = {}
        # (parts, grid, first lane, count) -> a block-level operand's offsets (read-only),
        # views_forms.BoxForms.block_offset: keyed by value, not by identity
        self.offsets: dict[Any, Any] = {}
        # per-lane arrays that depend only on the shape of a lane vector (`geometry`)
        self.shapes: dict[tuple[Any, ...], Any] = {}
        self.ramps: dict[int, np.ndarray] = {}  # n -> arange(n) as int32, read-only
        # n -> (all False, all True) read-only masks, recognised by identity (lanes.mask_and)
        self.full: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # views.PlannedViews._plan_view by forms, block-copy stride and box
        self.views: dict[tuple[Any, ...], Any] = {}
        # races.pattern_summary by the pattern's bytes (views_common._summary)
        self.summaries: dict[tuple[bytes, bytes, int], tuple[np.ndarray, ...]] = {}
        # race patterns of planned accesses (views_store.PlannedStores._known_pattern), and
        # the numbers of the vector boxes seen; numbers (`numbers`) are never reused within the Executable,
        # whose arenas' race shadows remember them
        self.patterns: dict[tuple[Any, ...], Any] = {}
        self.box_ids: dict[tuple[Any, ...], int] = {}
        self.numbers = itertools.count(1)

    # by identity ------------------------------------------------------------------------------

    def known(self, table: dict[int, tuple[Any, Any]], mask: Any) -> Any:
        """What `table` holds for `mask`, or None."""
        entry = table.get(id(mask))
        return entry[1] if entry is not None and entry[0] is mask else None

    def remember(self, table: dict[int, tuple[Any, Any]], mask: Any, value: Any) -> None:
        if len(table) >= MAX_ENTRIES:
            table.clear()
        table[id(mask)] = (mask, value)

    # by value ---------------------------------------------------------------------------------

    def remember_value(self, table: dict[Any, Any], key: Any, value: Any,
                       limit: int = MAX_ENTRIES) -> Any:
        """`table[key] = value` for a table keyed by value, bounded by `limit`; returns the
        value now stored (another thread's, if it stored one first)."""
        if len(table) >= limit and key not in table:
            table.clear()
        return table.setdefault(key, value)

    def geometry(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """A per-lane array (or tuple of them) that depends only on the shape of a lane vector
        (its length, block shape, position within a block, warp size), not on which blocks it
        holds: made once and shared, read-only, by every lane vector (and launch) of that
        shape. Vectors of one shape share one block's id pattern repeated instead of each
        computing `//` and `%` over every lane."""
        value = self.shapes.get(key)
        if value is None:
            value = make()
            for array in value if isinstance(value, tuple) else (value,):
                array.flags.writeable = False
            value = self.remember_value(self.shapes, key, value, MAX_ENTRIES + 1)
        return value

    def ramp(self, n: int) -> np.ndarray:
        """`arange(n)` as int32, read-only: lane indices, needed by every vector of that size."""
        r = self.ramps.get(n)
        if r is None:
            r = np.arange(n, dtype=np.int32)
            r.flags.writeable = False
            r = self.remember_value(self.ramps, n, r, MAX_ENTRIES + 1)
        return r

    def uniform_masks(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(all False, all True) bool vectors of `n` lanes, read-only: what a comparison whose
        outcome is the same on every lane returns, recognised by identity (`lanes.mask_and`)."""
        full = self.full.get(n)
        if full is None:
            no, every = np.zeros(n, dtype=bool), np.ones(n, dtype=bool)
            no.flags.writeable = every.flags.writeable = False
            full = self.remember_value(self.full, n, (no, every), LIMITS["full"] + 1)
        return full

    def sizes(self) -> dict[str, int]:
        """Entries per table (tests check they stay within `LIMITS`, plus one where a table
        is cleared only once it has grown past its bound)."""
        return {name: len(getattr(self, name)) for name in LIMITS}
