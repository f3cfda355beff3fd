"""The debugger's inspector: variables by their Python name, lane by lane, and the block's L1.

A mixin of `Session` (session.py), which provides the paused position (`_pause_ctx`,
`_paused_info`, `_where_text`), the focus (`_focus_lanes`, `block_coords`, `warp`) and the
executable (`exe`, `table`). Values are read from the suspended generated code's frame through
the op table (`OpTable.read`), never recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.ir import BlockArgument, OpResult, SSAValue

from pypto import dtypes
from pypto.debug.view import Lanes
from pypto.dialects import pto
from pypto.errors import PtoError


class DebugError(PtoError):
    """A debugger command that cannot be done (bad name, line, lane or block)."""


@dataclass(frozen=True)
class Pointer:
    """A pointer variable's per-lane value: element offsets into a named buffer."""

    buffer: str
    space: str            # "global" (HBM) | "local" (L1)
    offsets: np.ndarray

    def __repr__(self) -> str:
        where = "HBM" if self.space == "global" else "L1"
        offs = np.array2string(self.offsets, threshold=8, edgeitems=3, separator=", ")
        return f"Pointer({where} '{self.buffer}' + {offs})"


class Inspector:
    """Mixin of `Session`: variables and L1."""

    def active_lanes(self) -> Lanes:
        """Lanes (ids within the block) that execute the instruction we are paused at."""
        pos = self._pause_ctx()
        if pos is None:
            return Lanes([])
        ctx, mask = pos
        return Lanes(self._focus_lanes(ctx, mask))

    def _pause_ctx(self) -> tuple[Any, Any] | None:
        step = self._step
        if step is not None and step.paused is not None:
            return step.paused.ctx, step.paused.mask
        current = self._watch.current
        if self.error is not None and current is not None:
            return current[1], current[2]
        return None

    # reading state ----------------------------------------------------------------------------

    def _frame_locals(self) -> dict[str, Any]:
        step = self._step
        if step is not None and step.paused is not None:
            return step.paused.locals()
        if self._error_frame is not None:
            return dict(self._error_frame.f_locals)
        return {}

    def value(self, name: str, lanes: Any = None) -> Any:
        """The per-lane value of kernel variable `name` where the kernel is paused: a NumPy
        array over the focus lanes (or the `lanes` asked for: an int, a range, a slice or a
        list of lane ids within the block). Pointers give a `Pointer`, L1 buffers their
        contents. Lanes not active at this point hold unspecified values (`active_lanes()`)."""
        pos = self._pause_ctx()
        if pos is None:
            raise DebugError("the kernel has finished: its variables are gone; restart() and "
                             "stop before the end to read them")
        ctx, _ = pos
        locals_ = self._frame_locals()
        candidates = self._named(name)
        if not candidates:
            known = sorted({v.name_hint for v in self._all_values() if v.name_hint})
            raise DebugError(f"kernel '{self.exe.name}' has no variable '{name}'; its variables: "
                             f"{', '.join(known)}")
        here = self._paused_info()
        at = here.id if here is not None else len(self.table)
        readable = []
        for def_id, v in candidates:
            got = self._read(v, locals_, ctx)
            if got is not None:
                readable.append((def_id < at, def_id, got))
        if not readable:
            lines = sorted({self._def_line(v) for _, v in candidates} - {None})
            raise DebugError(f"variable '{name}' has no value at {self._where_text()} (it is "
                             f"assigned on line {', '.join(map(str, lines))}, which has not run "
                             f"here)")
        readable.sort(key=lambda r: (r[0], r[1]))
        got = readable[-1][2]
        if self._is_tile(name):
            return got  # an L1 buffer: its contents, not per-lane values
        if lanes is None and self.warp is not None:
            ws = self.exe.target.warp_size
            lanes = range(self.warp * ws, min((self.warp + 1) * ws, self.block_lanes))
        return self._select_lanes(got, ctx, lanes)

    def _is_tile(self, name: str) -> bool:
        return any(isinstance(v.type, pto.L1BufferType) for _, v in self._named(name))

    def _all_values(self) -> list[SSAValue]:
        out: list[SSAValue] = list(self.exe.func.body.block.args)
        for info in self.table:
            out.extend(info.op.results)
            for region in info.op.regions:
                for blk in region.blocks:
                    out.extend(blk.args)
        return out

    def _named(self, name: str) -> list[tuple[int, SSAValue]]:
        out = []
        for v in self._all_values():
            if v.name_hint != name:
                continue
            if isinstance(v, OpResult):
                out.append((self.table.id_of(v.owner), v))
            elif isinstance(v, BlockArgument):
                parent = v.owner.parent_op() if v.owner is not None else None
                pid = -1 if parent is None or parent is self.exe.func else \
                    self.table.id_of(parent)
                out.append((pid, v))
        return out

    def _def_line(self, v: SSAValue) -> int | None:
        owner = v.owner
        if isinstance(v, OpResult):
            return self.table[self.table.id_of(owner)].line
        return None

    def _read(self, v: SSAValue, locals_: dict[str, Any], ctx: Any) -> Any:
        gen_name = self.table.names.get(v)
        if isinstance(v.type, pto.L1BufferType):
            buf = locals_.get(f"{gen_name}_b") if gen_name else None
            return None if buf is None else np.array(buf.data[:buf.count])
        if isinstance(v.type, pto.PtrType):
            buf = locals_.get(f"{gen_name}_b") if gen_name else None
            off = self.table.read(locals_, v, ctx)
            if buf is None or off is None:
                return None
            return Pointer(self._buffer_label(buf), buf.space,
                           np.broadcast_to(np.asarray(off, dtype=np.int64), (ctx.count,)).copy())
        got = self.table.read(locals_, v, ctx)
        if got is None:
            return None
        arr = np.asarray(got)
        if arr.ndim == 0:
            arr = np.full(ctx.count, arr[()], dtype=arr.dtype)
        return np.array(arr)

    def _select_lanes(self, got: Any, ctx: Any, lanes: Any) -> Any:
        base = ctx.local_base
        vector = got.offsets if isinstance(got, Pointer) else got
        if lanes is None:
            return got
        if isinstance(lanes, slice):
            lanes = range(*lanes.indices(self.block_lanes))
        single = isinstance(lanes, int | np.integer) and not isinstance(lanes, bool | np.bool_)
        have = f"{base}-{base + ctx.count - 1}"
        if isinstance(lanes, range):  # checked from its ends: range(10**9) is never built
            if lanes and not (base <= min(lanes[0], lanes[-1]) and
                                   max(lanes[0], lanes[-1]) < base + ctx.count):
                outside = lanes[0] if not base <= lanes[0] < base + ctx.count else lanes[-1]
                raise DebugError(f"lane {outside} is not executing here (this lane vector "
                                 f"holds lanes {have} of block {self.block_coords}); lanes "
                                 f"{lanes.start}..{lanes.stop - 1} asked for")
        elif not single and not (isinstance(lanes, list | tuple | np.ndarray) and all(
                isinstance(i, int | np.integer) and not isinstance(i, bool | np.bool_)
                for i in lanes)):
            raise DebugError(f"lanes must be an int, a range, a slice or a list of ints (lane "
                             f"ids within the block), got {type(lanes).__name__} "
                             f"{str(lanes)[:80]}")
        try:
            ids = np.atleast_1d(np.asarray(lanes, dtype=np.int64))
        except OverflowError:
            raise DebugError(f"lane ids must be below 2^63, got {str(lanes)[:80]}") from None
        pos = ids - base
        bad = (pos < 0) | (pos >= ctx.count)
        if np.any(bad):
            raise DebugError(f"lane {int(ids[np.argmax(bad)])} is not executing here (this lane "
                             f"vector holds lanes {have} of block {self.block_coords})")
        picked = vector[pos]
        if isinstance(got, Pointer):
            return Pointer(got.buffer, got.space, picked)
        return picked[0] if single else picked

    def _buffer_label(self, buf: Any) -> str:
        if buf.space == "global":
            return self._tensor_names.get(id(buf.data), buf.name)
        return buf.name

    # L1 ---------------------------------------------------------------------------------------

    def _ctx(self) -> Any:
        pos = self._pause_ctx()
        return pos[0] if pos is not None else self._watch.last_ctx

    def inspect_l1(self, offset: int, count: int, block: Any = None,
                   dtype: Any = dtypes.float32) -> np.ndarray:
        """`count` elements of type `dtype` of the block's L1, from element `offset` (byte
        `offset * itemsize`), as they are now. Bytes no `alloc_local` of the kernel covers
        can hold nothing the kernel wrote and read as the poison of fresh L1 (NaN for floats);
        bytes of a buffer not written yet hold its poison (L1 is poisoned when a block
        starts)."""
        from pypto.backend.interpreter.l1 import poison_value

        dt = np.dtype(dtype) if isinstance(dtype, np.dtype) else dtypes.as_dtype(dtype).np_dtype
        if block is not None and self._linear_block(block) != self.block_id:
            raise DebugError(f"this session runs block {self.block_coords} only; "
                             f"restart(block_id={self._linear_block(block)}) to look at "
                             f"block {block}")
        offset, count = _whole(offset, "offset"), _whole(count, "count")
        l1_bytes = self.exe.layout.l1_bytes
        lo, hi = offset * dt.itemsize, (offset + count) * dt.itemsize
        if offset < 0 or count < 0 or hi > l1_bytes:
            raise DebugError(f"L1 elements {offset}..{offset + count - 1} of {dt} (bytes "
                             f"{lo}..{hi - 1}) are outside the block's L1 of {l1_bytes} bytes")
        raw = np.zeros(hi - lo, dtype=np.uint8)
        live = np.zeros(hi - lo, dtype=bool)
        ctx = self._ctx()
        if ctx is not None and ctx.memory.arenas:
            ctx.memory.settle_l1()  # lazy loads (tiles.py) into L1 first: the bytes as they are now
            arena = ctx.memory.arenas[0]
            layout = self.exe.layout
            base = 0
            if arena.blocks > 1:  # a batch vector: this block's arena
                base = (ctx.first_lane // ctx.block_lanes) % arena.blocks * layout.extent
            for slot in layout.slots.values():  # poisoned at block start, then written
                a, b = max(slot.offset, lo), min(slot.end, hi)
                if a < b:
                    raw[a - lo:b - lo] = arena.bytes[base + a:base + b]
                    live[a - lo:b - lo] = True
        out = raw.view(dt).copy()
        written = live.reshape(count, dt.itemsize).all(axis=1) if count else live[:0]
        out[~written] = poison_value(dt)
        return out

    def inspect_tile(self, name: str, block: Any = None) -> np.ndarray:
        """The L1 buffer `name` as it is now: a tile (`pto.alloc_tile(rows, cols)`) as its
        rows x cols matrix, any other buffer as its elements (its own dtype)."""
        slots = [s for s in self.exe.layout.slots.values() if s.name == name]
        if not slots:
            names = ", ".join(sorted({s.name for s in self.exe.layout.slots.values()}))
            raise DebugError(f"no L1 buffer named {name!r}; the kernel's: {names or 'none'}")
        slot = slots[0]
        if slot.offset % slot.dtype.itemsize:
            raise DebugError(f"L1 buffer {name!r} starts at byte {slot.offset}, not a whole "
                             f"number of {slot.dtype} elements")
        values = self.inspect_l1(slot.offset // slot.dtype.itemsize, slot.count, block,
                                 dtype=slot.dtype)
        return values.reshape(slot.shape) if slot.shape is not None else values

    def l1_map(self) -> list[tuple[int, int, str, str]]:
        """(byte offset, bytes, name, allocated at) of every L1 buffer of the kernel."""
        slots = sorted(self.exe.layout.slots.values(), key=lambda s: s.offset)
        return [(s.offset, s.nbytes, s.name, s.location) for s in slots]

    def _linear_block(self, block: Any) -> int:
        if isinstance(block, int | np.integer):
            return int(block)
        x, y, z = (tuple(block) + (0, 0))[:3]
        gx, gy, _ = self.grid
        return x + gx * (y + gy * z)


def _whole(value: Any, what: str) -> int:
    """`value` as an int, or a `DebugError` saying `what` must be one (1.5, "x", True are not)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise DebugError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    return int(value)
