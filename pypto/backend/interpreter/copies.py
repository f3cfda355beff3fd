"""Regions of bulk copies and the copies in flight: what tiles.py (the block-level instructions)
and strategies/batch_copy.py (a batch's copies as one view) both describe copies with."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided


class Region:
    """The elements a bulk copy touches in one buffer: `rows` rows of `row_len` from `base`,
    `stride` apart. `[lo, hi)` is its hull."""

    __slots__ = ("base", "rows", "row_len", "stride", "lo", "hi")

    def __init__(self, base: int, rows: int, row_len: int, stride: int):
        self.base = base
        self.rows = rows
        self.row_len = row_len
        self.stride = stride
        self.lo = base
        self.hi = base + (rows - 1) * stride + row_len if rows else base

    def hits(self, idx: Any) -> Any:
        """Which of `idx` (int, slice or index array) lie in the region (bool or bool array)."""
        if isinstance(idx, slice):
            idx = np.arange(idx.start, idx.stop)
        rel = np.asarray(idx, dtype=np.int64) - self.base
        inside = (rel >= 0) & (rel < self.hi - self.base)
        if self.stride != self.row_len:
            inside &= (rel % max(self.stride, 1)) < self.row_len
        return inside

    def overlaps(self, other: Region) -> bool:
        if self.hi <= other.lo or other.hi <= self.lo:
            return False
        if self.stride == self.row_len and other.stride == other.row_len:
            return True
        common = np.arange(max(self.lo, other.lo), min(self.hi, other.hi))
        return bool(np.any(self.hits(common) & other.hits(common)))


class InFlight:
    """An asynchronous copy issued and not yet waited for.

    `hbm_regions` may be given as a function that builds the list: the batched fast path of a
    load knows its HBM tiles as a few numbers, and a load's HBM regions are consulted only by
    hazard checks against stores, so most loads never need them as Region objects."""

    __slots__ = ("token", "kind", "site", "l1", "l1_regions", "hbm", "_hbm_regions")

    def __init__(self, token: int, kind: str, site: int, l1: Any, l1_regions: list[Region],
                 hbm: Any, hbm_regions: list[Region] | Callable[[], list[Region]]):
        self.token = token
        self.kind = kind  # "async_load" | "async_store"
        self.site = site
        self.l1 = l1  # Buffer: destination of a load, source of a store
        # in block-local L1 *bytes* (one per distinct block region in batch mode): any buffer
        # covering those bytes is hit, whatever its name
        self.l1_regions = l1_regions
        self.hbm = hbm
        self._hbm_regions = hbm_regions

    @property
    def hbm_regions(self) -> list[Region]:
        """The HBM element regions the copy touches (one per distinct block tile)."""
        if callable(self._hbm_regions):
            self._hbm_regions = self._hbm_regions()
        return self._hbm_regions

    def l1_hits(self, byte_idx: Any) -> bool:
        return any(np.any(r.hits(byte_idx)) for r in self.l1_regions)

    def hbm_hits(self, idx: Any) -> bool:
        return any(np.any(r.hits(idx)) for r in self.hbm_regions)


def span_key(r: Region) -> tuple[int, ...]:
    """A region's bytes in a canonical form (one row or back-to-back rows: their hull)."""
    if r.rows == 1 or r.stride == r.row_len:
        return (r.lo, r.hi)
    return (r.base, r.rows, r.row_len, r.stride)


def byte_region(buf: Any, region: Region) -> Region:
    """An element region of L1 buffer `buf` as a region of block-local L1 bytes."""
    isz = buf.data.itemsize
    return Region(buf.offset + region.base * isz, region.rows, region.row_len * isz,
                  region.stride * isz)


def view(base: np.ndarray, start: int, shape: tuple[int, ...],
          strides: tuple[int, ...]) -> np.ndarray:
    """A writeable view of 1-D `base` from element `start` with byte `strides`. Through the
    buffer protocol when `base` is contiguous: cheaper than `as_strided`, and NumPy checks that
    every element lies inside `base`."""
    if base.ndim == 1 and base.flags.c_contiguous:
        return np.ndarray(shape, base.dtype, buffer=base, offset=start * base.itemsize,
                          strides=strides)
    return as_strided(base[start:], shape=shape, strides=strides, writeable=True)


def l1_in_flight(inflight: dict[int, InFlight], byte_region: Region,
                  access: str) -> InFlight | None:
    """The first in-flight copy (in issue order) that an `access` ("read" / "write") of the
    block-local L1 bytes `byte_region` conflicts with: a read conflicts with a load still
    writing them, a write with any copy still using them."""
    for copy in inflight.values():
        if (access == "write" or copy.kind == "async_load") and \
                any(r.overlaps(byte_region) for r in copy.l1_regions):
            return copy
    return None


NO_TOKEN = object()
"""What a tile_store returns from a fast path: done, no token."""


def distinct(regions: list[Region]) -> list[Region]:
    """Regions without repeats (every block of a batch usually copies the same L1 slots)."""
    seen: dict[tuple[int, int, int, int], Region] = {}
    for r in regions:
        seen.setdefault((r.base, r.rows, r.row_len, r.stride), r)
    return list(seen.values())

