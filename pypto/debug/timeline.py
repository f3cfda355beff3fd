"""The session's instruction timeline: which instruction issued on which cycle.

`instruction_timeline(session)` is the one place the debugger gets cycles from. The focus block
is run once more by the one executor, on copies of the tensor arguments (the session's own run
and the user's output are left alone), through `pypto.backend.cost_model.run.run_and_cost` — the
entry point `pto.profile` and `pypto-opt --emit=cost|timeline|trace` use — with `_IssueLog`
(which lanes executed each instruction) chained after the executor's `Trace`. Each entry's
`cycle` is the cycle the session's cost model (`model`: "fused" or "table", the latencies of
the target file) starts that instruction on its pipe (`end` when it is done), the same cycle
`pto.profile(...).timeline` gives for that block; `entry.model` names the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pypto.backend.interpreter.instruments import Instrument
from pypto.debug.instructions import is_instruction
from pypto.debug.view import Lanes


@dataclass(frozen=True)
class TimelineEntry:
    """One issued instruction: `Cycle {cycle}: Lane {lane}: {inst}`."""

    cycle: int         # the cycle it starts on (from the block's start)
    end: int           # the cycle it is done
    lane: Lanes        # the lanes (ids within the block) that executed it
    inst: str          # LOAD, FMA, STORE, MMA, LOAD_MMA, ...
    source: str        # "file.py:19", the Python line it came from
    pipe: str          # SCALAR, VECTOR, CUBE, MTE_IN, MTE_OUT
    op_id: int
    model: str         # the cost model `cycle` comes from: "fused" or "table"

    def __str__(self) -> str:
        return f"Cycle {self.cycle}: Lane {self.lane}: {self.inst}"


class _IssueLog(Instrument):
    """Logs (op id, lanes) of each op the focus executes, in execution order."""

    def __init__(self, session: Any):
        self.s = session
        self.log: list[tuple[int, Lanes]] = []
        self._whole: Lanes | None = None

    def after(self, op_id: int, ctx: Any, mask: Any, value: Any) -> None:
        info = self.table[op_id]
        if info.op.regions or not self.s._in_focus(info, ctx, mask):
            return  # if / for / pipeline: structure, issued as the ops inside them
        if info.collective or mask is None and self.s.warp is None and ctx.count == \
                self.s.block_lanes:
            if self._whole is None:
                self._whole = Lanes(np.arange(self.s.block_lanes))
            lanes = self._whole  # the common case: every lane of the block
        else:
            lanes = Lanes(self.s._focus_lanes(ctx, mask))
        self.log.append((op_id, lanes))


def instruction_timeline(session: Any, every_op: bool = False) -> list[TimelineEntry]:
    """The focus block's PTO instructions with their cycles (see the module docstring), in
    cycle order; `every_op=True` adds what the cost model also costs (ids, address arithmetic,
    lane arithmetic on their pipes). For a kernel that fails, the instructions issued before
    the failure."""
    from pypto.backend.cost_model import ModelParams
    from pypto.backend.cost_model.run import run_and_cost, scratch_args

    log = _IssueLog(session)
    params = ModelParams.of(session.exe.target, session.model)
    profile = run_and_cost(session.exe, session.grid, session.block,
                           scratch_args(session.args), params, instruments=[log],
                           blocks=[session.block_id], partial=True)
    entries = _modelled(session, profile, log)
    if every_op:
        return entries
    return [e for e in entries if is_instruction(log.table[e.op_id])]


def _modelled(session: Any, profile: Any, log: _IssueLog) -> list[TimelineEntry]:
    """The cost model's schedule of the focus block, with the lanes each instruction ran on
    (the k-th execution of an op in the schedule is its k-th execution in the log: each pipe
    is in order)."""
    if not profile.launch.classes:
        return []
    lanes_of: dict[int, list[Lanes]] = {}
    for op_id, lanes in log.log:
        lanes_of.setdefault(op_id, []).append(lanes)
    seen: dict[int, int] = {}
    whole = Lanes(np.arange(session.block_lanes))
    out = []
    for e in sorted(profile.timeline, key=lambda e: (e.op_id, e.cycle)):
        if e.op_id < 0:
            continue  # not an instruction: the launch's HBM rows
        part = e.pipe != profile.facts[e.op_id].pipe  # a fused load's copy on MTE_IN
        k = seen.get(e.op_id, 0) - (1 if part else 0)
        if not part:
            seen[e.op_id] = k + 1
        runs = lanes_of.get(e.op_id, [])
        lanes = runs[k] if k < len(runs) else whole
        out.append(TimelineEntry(e.cycle, e.end, lanes, e.inst, e.source, e.pipe, e.op_id,
                                 session.model))
    out.sort(key=lambda t: (t.cycle, t.op_id))
    return out


__all__ = ["TimelineEntry", "instruction_timeline"]
