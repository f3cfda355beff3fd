"""Per-`Executable` memos of facts about the shared read-only masks its launches use.

Comparisons of block-local ids (`StructuredAccess.local_cmp`, `PlannedAccess.form_cmp`) give
the same mask in every lane vector of a launch shape, so that mask is made once and shared
(geometry.py, a value cache: keyed by the shape, bounded). What is worked out about such a
mask — whether a branch on it runs on no lane, some or every lane (`lanes.mask_and`), and its
lane window (`StructuredAccess.lane_window`) and its window of warps times lanes in the
warp (`windows.warp_window`) — is remembered here, by the mask's identity:
each entry holds its mask, so no other array can have its id while the entry exists. One
`RunCache` per `Executable` (launches from several threads share it: updates take its lock),
at most `MAX_ENTRIES` per table (then the table starts over).
"""

from __future__ import annotations

import threading
from typing import Any

MAX_ENTRIES = 64


class RunCache:
    """Facts about shared masks, for the launches of one Executable."""

    __slots__ = ("lock", "outcomes", "windows", "warp_windows", "offsets")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.outcomes: dict[int, tuple[Any, Any]] = {}  # id(mask) -> (mask, mask_and(None, mask))
        self.windows: dict[int, tuple[Any, Any]] = {}  # id(mask) -> (mask, lane window)
        # id(mask) -> (mask, (warps x lanes-in-warp window, the mask on it)): windows.py
        self.warp_windows: dict[int, tuple[Any, Any]] = {}
        # (parts, grid, first lane, count) -> a block-level operand's offsets (read-only),
        # views.PlannedAccess.block_offset: keyed by value, not by identity
        self.offsets: dict[Any, Any] = {}

    def known(self, table: dict[int, tuple[Any, Any]], mask: Any) -> Any:
        """What `table` holds for `mask`, or None."""
        entry = table.get(id(mask))
        return entry[1] if entry is not None and entry[0] is mask else None

    def remember(self, table: dict[int, tuple[Any, Any]], mask: Any, value: Any) -> None:
        with self.lock:
            if len(table) >= MAX_ENTRIES:
                table.clear()
            table[id(mask)] = (mask, value)

    def remember_value(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        """`table[key] = value` for a table keyed by value (`offsets`), bounded likewise."""
        with self.lock:
            if len(table) >= MAX_ENTRIES:
                table.clear()
            table[key] = value

    def sizes(self) -> dict[str, int]:
        """Entries per table (tests check they stay bounded)."""
        return {"outcomes": len(self.outcomes), "windows": len(self.windows),
                "warp_windows": len(self.warp_windows), "offsets": len(self.offsets)}
