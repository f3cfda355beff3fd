"""The session's instruction timeline: which instruction issued on which cycle.

`instruction_timeline(session)` is the one place the debugger gets cycles from.

INTERIM (until the cost model, `pto.profile`, lands on main): the cycles are an *issue order*,
not a model. The focus block is run once more, on copies of the tensor arguments, with an
instrument that logs every PTO instruction as it executes; the n-th instruction issued gets
cycle n (a single-issue, in-order machine with one cycle per instruction: no latencies, no
pipe overlap, no fusion). Every entry says so in `.model` (`"issue-order"`), and the REPL
prints that label above the timeline. These are not the cost model's cycles and must not be
read as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pypto.backend.interpreter.instruments import Instrument
from pypto.debug.view import Lanes
from pypto.errors import KernelError

ISSUE_ORDER = "issue-order"
"""`TimelineEntry.model` of the interim timeline: cycle = position in the issue order."""


@dataclass(frozen=True)
class TimelineEntry:
    """One issued instruction: `Cycle {cycle}: Lane {lane}: {inst}`."""

    cycle: int
    lane: Lanes        # the lanes (ids within the block) that executed it
    inst: str          # LOAD, FMA, STORE, MMA, ...
    source: str        # "file.py:19", the Python line it came from
    pipe: str          # SCALAR, VECTOR, CUBE, MTE_IN, MTE_OUT
    op_id: int
    model: str         # where `cycle` comes from (ISSUE_ORDER, or the cost model's name)

    def __str__(self) -> str:
        return f"Cycle {self.cycle}: Lane {self.lane}: {self.inst}"


class _IssueLog(Instrument):
    """Logs (op id, lanes) of each PTO instruction of the focus, in execution order."""

    def __init__(self, session: Any):
        self.s = session
        self.log: list[tuple[int, Lanes]] = []
        self._whole: Lanes | None = None

    def after(self, op_id: int, ctx: Any, mask: Any, value: Any) -> None:
        from pypto.debug.session import is_instruction

        info = self.table[op_id]
        if not is_instruction(info) or not self.s._in_focus(info, ctx, mask):
            return
        if info.collective or mask is None and self.s.warp is None and ctx.count == \
                self.s.block_lanes:
            if self._whole is None:
                self._whole = Lanes(np.arange(self.s.block_lanes))
            lanes = self._whole  # the common case: every lane of the block
        else:
            lanes = Lanes(self.s._focus_lanes(ctx, mask))
        self.log.append((op_id, lanes))


class _Scratch:
    """A copy of a device tensor for a side run (same dtype and contents)."""

    freed = False

    def __init__(self, data: np.ndarray):
        self.data = data.copy()


def instruction_timeline(session: Any) -> list[TimelineEntry]:
    """The focus block's instructions with their cycles (see the module docstring); for a
    kernel that fails, the instructions issued before the failure."""
    from pypto.debug.session import kind_of

    log = _IssueLog(session)
    args = [_Scratch(a.data) if hasattr(a, "freed") and hasattr(a, "data") else a
            for a in session.args]
    try:
        session.exe.run(session.grid, session.block, args, instrument=log,
                        blocks=[session.block_id])
    except KernelError:
        pass  # a failing kernel: the instructions issued up to the failure
    table = log.table
    out = []
    for cycle, (op_id, lanes) in enumerate(log.log):
        info = table[op_id]
        file = info.location.rsplit(":", 2)[0]
        out.append(TimelineEntry(cycle, lanes, kind_of(info), f"{file}:{info.line}", info.pipe,
                                 op_id, ISSUE_ORDER))
    return out


__all__ = ["ISSUE_ORDER", "TimelineEntry", "instruction_timeline"]
