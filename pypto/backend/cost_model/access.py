"""What a lane memory access costs beyond its lanes: memory sectors, L1 banks, one address.

Hardware pays for the addresses a warp's lanes touch, not for the lanes alone (docs/cost-model.md#the-machine-the-engine-models): a
warp whose lanes read 32 consecutive floats moves four 32-byte sectors, one whose lanes read
every 32nd float moves 32; lanes of a warp that hit different words of one L1 bank are served
one after the other; atomics on one address serialise. The executor knows the addresses only
while the kernel runs, so the cost trace (trace.py) hands every lane-varying pointer that a
lane load, store, fma or atomic uses to `access_stats`, which reduces it, per block, to:

* `sectors`: summed over the block's warps, the distinct `sector_bytes` sectors of global
  memory the active lanes touch (the traffic is sectors x sector_bytes);
* `banks`: summed over the warps, the largest number of distinct L1 words that fall into one
  bank (`l1_banks` banks of `l1_bank_bytes`; lanes reading one word are a broadcast): the L1
  passes the warp needs, 1 when conflict-free;
* `same`: the largest number of active lanes of the block on one address (atomics on it
  serialise).

Everything is vectorised over the lanes of every block of the call (NumPy sorts along the
warp axis): no Python loop per lane or per block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

STATS = ("sectors", "banks", "same")


@dataclass(frozen=True)
class AccessGeometry:
    """The memory geometry the statistics need (from the target's `[cost.memory]`)."""

    warp_size: int = 32
    sector_bytes: int = 32
    l1_banks: int = 32
    l1_bank_bytes: int = 4

    @property
    def global_period(self) -> int:
        """Bytes by which shifting every address of a global access leaves its `sectors`
        figure unchanged (and, a multiple of L1 banks x bank width, its `banks` figure)."""
        return math.lcm(self.sector_bytes, self.l1_banks * self.l1_bank_bytes)

    @staticmethod
    def of(target: Any) -> AccessGeometry:
        memory = target.section("cost", "memory")
        return AccessGeometry(int(target.warp_size), int(memory.get("sector_bytes", 32)),
                              int(memory.get("l1_banks", 32)),
                              int(memory.get("l1_bank_bytes", 4)))


def _blocks(values: Any, mask: Any, count: int, block_lanes: int) -> tuple[np.ndarray,
                                                                           np.ndarray] | None:
    """(offsets, active) as int64 / bool arrays of shape (blocks, block lanes)."""
    offsets = np.asarray(values, dtype=np.int64).reshape(-1)
    if offsets.size == 1:
        offsets = np.broadcast_to(offsets, (count,))
    if offsets.size != count or count % block_lanes:
        return None
    if mask is None:
        active = np.ones(count, dtype=bool)
    elif mask is False:
        return None
    else:
        active = np.broadcast_to(np.asarray(mask, dtype=bool).reshape(-1), (count,))
    n = count // block_lanes
    return offsets.reshape(n, block_lanes), active.reshape(n, block_lanes)


def _warps(a: np.ndarray, warp: int) -> np.ndarray:
    """(blocks, lanes) -> (blocks, warps, warp) padded with the last lane's value."""
    n, lanes = a.shape
    w = -(-lanes // warp)
    if lanes % warp:
        pad = np.repeat(a[:, -1:], w * warp - lanes, axis=1)
        a = np.concatenate([a, pad], axis=1)
    return a.reshape(n, w, warp)


def _fill_inactive(keys: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Inactive lanes take the value of an active lane of the same warp (no new distinct)."""
    big = np.iinfo(np.int64).max
    first = np.where(active, keys, big).min(axis=-1, keepdims=True)
    return np.where(active, keys, first)


def _distinct_per_warp(keys: np.ndarray, active: np.ndarray) -> np.ndarray:
    """(blocks, warps, lanes) -> (blocks, warps): distinct keys among active lanes."""
    s = np.sort(_fill_inactive(keys, active), axis=-1)
    distinct = 1 + np.count_nonzero(s[..., 1:] != s[..., :-1], axis=-1)
    return np.where(active.any(axis=-1), distinct, 0)


def _contiguous(kind: str, offsets: np.ndarray, elem_bytes: int,
                geometry: AccessGeometry) -> np.ndarray | None:
    """The statistic of every lane active on consecutive elements (the common `p + lane id`),
    from each warp's first and last byte; None where the general path is needed."""
    n, lanes = offsets.shape
    if kind == "same":
        return np.ones(n, dtype=np.int64)
    warp = geometry.warp_size
    starts = np.arange(0, lanes, warp)
    ends = np.minimum(starts + warp, lanes) - 1
    first = offsets[:, starts] * elem_bytes
    last = offsets[:, ends] * elem_bytes + elem_bytes - 1
    if kind == "sectors":
        per_warp = last // geometry.sector_bytes - first // geometry.sector_bytes + 1
        return per_warp.sum(axis=1)
    if kind == "banks" and elem_bytes <= geometry.l1_bank_bytes and \
            warp * elem_bytes <= geometry.l1_banks * geometry.l1_bank_bytes:
        return np.full(n, len(starts), dtype=np.int64)  # one pass per warp
    return None


def access_stats(kind: str, values: Any, mask: Any, count: int, block_lanes: int,
                 elem_bytes: int, geometry: AccessGeometry) -> np.ndarray | None:
    """Per block of the call: the statistic `kind` (see the module docstring) of the element
    offsets `values` (one per lane of the call, or one for all). None when the call's shape
    is not one the statistic can read (the engine then assumes contiguous lanes)."""
    shaped = _blocks(values, mask, count, block_lanes)
    if shaped is None:
        return None
    offsets, active = shaped
    if mask is None and offsets.shape[1] > 1 and (np.diff(offsets, axis=1) == 1).all():
        fast = _contiguous(kind, offsets, elem_bytes, geometry)  # `base + lane id`: no sort
        if fast is not None:
            return fast
    if kind == "same":
        big = np.iinfo(np.int64).min
        s = np.sort(np.where(active, offsets, big), axis=1)
        n, lanes = s.shape
        if lanes == 0:
            return np.zeros(n, dtype=np.int64)
        # run lengths of equal values along each row (inactive lanes form their own run)
        change = np.ones_like(s, dtype=bool)
        change[:, 1:] = s[:, 1:] != s[:, :-1]
        idx = np.where(change, np.arange(lanes)[None, :], 0)
        start = np.maximum.accumulate(idx, axis=1)
        run = np.arange(lanes)[None, :] - start + 1
        run = np.where(s == big, 0, run)
        return run.max(axis=1)
    byte = offsets * elem_bytes
    keys = _warps(byte, geometry.warp_size)
    act = _warps(active, geometry.warp_size)
    if kind == "sectors":
        return _distinct_per_warp(keys // geometry.sector_bytes, act).sum(axis=1)
    if kind == "banks":
        word = keys // geometry.l1_bank_bytes
        filled = _fill_inactive(word, act)
        s = np.sort(filled, axis=-1)
        first = np.ones_like(s, dtype=bool)
        first[..., 1:] = s[..., 1:] != s[..., :-1]
        sbank = s % geometry.l1_banks
        b, w, _ = s.shape
        cell = (np.arange(b * w).reshape(b, w, 1) * geometry.l1_banks + sbank)
        per_bank = np.bincount(cell.reshape(-1), weights=first.reshape(-1),
                               minlength=b * w * geometry.l1_banks)
        ways = per_bank.reshape(b, w, geometry.l1_banks).max(axis=-1).astype(np.int64)
        return np.where(act.any(axis=-1), ways, 0).sum(axis=1)
    raise ValueError(f"unknown access statistic {kind!r}; statistics: {', '.join(STATS)}")
