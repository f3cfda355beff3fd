"""The executor's `Trace`, plus where tile instructions point into L1.

Double buffering keeps two tiles in one L1 buffer and picks one with a run-time offset
(`pto.addptr %buf, %slot * 4096`); the IR alone cannot tell whether a copy into one slot and an
MMA reading the other touch the same bytes. `CostTrace` also records, as an event of kind
"offset" (its `token` holds the value), the element offset of every block-uniform pointer into
L1 computed by `pto.addptr`, so the engine can order accesses by the bytes they touch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto.backend.interpreter.instruments import OpTable, Trace
from pypto.dialects.traits import AddressType, offset_base


class CostTrace(Trace):
    def begin(self, table: OpTable, grid: tuple[int, int, int],
              block: tuple[int, int, int]) -> None:
        super().begin(table, grid, block)
        # pointer arithmetic giving an L1 address: the offsets to record
        self._l1_offsets = {
            info.id for info in table
            if offset_base(info.op) is not None and isinstance(t := info.op.results[0].type,
                                                               AddressType)
            and t.space == "local"}

    def after(self, op_id: int, ctx: Any, mask: Any, value: Any) -> None:
        super().after(op_id, ctx, mask, value)
        if op_id not in self._l1_offsets:
            return
        if np.ndim(value) == 0:
            offset = int(value)
        else:
            flat = np.asarray(value).reshape(-1)
            if flat.size == 0 or not (flat == flat[0]).all():
                return  # a per-lane pointer: the engine falls back to the whole buffer
            offset = int(flat[0])
        log, _, _ = self._log(ctx)
        log.records.append((op_id, 1, None, offset, "offset"))
