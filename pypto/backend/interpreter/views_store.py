"""The stores part of a planned access (views.py): a store through the view when no two lanes
hit one element (a mixed-radix test of the strides), cut to the mask's window or split at
the rows that fit, with race patterns remembered per shape; else the general path, word for
word. `plan_op` computes `p[...] = q[...] op r[...]` over the three views at once."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from pypto.backend.interpreter.buffers import Buffer
from pypto.backend.interpreter.caches import LIMITS
from pypto.backend.interpreter.affine import Part, box_injective, box_size
from pypto.backend.interpreter.strategies import tail2d
from pypto.backend.interpreter.views_common import Mask, _order, _summary, _view


class PlannedStores:
    """Planned stores of one lane vector (`ctx`), on the planned views (`views`)."""

    def __init__(self, ctx: Any, views: Any):
        self.ctx = ctx
        self.views = views

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
            vd, va, vb = (self.views._plan_view(dst, pd), self.views._plan_view(a, pa),
                          self.views._plan_view(b, pb))
            if vd is not None and va is not None and vb is not None and \
                    0 <= vd[3] and vd[4] < dst.count and 0 <= va[3] and va[4] < a.count and \
                    0 <= vb[3] and vb[4] < b.count and box_injective(vd[1], vd[2]) and \
                    np.result_type(a.data.dtype, b.data.dtype) == dst.data.dtype:
                reads = ((a, va, site_a), (b, vb, site_b))
                for buf, pv, s, write in [(x, v, t, False) for x, v, t in
                                          (reads if a_first else reads[::-1])] + \
                        [(dst, vd, site, True)]:
                    if buf.watched() or self.ctx.inflight:
                        self.views._check(buf, pv[0], pv[1], pv[2], None, s, write)
                ufunc(_view(a.data, va[0], va[1], va[2], False),
                      _view(b.data, vb[0], vb[1], vb[2], False),
                      out=_view(dst.data, vd[0], vd[1], vd[2], True))
                return
        if a_first:
            x = self.views.load_plan(a, pa, mask, site_a)
            y = self.views.load_plan(b, pb, mask, site_b)
        else:
            y = self.views.load_plan(b, pb, mask, site_b)
            x = self.views.load_plan(a, pa, mask, site_a)
        self.store_plan(dst, pd, ufunc(x, y), mask, site)

    def _store_cut(self, buf: Buffer, pv: tuple[int, list[int], list[int], int, int],
                   trimmed: tuple[int, list[int], list[int], list[int], tuple[Any, ...]],
                   value: Any, mask: Mask, site: int) -> None:
        """A masked store through the box cut to the mask's window (`_trim`)."""
        base, shape, strides, _, _ = pv
        tbase, tshape, tstrides, full, sel = trimmed
        if buf.watched() or self.ctx.inflight:
            self.views._check(buf, base, shape, strides, mask, site, True)
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
        cols = self.ctx.mask_facts(mask).get(("active_cols", mask.size // local.size))
        if cols is None:
            cols = mask.reshape(-1, local.size).any(axis=0)
            self.ctx.mask_facts(mask)[("active_cols", mask.size // local.size)] = cols
        used = local[cols]
        if used.size and (int(used.min()) < 0 or int(used.max()) >= buf.count):
            return False
        idx = self.views._indices(base, shape, strides)
        if buf.watched() or self.ctx.inflight:
            if used.size == local.size:
                self.views._check(buf, base, shape, strides, mask, site, True)
            elif not self._check_active(buf, known, cols, mask, site):
                self.ctx.lanes.check_write(buf, idx[mask], mask, site)
        buf.data[idx[mask]] = value[mask] if isinstance(value, np.ndarray) else value
        return True

    def _check_active(self, buf: Buffer, known: tuple[Any, ...], cols: np.ndarray,
                      mask: np.ndarray, site: int) -> bool:
        """The race check of `_store_active` when only the lanes `cols` of a block can be
        active (the others' elements lie outside the buffer): per pattern in bulk
        (RaceChecker.race_pattern_masked) on those lanes; False when the general check must
        run (a race, in-flight copies, tracked initialisation, two lanes on one element)."""
        if buf.shadow is None or buf.init is not None or self.ctx.inflight:
            return False
        local, lanes = known[0][cols], known[1][cols]
        summary = _summary(self.ctx.cache, local, lanes, self.ctx.warp_size)
        order = _order(local, summary[0])
        if order is False:
            return False
        nb = mask.size // cols.size
        return self.ctx.races.race_pattern_masked(
            buf, (local, lanes, *summary), order, mask.reshape(nb, -1)[:, cols], site, True,
            ("active", local.tobytes(), lanes.tobytes()))

    def _known_pattern(self, buf: Buffer, base: int, shape: list[int],
                       strides: list[int]) -> tuple[Any, int]:
        """(`_pattern` of an access, its number): memoised by access and vector shape (the
        same in every vector of this shape). The number stands for the access in the race
        checker's remembered sequences (Shadow.trie): an int hashes at once, and numbers are
        never reused, so an entry made before a table was cleared cannot match another
        access."""
        box_id = self.ctx._ids.get("box_id")
        if box_id is None:
            box = self.ctx.plan_box()
            assert box is not None
            box_key = (tuple(box[0]), box[2], self.ctx.block, self.ctx.warp_size)
            cache = self.ctx.cache
            box_id = cache.box_ids.get(box_key)
            if box_id is None:
                box_id = cache.remember_value(cache.box_ids, box_key, next(cache.numbers),
                                              LIMITS["box_ids"])
            self.ctx._ids["box_id"] = box_id
        key = (base, tuple(shape), tuple(strides), buf.stride, box_id)
        patterns = self.ctx.cache.patterns
        entry = patterns.get(key)
        if entry is None:
            entry = self.ctx.cache.remember_value(
                patterns, key, (self.views._pattern(buf, base, shape, strides), next(self.ctx.cache.numbers)),
                LIMITS["patterns"])
        return entry

    def store_plan(self, buf: Buffer, parts: tuple[Part, ...], value: Any, mask: Mask,
                   site: int) -> None:
        """A planned store: into the view when no two lanes hit one element."""
        pv = None if mask is False else self.views._plan_view(buf, parts)
        if pv is None or not box_injective(pv[1], pv[2]) and \
                not isinstance(mask, np.ndarray):
            self.ctx.lanes.store(buf, self.views.forms.plan_offsets(parts), value, mask, site)  # type: ignore
            return
        base, shape, strides, lo, hi = pv
        data = buf.data
        isz = data.itemsize
        if not box_injective(shape, strides):  # lanes collide, unless the mask keeps them apart
            trimmed = self.views._trim(pv, mask, buf)
            if trimmed is None or not box_injective(trimmed[1], trimmed[2]):
                decision = self.ctx.decisions.get(tail2d.Decision)  # 2-D tails (strategies/tail2d.py)
                if decision is None or \
                        not tail2d.store_edges(decision, self.ctx, buf, pv, value, mask, site):
                    self.ctx.lanes.store(buf, self.views.forms.plan_offsets(parts), value, mask, site)  # type: ignore
                return
            self._store_cut(buf, pv, trimmed, value, mask, site)
            return
        if 0 <= lo and hi < buf.count:
            if isinstance(mask, np.ndarray) and \
                    (trimmed := self.views._trim(pv, mask, buf)) is not None and \
                    2 * box_size(trimmed[1]) <= mask.size:
                # a mask that keeps a narrow window (`if lane < s`): write just the window
                self._store_cut(buf, pv, trimmed, value, mask, site)
                return
            a, b = 0, shape[0] if shape else 1
        elif (trimmed := self.views._trim(pv, mask, buf)) is not None:
            self._store_cut(buf, pv, trimmed, value, mask, site)
            return
        elif buf.stride and isinstance(mask, np.ndarray) and shape and \
                self._store_active(buf, pv, value, mask, site):
            return
        elif mask is None or not shape or buf.stride:
            self.ctx.lanes.store(buf, self.views.forms.plan_offsets(parts), value, mask, site)  # type: ignore
            return
        else:
            a, b = self.views._split(shape, strides, base, buf.count)
            if a >= b:
                self.ctx.lanes.store(buf, self.views.forms.plan_offsets(parts), value, mask, site)  # type: ignore
                return
        whole = (a, b) == (0, shape[0] if shape else 1)
        idx = None
        if not whole:
            idx = self.views._indices(base, shape, strides).reshape(shape[0], -1)
            edge = np.ones(shape[0], dtype=bool)
            edge[a:b] = False
            e_act = idx[edge][mask.reshape(shape[0], -1)[edge]]
            if e_act.size and (e_act.min() < 0 or e_act.max() >= buf.count):
                self.ctx.lanes.store(buf, self.views.forms.plan_offsets(parts), value, mask, site)  # type: ignore
                return
        if buf.watched() or self.ctx.inflight:
            self.views._check(buf, base, shape, strides, mask, site, True,
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
