"""Planned accesses at run time: the addresses of a whole lane vector as one strided view.

Codegen's access planner (plan.py) hands each planned load or store the exact linear forms of
its pointer's offset parts: `rest + sum(coef[s] * s)` over the lane symbols (local ids, block
ids, warp, lane in warp), coefficients evaluated as Python ints. `PlannedViews`, a part of the
lane context (`ctx.planned`, holding the context it serves), turns them into a view of the
buffer:

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

The part is three classes, each holding what it needs explicitly: `PlannedViews` (the views,
their checks and the loads), `PlannedStores` (views_store.py: stores and the view ops) and
`BoxForms` (views_forms.py: the offsets the forms give, comparisons on the box, per-block
offsets); the generated code calls them as `_ctx.planned.load_plan`,
`_ctx.planned.stores.store_plan`, `_ctx.planned.forms.form_cmp` (strategies/planned_view.py).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from pypto.backend.interpreter.buffers import Buffer
from pypto.backend.interpreter.caches import LIMITS
from pypto.backend.interpreter.affine import Box, Part, box_view
from pypto.backend.interpreter.strategies import broadcast
from pypto.backend.interpreter.views_common import Mask, _order, _summary, _view
from pypto.backend.interpreter.views_forms import BoxForms
from pypto.backend.interpreter.views_store import PlannedStores


class PlannedViews:
    """Planned loads of a lane vector (plan.py's forms as views of the vector's box), their
    checks and trimming; a part of `lanes.LaneContext` (`ctx.planned`). Its stores and its
    comparisons / per-block offsets are the parts `stores` and `forms`."""

    def __init__(self, ctx: Any):
        self.ctx = ctx  # the lane context served (its ids, box, masks, memory and races)

    @cached_property
    def stores(self) -> Any:
        """The stores part (views_store.PlannedStores)."""
        return PlannedStores(self.ctx, self)

    @cached_property
    def forms(self) -> Any:
        """The forms part (views_forms.BoxForms)."""
        return BoxForms(self.ctx, self)

    def _plan_view(self, buf: Buffer, parts: tuple[Part, ...]) -> \
            tuple[int, list[int], list[int], int, int] | None:
        """(base, shape, strides, lo, hi) of the access in elements: the view's first element,
        its shape and strides (the block copies of batch-mode L1 included), and the lowest and
        highest element any lane touches within its block's copy; None when the forms do not
        map onto the box or a part may wrap."""
        box = self.ctx.plan_box()
        if box is None:
            return None
        key = (parts, buf.stride, box[1], box[2], tuple(box[0]), self.ctx.block, self.ctx.warp_size)
        views = self.ctx.cache.views
        known = views.get(key, False)
        if known is False:
            known = self.ctx.cache.remember_value(
                views, key, box_view(box, buf.stride, parts, self.ctx.block, self.ctx.warp_size),
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
                not self.ctx.inflight:
            row = None if mask is None else self._mask_row(mask, shape)
            if row is not False:
                known, key = self.stores._known_pattern(buf, base, shape, strides)
                if known is not False and row is not None:
                    facts = self.ctx.mask_facts(mask)
                    cached = facts.get(("pattern", key))  # the branch's accesses share its mask
                    if cached is None:
                        local, lanes = known[0][row], known[1][row]
                        summary = _summary(self.ctx.cache, local, lanes, self.ctx.warp_size)
                        cached = facts[("pattern", key)] = ((local, lanes, *summary),
                                                            (key, row.tobytes()))
                    known, key = cached
                if known is not False and \
                        self.ctx.races.race_pattern(buf, known, site, write, key):
                    return
            elif self._masked_pattern(buf, base, shape, strides, mask, site, write):
                return
        if idx is None:
            idx = self._indices(base, shape, strides)
        active = idx if mask is None else idx[mask]
        if write:
            self.ctx.lanes.check_write(buf, active, mask, site)
        else:
            self.ctx.lanes.check_read(buf, active, mask, site)

    def _masked_pattern(self, buf: Buffer, base: int, shape: list[int], strides: list[int],
                        mask: Mask, site: int, write: bool) -> bool:
        """The race checks of a planned access whose mask differs between blocks, in bulk
        (RaceChecker.race_pattern_masked) when every block touches the same elements of its
        copy, one lane each; False when the general check must run."""
        known, key = self.stores._known_pattern(buf, base, shape, strides)
        if known is False:
            return False
        local, _, elems, _, _ = known
        order = _order(local, elems)
        if order is False:
            return False  # two lanes on one element
        nb = self.ctx.count // local.size
        return self.ctx.races.race_pattern_masked(
            buf, known, order, mask.reshape(nb, local.size), site, write, key)

    def _mask_row(self, mask: Mask, shape: list[int]) -> Any:
        """The lanes of one block a mask keeps, when it keeps the same ones in every block of
        the box (conditions on local ids, warp and lane), else False; once per mask object."""
        facts = self.ctx.mask_facts(mask)
        row = facts.get("plan_row")
        if row is None:
            nb = 1
            box = self.ctx.plan_box()
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
        box = self.ctx.plan_box()
        assert box is not None
        axes, _, l0 = box
        bx, by, _ = self.ctx.block
        lin_step = (1, bx, bx * by)
        per_axis = [(kind, n, step, self.ctx.warp_size if kind == "w" else 1 if kind == "n" else
                     lin_step[i]) for kind, i, n, step in axes]
        if len(shape) == len(axes) + 1:  # lanes split as (warps, lanes in warp): _make_view
            kind, n, step, _ = per_axis[-1]
            ws = self.ctx.warp_size
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
        ws = self.ctx.warp_size
        summary = _summary(self.ctx.cache, local, lanes, ws)
        return (local, lanes, *summary)

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
        box = self.ctx.plan_box()
        if mask is None or not isinstance(mask, np.ndarray) or box is None or not shape or \
                box[0][-1][:2] != ("l", 0) or box[0][-1][2] != self.ctx.block_lanes or \
                self.ctx.block[1] * self.ctx.block[2] != 1 or self.ctx.local_base:
            return None
        ws = self.ctx.warp_size
        lanes = self.ctx.block_lanes
        split = len(shape) == len(box[0]) + 1  # lanes as (warps, lanes in warp): _plan_view
        if not split:
            first, last, _ = self.ctx.lane_window(mask)
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
        facts = self.ctx.mask_facts(mask)
        win = facts.get("warp_window")
        if win is None:
            ws = self.ctx.warp_size
            m = mask.reshape(-1, self.ctx.block_lanes // ws, ws)
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
            return self.ctx.lanes.load(buf, self.forms.plan_offsets(parts), mask, site)  # type: ignore
        base, shape, strides, lo, hi = pv
        data = buf.data
        isz = data.itemsize
        if 0 <= lo and hi < buf.count:
            if buf.watched() or self.ctx.inflight:
                self._check(buf, base, shape, strides, mask, site, False)
            v = _view(data, base, shape, strides, False)
            if 0 in strides:
                decision = self.ctx.decisions.get(broadcast.Decision)
                if decision is not None:
                    one = broadcast.one_value(decision, v, strides,
                                              max(1, self.ctx.count // self.ctx.block_lanes))
                    if one is not None:
                        return one
            out = v.reshape(-1)
            if not view and np.may_share_memory(out, data):
                out = out.copy()
            return out
        trimmed = self._trim(pv, mask, buf)
        if trimmed is not None:
            tbase, tshape, tstrides, full, sel = trimmed
            if buf.watched() or self.ctx.inflight:
                self._check(buf, base, shape, strides, mask, site, False)
            v = _view(data, tbase, tshape, tstrides, False)
            out = np.zeros(full, dtype=data.dtype)
            out[sel] = v
            return out.reshape(-1)
        if mask is None or not shape or buf.stride:
            return self.ctx.lanes.load(buf, self.forms.plan_offsets(parts), mask, site)  # type: ignore
        # a partial tail: the leading rows that fit as a view, the others gathered
        a, b = self._split(shape, strides, base, buf.count)
        if a >= b:  # no row fits (a chunk of partial edge blocks): the active lanes by index
            idx = self._indices(base, shape, strides)[mask]
            if idx.size and (idx.min() < 0 or idx.max() >= buf.count):
                offsets = self.forms.plan_offsets(parts)
                return self.ctx.lanes.load(buf, offsets, mask, site)  # type: ignore
            if buf.watched() or self.ctx.inflight:
                self.ctx.lanes.check_read(buf, idx, mask, site)  # type: ignore
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
            return self.ctx.lanes.load(buf, self.forms.plan_offsets(parts), mask, site)  # type: ignore
        if buf.watched() or self.ctx.inflight:
            self.ctx.lanes.check_read(buf, self._indices(base, shape, strides)[mask],  # type: ignore
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
