"""`CostTrace`: the trace the cost model records — the executor's `Trace` (instructions, active
lanes, tokens, and where block-uniform L1 pointers point), plus whatever the model needs beyond
it from the run.

There is one trace: `run_and_cost` (run.py) records it for `pto.profile`, `pypto-opt
--emit=cost|timeline|trace` and the debugger's timeline alike, so they cost the same events. A
field added here that derives from lane addresses must be covered by the block-class keys
(classes.py: addresses are keyed by their pattern over the lanes and their alignment).

Beyond the executor's trace, for the pointers lane loads, stores, fmas and atomics use, it
records per block what the lanes' addresses cost (access.py): memory sectors touched (global),
L1 bank passes (local), the most lanes on one address (atomics), as events of kind "sectors" /
"banks" / "same" whose `lanes` field holds the figure (per block, so blocks that differ fall
into different classes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import Operation

from pypto.backend.cost_model.access import AccessGeometry, access_stats
from pypto.backend.cost_model.footprint import lane_spans
from pypto.backend.interpreter.instruments import OpTable, Trace
from pypto.dialects import pto
from pypto.dialects.traits import (
    declared_accesses,
    has_tile_footprint,
    is_block_collective,
    offset_base,
)


def _lane_access(op: Any) -> tuple[Any, bool] | None:
    """(address, atomic) of a lane memory instruction (load, store, fma, atomic: one element
    per active lane through its address operand, declared `AccessesMemory`), else None."""
    accesses = declared_accesses(op)
    if not accesses or has_tile_footprint(op) or is_block_collective(op):
        return None
    kinds = {a.kind for a in accesses}
    return op.operands[accesses[0].operand], kinds == {"read", "write"}


def _access_stats_wanted(table: OpTable) -> dict[int, tuple[tuple[str, ...], int]]:
    """By op id of each pto.addptr whose result is the address of a lane memory instruction:
    the access figures it gets ("sectors" / "banks" / "same") and its element size in bytes
    (from the ops' traits, once per table)."""
    wanted: dict[Any, set[str]] = {}
    for info in table:
        op = info.op
        lane = _lane_access(op)
        if lane is None:
            continue
        address, atomic = lane
        if not isinstance(address.owner, Operation) or offset_base(address.owner) is None:
            continue
        kinds = wanted.setdefault(address.owner, set())
        kinds.add("sectors" if address.type.space == "global" else "banks")
        if atomic:
            kinds.add("same")
    stats = {}
    for op, kinds in wanted.items():
        elem = np.dtype(_np_dtype(pto.element_type_of(op.result.type))).itemsize
        stats[table.id_of(op)] = (tuple(sorted(kinds)), elem)
    return stats


class CostTrace(Trace):
    """The executor's `Trace`, recorded for the cost model (see the module docstring)."""

    def __init__(self, geometry: AccessGeometry | None = None) -> None:
        super().__init__()
        self.geometry = geometry or AccessGeometry()
        self._stats: dict[int, tuple[tuple[str, ...], int]] = {}
        # op id of a global lane address -> per traced block: (block, lowest, highest element
        # offset its active lanes touch) (footprint.py: the L2 rule's footprints)
        self.spans: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}

    def begin(self, table: OpTable, grid: tuple[int, int, int],
              block: tuple[int, int, int]) -> None:
        super().begin(table, grid, block)
        self._stats = table.derived("cost-access", _access_stats_wanted)

    def after(self, op_id: int, ctx: Any, mask: Any, value: Any) -> None:
        super().after(op_id, ctx, mask, value)
        wanted = self._stats.get(op_id)
        if wanted is not None and "sectors" in wanted[0] and value is not None:
            self._record_span(op_id, ctx, mask, value)
        if wanted is not None and np.ndim(value) > 0:
            self._record_access(op_id, ctx, mask, value, *wanted)

    def _record_span(self, op_id: int, ctx: Any, mask: Any, value: Any) -> None:
        bl = ctx.block_lanes if ctx.count >= ctx.block_lanes else ctx.count
        try:
            found = lane_spans(value, mask, ctx.count, bl)
        except (TypeError, ValueError):
            found = None
        if found is None:
            return
        blocks, lo, hi = found
        first = ctx.first_lane // ctx.block_lanes
        self.spans.setdefault(op_id, []).append((blocks + first, lo, hi))

    def lane_spans(self) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per global lane address (op id): (blocks, lowest, highest element offset), every
        traced execution (footprint.py)."""
        return {op: tuple(np.concatenate(parts) for parts in zip(*runs))  # type: ignore[misc]
                for op, runs in self.spans.items()}

    def _record_access(self, op_id: int, ctx: Any, mask: Any, value: Any,
                       kinds: tuple[str, ...], elem: int) -> None:
        if ctx.count < ctx.block_lanes:  # one warp (warp mode): its own figure, per warp
            count = bl = ctx.count
            warp = ctx.warp_index
        else:
            count, bl, warp = ctx.count, ctx.block_lanes, None
        log, _, n = self._log(ctx)
        for kind in kinds:
            per_block = access_stats(kind, value, mask, count, bl, elem, self.geometry)
            if per_block is None or per_block.size != n:
                continue
            figure: Any = int(per_block[0]) if (per_block == per_block[0]).all() else per_block
            log.records.append((op_id, figure, warp, None, kind))


def _np_dtype(t: Any) -> Any:
    from pypto import dtypes

    try:
        return dtypes.np_dtype_of(t)
    except Exception:  # noqa: BLE001 - an opaque element type: 4 bytes
        return np.float32
