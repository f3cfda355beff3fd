"""The forms part of a planned access (views.py): the offsets plan.py's forms give on a lane
vector (the general path's, `plan_offsets`), a comparison `form OP u` on the vector's box
(`form_cmp`, the planned_view kind's `Compare`), and a block-level operand's offset per block
(`block_offset`, its `BlockAddress`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto.backend.interpreter.affine import Part, same_outcome, wrap64
from pypto.backend.interpreter.structured import COMPARE
from pypto.backend.interpreter.views_common import _NO_BUFFER, PerBlock


class BoxForms:
    """Offsets and comparisons from linear forms, for one lane vector (`ctx`), with the
    planned views (`views`) whose boxes they evaluate on."""

    def __init__(self, ctx: Any, views: Any):
        self.ctx = ctx
        self.views = views

    def plan_offsets(self, parts: tuple[Part, ...]) -> Any:
        """The general path's offsets: each part computed from its form in int64 and wrapped
        to its width, exactly the values the program's arithmetic gives."""
        total: Any = np.int64(0)
        for (rest, *coef), width in parts:
            acc: Any = np.int64(wrap64(rest))
            for c, sym in zip(coef, ("l0", "l1", "l2", "b0", "b1", "b2", "w", "n")):
                if c:
                    acc = acc + np.int64(wrap64(c)) * self._symbol(sym)
            if width == 32:
                acc = acc.astype(np.int32) if isinstance(acc, np.ndarray) else np.int32(acc)
            total = total + acc
        if isinstance(total, np.ndarray) and total.dtype != np.int64:
            total = total.astype(np.int64)
        return total

    def block_offset(self, parts: tuple[Part, ...]) -> Any:
        """The offset of a block-level operand whose forms vary with the block ids only
        (plan.py `block_plan`): one value per block of the vector (`PerBlock`; a scalar when
        they are all equal), each part wrapped to its width exactly as the program's
        arithmetic wraps it; for a vector that is not whole blocks, the lanes' offsets."""
        lanes = self.ctx.block_lanes
        if not (self.ctx.first_lane % lanes == 0 and self.ctx.count % lanes == 0):
            return self.plan_offsets(parts)
        # the same offsets in every launch of this shape (the same k step of the next launch):
        # remembered by the Executable (caches.py), read-only
        key = (parts, self.ctx.grid, self.ctx.first_lane, self.ctx.count)
        try:
            known = self.ctx.cache.offsets.get(key)
        except TypeError:  # an unhashable part: work it out
            return self._block_offset(parts)
        if known is None:
            known = self._block_offset(parts)
            if isinstance(known, np.ndarray):
                known.flags.writeable = False
            self.ctx.cache.remember_value(self.ctx.cache.offsets, key, known)
        return known

    def _block_offset(self, parts: tuple[Part, ...]) -> Any:
        """`block_offset` of a vector of whole blocks, worked out."""
        lanes = self.ctx.block_lanes
        b = self.ctx.first_lane // lanes
        blin = np.arange(b, b + self.ctx.count // lanes, dtype=np.int64)
        gx, gy, _ = self.ctx.grid
        coords = (blin % gx, (blin // gx) % gy, blin // (gx * gy))
        total: Any = np.int64(0)
        for (rest, _, _, _, d0, d1, d2, _, _), width in parts:
            acc: Any = np.int64(wrap64(rest))
            for c, coord in zip((d0, d1, d2), coords):
                if c:
                    acc = acc + np.int64(wrap64(c)) * coord
            if width == 32:
                acc = acc.astype(np.int32) if isinstance(acc, np.ndarray) else np.int32(acc)
            total = total + acc
        if not isinstance(total, np.ndarray):
            return np.int64(total)
        total = total.astype(np.int64, copy=False)
        if total.size == 1 or bool((total == total[0]).all()):
            return total[0]
        return total.view(PerBlock)

    def form_cmp(self, op: str, part: Part, u: Any) -> Any:
        """`x OP u` for an integer x given by its linear form (plan.py) and a uniform u: when
        the outcome is the same on every lane (the bounds checks `r < h` of a launch that covers
        the matrix exactly, or of a block wholly inside) the cached all-True / all-False mask
        `mask_and` recognises without looking at the lanes; else the comparison on the box, or
        on x as the program computes it (wrapped) when the box does not fit."""
        pv = self._box_range(part)
        bound = int(u)
        (rest, c0, c1, c2, d0, d1, d2, cw, cn), width = part
        if not (d0 or d1 or d2) and \
                self.ctx._whole_blocks():
            # ids within the block only: one block's mask, repeated; shared (read-only) by
            # every vector of this shape, so its outcome and lane window are found once
            lanes = self.ctx.block_lanes
            if max(abs(c) for c in (rest, c0, c1, c2, cw, cn)) < 2**40 and lanes < 2**20:
                return self.ctx.cache.geometry(("form_cmp", op, part, bound, self.ctx.block, self.ctx.count,
                                 self.ctx.warp_size),
                                lambda: np.tile(self._block_cmp(op, part, bound),
                                                self.ctx.count // lanes))
        if pv is not None:
            lo, hi, base, shape, strides = pv
            outcome = same_outcome(op, lo, hi, bound)
            if outcome is not None:
                return self.ctx.same_mask(outcome)
            dtype = np.int32 if -2**31 <= lo and hi < 2**31 else np.int64
            if len(shape) > 1 and 0 in strides:
                # compared on the axes the form varies along, then spread over the others
                # (`x = 16 * b0 + l0` over (block rows, block columns, 8, 16) boxes)
                small = [n if st else 1 for n, st in zip(shape, strides)]
                test = COMPARE[op](self.views._indices(base, small, strides, dtype).reshape(small),
                                   bound)
                return np.ascontiguousarray(np.broadcast_to(test, shape)).reshape(-1)
            values = self.views._indices(base, shape, strides, dtype)
        else:
            values = self.plan_offsets((part,))
        return COMPARE[op](values, bound)

    def _block_cmp(self, op: str, part: Part, bound: int) -> np.ndarray:
        """`x OP bound` on the lanes of one block, x computed exactly and wrapped to its width
        as the program's arithmetic does (plan.py: a form without block ids)."""
        (rest, c0, c1, c2, _, _, _, cw, cn), width = part
        lin = np.arange(self.ctx.block_lanes, dtype=np.int64)
        bx, by, _ = self.ctx.block
        ws = self.ctx.warp_size
        x = (rest + c0 * (lin % bx) + c1 * ((lin // bx) % by) + c2 * (lin // (bx * by)) +
             cw * (lin // ws) + cn * (lin % ws))
        if width == 32:
            x = x.astype(np.int32)
        return COMPARE[op](x, bound)

    def _box_range(self, part: Part) -> tuple[int, int, int, list[int], list[int]] | None:
        """(lowest, highest value, base, shape, strides) of one form over the vector's box,
        None when the box does not fit or the value may wrap."""
        pv = self.views._plan_view(_NO_BUFFER, (part,))
        if pv is None:
            return None
        base, shape, strides, lo, hi = pv
        return lo, hi, base, shape, strides

    def _symbol(self, sym: str) -> Any:
        if sym[0] == "l":
            return self.ctx.local_id(int(sym[1]))
        if sym[0] == "b":
            return self.ctx.block_id(int(sym[1]))
        return self.ctx.warp_id() if sym == "w" else self.ctx.lane_id()
