"""The atomics besides `atomic_add` (`pto.atomic_max/min/and/or/xor/exch/cas`), serialised in
lane order, as one sort instead of one update per lane (docs/language.md#atomics).

Every lane that hits an address sees in `old` the value after the updates of the lower lanes on
that address (docs/language.md#atomics). A stable sort groups the hits by
address, lane order inside a group; then, per kind:

- `max`, `min`, `and`, `or`, `xor` are associative and commutative, also on floats (IEEE
  `maximum` / `minimum`: NaN wins whatever the order, and +0 > -0 is a total order on the
  zeros), so each hit's `old` is the exclusive prefix of its group, the address's value first,
  computed by a doubling scan (log2 of the longest group steps, each one vector operation) and
  the final value is the group's whole reduction: the same bits as the sequential updates;
- `exch`: a hit's `old` is the previous hit's value (the address's value for the first), the
  final value the last hit's;
- `cas`: sequential by nature (whether a lane swaps depends on every lower lane), so the
  groups advance together one rank at a time: as many vector steps as the longest group.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pypto import exact

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]

_COMBINE: dict[str, tuple[Combine, Combine]] = {
    # (floats, ints): floats take IEEE maximum / minimum, as `max()` / `min()` in kernels
    "max": (exact.maximum, np.maximum),
    "min": (exact.minimum, np.minimum),
    "and": (np.bitwise_and, np.bitwise_and),
    "or": (np.bitwise_or, np.bitwise_or),
    "xor": (np.bitwise_xor, np.bitwise_xor),
}

KINDS = (*_COMBINE, "exch", "cas")


def serialised(kind: str, data: np.ndarray, idx: np.ndarray, vals: np.ndarray,
               compare: np.ndarray | None, lanes: np.ndarray, old: np.ndarray) -> np.ndarray:
    """Apply the hits `k` (address `idx[k]`, operand `vals[k]`, for cas `compare[k]`) in lane
    order to `data`, recording in `old[lanes[k]]` the value each found. O(m log m)."""
    order = np.argsort(idx, kind="stable")
    s_idx = idx[order]
    s_val = vals[order]
    s_lane = lanes[order]
    new_group = np.empty(s_idx.size, dtype=bool)
    new_group[0] = True
    np.not_equal(s_idx[1:], s_idx[:-1], out=new_group[1:])
    starts = np.flatnonzero(new_group)
    ends = np.append(starts[1:], s_idx.size)
    addr = s_idx[starts]
    group = np.cumsum(new_group) - 1
    initial = data[addr]
    if kind == "exch":
        found = np.empty_like(s_val)
        found[1:] = s_val[:-1]
        found[starts] = initial
        old[s_lane] = found
        data[addr] = s_val[ends - 1]
        return old
    if kind == "cas":
        assert compare is not None
        return _cas(data, addr, initial, starts, ends, s_val, compare[order], s_lane, old)
    floats, ints = _COMBINE[kind]
    combine = ints if data.dtype.kind in "iu" else floats  # bfloat16 is kind "V"
    # inclusive scan of [initial, v0, v1, ...] per group, by doubling: position p of the
    # scan holds the combination of its group's elements up to p
    first = np.zeros(s_idx.size + starts.size, dtype=bool)
    seq = np.empty(s_idx.size + starts.size, dtype=data.dtype)
    head = starts + np.arange(starts.size)            # where each group's initial value goes
    first[head] = True
    seq[head] = initial
    body = np.ones(seq.size, dtype=bool)
    body[head] = False
    seq[body] = s_val
    seg = np.cumsum(first) - 1                        # group of each position
    pos = np.arange(seq.size) - head[seg]              # position inside its group
    shift = 1
    longest = int(np.max(ends - starts)) + 1
    while shift < longest:
        take = pos >= shift
        src = np.flatnonzero(take)
        seq[src] = combine(seq[src - shift], seq[src])
        shift <<= 1
    # the scan before hit k (exclusive prefix) is the scan at its own position minus one
    old[s_lane] = seq[np.flatnonzero(body) - 1]
    data[addr] = seq[head + (ends - starts)]
    return old


def _cas(data: np.ndarray, addr: np.ndarray, initial: np.ndarray, starts: np.ndarray,
         ends: np.ndarray, s_val: np.ndarray, s_cmp: np.ndarray, s_lane: np.ndarray,
         old: np.ndarray) -> np.ndarray:
    """Compare-and-swap, rank by rank: at step r every group with more than r hits applies its
    r-th hit to the group's current value (integers: compared exactly)."""
    current = initial.copy()
    lengths = ends - starts
    for rank in range(int(lengths.max())):
        live = np.flatnonzero(lengths > rank)
        hit = starts[live] + rank
        seen = current[live]
        old[s_lane[hit]] = seen
        current[live] = np.where(seen == s_cmp[hit], s_val[hit], seen)
    data[addr] = current
    return old
