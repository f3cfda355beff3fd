"""Planned accesses at run time: the addresses of a whole lane vector as one strided view.

Codegen's access planner (plan.py) hands each planned load or store the exact linear forms of
its pointer's offset parts: `rest + sum(coef[s] * s)` over the lane symbols (local ids, block
ids, warp, lane in warp), coefficients evaluated as Python ints. A mixin of
`lanes.LaneContext` turns them into a view of the buffer:

1. the vector's lanes are laid out as a *box*: its blocks as a sub-box of the grid (one axis
   per block coordinate that varies across the vector) times its lanes as a sub-box of the
   block (one axis per local coordinate), row-major, which is exactly vector order;
2. every axis gets the stride of its coordinate (the warp and lane symbols count when
   `coef[w] == warp_size * coef[n]`: `warp * 32 + lane` is the linear local id), the corner
   of the box gives the base; the extreme corners bound every part, which must stay in its
   integer type's range (then wrap-around cannot have happened, see plan.py) and inside the
   buffer;
3. loads read `as_strided(data, shape, strides)` (contiguous slices, strided rows, stride-0
   broadcasts, N-D tiles alike), stores assign into it when no two lanes hit one element
   (a mixed-radix test of the strides), with the mask as `where=`.

A vector whose box does not fit (a masked partial tail of the buffer, a part that may wrap, a
store whose lanes collide, a vector of several partial blocks) splits off the leading rows
that fit and gathers the rest, or takes the general path with offsets computed from the same
forms, wrapped exactly like the program's; errors are therefore reported by the general path,
word for word. Race, in-flight and uninitialised-L1 checks receive the active lanes' element
indices, as from the general path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from pypto.backend.interpreter.buffers import Buffer
from pypto.backend.interpreter.caches import LIMITS, RunCache
from pypto.backend.interpreter.affine import (Box, Part, box_injective, box_size, box_view,
                                              same_outcome, vector_box, wrap64)
from pypto.backend.interpreter.strategies import broadcast, tail2d
from pypto.backend.interpreter.structured import COMPARE
from pypto.backend.interpreter.races import pattern_summary

Mask = Any


class PlannedAccess:
    """Loads and stores of planned accesses (plan.py); mixed into `LaneContext`."""

    # provided by LaneContext and its other mixins
    races: Any  # races.Races: the lane context's race checker (a part)
    count: int
    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    block_lanes: int
    first_lane: int
    local_base: int
    warp_size: int
    inflight: dict[int, Any]
    cache: RunCache
    _ids: dict[str, Any]
    decisions: dict[type, Any]  # the variant's strategy decisions by kind (strategies/)

    def plan_box(self) -> Box | None:
        """The vector's lanes as a box (see the module docstring), computed once per vector;
        None when they are not one (the general path runs)."""
        box = self._ids.get("box", False)
        if box is False:
            box = self._ids["box"] = self._make_box()
        return box

    def _make_box(self) -> Box | None:
        return vector_box(self.first_lane, self.count, self.grid, self.block)

    def _plan_view(self, buf: Buffer, parts: tuple[Part, ...]) -> \
            tuple[int, list[int], list[int], int, int] | None:
        """(base, shape, strides, lo, hi) of the access in elements: the view's first element,
        its shape and strides (the block copies of batch-mode L1 included), and the lowest and
        highest element any lane touches within its block's copy; None when the forms do not
        map onto the box or a part may wrap."""
        box = self.plan_box()
        if box is None:
            return None
        key = (parts, buf.stride, box[1], box[2], tuple(box[0]), self.block, self.warp_size)
        views = self.cache.views
        known = views.get(key, False)
        if known is False:
            known = self.cache.remember_value(
                views, key, box_view(box, buf.stride, parts, self.block, self.warp_size),
                LIMITS["views"])
        if known is None:
            return None
        base, shape, strides, lo, hi = known
        return base, list(shape), list(strides), lo, hi

    def _indices(self, base: int, shape: list[int], strides: list[int],
                 dtype: Any = np.int64) -> np.ndarray:
        """Element index of every lane of the box, in vector order: the axes' ramps added by
        broadcasting, slowest first, so only the last addition runs over every lane."""
        if not shape:
            return np.array([base], dtype=dtype)
        acc = np.array(base, dtype=dtype)
        for j, (n, s) in enumerate(zip(shape, strides)):
            step = np.arange(n, dtype=dtype) * dtype(s) if s else np.zeros(n, dtype=dtype)
            acc = acc[..., None] + step if j else acc + step
        return acc.reshape(-1)

    def _check(self, buf: Buffer, base: int, shape: list[int], strides: list[int],
               mask: Mask, site: int, write: bool, idx: np.ndarray | None = None) -> None:
        """The race, in-flight and uninitialised-L1 checks of a planned access: per pattern in
        bulk (RaceChecker.race_pattern) when every block of the vector touches the same
        elements of its copy with every lane, else on the active lanes' element indices."""
        if idx is None and buf.stride and buf.shadow is not None and buf.init is None and \
                not self.inflight:
            row = None if mask is None else self._mask_row(mask, shape)
            if row is not False:
                known, key = self._known_pattern(buf, base, shape, strides)
                if known is not False and row is not None:
                    facts = self.mask_facts(mask)  # type: ignore[attr-defined]
                    cached = facts.get(("pattern", key))  # the branch's accesses share its mask
                    if cached is None:
                        local, lanes = known[0][row], known[1][row]
                        summary = _summary(self.cache, local, lanes, self.warp_size)
                        cached = facts[("pattern", key)] = ((local, lanes, *summary),
                                                            (key, row.tobytes()))
                    known, key = cached
                if known is not False and \
                        self.races.race_pattern(buf, known, site, write, key):  # type: ignore[attr-defined]
                    return
            elif self._masked_pattern(buf, base, shape, strides, mask, site, write):
                return
        if idx is None:
            idx = self._indices(base, shape, strides)
        active = idx if mask is None else idx[mask]
        if write:
            self.check_write(buf, active, mask, site)  # type: ignore[attr-defined]
        else:
            self.check_read(buf, active, mask, site)  # type: ignore[attr-defined]

    def _masked_pattern(self, buf: Buffer, base: int, shape: list[int], strides: list[int],
                        mask: Mask, site: int, write: bool) -> bool:
        """The race checks of a planned access whose mask differs between blocks, in bulk
        (RaceChecker.race_pattern_masked) when every block touches the same elements of its
        copy, one lane each; False when the general check must run."""
        known, key = self._known_pattern(buf, base, shape, strides)
        if known is False:
            return False
        local, _, elems, _, _ = known
        order = _order(local, elems)
        if order is False:
            return False  # two lanes on one element
        nb = self.count // local.size
        return self.races.race_pattern_masked(  # type: ignore[attr-defined]
            buf, known, order, mask.reshape(nb, local.size), site, write, key)

    def _mask_row(self, mask: Mask, shape: list[int]) -> Any:
        """The lanes of one block a mask keeps, when it keeps the same ones in every block of
        the box (conditions on local ids, warp and lane), else False; once per mask object."""
        facts = self.mask_facts(mask)  # type: ignore[attr-defined]
        row = facts.get("plan_row")
        if row is None:
            nb = 1
            box = self.plan_box()
            assert box is not None
            for kind, _, n, _ in box[0]:
                if kind == "b":
                    nb *= n
            rows = mask.reshape(nb, -1)
            row = rows[0] if nb == 1 or bool((rows == rows[0]).all()) else False
            facts["plan_row"] = row
        return row

    def _pattern(self, buf: Buffer, base: int, shape: list[int],
                 strides: list[int]) -> tuple[np.ndarray, ...] | bool:
        """(element of its block's copy, block-local lane id) per lane of one block and their
        summary (races.pattern_summary), when every block of the box touches the same elements
        (no block-id term in the address); else False."""
        box = self.plan_box()
        assert box is not None
        axes, _, l0 = box
        bx, by, _ = self.block
        lin_step = (1, bx, bx * by)
        per_axis = [(kind, n, step, self.warp_size if kind == "w" else 1 if kind == "n" else
                     lin_step[i]) for kind, i, n, step in axes]
        if len(shape) == len(axes) + 1:  # lanes split as (warps, lanes in warp): _make_view
            kind, n, step, _ = per_axis[-1]
            ws = self.warp_size
            per_axis = per_axis[:-1] + [(kind, n // ws, step, ws), (kind, ws, step, 1)]
        l_shape, l_strides, l_steps = [], [], []
        for (kind, n, step, lin), s in zip(per_axis, strides):
            if kind == "b":
                if s != buf.stride * step:
                    return False
            else:
                l_shape.append(n)
                l_strides.append(s)
                l_steps.append(lin)
        first = l0[0] + bx * l0[1] + bx * by * l0[2]
        local = self._indices(base, l_shape, l_strides)
        lanes = self._indices(first, l_shape, l_steps)
        ws = self.warp_size
        summary = _summary(self.cache, local, lanes, ws)
        return (local, lanes, *summary)

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
        lanes = self.block_lanes
        if not (self.first_lane % lanes == 0 and self.count % lanes == 0):
            return self.plan_offsets(parts)
        # the same offsets in every launch of this shape (the same k step of the next launch):
        # remembered by the Executable (caches.py), read-only
        key = (parts, self.grid, self.first_lane, self.count)
        try:
            known = self.cache.offsets.get(key)
        except TypeError:  # an unhashable part: work it out
            return self._block_offset(parts)
        if known is None:
            known = self._block_offset(parts)
            if isinstance(known, np.ndarray):
                known.flags.writeable = False
            self.cache.remember_value(self.cache.offsets, key, known)
        return known

    def _block_offset(self, parts: tuple[Part, ...]) -> Any:
        """`block_offset` of a vector of whole blocks, worked out."""
        lanes = self.block_lanes
        b = self.first_lane // lanes
        blin = np.arange(b, b + self.count // lanes, dtype=np.int64)
        gx, gy, _ = self.grid
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
                self._whole_blocks():  # type: ignore[attr-defined]
            # ids within the block only: one block's mask, repeated; shared (read-only) by
            # every vector of this shape, so its outcome and lane window are found once
            lanes = self.block_lanes
            if max(abs(c) for c in (rest, c0, c1, c2, cw, cn)) < 2**40 and lanes < 2**20:
                return self.cache.geometry(("form_cmp", op, part, bound, self.block, self.count,
                                 self.warp_size),
                                lambda: np.tile(self._block_cmp(op, part, bound),
                                                self.count // lanes))
        if pv is not None:
            lo, hi, base, shape, strides = pv
            outcome = same_outcome(op, lo, hi, bound)
            if outcome is not None:
                return self.same_mask(outcome)  # type: ignore[attr-defined]
            dtype = np.int32 if -2**31 <= lo and hi < 2**31 else np.int64
            if len(shape) > 1 and 0 in strides:
                # compared on the axes the form varies along, then spread over the others
                # (`x = 16 * b0 + l0` over (block rows, block columns, 8, 16) boxes)
                small = [n if st else 1 for n, st in zip(shape, strides)]
                test = COMPARE[op](self._indices(base, small, strides, dtype).reshape(small),
                                   bound)
                return np.ascontiguousarray(np.broadcast_to(test, shape)).reshape(-1)
            values = self._indices(base, shape, strides, dtype)
        else:
            values = self.plan_offsets((part,))
        return COMPARE[op](values, bound)

    def _block_cmp(self, op: str, part: Part, bound: int) -> np.ndarray:
        """`x OP bound` on the lanes of one block, x computed exactly and wrapped to its width
        as the program's arithmetic does (plan.py: a form without block ids)."""
        (rest, c0, c1, c2, _, _, _, cw, cn), width = part
        lin = np.arange(self.block_lanes, dtype=np.int64)
        bx, by, _ = self.block
        ws = self.warp_size
        x = (rest + c0 * (lin % bx) + c1 * ((lin // bx) % by) + c2 * (lin // (bx * by)) +
             cw * (lin // ws) + cn * (lin % ws))
        if width == 32:
            x = x.astype(np.int32)
        return COMPARE[op](x, bound)

    def _box_range(self, part: Part) -> tuple[int, int, int, list[int], list[int]] | None:
        """(lowest, highest value, base, shape, strides) of one form over the vector's box,
        None when the box does not fit or the value may wrap."""
        pv = self._plan_view(_NO_BUFFER, (part,))
        if pv is None:
            return None
        base, shape, strides, lo, hi = pv
        return lo, hi, base, shape, strides

    def _symbol(self, sym: str) -> Any:
        if sym[0] == "l":
            return self.local_id(int(sym[1]))  # type: ignore[attr-defined]
        if sym[0] == "b":
            return self.block_id(int(sym[1]))  # type: ignore[attr-defined]
        return self.warp_id() if sym == "w" else self.lane_id()  # type: ignore[attr-defined]

    def _trim(self, pv: tuple[int, list[int], list[int], int, int], mask: Mask,
              buf: Buffer) -> tuple[int, list[int], list[int], list[int], tuple[Any, ...]] | \
            None:
        """A masked access whose box leaves the buffer, when the vector is whole 1-D blocks
        (its last axis the lanes of a block) and the mask keeps a window of each block's
        lanes: a range of columns (`if index < n` with `index = 2 * s * tid`), or, with the
        lanes seen as (warps, lanes in warp), a range of warps times a range of lanes in the
        warp (`if lane < s`, `if lane == 0`). Returns (base, shape, strides) of the box cut to
        the window, the shape of the full box it sits in and the window's index there, when
        the cut box lies inside the buffer; else None."""
        base, shape, strides, _, _ = pv
        box = self.plan_box()
        if mask is None or not isinstance(mask, np.ndarray) or box is None or not shape or \
                box[0][-1][:2] != ("l", 0) or box[0][-1][2] != self.block_lanes or \
                self.block[1] * self.block[2] != 1 or self.local_base:
            return None
        ws = self.warp_size
        lanes = self.block_lanes
        split = len(shape) == len(box[0]) + 1  # lanes as (warps, lanes in warp): _plan_view
        if not split:
            first, last, _ = self.lane_window(mask)  # type: ignore[attr-defined]
            if last <= first:
                return None
            cut = self._cut(box, base, shape[:-1] + [last - first], strides,
                            first * strides[-1], buf)
            if cut is not None:
                return (*cut, shape, (..., slice(first, last)))
        if lanes % ws or lanes == ws:
            return None
        w_lo, w_hi, n_lo, n_hi = self._warp_window(mask)
        if w_hi <= w_lo:
            return None
        lead, lead_strides = (shape[:-2], strides[:-2]) if split else (shape[:-1], strides[:-1])
        sw, sn = strides[-2:] if split else (ws * strides[-1], strides[-1])
        full = lead + [lanes // ws, ws]
        wstrides = lead_strides + [sw, sn]
        cut = self._cut(box, base, lead + [w_hi - w_lo, n_hi - n_lo], wstrides,
                        w_lo * sw + n_lo * sn, buf)
        if cut is None:
            return None
        return (*cut, full, (..., slice(w_lo, w_hi), slice(n_lo, n_hi)))

    def _warp_window(self, mask: np.ndarray) -> tuple[int, int, int, int]:
        """The warps w_lo..w_hi-1 and lanes in the warp n_lo..n_hi-1 holding every active
        lane of every block (computed once per mask object)."""
        facts = self.mask_facts(mask)  # type: ignore[attr-defined]
        win = facts.get("warp_window")
        if win is None:
            ws = self.warp_size
            m = mask.reshape(-1, self.block_lanes // ws, ws)
            ws_any = np.flatnonzero(m.any(axis=(0, 2)))
            ns_any = np.flatnonzero(m.any(axis=(0, 1)))
            if ws_any.size == 0:
                win = (0, 0, 0, 0)
            else:
                win = (int(ws_any[0]), int(ws_any[-1]) + 1, int(ns_any[0]), int(ns_any[-1]) + 1)
            facts["warp_window"] = win
        return win  # type: ignore[no-any-return]

    def _cut(self, box: Box, base: int, tshape: list[int], tstrides: list[int], shift: int,
             buf: Buffer) -> tuple[int, list[int], list[int]] | None:
        """(base, shape, strides) of a cut box starting `shift` elements after `base`, if
        every element it touches (within its block's copy) lies in the buffer."""
        tbase = base + shift
        lo = hi = tbase
        axes = box[0]
        for j, (s, n) in enumerate(zip(tstrides, tshape)):
            if j < len(axes) and axes[j][0] == "b" and buf.stride:
                s -= buf.stride * axes[j][3]
            ext = s * (n - 1)
            if ext < 0:
                lo += ext
            else:
                hi += ext
        if lo < 0 or hi >= buf.count:
            return None
        return tbase, tshape, tstrides

    def _split(self, shape: list[int], strides: list[int], base: int, size: int) -> \
            tuple[int, int]:
        """Rows a..b-1 of the box's leading axis whose elements all lie in [0, size)."""
        n0, s0 = shape[0], strides[0]
        lo = hi = 0
        for s, n in zip(strides[1:], shape[1:]):
            ext = s * (n - 1)
            if ext < 0:
                lo += ext
            else:
                hi += ext
        a, b = 0, n0
        # row r spans [base + r*s0 + lo, base + r*s0 + hi]
        while a < b and not (0 <= base + a * s0 + lo and base + a * s0 + hi < size):
            a += 1
            if a > 2 and s0 == 0:
                return 0, 0
            if a > 64:  # not a short head: give up on the split
                return 0, 0
        while b > a and not (0 <= base + (b - 1) * s0 + lo and base + (b - 1) * s0 + hi < size):
            b -= 1
            if n0 - b > 64:
                return 0, 0
        return a, b

    def load_plan(self, buf: Buffer, parts: tuple[Part, ...], mask: Mask, site: int,
                  view: bool = False) -> Any:
        """A planned load (see the module docstring)."""
        pv = None if mask is False else self._plan_view(buf, parts)
        if pv is None:
            return self.load(buf, self.plan_offsets(parts), mask, site)  # type: ignore
        base, shape, strides, lo, hi = pv
        data = buf.data
        isz = data.itemsize
        if 0 <= lo and hi < buf.count:
            if buf.watched() or self.inflight:
                self._check(buf, base, shape, strides, mask, site, False)
            v = _view(data, base, shape, strides, False)
            if 0 in strides:
                decision = self.decisions.get(broadcast.Decision)
                if decision is not None:
                    one = broadcast.one_value(decision, v, strides,
                                              max(1, self.count // self.block_lanes))
                    if one is not None:
                        return one
            out = v.reshape(-1)
            if not view and np.may_share_memory(out, data):
                out = out.copy()
            return out
        trimmed = self._trim(pv, mask, buf)
        if trimmed is not None:
            tbase, tshape, tstrides, full, sel = trimmed
            if buf.watched() or self.inflight:
                self._check(buf, base, shape, strides, mask, site, False)
            v = _view(data, tbase, tshape, tstrides, False)
            out = np.zeros(full, dtype=data.dtype)
            out[sel] = v
            return out.reshape(-1)
        if mask is None or not shape or buf.stride:
            return self.load(buf, self.plan_offsets(parts), mask, site)  # type: ignore
        # a partial tail: the leading rows that fit as a view, the others gathered
        a, b = self._split(shape, strides, base, buf.count)
        if a >= b:  # no row fits (a chunk of partial edge blocks): the active lanes by index
            idx = self._indices(base, shape, strides)[mask]
            if idx.size and (idx.min() < 0 or idx.max() >= buf.count):
                return self.load(buf, self.plan_offsets(parts), mask, site)  # type: ignore
            if buf.watched() or self.inflight:
                self.check_read(buf, idx, mask, site)  # type: ignore
            out = np.zeros(mask.size, dtype=data.dtype)
            out[mask] = data[idx]
            return out
        m2 = mask.reshape(shape[0], -1)
        edge = np.ones(shape[0], dtype=bool)
        edge[a:b] = False
        # the indices of the edge rows only (a 2-D tail's last block row)
        e_idx = (base + np.flatnonzero(edge).astype(np.int64) * strides[0])[:, None] + \
            self._indices(0, shape[1:], strides[1:])[None, :]
        e_mask = m2[edge]
        active = e_idx[e_mask]
        if active.size and (active.min() < 0 or active.max() >= buf.count):
            return self.load(buf, self.plan_offsets(parts), mask, site)  # type: ignore
        if buf.watched() or self.inflight:
            self.check_read(buf, self._indices(base, shape, strides)[mask],  # type: ignore
                            mask, site)
        out = np.empty((shape[0], m2.shape[1]), dtype=data.dtype)
        out[edge] = 0
        rows = as_strided(data[base + a * strides[0]:], shape=[b - a] + shape[1:],
                          strides=[s * isz for s in strides], writeable=False)
        np.copyto(out[a:b].reshape(rows.shape), rows)  # no temporary copy of the rows
        sub = out[edge]
        sub[e_mask] = data[active]
        out[edge] = sub
        return out.reshape(-1)

    def plan_op(self, dst: Buffer, pd: tuple[Part, ...], ufunc: Any, a: Buffer,
                pa: tuple[Part, ...], b: Buffer, pb: tuple[Part, ...], mask: Mask, site_a: int,
                site_b: int, site: int, a_first: bool = True) -> None:
        """`store_plan(dst, pd, ufunc(load_plan(a, pa), load_plan(b, pb)))` (plan.py's
        plan_ops) computed straight from the two views into the stored view, one pass without
        temporaries (ufuncs treat operands that overlap the output as if copied first), when
        every lane is active, all three views lie inside their buffers, the stored one touches
        each element once and the result type is the stored one's; the two reads and the
        write checked in program order (`a_first`). Otherwise the three steps."""
        if mask is None:
            vd, va, vb = (self._plan_view(dst, pd), self._plan_view(a, pa),
                          self._plan_view(b, pb))
            if vd is not None and va is not None and vb is not None and \
                    0 <= vd[3] and vd[4] < dst.count and 0 <= va[3] and va[4] < a.count and \
                    0 <= vb[3] and vb[4] < b.count and box_injective(vd[1], vd[2]) and \
                    np.result_type(a.data.dtype, b.data.dtype) == dst.data.dtype:
                reads = ((a, va, site_a), (b, vb, site_b))
                for buf, pv, s, write in [(x, v, t, False) for x, v, t in
                                          (reads if a_first else reads[::-1])] + \
                        [(dst, vd, site, True)]:
                    if buf.watched() or self.inflight:
                        self._check(buf, pv[0], pv[1], pv[2], None, s, write)
                ufunc(_view(a.data, va[0], va[1], va[2], False),
                      _view(b.data, vb[0], vb[1], vb[2], False),
                      out=_view(dst.data, vd[0], vd[1], vd[2], True))
                return
        if a_first:
            x = self.load_plan(a, pa, mask, site_a)
            y = self.load_plan(b, pb, mask, site_b)
        else:
            y = self.load_plan(b, pb, mask, site_b)
            x = self.load_plan(a, pa, mask, site_a)
        self.store_plan(dst, pd, ufunc(x, y), mask, site)

    def _store_cut(self, buf: Buffer, pv: tuple[int, list[int], list[int], int, int],
                   trimmed: tuple[int, list[int], list[int], list[int], tuple[Any, ...]],
                   value: Any, mask: Mask, site: int) -> None:
        """A masked store through the box cut to the mask's window (`_trim`)."""
        base, shape, strides, _, _ = pv
        tbase, tshape, tstrides, full, sel = trimmed
        if buf.watched() or self.inflight:
            self._check(buf, base, shape, strides, mask, site, True)
        data = buf.data
        isz = data.itemsize
        v = _view(data, tbase, tshape, tstrides, True)
        if isinstance(value, np.ndarray):
            value = value.reshape(full)[sel]
        np.copyto(v, value, casting="unsafe", where=mask.reshape(full)[sel])

    def _store_active(self, buf: Buffer, pv: tuple[int, list[int], list[int], int, int],
                      value: Any, mask: np.ndarray, site: int) -> bool:
        """A masked store into the blocks' copies of an L1 buffer whose box leaves the buffer
        but whose active lanes stay inside it (a tile staged in chunks of the block's lanes,
        `if t < HX * HY`): a scatter of the active lanes, checked as the view's lanes are
        (`_check`: per pattern in bulk, also when the mask differs between blocks). False when
        some active lane leaves its block's copy (the general path reports it) or the blocks
        touch different elements of their copies."""
        base, shape, strides, _, _ = pv
        if box_size(shape) != mask.size:
            return False
        known = self._known_pattern(buf, base, shape, strides)[0]
        if known is False:
            return False
        local = known[0]
        cols = self.mask_facts(mask).get(("active_cols", mask.size // local.size))  # type: ignore[attr-defined]
        if cols is None:
            cols = mask.reshape(-1, local.size).any(axis=0)
            self.mask_facts(mask)[("active_cols", mask.size // local.size)] = cols  # type: ignore[attr-defined]
        used = local[cols]
        if used.size and (int(used.min()) < 0 or int(used.max()) >= buf.count):
            return False
        idx = self._indices(base, shape, strides)
        if buf.watched() or self.inflight:
            if used.size == local.size:
                self._check(buf, base, shape, strides, mask, site, True)
            elif not self._check_active(buf, known, cols, mask, site):
                self.check_write(buf, idx[mask], mask, site)  # type: ignore[attr-defined]
        buf.data[idx[mask]] = value[mask] if isinstance(value, np.ndarray) else value
        return True

    def _check_active(self, buf: Buffer, known: tuple[Any, ...], cols: np.ndarray,
                      mask: np.ndarray, site: int) -> bool:
        """The race check of `_store_active` when only the lanes `cols` of a block can be
        active (the others' elements lie outside the buffer): per pattern in bulk
        (RaceChecker.race_pattern_masked) on those lanes; False when the general check must
        run (a race, in-flight copies, tracked initialisation, two lanes on one element)."""
        if buf.shadow is None or buf.init is not None or self.inflight:
            return False
        local, lanes = known[0][cols], known[1][cols]
        summary = _summary(self.cache, local, lanes, self.warp_size)
        order = _order(local, summary[0])
        if order is False:
            return False
        nb = mask.size // cols.size
        return self.races.race_pattern_masked(  # type: ignore[attr-defined]
            buf, (local, lanes, *summary), order, mask.reshape(nb, -1)[:, cols], site, True,
            ("active", local.tobytes(), lanes.tobytes()))

    def _known_pattern(self, buf: Buffer, base: int, shape: list[int],
                       strides: list[int]) -> tuple[Any, int]:
        """(`_pattern` of an access, its number): memoised by access and vector shape (the
        same in every vector of this shape). The number stands for the access in the race
        checker's remembered sequences (Shadow.trie): an int hashes at once, and numbers are
        never reused, so an entry made before a table was cleared cannot match another
        access."""
        box_id = self._ids.get("box_id")
        if box_id is None:
            box = self.plan_box()
            assert box is not None
            box_key = (tuple(box[0]), box[2], self.block, self.warp_size)
            cache = self.cache
            box_id = cache.box_ids.get(box_key)
            if box_id is None:
                box_id = cache.remember_value(cache.box_ids, box_key, next(cache.numbers),
                                              LIMITS["box_ids"])
            self._ids["box_id"] = box_id
        key = (base, tuple(shape), tuple(strides), buf.stride, box_id)
        patterns = self.cache.patterns
        entry = patterns.get(key)
        if entry is None:
            entry = self.cache.remember_value(
                patterns, key, (self._pattern(buf, base, shape, strides), next(self.cache.numbers)),
                LIMITS["patterns"])
        return entry

    def store_plan(self, buf: Buffer, parts: tuple[Part, ...], value: Any, mask: Mask,
                   site: int) -> None:
        """A planned store: into the view when no two lanes hit one element."""
        pv = None if mask is False else self._plan_view(buf, parts)
        if pv is None or not box_injective(pv[1], pv[2]) and \
                not isinstance(mask, np.ndarray):
            self.store(buf, self.plan_offsets(parts), value, mask, site)  # type: ignore
            return
        base, shape, strides, lo, hi = pv
        data = buf.data
        isz = data.itemsize
        if not box_injective(shape, strides):  # lanes collide, unless the mask keeps them apart
            trimmed = self._trim(pv, mask, buf)
            if trimmed is None or not box_injective(trimmed[1], trimmed[2]):
                decision = self.decisions.get(tail2d.Decision)  # 2-D tails (strategies/tail2d.py)
                if decision is None or \
                        not tail2d.store_edges(decision, self, buf, pv, value, mask, site):
                    self.store(buf, self.plan_offsets(parts), value, mask, site)  # type: ignore
                return
            self._store_cut(buf, pv, trimmed, value, mask, site)
            return
        if 0 <= lo and hi < buf.count:
            if isinstance(mask, np.ndarray) and \
                    (trimmed := self._trim(pv, mask, buf)) is not None and \
                    2 * box_size(trimmed[1]) <= mask.size:
                # a mask that keeps a narrow window (`if lane < s`): write just the window
                self._store_cut(buf, pv, trimmed, value, mask, site)
                return
            a, b = 0, shape[0] if shape else 1
        elif (trimmed := self._trim(pv, mask, buf)) is not None:
            self._store_cut(buf, pv, trimmed, value, mask, site)
            return
        elif buf.stride and isinstance(mask, np.ndarray) and shape and \
                self._store_active(buf, pv, value, mask, site):
            return
        elif mask is None or not shape or buf.stride:
            self.store(buf, self.plan_offsets(parts), value, mask, site)  # type: ignore
            return
        else:
            a, b = self._split(shape, strides, base, buf.count)
            if a >= b:
                self.store(buf, self.plan_offsets(parts), value, mask, site)  # type: ignore
                return
        whole = (a, b) == (0, shape[0] if shape else 1)
        idx = None
        if not whole:
            idx = self._indices(base, shape, strides).reshape(shape[0], -1)
            edge = np.ones(shape[0], dtype=bool)
            edge[a:b] = False
            e_act = idx[edge][mask.reshape(shape[0], -1)[edge]]
            if e_act.size and (e_act.min() < 0 or e_act.max() >= buf.count):
                self.store(buf, self.plan_offsets(parts), value, mask, site)  # type: ignore
                return
        if buf.watched() or self.inflight:
            self._check(buf, base, shape, strides, mask, site, True,
                        None if idx is None else idx.reshape(-1))
        if whole:
            v = _view(data, base, shape, strides, True)
            if isinstance(value, np.ndarray):
                value = value.reshape(shape)
            if mask is None:
                v[...] = value
            else:
                np.copyto(v, value, casting="unsafe", where=mask.reshape(shape))
            return
        assert idx is not None
        rows = as_strided(data[base + a * strides[0]:], shape=[b - a] + shape[1:],
                          strides=[s * isz for s in strides], writeable=True)
        m2 = mask.reshape(shape[0], -1)
        vals = value.reshape(shape[0], -1) if isinstance(value, np.ndarray) else value
        rv = vals[a:b].reshape(rows.shape) if isinstance(value, np.ndarray) else value
        np.copyto(rows, rv, casting="unsafe", where=m2[a:b].reshape(rows.shape))
        for r in (*range(0, a), *range(b, shape[0])):
            sel = m2[r]
            if sel.any():
                data[idx[r][sel]] = vals[r][sel] if isinstance(value, np.ndarray) else value


def _view(data: np.ndarray, base: int, shape: Any, strides: Any, writeable: bool) -> np.ndarray:
    """`as_strided(data[base:], shape, strides in elements, writeable)`, made directly as an
    ndarray over `data`'s buffer (a third of as_strided's cost; a view is made for every
    planned access); NumPy checks it lies inside the buffer, else (and for buffers it cannot
    take) as_strided."""
    isz = data.itemsize
    bstrides = [st * isz for st in strides]
    try:
        v = np.ndarray(shape, dtype=data.dtype, buffer=data, offset=base * isz, strides=bstrides)
    except (TypeError, ValueError, BufferError):
        return as_strided(data[base:], shape=shape, strides=bstrides, writeable=writeable)
    if not writeable:
        v.flags.writeable = False
    elif not v.flags.writeable:
        return as_strided(data[base:], shape=shape, strides=bstrides, writeable=writeable)
    return v


def _order(local: np.ndarray, elems: Any) -> Any:
    """For a pattern whose lanes touch distinct elements (`elems`, sorted: a slice or an
    array): the lane touching each element in turn (None: lane order is element order, as
    for any increasing pattern); False when two lanes touch one element."""
    if (elems.stop - elems.start if isinstance(elems, slice) else elems.size) != local.size:
        return False
    if local.size < 2 or bool((local[1:] > local[:-1]).all()):
        return None
    return np.argsort(local, kind="stable")


def _summary(cache: RunCache, local: np.ndarray, lanes: np.ndarray,
             ws: int) -> tuple[np.ndarray, ...]:
    """races.pattern_summary, memoised by content (a kernel has few distinct patterns; every
    vector and launch of the same shape reuses them)."""
    key = (local.tobytes(), lanes.tobytes(), ws)
    value = cache.summaries.get(key)
    if value is None:
        value = cache.remember_value(cache.summaries, key, pattern_summary(local, lanes, ws),
                                     LIMITS["summaries"])
    return value


class PerBlock(np.ndarray):
    """One value per block of a batch-mode vector (a block-level operand's offset,
    `PlannedAccess.block_offset`), where a lane vector would hold it once per lane."""


class _NoBuffer:
    """Stands for the buffer of a form that is not an address (form_cmp): no block copies."""
    stride = 0


_NO_BUFFER: Any = _NoBuffer()
