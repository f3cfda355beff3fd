"""L1 as one address space per block: a byte array, each buffer a typed view at an offset.

On the device a block's L1 is one scratchpad; `pto.alloc_local` names a range of it. The
interpreter models exactly that, so that two buffers placed at overlapping offsets (by
`pto-allocate-l1`, or by hand in the IR) really do overwrite each other — a wrong placement
changes results and is caught, instead of being hidden by separate NumPy arrays.

The layout is static (every `alloc_local` is a declaration): a buffer sits at its op's
`offset` property (bytes) when it has one, otherwise after every placed buffer in allocation
order, aligned to the target's `l1_align_bytes`. The layout is computed when a kernel is
compiled; a kernel whose buffers do not fit the target's `l1_bytes` is an `L1CapacityError`
then, naming the buffers and their sizes.

Per block, the arena covers the bytes the kernel's buffers span (its *extent*, at most
`l1_bytes`): bytes no buffer covers can never be addressed, so they need no storage. Bookkeeping
that follows memory — the written-yet flags of `check_uninitialized`, the race detector's
shadow, in-flight copy regions — is kept per *granule* of the arena (the largest unit every
buffer's element size is a multiple of), so it too follows offsets, not buffer names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided
from xdsl.dialects import func

from pypto import dtypes
from pypto.analysis.uniformity import walk
from pypto.diagnostics import op_location, source_loc
from pypto.backend.interpreter.shadow import Shadow
from pypto.dialects import pto
from pypto.dialects.traits import accesses_space, is_block_collective
from pypto.errors import L1CapacityError

DEFAULT_ALIGN = 32
"""Alignment of placed buffers when the target file does not give `l1_align_bytes`."""


@dataclass(frozen=True)
class L1Slot:
    """Where one `alloc_local` lives in the block's L1."""

    op_id: int          # the alloc_local's op id (pre-order walk index)
    name: str
    offset: int         # bytes from the start of L1
    count: int          # elements
    dtype: np.dtype
    location: str       # "file.py:12" of the alloc_local
    loc: tuple[str, int, int] | None = None  # (file, line, column) for CompileErrors
    shape: tuple[int, int] | None = None     # a tile's (rows, cols) (pto.alloc_tile)

    @property
    def nbytes(self) -> int:
        return self.count * self.dtype.itemsize

    @property
    def end(self) -> int:
        return self.offset + self.nbytes


