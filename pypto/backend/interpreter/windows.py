"""Lane windows: a branch that keeps only some lanes of every block active runs on those lanes.

In batch mode a vector holds whole 1-D blocks. A branch such as `if tid < s` or
`if pto.get_warp_id() == 0` keeps the same window of lanes active in every block; generated
code (codegen's windowed branches) runs its body on a `WindowContext` of just those lanes, with
per-lane values narrowed on the way in and widened on the way out. See docs/interpreter.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto.backend.interpreter.buffers import Buffer
from pypto.backend.interpreter.lanes import LaneContext, Mask, _i32

WINDOW_MIN_SAVING = 2
"""Run a branch on a window of lanes only when it holds at most 1/WINDOW_MIN_SAVING of them."""


def window(ctx: LaneContext, mask: Mask) -> tuple[WindowContext, Mask] | None:
    """For a branch of a batch-mode kernel whose active lanes all lie in block-local lanes
    first..last-1 of every block (as under `if tid < s`): a lane vector of just those lanes
    and the branch's mask on it; None to run the branch on the whole vector (fast paths off,
    a wide window, or a vector that is not whole 1-D blocks)."""
    if type(ctx) is WindowContext or type(ctx) is NestedWindowContext:
        return nested_window(ctx, mask)
    lanes = ctx.block_lanes
    if not (isinstance(mask, np.ndarray) and type(ctx) is LaneContext and
            ctx.local_base == 0 and ctx.count % lanes == 0 and ctx.block[1] * ctx.block[2] == 1):
        return None
    first, last, dense = ctx.lane_window(mask)
    if last == first:
        return None
    if (last - first) * WINDOW_MIN_SAVING > lanes:
        # every lane of a wide run of columns active: no narrower window of warps x lanes
        return None if dense else warp_window(ctx, mask)
    sub = WindowContext(ctx, first, last)
    return sub, (None if dense else
                 np.ascontiguousarray(mask.reshape(-1, lanes)[:, first:last]).reshape(-1))


def nested_window(ctx: WindowContext, mask: Mask) -> tuple[WindowContext, Mask] | None:
    """A branch inside a lane window whose active lanes all lie in columns f..l-1 of the
    window (`if tid < s` of a tree's last steps inside `if warp == 0`): a window of the
    window, when it keeps at most 1/WINDOW_MIN_SAVING of its lanes; else None."""
    if not isinstance(mask, np.ndarray):
        return None
    rows = mask.reshape(-1, ctx.width)
    cols = np.flatnonzero(rows.any(axis=0))
    if cols.size == 0:
        return None
    f, l_ = int(cols[0]), int(cols[-1]) + 1
    if (l_ - f) * WINDOW_MIN_SAVING > ctx.width:
        return None
    dense = np.count_nonzero(mask) == rows.shape[0] * (l_ - f)
    return NestedWindowContext(ctx, f, l_), \
        None if dense else np.ascontiguousarray(rows[:, f:l_]).reshape(-1)


def warp_window(ctx: LaneContext, mask: np.ndarray) -> tuple[WarpWindowContext, Mask] | None:
    """The 2-D window of a branch whose active lanes lie in warps w_lo..w_hi-1 and lanes in
    the warp n_lo..n_hi-1 of every block (`if lane < s`, `if lane == 0`: one run of lanes per
    warp, too many columns for one range), when it keeps at most 1/WINDOW_MIN_SAVING of the
    block's lanes; else None."""
    lanes, ws = ctx.block_lanes, ctx.warp_size
    if lanes % ws or lanes == ws:
        return None
    shared = not mask.flags.writeable  # a shared mask (form_cmp): its window is too
    cache = ctx.cache  # the Executable's (caches.py)
    known = cache.known(cache.warp_windows, mask) if shared else None
    if known is None:
        facts = ctx.mask_facts(mask)
        known = facts.get("warp_window_cut")
        if known is None:
            w_lo, w_hi, n_lo, n_hi = ctx.planned._warp_window(mask)
            width = (w_hi - w_lo) * (n_hi - n_lo)
            sub_mask = None
            if width == 0 or n_hi - n_lo == ws or width * WINDOW_MIN_SAVING > lanes:
                win = None
            else:
                win = (w_lo, w_hi, n_lo, n_hi)
                cut = mask.reshape(-1, lanes // ws, ws)[:, w_lo:w_hi, n_lo:n_hi]
                if not cut.all():
                    sub_mask = np.ascontiguousarray(cut).reshape(-1)
                    sub_mask.flags.writeable = False  # shared by the branches that use it
            known = facts["warp_window_cut"] = (win, sub_mask)
            if shared:
                cache.remember(cache.warp_windows, mask, known)
    win, sub_mask = known
    if win is None:
        return None
    return WarpWindowContext(ctx, *win), sub_mask


class WindowContext(LaneContext):
    """Block-local lanes first..last-1 of every block of a batch-mode lane vector, as a lane
    vector of their own: a branch that only these lanes take runs on (last - first) lanes per
    block instead of all of them. It shares the parent's memory, L1 and race state; ids,
    lane naming and L1 addressing follow the window. Values flow in narrowed (`narrow`) and
    out widened (`widen`); generated code uses it only for branches without block-level
    instructions, atomics or output (see codegen's windowed branches)."""

    whole_vector = False

    def __init__(self, parent: LaneContext, first: int, last: int):  # noqa: D107
        parent.memory  # (made now if not yet: the window shares it, lanes.py)
        self.__dict__.update(parent.__dict__)  # shared memory, L1, counters, settings
        self.parent = parent
        self.outer: LaneContext = parent  # the vector this one narrows (`narrow`, `widen`)
        self.first = first
        self.width = last - first
        self.blocks = parent.count // parent.block_lanes
        self.count = self.blocks * self.width
        self.ramp = self.cache.ramp(self.count)
        self._ids = {}
        self._mask_cache = None
        self.__dict__.pop("_race_lanes", None)
        # its own parts over the window's lanes (made at first use): planned accesses, lane
        # accesses (which name the window's lanes and check races with its own checker, the
        # window's lanes and ids); the block state (`memory`) is the parent's
        for part in ("planned", "lanes", "tiles", "races"):
            self.__dict__.pop(part, None)

    @property
    def local_base(self) -> int:
        return self.first  # block-local id of position 0 (block 0, first lane of the window)

    @property
    def in_one_block(self) -> bool:
        return self.blocks == 1

    def _pos_local(self) -> tuple[np.ndarray, np.ndarray]:
        """(block index within the vector, block-local lane id) per position."""
        return self.cache.geometry(("window", self.blocks, self.block_lanes, self.first, self.width),
                        lambda: (np.repeat(np.arange(self.blocks, dtype=np.int64), self.width),
                                 np.tile(np.arange(self.first, self.first + self.width,
                                                   dtype=np.int64), self.blocks)))

    def _linear(self) -> np.ndarray:
        b, t = self._pos_local()
        return b * self.block_lanes + t + np.int64(self.parent.first_lane)

    def _compute_block_local(self) -> tuple[Any, Any]:
        lin = self._linear()
        return lin // self.block_lanes, lin % self.block_lanes

    @property
    def row_width(self) -> int:
        return self.width

    def _whole_blocks(self) -> bool:
        return False

    def local_id(self, dim: int) -> Any:
        if dim == 0:
            key = "l0"
            if key not in self._ids:
                self._ids[key] = _i32(self._pos_local()[1])
            return self._ids[key]
        return super().local_id(dim)

    @property
    def lane_block(self) -> np.ndarray:
        return self._pos_local()[0]

    def block_base(self, stride: int) -> np.ndarray:
        return self.cache.geometry(("wbase", stride, self.blocks, self.block_lanes, self.first, self.width),
                        lambda: self.lane_block * stride)

    def lanes_and_warps(self, mask: Mask) -> tuple[np.ndarray, np.ndarray]:
        if getattr(self, "_race_lanes", None) is None:
            local = self._pos_local()[1]
            self._race_lanes = (local, (local // self.warp_size).astype(np.int16))
        return super().lanes_and_warps(mask)

    def describe_lane(self, pos: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        b, t = divmod(int(pos), self.width)
        return self.parent.describe_lane(b * self.block_lanes + self.first + t)

    def lane_window(self, mask: np.ndarray) -> tuple[int, int, bool]:
        return 0, self.width, False  # never narrowed twice

    def _make_box(self) -> Any:
        """The parent's blocks times block-local lanes first..first+width-1 (planned
        accesses, views.py)."""
        box = self.parent.plan_box()
        if box is None or any(kind == "l" for kind, *_ in box[0][:-1]):
            return None
        axes = [a for a in box[0] if a[0] == "b"]
        if self.width > 1:
            axes.append(("l", 0, self.width, 0))
        return axes, box[1], (self.first, 0, 0)

    def row_span(self, buf: Buffer, base: Any, mask: Mask) -> tuple[int, int, Any] | None:
        """Row accesses in the window: lane j of a block touches `base + first + j`."""
        if not (buf.stride and buf.init is None and mask is not False):
            return None
        lo = int(base) + self.first
        hi = lo + self.width
        if lo < 0 or hi > buf.count:
            return None
        return lo, hi, None if mask is None else mask.reshape(-1, self.width)

    def barrier_warp(self, mask: Mask, site: int) -> None:
        """A warp barrier in the window: warps wholly inside it are checked on its lanes;
        a warp the window cuts has lanes that never reach the barrier (they are outside the
        branch), so when any of its lanes here is active the check runs on the outer vector,
        which reports the lane that misses it."""
        ws = self.warp_size
        if mask is False or (self.first % ws == 0 and self.width % ws == 0):
            super().barrier_warp(mask, site)
            return
        self.outer.barrier_warp(self.widen(np.ones(self.count, dtype=bool) if mask is None
                                           else np.asarray(mask, dtype=bool)), site)

    def narrow(self, value: Any) -> Any:
        """A value of the parent vector, on the window's lanes."""
        if not isinstance(value, np.ndarray):
            return value
        parent = self.parent.block_lanes
        return np.ascontiguousarray(
            value.reshape(-1, parent)[:, self.first:self.first + self.width]).reshape(-1)

    def widen(self, value: Any) -> Any:
        """A value of the window, on the parent's lanes (lanes outside the window get 0: they
        are inactive in the branch, so their value is never used)."""
        if not isinstance(value, np.ndarray):
            return value
        out = np.zeros((self.blocks, self.block_lanes), dtype=value.dtype)
        out[:, self.first:self.first + self.width] = value.reshape(-1, self.width)
        return out.reshape(-1)


class WarpWindowContext(WindowContext):
    """Warps w_lo..w_hi-1 times lanes in the warp n_lo..n_hi-1 of every block of a batch-mode
    lane vector (`if lane < s` of a warp-synchronous tree), as a lane vector of their own, in
    order (block, warp, lane in the warp). Planned accesses see it as a box with a warp axis
    and a lane axis (views.py); row accesses, whose lanes would be one run of columns, take
    the general path on the window's ids; a warp barrier is checked on the parent's lanes (a
    window narrower than a warp would hide the lanes that miss it)."""

    def __init__(self, parent: LaneContext, w_lo: int, w_hi: int, n_lo: int,  # noqa: D107
                 n_hi: int):
        ws = parent.warp_size
        super().__init__(parent, w_lo * ws + n_lo, w_lo * ws + n_lo + 1)
        self.warps = (w_lo, w_hi)
        self.lanes_in_warp = (n_lo, n_hi)
        self.width = (w_hi - w_lo) * (n_hi - n_lo)
        self.count = self.blocks * self.width
        self.ramp = self.cache.ramp(self.count)

    def _cols(self) -> np.ndarray:
        """Block-local ids of the window's lanes, in order."""
        (w_lo, w_hi), (n_lo, n_hi) = self.warps, self.lanes_in_warp
        return (np.arange(w_lo, w_hi, dtype=np.int64)[:, None] * self.warp_size +
                np.arange(n_lo, n_hi, dtype=np.int64)).reshape(-1)

    def _pos_local(self) -> tuple[np.ndarray, np.ndarray]:
        return self.cache.geometry(("warp_window", self.blocks, self.block_lanes, self.warps,
                         self.lanes_in_warp, self.warp_size),
                        lambda: (np.repeat(np.arange(self.blocks, dtype=np.int64), self.width),
                                 np.tile(self._cols(), self.blocks)))

    def block_base(self, stride: int) -> np.ndarray:
        return self.cache.geometry(("wwbase", stride, self.blocks, self.block_lanes, self.warps,
                         self.lanes_in_warp), lambda: self.lane_block * stride)

    def describe_lane(self, pos: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        b, t = divmod(int(pos), self.width)
        return self.parent.describe_lane(b * self.block_lanes + int(self._cols()[t]))

    def _make_box(self) -> Any:
        """The parent's blocks times the window's warps times its lanes in the warp."""
        box = self.parent.plan_box()
        if box is None or any(kind == "l" for kind, *_ in box[0][:-1]):
            return None
        axes = [a for a in box[0] if a[0] == "b"]
        (w_lo, w_hi), (n_lo, n_hi) = self.warps, self.lanes_in_warp
        axes += [("w", 0, w_hi - w_lo, 0), ("n", 0, n_hi - n_lo, 0)]
        return axes, box[1], (self.first, 0, 0)

    row_runs = False  # the window's lanes are not one run of columns: rows take the general path

    def row_span(self, buf: Buffer, base: Any, mask: Mask) -> None:
        return None

    def barrier_warp(self, mask: Mask, site: int) -> None:
        if mask is False:
            return
        self.parent.barrier_warp(self.widen(np.ones(self.count, dtype=bool) if mask is None
                                            else np.asarray(mask, dtype=bool)), site)

    def narrow(self, value: Any) -> Any:
        if not isinstance(value, np.ndarray):
            return value
        (w_lo, w_hi), (n_lo, n_hi) = self.warps, self.lanes_in_warp
        cut = value.reshape(self.blocks, -1, self.warp_size)[:, w_lo:w_hi, n_lo:n_hi]
        return np.ascontiguousarray(cut).reshape(-1)

    def widen(self, value: Any) -> Any:
        if not isinstance(value, np.ndarray):
            return value
        (w_lo, w_hi), (n_lo, n_hi) = self.warps, self.lanes_in_warp
        out = np.zeros((self.blocks, self.block_lanes // self.warp_size, self.warp_size),
                       dtype=value.dtype)
        out[:, w_lo:w_hi, n_lo:n_hi] = value.reshape(self.blocks, w_hi - w_lo, n_hi - n_lo)
        return out.reshape(-1)


class NestedWindowContext(WindowContext):
    """Columns f..l-1 of a lane window (windows.WindowContext), as a window of the same
    vector: block-local lanes `outer.first + f` .. `outer.first + l - 1`. Values flow in and
    out through the window it narrows (`outer`)."""

    def __init__(self, outer: WindowContext, f: int, l_: int):  # noqa: D107
        super().__init__(outer.parent, outer.first + f, outer.first + l_)
        self.outer = outer
        self.cut = (f, l_)

    def narrow(self, value: Any) -> Any:
        if not isinstance(value, np.ndarray):
            return value
        f, l_ = self.cut
        return np.ascontiguousarray(value.reshape(-1, self.outer.width)[:, f:l_]).reshape(-1)

    def widen(self, value: Any) -> Any:
        if not isinstance(value, np.ndarray):
            return value
        f, l_ = self.cut
        out = np.zeros((self.blocks, self.outer.width), dtype=value.dtype)
        out[:, f:l_] = value.reshape(-1, l_ - f)
        return out.reshape(-1)
