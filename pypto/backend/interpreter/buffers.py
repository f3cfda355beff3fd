"""`Buffer`: the memory a pointer refers to, as generated code and the tile instructions see it.

Its own module, below `lanes.py` (lane instructions) and `tiles.py` (block instructions), which
both use it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided


class Buffer:
    """A memory region a pointer refers to: a device tensor (HBM) or an L1 buffer.

    `data` is a flat typed view starting at the buffer's first element. An HBM buffer is the
    whole tensor. An L1 buffer is a view of its block's L1 arena (l1.py) at the buffer's byte
    `offset`; in batch mode, where a lane vector holds several blocks, element `e` of block `b`
    is `data[e + b * stride]` (the arenas of the blocks lie back to back). `init` (with
    check_uninitialized) and `shadow` (race detector) are indexed like `data` and, being views
    of per-granule arena state, are shared by every buffer covering the same bytes.
    """

    __slots__ = ("data", "name", "space", "init", "shadow", "count", "stride", "blocks",
                 "offset", "gran", "_grid", "_key")

    def __init__(self, data: np.ndarray, name: str, space: str, count: int | None = None,
                 stride: int = 0, blocks: int = 1, offset: int = 0,
                 gran: tuple[int, int] = (0, 1)):
        self.data = data
        self.name = name
        self.space = space
        self.count = data.size if count is None else count  # elements one block sees
        self.stride = stride  # elements between consecutive blocks' copies (0: one block)
        self.blocks = blocks
        self.offset = offset  # L1: byte offset in the block's arena
        self.gran = gran  # L1: (first granule, granules per element)
        self.init: np.ndarray | None = None
        self.shadow: Any = None  # races.ShadowView when the race detector is on
        self._grid: np.ndarray | None = None
        self._key: tuple[Any, ...] | None = None

    def geometry_key(self) -> tuple[Any, ...]:
        """The buffer as far as a tile instruction's plan depends on it (tiles.py): its space,
        place and size, element type and per-block layout."""
        if self._key is None:
            self._key = (self.space, self.offset, self.count, self.data.dtype.str, self.stride,
                         self.blocks)
        return self._key

    def watched(self) -> bool:
        return self.init is not None or self.shadow is not None

    def grid(self) -> np.ndarray:
        """(blocks, count) view: every block's copy of the buffer."""
        if self._grid is None:
            if not self.stride:
                self._grid = self.data[:self.count].reshape(1, self.count)
            else:
                isz = self.data.itemsize
                self._grid = as_strided(self.data, shape=(self.blocks, self.count),
                                        strides=(self.stride * isz, isz), writeable=True)
        return self._grid

    def init_grid(self) -> np.ndarray:
        assert self.init is not None
        if not self.stride:
            return self.init[:self.count].reshape(1, self.count)
        st = self.init.strides[0]
        return as_strided(self.init, shape=(self.blocks, self.count),
                          strides=(self.stride * st, st), writeable=True)

    def local_element(self, idx: Any) -> Any:
        """Element index within its block's copy."""
        return idx % self.stride if self.stride else idx

    def byte_of(self, idx: Any) -> Any:
        """Block-local L1 byte address of element index `idx` (ints or arrays)."""
        return self.offset + self.local_element(idx) * self.data.itemsize

    def granule_of(self, idx: Any) -> Any:
        """Arena granule of element index `idx` (comparable across buffers of one arena)."""
        return self.gran[0] + idx * self.gran[1]

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {self.space}, {self.count} x {self.data.dtype})"


_UNSIGNED = {np.dtype(np.int32): np.dtype(np.uint32), np.dtype(np.int64): np.dtype(np.uint64)}


def outside(off: np.ndarray, size: int) -> bool:
    """Does any of the (non-empty) offsets lie outside [0, size)? Seen as unsigned, negative
    offsets are larger than any size, so one `max` pass answers what `min` and `max` did."""
    unsigned = _UNSIGNED.get(off.dtype)
    if unsigned is None:
        return bool(off.min() < 0 or off.max() >= size)
    return int(off.view(unsigned).max()) >= size
