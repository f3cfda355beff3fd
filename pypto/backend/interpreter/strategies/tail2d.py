"""The 2-D tails: planned stores of a vector whose partial edge blocks make the box collide or
leave the buffer (see docs/interpreter.md, "The access planner", 2-D tails).

A 2-D launch over a `h x w` matrix with 16x8 blocks and the guard `if r < h and c < w`
covers `ceil(w / 16) * 16` columns: when w is not a multiple of 16, the box of the vector
(block rows x block columns x local rows x local columns, views.py) is wider than a matrix
row, so lanes of the last block column land on the next row's first elements (the box is not
injective) and the last block row may run past the buffer. The guard keeps those lanes off;
the mask it gives (the affine tests on the ids, evaluated on the box) tells which blocks are
whole. `store_edges` splits the box along its block axes:

- the *whole part*: the blocks every lane of which the mask keeps, a leading rectangle of the
  block axes (block rows 0..K1-1 x block columns 0..K0-1), stored as one strided view with no
  mask at all;
- the *edges*: the rest of the box as one sub-box per block axis (block rows K1.. ; block
  columns K0.. of the rows below K1, ...), whose active lanes are scattered by index. A
  vector without a whole block (a chunk of the last block row), or whose whole blocks are not
  a leading rectangle, is all edge: its active lanes scattered by index.

It is exact: it runs only when the whole part is injective and inside the buffer, every
active edge lane is inside the buffer, and no two active lanes (edges among themselves, or an
edge and the whole part) hit one element, so the order of the writes cannot matter. Anything
else (no whole block, lanes that really collide, an edge lane outside the buffer: an error
the general path reports) returns False and the general path runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from xdsl.ir import Operation

from pypto.backend.interpreter.affine import box_injective, box_size
from pypto.backend.interpreter.strategies import base
from pypto.dialects.traits import lane_reads_memory, writes_memory


@dataclass(frozen=True)
class Decision(base.Decision):
    """A planned store whose box collides may write its whole blocks as one view and scatter
    its edge lanes."""


def match(op: Operation, facts: base.Facts) -> Decision | None:
    """A planned lane store (writes memory, reads none): its box may be a 2-D tail's."""
    if op in facts.planned and writes_memory(op) and not lane_reads_memory(op):
        return Decision()
    return None


def edge_split(ctx: Any, shape: list[int], mask: np.ndarray) -> tuple[int, ...] | None:
    """The leading rectangle of whole blocks: K_j per block axis of the box (the blocks
    0..K_j-1 along axis j keep every lane), or None when there is none or it is the whole
    box. Computed once per mask object (the branch's loads and stores share it)."""
    facts = ctx.mask_facts(mask)
    key = ("edge_split", tuple(shape))
    if key in facts:
        return facts[key]  # type: ignore[no-any-return]
    box = ctx.plan_box()
    out = None
    nb = sum(1 for kind, *_ in box[0] if kind == "b") if box is not None else 0
    if nb and mask.size == box_size(shape):
        b_shape = shape[:nb]
        whole = mask.reshape(box_size(b_shape), -1).all(axis=1).reshape(b_shape)
        ks = []
        for j in range(nb):
            line = whole[(0,) * j + (slice(None),) + (0,) * (nb - j - 1)]
            off = np.flatnonzero(~line)
            ks.append(int(off[0]) if off.size else b_shape[j])
        rect = tuple(slice(0, k) for k in ks)
        if ks != list(b_shape):
            # no whole block (a chunk of the last block row) or whole blocks that are not a
            # leading rectangle: every lane is an edge lane
            out = tuple(ks) if all(ks) and bool(whole[rect].all()) else (0,) * nb
    facts[key] = out
    return out


def store_edges(decision: Decision, ctx: Any, buf: Any,
                pv: tuple[int, list[int], list[int], int, int], value: Any, mask: Any,
                site: int) -> bool:
    """A masked planned store whose box collides or leaves the buffer, split into its whole
    blocks (one unmasked view) and its partial edge blocks (scattered); False when it cannot
    be done exactly (see the module docstring), and then nothing has been written."""
    base, shape, strides, _, _ = pv
    if not isinstance(mask, np.ndarray) or not shape or buf.stride or \
            any(s < 0 for s in strides):
        return False
    ks = edge_split(ctx, shape, mask)
    if ks is None:
        return False
    nb = len(ks)
    rect_shape = list(ks) + shape[nb:]
    empty = not all(ks)
    if empty:
        ks = (0,) + tuple(shape[1:nb])  # one edge piece: the whole box
    else:
        if not box_injective(rect_shape, strides):
            return False
        hi = base + sum(s * (n - 1) for s, n in zip(strides, rect_shape))
        if base < 0 or hi >= buf.count:
            return False
    full = mask.reshape(shape)
    vals = value.reshape(shape) if isinstance(value, np.ndarray) else None
    edge_idx, edge_vals = [], []
    distinct = True  # the pieces' own lanes never collide (one piece, an injective view)
    for j in range(nb):
        if ks[j] == shape[j]:
            continue
        sel = tuple(slice(0, k) for k in ks[:j]) + (slice(ks[j], None),)
        pshape = rect_shape[:j] + [shape[j] - ks[j]] + shape[j + 1:]
        m = full[sel]
        if not m.any():
            continue
        idx = ctx.planned._indices(base + ks[j] * strides[j], pshape, strides).reshape(pshape)[m]
        distinct = distinct and not edge_idx and box_injective(pshape, strides)
        edge_idx.append(idx)
        if vals is not None:
            edge_vals.append(vals[sel][m])
    active = np.concatenate(edge_idx) if edge_idx else np.zeros(0, np.int64)
    if active.size:
        if int(active.min()) < 0 or int(active.max()) >= buf.count:
            return False  # an active lane outside the buffer: the general path reports it
        if not distinct and np.unique(active).size != active.size or not empty and \
                _in_view(active, base, rect_shape, strides).any():
            return False  # two active lanes on one element: the general path's order
    if buf.watched() or ctx.inflight:
        ctx.planned._check(buf, base, shape, strides, mask, site, True)
    data = buf.data
    rect = tuple(slice(0, k) for k in ks)
    if not empty:
        np.copyto(_view(data, base, rect_shape, strides),
                  vals[rect] if vals is not None else value, casting="unsafe")
    if active.size:
        data[active] = np.concatenate(edge_vals) if vals is not None else value
    return True


def _in_view(idx: np.ndarray, base: int, shape: list[int], strides: list[int]) -> np.ndarray:
    """Which of the element indices `idx` an injective view with non-negative strides touches:
    the digits of `idx - base` in the view's mixed radix (largest stride first; each stride
    exceeds the span of the smaller ones, so the digits are unique), all in range."""
    rem = idx.astype(np.int64) - base
    ok = rem >= 0
    for s, n in sorted(((s, n) for s, n in zip(strides, shape) if n > 1), reverse=True):
        d = rem // s
        ok &= d < n
        rem = rem - np.minimum(d, n - 1) * s
    return ok & (rem == 0)


def _view(data: np.ndarray, base: int, shape: list[int], strides: list[int]) -> np.ndarray:
    """A writeable strided view of `data` (strides in elements); store_edges has checked that
    it lies inside the buffer."""
    isz = data.itemsize
    return as_strided(data[base:], shape=shape, strides=[s * isz for s in strides],
                      writeable=True)