class L1Layout:
    """The static placement of a kernel's L1 buffers."""

    tile_only = False
    """Only tile instructions (block collectives) touch L1: no lane access, no staging slot.
    Then fresh L1 may be poisoned lazily (tiles.py `FreshL1`): no lane can read it."""

    def __init__(self, slots: list[L1Slot], l1_bytes: int, align: int):
        self.slots = {s.op_id: s for s in slots}
        self.l1_bytes = l1_bytes
        sizes = {s.dtype.itemsize for s in slots} or {1}
        self.granule = math.gcd(*sizes)
        widest = max(sizes)
        end = max((s.end for s in slots), default=0)
        self.extent = -(-max(end, 1) // widest) * widest  # arena bytes per block
        self.align = align

    @property
    def peak(self) -> int:
        """Bytes of L1 the kernel occupies (highest end of a buffer)."""
        return max((s.end for s in self.slots.values()), default=0)

    @staticmethod
    def of(kernel: func.FuncOp, target: Any) -> L1Layout:
        align = int(getattr(target, "l1_align_bytes", DEFAULT_ALIGN))
        allocs = [(i, op) for i, op in enumerate(walk(kernel.body.block.ops))
                  if isinstance(op, pto.AllocLocalOp)]
        slots: list[L1Slot] = []
        placed_end = 0
        for i, op in allocs:  # placed by a pass (or by hand): honour the offset
            if op.l1_offset is None:
                continue
            slot = _slot(i, op, op.l1_offset)
            if slot.offset < 0 or slot.offset % slot.dtype.itemsize:
                raise _capacity_error(f"L1 buffer '{slot.name}' has offset {slot.offset}, which "
                                      f"is not a non-negative multiple of its element size "
                                      f"({slot.dtype.itemsize} bytes)", slot)
            slots.append(slot)
            placed_end = max(placed_end, slot.end)
        cursor = placed_end
        for i, op in allocs:  # the rest one after another, in allocation order
            if op.l1_offset is not None:
                continue
            cursor = -(-cursor // align) * align
            slot = _slot(i, op, cursor)
            slots.append(slot)
            cursor = slot.end
        layout = L1Layout(slots, target.l1_bytes, align)
        layout.tile_only = not any(
            getattr(op, "slot", None) is not None or  # an npu lane access staged through L1
            (not is_block_collective(op) and accesses_space(op, "local"))
            for op in walk(kernel.body.block.ops))
        if layout.peak > target.l1_bytes:
            ordered = sorted(slots, key=lambda s: s.offset)
            listing = ", ".join(f"'{s.name}' {s.nbytes} bytes at offset {s.offset} "
                                f"({s.location})" for s in ordered)
            first_over = next(s for s in ordered if s.end > target.l1_bytes)
            raise _capacity_error(
                f"kernel '{kernel.sym_name.data}' needs {layout.peak} bytes of L1 but target "
                f"'{target.name}' has {target.l1_bytes}: {listing}; use smaller tiles or fewer "
                f"buffers", first_over)
        return layout

    def slot_at(self, byte: int, other_than: int | None = None) -> L1Slot | None:
        """The buffer covering block-local byte `byte` (to name a neighbour in errors)."""
        for s in sorted(self.slots.values(), key=lambda s: s.offset):
            if s.op_id != other_than and s.offset <= byte < s.end:
                return s
        return None


def _slot(i: int, op: pto.AllocLocalOp, offset: int) -> L1Slot:
    t = op.result.type
    name = op.result.name_hint or f"l1_{i}"
    loc = source_loc(op)
    where = op_location(op, column=False)
    pos = None if loc is None else (loc.file, loc.line, loc.column)
    return L1Slot(i, name, offset, t.size, dtypes.np_dtype_of(t.element_type), where, pos,
                  op.tile_shape)


def _capacity_error(message: str, slot: L1Slot) -> L1CapacityError:
    """An L1CapacityError located at the Python line of `slot`'s alloc_local."""
    if slot.loc is None:
        return L1CapacityError(message)
    import linecache

    filename, line, col = slot.loc
    return L1CapacityError(message, filename=filename, line=line, col=max(col - 1, 0),
                           source_line=linecache.getline(filename, line) or None)


class L1Arena:
    """The L1 of the blocks of one lane vector: `blocks` arenas of `layout.extent` bytes, back
    to back, plus the per-granule bookkeeping shared by every buffer."""

    def __init__(self, layout: L1Layout, blocks: int, *, track_init: bool, race_check: bool):
        self.layout = layout
        self.blocks = blocks
        self.bytes = np.empty(blocks * layout.extent, dtype=np.uint8)
        self.poison()
        self.granules_per_block = layout.extent // layout.granule
        n = blocks * self.granules_per_block
        self.init = np.zeros(n, dtype=bool) if track_init else None
        self.shadow = Shadow(n, self.granules_per_block) if race_check else None
        # the tile instructions' plans (strategies/batch_copy.py `CopyPlan`, tiles.py
        # `_MmaPlan`), kept with the arena
        # for the lane vectors that reuse it (the launches of one shape)
        self.plans: dict[tuple[Any, ...], Any] = {}

    def poison(self) -> None:
        """L1 is undefined when a block starts: every buffer's bytes get its type's poison
        (where buffers share bytes, the later one's; any of them is recognisable)."""
        for slot in self.layout.slots.values():
            self.poison_bytes(slot, slot.offset, slot.end)

    def poison_bytes(self, slot: L1Slot, lo: int, hi: int) -> None:
        """Poison block-local bytes lo..hi-1 (whole elements of `slot`) in every block."""
        data, stride = self.view(slot)
        isz = slot.dtype.itemsize
        e0, e1 = (lo - slot.offset) // isz, (hi - slot.offset) // isz
        if stride:
            as_strided(data[e0:], shape=(self.blocks, e1 - e0), strides=(stride * isz, isz),
                       writeable=True)[...] = poison_value(slot.dtype)
        else:
            data[e0:e1] = poison_value(slot.dtype)

    def reset(self, poison: bool = True) -> None:
        """As freshly made, for new blocks (the executor reuses arenas between lane vectors of
        one launch shape instead of allocating them again). `poison=False`: the caller defers
        the poisoning (tiles.py `FreshL1`)."""
        if poison:
            self.poison()
        if self.init is not None:
            self.init.fill(False)
        if self.shadow is not None:
            self.shadow.reset()

    def view(self, slot: L1Slot) -> tuple[np.ndarray, int]:
        """(data, stride): the buffer's elements as a flat typed view starting at its first
        element; `stride` elements separate the copies of consecutive blocks (0: one block)."""
        itemsize = slot.dtype.itemsize
        if self.blocks == 1:
            return self.bytes[slot.offset:slot.end].view(slot.dtype), 0
        tail = self.bytes[slot.offset:].view(slot.dtype)
        return tail, self.layout.extent // itemsize

    def granule_view(self, array: np.ndarray, slot: L1Slot, size: int) -> np.ndarray:
        """A view of per-granule `array` indexed like the buffer's data (one entry per element,
        at the element's first granule)."""
        g = self.layout.granule
        step = slot.dtype.itemsize // g
        start = slot.offset // g
        base = array[start:]
        return as_strided(base, shape=(size,), strides=(step * array.itemsize,), writeable=True)


def poison_value(dtype: np.dtype) -> Any:
    """Fresh L1 contents: NaN for floats, a recognisable pattern for ints (docs/interpreter.md#l1-one-address-space-per-block)."""
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return np.nan
    if dtype.kind == "b":
        return True
    return np.array(0x7FBADBAD).astype(dtype)


__all__ = ["L1Arena", "L1Layout", "L1Slot", "poison_value"]
