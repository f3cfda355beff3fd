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

from pypto.backend.interpreter.instruments import Trace
from pypto.dialects import pto


class CostTrace(Trace):
    def after(self, op_id: int, ctx: Any, mask: Any, value: Any) -> None:
        super().after(op_id, ctx, mask, value)
        op = self.table[op_id].op
        if not isinstance(op, pto.AddPtrOp) or op.result.type.space != "local":
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
