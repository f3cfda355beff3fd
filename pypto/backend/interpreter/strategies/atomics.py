"""Atomic additions (`pto.atomic_add`) as one sort instead of one addition per lane, bit for bit
the additions in lane order (`serialised_add`). With the plan's Decision two shortcuts may run,
each only when the data allows it: atomics that hit distinct addresses are one gather and one
scatter (no order to respect), and integer atomics' `old` values come from one running sum
(wrap-around addition is associative). Which addresses collide is data: checked per call.
An atomic whose `old` value nothing reads, on integers, is decided `totals_only`: its emission
(`call_arguments`) asks the run time for the totals alone (`lane_memory.LaneMemory.atomic_add`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation

from pypto import dtypes
from pypto.backend.interpreter.strategies import base
from pypto.dialects.traits import declared_accesses, has_tile_footprint, is_instruction


@dataclass(frozen=True)
class Decision(base.Decision):
    """Atomic additions may take the distinct-address and integer-prefix shortcuts;
    `totals_only`: this atomic's `old` value is never read (nor observed by an instrument) and
    its element is an integer, so only the totals matter: the additions in any order."""
    totals_only: bool = False


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """A lane instruction that reads and writes memory through one operand (a
    read-modify-write: an atomic; not a tile instruction such as mma's accumulator)."""
    if not is_instruction(op) or has_tile_footprint(op):
        return None
    accesses = declared_accesses(op)
    reads = {a.operand for a in accesses if a.kind == "read"}
    rmw = [a.operand for a in accesses if a.kind == "write" and a.operand in reads]
    if not rmw:
        return None
    element = getattr(op.operands[rmw[0]].type, "element_type", None)
    totals = bool(op.results) and op.results[0].first_use is None and \
        not facts.instrumented and element is not None and \
        dtypes.np_dtype_of(element).kind in "iu"
    return Decision(totals_only=totals)


def call_arguments(decision: Decision | None) -> str:
    """The emission: the extra arguments of the generated `_ctx.lanes.atomic_add(...)` call
    (`need_old=False` for totals only; `LaneMemory.atomic_add` then adds in any order)."""
    return ", False" if decision is not None and decision.totals_only else ""


def serialised_add(data: np.ndarray, idx: np.ndarray, vals: np.ndarray, lanes: np.ndarray,
                   old: np.ndarray, decision: Decision | None = None) -> np.ndarray:
    """`data[idx[k]] += vals[k]` for k in lane order, one addition at a time, recording in
    `old[lanes[k]]` the value each addition found; O(m log m) in the m = idx.size hits (a radix
    sort: O(m) for addresses spanning fewer than 2^32 elements).

    A stable sort groups the hits by address, lane order inside a group. Uncontended hits are
    one gather and one scatter. For integers a running sum over all the sorted hits, minus its
    value at each group's start, is each hit's offset from its address's value: exact, because
    wrap-around addition is associative (arithmetic modulo 2^bits). Floating-point addition is
    not, so contended groups are laid out as rows of a matrix, the address's current value in
    column 0 and its additions after it in lane order, and `np.add.accumulate(axis=1)` computes
    the rows' running sums: accumulate applies the element type's addition one step at a time
    (no reassociation, no wider accumulator: float16 rounds at every step), so each prefix is
    bit for bit what the sequential additions give. Rows are bucketed by length rounded up to a
    power of two, so padding at most doubles the work and there are at most log2(m) + 1 buckets.
    """
    order = stable_order(idx)
    s_idx = idx[order]
    new_group = np.empty(s_idx.size, dtype=bool)
    new_group[0] = True
    np.not_equal(s_idx[1:], s_idx[:-1], out=new_group[1:])
    starts = np.flatnonzero(new_group)
    # with the plan's Decision, two shortcuts, each checked here against the data (every
    # address hit once; an integer element); without it (the general path) neither
    if decision is not None and starts.size == s_idx.size:  # no order to respect
        old[lanes] = data[idx]
        data[idx] = data[idx] + vals
        return old
    s_val = vals[order]
    s_lane = lanes[order]
    addr = s_idx[starts]
    dtype = data.dtype
    if decision is not None and dtype.kind in "iu":
        running = np.cumsum(s_val, dtype=dtype)           # wraps like the additions do
        before = running - s_val                          # sum of the earlier sorted hits
        group = np.cumsum(new_group) - 1
        at_start = before[starts]
        old[s_lane] = data[s_idx] + (before - at_start[group])
        ends = np.append(starts[1:], s_idx.size) - 1
        data[addr] = data[addr] + (running[ends] - at_start)
        return old
    lengths = np.diff(np.append(starts, s_idx.size))
    group = np.cumsum(new_group) - 1                     # group of each sorted hit
    rank = np.arange(s_idx.size) - starts[group]         # position in its group (lane order)
    width_class = np.zeros(lengths.size, dtype=np.int64)  # ceil(log2(length))
    np.ceil(np.log2(lengths), out=width_class, casting="unsafe")
    hit_class = width_class[group]
    row_of = np.empty(lengths.size, dtype=np.int64)
    for w in np.unique(width_class):
        groups = np.flatnonzero(width_class == w)
        row_of[groups] = np.arange(groups.size)
        width = (1 << int(w)) + 1
        rows = np.zeros(groups.size * width, dtype=dtype)  # row-major (groups, width)
        rows[::width] = data[addr[groups]]
        hits = np.flatnonzero(hit_class == w)
        at = row_of[group[hits]] * width + rank[hits]
        rows[at + 1] = s_val[hits]
        sums = np.add.accumulate(rows.reshape(groups.size, width), axis=1, dtype=dtype).ravel()
        old[s_lane[hits]] = sums[at]
        data[addr[groups]] = sums[np.arange(groups.size) * width + lengths[groups]]
    return old


def stable_order(idx: np.ndarray) -> np.ndarray:
    """`np.argsort(idx, kind="stable")`, through 16-bit keys (NumPy radix-sorts those) when
    the addresses span fewer than 2^32 elements: one or two O(m) passes instead of a merge."""
    lo = int(idx.min())
    span = int(idx.max()) - lo
    if span >= 1 << 32:
        return np.argsort(idx, kind="stable")
    key = idx - lo
    if span < 1 << 16:
        return np.argsort(key.astype(np.uint16), kind="stable")
    low = np.argsort((key & 0xFFFF).astype(np.uint16), kind="stable")
    return low[np.argsort((key[low] >> 16).astype(np.uint16), kind="stable")]
