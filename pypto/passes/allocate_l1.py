"""Place every L1 buffer at a byte offset, sharing bytes between buffers never live together.

`pto-allocate-l1` (docs/passes.md#pto-allocate-l1) writes each `pto.alloc_local`'s `offset` property (bytes into the
block's L1), which the interpreter honours. Offsets and sizes are multiples of the target's
`l1_align_bytes`. Live ranges and the rules for sharing bytes (a block-level synchronisation
point between two buffers' lives) are in `pypto.analysis.l1_liveness`. The peak usage is
reported as a remark; a kernel whose peak exceeds the target's L1 is an `L1CapacityError`
naming the buffers live together at the peak, their sizes and the peak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass

from pypto.analysis.l1_liveness import (
    Layout,
    Placement,
    functions,
    location_text,
    plan_layout,
    slots_of,
)
from pypto.analysis.uniformity import located_error
from pypto.backend.targets import default_target
from pypto.errors import L1CapacityError
from pypto.diagnostics import attach_op, emit_remark


@dataclass(frozen=True)
class L1Options:
    """The `l1-bytes` / `align` options shared by the passes that reason about L1 capacity;
    0 means "the target's" (`pto.compile` fills in the target it compiles for)."""

    l1_bytes: int = 0
    align: int = 0

    def __post_init__(self) -> None:
        if self.l1_bytes < 0:
            raise ValueError(f"l1-bytes must be positive (0: the target's), got {self.l1_bytes}")
        if self.align < 0 or self.align & (self.align - 1):
            raise ValueError(f"align must be a power of two (0: the target's), got {self.align}")

    @property
    def capacity(self) -> int:
        return self.l1_bytes or default_target().l1_bytes

    @property
    def alignment(self) -> int:
        return self.align or default_target().l1_align_bytes


def kib(nbytes: int) -> str:
    """`196608` -> `192 KiB`, `1000` -> `1000 bytes`: sizes as a kernel author reads them."""
    if nbytes >= 1024 and nbytes % 1024 == 0:
        return f"{nbytes // 1024} KiB"
    if nbytes >= 1024:
        return f"{nbytes / 1024:.1f} KiB"
    return f"{nbytes} bytes"


def describe_placement(p: Placement) -> str:
    """`'A_tile' 16384 bytes at offset 0 (k.py:12, 2 slots)`."""
    slots = slots_of(p.live.alloc)
    where = location_text(p.live.alloc) + (f", {slots} slots" if slots > 1 else "")
    return f"'{p.name}' {p.nbytes} bytes at offset {p.offset} ({where})"


def capacity_error(kernel: func.FuncOp, layout: Layout) -> L1CapacityError:
    """The `L1CapacityError` for a layout that does not fit: the buffers live together at the
    peak (every buffer when they never are, and only fragmentation is to blame), located at
    the first buffer that crosses the limit."""
    live_bytes, live = layout.live_peak()
    if live_bytes <= layout.capacity:
        live = layout.placements
    live = sorted(live, key=lambda p: p.offset)
    listed = ", ".join(describe_placement(p) for p in live)
    over = next((p for p in sorted(layout.placements, key=lambda p: p.offset)
                 if p.end > layout.capacity), layout.placements[-1])
    error = located_error(
        L1CapacityError,
        f"kernel '{kernel.sym_name.data}' needs {layout.peak} bytes of L1 ({kib(layout.peak)}) "
        f"but the target has {layout.capacity} ({kib(layout.capacity)}); live together at "
        f"the peak: {listed}; use smaller tiles, fewer double-buffer stages "
        f"(pto-double-buffer{{stages=N}}) or a target with more L1", over.live.alloc)
    assert isinstance(error, L1CapacityError)
    return attach_op(error, over.live.alloc)


def apply_layout(layout: Layout) -> None:
    """Write the layout's offsets into the `alloc_local` ops."""
    for p in layout.placements:
        p.live.alloc.properties["offset"] = IntegerAttr(p.offset, i64)


@dataclass(frozen=True)
class AllocateL1Pass(L1Options, ModulePass):
    """Place L1 buffers at byte offsets, reusing dead buffers' bytes; L1CapacityError if too big.

    Buffers whose live ranges are separated by a block-level synchronisation point share bytes;
    offsets and sizes are multiples of `align` (default: the target's `l1_align_bytes`). The
    peak usage is reported as a remark. Options: `l1-bytes` (default: the target's L1
    capacity), `align`.
    """

    name = "pto-allocate-l1"
    # It only sets `alloc_local` offsets: no value, buffer or control flow changes, so the
    # analyses of pypto.analysis.cache (lane-varying values, lane models) stay valid.
    preserves_analyses: ClassVar[bool] = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in functions(op):
            layout = plan_layout(kernel, capacity=self.capacity, align=self.alignment)
            if not layout.placements:
                continue
            if not layout.fits:
                raise capacity_error(kernel, layout)
            apply_layout(layout)
            saved = layout.total - layout.peak
            count = len(layout.placements)
            emit_remark(kernel, f"L1 of '{kernel.sym_name.data}': peak {layout.peak} of "
                        f"{layout.capacity} bytes ({100 * layout.peak / layout.capacity:.1f}%), "
                        f"{count} buffer{'s' if count != 1 else ''}"
                        + (f", {saved} bytes shared by buffers never live together"
                           if saved else ""))
