"""Instruments: watching the one executor run, without a second interpreter.

Every op of a kernel has an *op id*: its index in the pre-order walk of the kernel's `func.func`.
The op table (`OpTable`, one `OpInfo` per op id) keeps with the generated code what an
instrument needs to interpret an id: the op, its Python source location, its pipe, and the
generated names of its SSA results.

An instrumented variant of the generated code (codegen's `instrumented=True`) calls two hooks
around every op (not around region terminators):

    _ins.before(op_id, _ctx, _m)          # about to execute, with the active-lane mask
    _ins.after(op_id, _ctx, _m, value)    # executed; value = its first result (for pto.wait:
                                          # the token it waited for), else None

`_ctx` is the lane vector (`LaneContext`: a whole grid chunk, several blocks, one block or one
warp, depending on the execution mode) and `_m` its mask (`None` = every lane). Instruments are
orthogonal to the modes: they read block and warp geometry from the context. With no instrument
the executor runs the plain variant, which has no hooks at all.

Instruments here: `Count` (executions and active lanes per op), `Trace` (events per block for the
cost model), `Step` (suspend before each op and resume on demand, for the debugger). `Chain`
attaches several at once.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.traits import IsTerminator as _IsTerminator

from pypto.analysis.uniformity import walk
from pypto.diagnostics import op_location as location_of, source_loc
from pypto.dialects.traits import (
    AddressType,
    is_block_collective,
    kind_of,
    offset_base,
    pipe_of,
    starts_copy,
    sync_scope,
    waits_on,
)


class LaneVector(Protocol):
    """What an instrument may read of the lane vector an op ran on (`LaneContext` and the
    window contexts implement it): its geometry and the copies in flight."""

    count: int                 # lanes in the vector
    first_lane: int            # linear launch lane of vector position 0
    local_base: int            # lane id within its block of vector position 0
    block_lanes: int           # lanes per block
    warp_size: int
    warp_index: int | None     # warp mode: the warp this vector is; else None
    inflight: dict[int, Any]   # async copies not yet waited for, by token
    ramp: Any                  # 0 .. count - 1 (int64)

    def local_id(self, dim: int) -> Any: ...

    def vector_warps(self) -> Any: ...


Mask = Any
"""The active lanes of a vector: None (all), False (none) or a bool array per lane."""


# op table -------------------------------------------------------------------------------------


def once_per_block(op: Operation) -> bool:
    """Run once for the whole block (a tile instruction): block-collective ops other than the
    block barrier, which every warp executes (and which warp mode runs per warp)."""
    return is_block_collective(op) and sync_scope(op) is None


@dataclass(frozen=True)
class OpInfo:
    """One op of a compiled kernel."""

    id: int
    op: Operation
    name: str            # "pto.load", "arith.addf", ...
    location: str        # Python "file.py:12:8" (survives passes: ops keep their location)
    pipe: str            # SCALAR, VECTOR, CUBE, MTE_IN, MTE_OUT
    collective: bool     # a tile instruction: runs once per block (`once_per_block`)
    hooked: bool         # has before/after hooks in instrumented code (not a terminator)

    @property
    def line(self) -> int | None:
        loc = source_loc(self.op)
        return loc.line if loc is not None else None

    @property
    def kind(self) -> str:
        """Short upper-case instruction kind: LOAD, STORE, FMA, MMA, COPY_IN, ADDF, ..."""
        return kind_of(self.op)


class OpTable(Sequence[OpInfo]):
    """Op id -> OpInfo for one kernel, plus where each SSA value lives in generated code."""

    def __init__(self, ops: list[OpInfo]):
        self._ops = ops
        self._ids = {info.op: info.id for info in ops}
        # SSA value -> generated variable name, and for lane-affine values the name of their
        # scalar base (the array itself may not exist: the value is `ramp + base`)
        self.names: dict[SSAValue, str] = {}
        self.affine: dict[SSAValue, str] = {}
        self.local: set[SSAValue] = set()  # affine in each block's local ids (batch mode)
        # what instruments derive from the ops (event kinds, the cost model's op facts),
        # computed at the first run that asks and kept with the table, which lives as long as
        # its compiled kernel: a run asks the op traits once per kernel, not once per launch
        self._derived: dict[str, Any] = {}

    @staticmethod
    def of(kernel: Any) -> OpTable:
        ops = []
        for i, op in enumerate(walk(kernel.body.block.ops)):
            ops.append(OpInfo(i, op, op.name, location_of(op), pipe_of(op), once_per_block(op),
                              not op.has_trait(_IsTerminator) or op.name == "func.return"))
        return OpTable(ops)

    def __getitem__(self, index: Any) -> Any:
        return self._ops[index]

    def __len__(self) -> int:
        return len(self._ops)

    def id_of(self, op: Operation) -> int:
        return self._ids[op]

    def derived(self, key: str, make: Callable[[OpTable], Any]) -> Any:
        """`make(self)`, computed once per table and `key` (the ops of a compiled kernel do not
        change). Two threads asking at once may both compute it; they get equal values."""
        value = self._derived.get(key)
        if value is None:
            value = self._derived.setdefault(key, make(self))
        return value

    def read(self, frame_locals: dict[str, Any], value: SSAValue, ctx: LaneVector) -> Any:
        """The run-time value of `value` in a suspended generated frame (None if not yet
        computed). Lane-affine values are rebuilt from their base."""
        base = self.affine.get(value)
        if base is not None and base in frame_locals:
            name = self.names.get(value)
            if name is not None and name in frame_locals:
                return frame_locals[name]
            return (ctx.local_id(0) if value in self.local else ctx.ramp) + frame_locals[base]
        name = self.names.get(value)
        return None if name is None else frame_locals.get(name)



# per-block geometry of one hook call ------------------------------------------------------------


def block_counts(ctx: LaneVector, mask: Mask, collective: bool) -> tuple[int, int, Any]:
    """(first block, number of blocks, active lanes per block) of a hook call. The lanes are
    an int when every block of the vector has the same count, else an array per block."""
    bl = ctx.block_lanes
    first = ctx.first_lane // bl
    n = max(1, ctx.count // bl)
    if collective:
        return first, n, bl
    if mask is None:
        return first, n, min(ctx.count, bl)
    if mask is False:
        return first, n, 0
    if n == 1:
        return first, 1, int(np.count_nonzero(mask))
    per = np.count_nonzero(np.asarray(mask).reshape(n, bl), axis=1)
    return first, n, per


def active_warps(ctx: LaneVector, mask: Mask, collective: bool) -> int:
    """Warps of the vector with at least one active lane (one per block for collectives)."""
    bl = ctx.block_lanes
    n_blocks = max(1, ctx.count // bl)
    if collective:
        return n_blocks
    ws = ctx.warp_size
    if ctx.count < bl:  # one warp (warp mode)
        return 0 if mask is False or (mask is not None and not np.any(mask)) else 1
    per_block = -(-bl // ws)
    if mask is None:
        return n_blocks * per_block
    if mask is False:
        return 0
    if bl % ws == 0:
        return int(np.count_nonzero(np.asarray(mask).reshape(-1, ws).any(axis=1)))
    return int(np.unique(ctx.vector_warps()[np.asarray(mask)]).size)


# instruments ----------------------------------------------------------------------------------


class Instrument:
    """Base class: hooks that do nothing. Subclass and override what you need."""

    table: OpTable

    def begin(self, table: OpTable, grid: tuple[int, int, int],
              block: tuple[int, int, int]) -> None:
        """Called once per launch before the first hook."""
        self.table = table

    def end(self) -> None:
        """Called once per launch after the last hook (also when the kernel failed)."""

    def before(self, op_id: int, ctx: LaneVector, mask: Mask) -> None:
        pass

    def after(self, op_id: int, ctx: LaneVector, mask: Mask, value: Any) -> None:
        pass

    def tile(self, op_id: int, ctx: LaneVector, mask: Mask, call: Callable[[], Any]) -> Any:
        """Warp mode: a block-level instruction, run once by the scheduler for the block."""
        self.before(op_id, ctx, mask)
        value = call()
        self.after(op_id, ctx, mask, value)
        return value


class Chain(Instrument):
    """Several instruments at once, called in order."""

    def __init__(self, *instruments: Instrument):
        self.instruments = instruments

    def begin(self, table: OpTable, grid: tuple[int, int, int],
              block: tuple[int, int, int]) -> None:
        self.table = table
        for ins in self.instruments:
            ins.begin(table, grid, block)

    def end(self) -> None:
        for ins in self.instruments:
            ins.end()

    def before(self, op_id: int, ctx: LaneVector, mask: Mask) -> None:
        for ins in self.instruments:
            ins.before(op_id, ctx, mask)

    def after(self, op_id: int, ctx: LaneVector, mask: Mask, value: Any) -> None:
        for ins in self.instruments:
            ins.after(op_id, ctx, mask, value)


class Count(Instrument):
    """Per op id: `executions` (warp-level issues: warps with at least one active lane, once
    per block for block-level instructions, as a GPU profiler's `inst_executed`) and `lanes`
    (active lanes summed over every execution)."""

    def __init__(self) -> None:
        self.executions: dict[int, int] = {}
        self.lanes: dict[int, int] = {}

    def after(self, op_id: int, ctx: LaneVector, mask: Mask, value: Any) -> None:
        info = self.table[op_id]
        warps = active_warps(ctx, mask, info.collective)
        if not warps:
            return
        _, _, per = block_counts(ctx, mask, info.collective)
        n = max(1, ctx.count // ctx.block_lanes)
        lanes = int(per.sum()) if isinstance(per, np.ndarray) else per * n
        self.executions[op_id] = self.executions.get(op_id, 0) + warps
        self.lanes[op_id] = self.lanes.get(op_id, 0) + lanes

    def by_kind(self) -> dict[str, int]:
        """Executions summed per op name."""
        out: dict[str, int] = {}
        for op_id, n in self.executions.items():
            name = self.table[op_id].name
            out[name] = out.get(name, 0) + n
        return out


class Event(NamedTuple):
    """One executed instruction of one block (see `Trace`)."""

    op_id: int
    lanes: int           # active lanes of the block (the whole block for block-level ops)
    warp: int | None     # the warp, in warp mode; None when the block's warps ran in lockstep
    token: int | None    # async copy token issued ("issue") or waited for ("wait")
    kind: str            # "exec" | "issue" | "wait" | "offset" (token: an L1 pointer's offset)


class _VectorLog:
    __slots__ = ("first", "n", "records")

    def __init__(self, first: int, n: int):
        self.first = first
        self.n = n
        # (op_id, lanes: int | ndarray per block, warp, token, kind)
        self.records: list[tuple[int, Any, int | None, int | None, str]] = []


def _trace_ops(table: OpTable) -> tuple[dict[int, str], frozenset[int]]:
    """What `Trace` records beyond "exec" events, by op id (from the ops' traits, once per
    table): "issue" (starts an async copy), "wait" (on its token), "wait_all"; and the
    pointer arithmetic giving an L1 address (where tile pointers point: offset events)."""
    events: dict[int, str] = {}
    for info in table:
        waits = waits_on(info.op)
        if starts_copy(info.op):
            events[info.id] = "issue"
        elif waits is not None:
            events[info.id] = "wait" if waits == "token" else "wait_all"
    l1_pointers = frozenset(
        info.id for info in table
        if offset_base(info.op) is not None
        and isinstance(t := info.op.results[0].type, AddressType) and t.space == "local")
    return events, l1_pointers


class Trace(Instrument):
    """An event per executed instruction per block, in execution order.

    Recording is per lane vector (one record for all blocks of a grid chunk or batch), so the
    cost of tracing does not grow with identical blocks; `block_classes()` groups blocks whose
    event streams are identical (the cost model simulates each class once).

    Besides the instructions, the trace records where tile instructions point into L1: the
    element offset of every block-uniform L1 pointer computed by `pto.addptr`, as an event of
    kind "offset" whose `token` holds the offset. Double buffering keeps two tiles in one
    buffer and picks one with a run-time offset; the IR alone cannot tell whether a copy into
    one slot and an MMA reading the other touch the same bytes, the cost model can from these.
    This is the one trace: `pto.profile`, `pypto-opt --emit=cost|timeline|trace` and the
    debugger's timeline all cost it (pypto.backend.cost_model.run).
    """

    def __init__(self) -> None:
        self._logs: dict[tuple[int, int], _VectorLog] = {}
        self._pending_waits: list[int] = []
        self._l1_pointers: frozenset[int] = frozenset()  # op ids of pto.addptr into L1
        self.grid: tuple[int, int, int] = (1, 1, 1)
        self.block: tuple[int, int, int] = (1, 1, 1)
        # op id -> "issue" (starts an async copy), "wait" (on its token), "wait_all"
        self._events: dict[int, str] = {}

    def begin(self, table: OpTable, grid: tuple[int, int, int],
              block: tuple[int, int, int]) -> None:
        self.table = table
        self.grid = grid
        self.block = block
        self._events, self._l1_pointers = table.derived("trace", _trace_ops)

    @property
    def num_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def _log(self, ctx: LaneVector) -> tuple[_VectorLog, int, int]:
        bl = ctx.block_lanes
        first, n = ctx.first_lane // bl, max(1, ctx.count // bl)
        log = self._logs.get((first, n))
        if log is None:
            log = self._logs[(first, n)] = _VectorLog(first, n)
        return log, first, n

    def before(self, op_id: int, ctx: LaneVector, mask: Mask) -> None:
        if self._events.get(op_id) == "wait_all":
            self._pending_waits = sorted(ctx.inflight)

    def after(self, op_id: int, ctx: LaneVector, mask: Mask, value: Any) -> None:
        info = self.table[op_id]
        _, _, lanes = block_counts(ctx, mask, info.collective)
        if isinstance(lanes, int) and lanes == 0:
            return
        log, _, _ = self._log(ctx)
        warp = ctx.warp_index if not info.collective else None
        event = self._events.get(op_id)
        if event == "issue":
            log.records.append((op_id, lanes, warp, _token(value), "issue"))
        elif event == "wait":
            log.records.append((op_id, lanes, warp, _token(value), "wait"))
        elif event == "wait_all" and self._pending_waits:
            for tok in self._pending_waits:
                log.records.append((op_id, lanes, warp, tok, "wait"))
            self._pending_waits = []
        else:
            log.records.append((op_id, lanes, warp, None, "exec"))
            if op_id in self._l1_pointers:
                offset = _uniform_offset(value)
                if offset is not None:
                    log.records.append((op_id, 1, warp, offset, "offset"))

    # reading the trace ------------------------------------------------------------------------

    def block_events(self, b: int) -> list[Event]:
        """The event stream of linear block `b`."""
        for (first, n), log in self._logs.items():
            if first <= b < first + n:
                return _events(log, b - first)
        return []

    def block_classes(self) -> list[tuple[list[int], list[Event]]]:
        """[(block ids, events)] for every distinct event stream, in order of first block."""
        classes: dict[tuple[Event, ...], list[int]] = {}
        for log in sorted(self._logs.values(), key=lambda lg: lg.first):
            varying = [r[1] for r in log.records if isinstance(r[1], np.ndarray)]
            if varying and log.n > 1:
                matrix = np.stack(varying, axis=1)  # blocks x varying records
                _, first_of, inverse = np.unique(matrix, axis=0, return_index=True,
                                                 return_inverse=True)
                groups: dict[int, list[int]] = {}
                for j, g in enumerate(np.asarray(inverse).reshape(-1)):
                    groups.setdefault(int(g), []).append(log.first + j)
                reps = [(int(first_of[g]), blocks) for g, blocks in groups.items()]
            else:
                reps = [(0, list(range(log.first, log.first + log.n)))]
            for rep, blocks in reps:
                key = tuple(_events(log, rep))
                classes.setdefault(key, []).extend(blocks)
        out = [(sorted(blocks), list(events)) for events, blocks in classes.items()]
        out.sort(key=lambda c: c[0][0] if c[0] else 0)
        return out


def _events(log: _VectorLog, j: int) -> list[Event]:
    out = []
    for op_id, lanes, warp, token, kind in log.records:
        n = int(lanes[j]) if isinstance(lanes, np.ndarray) else lanes
        if n:
            out.append(Event(op_id, n, warp, token, kind))
    return out


def _uniform_offset(value: Any) -> int | None:
    """The element offset of an L1 pointer when every lane holds the same one, else None (a
    per-lane pointer: the cost model then assumes the whole buffer)."""
    if value is None:
        return None
    if np.ndim(value) == 0:
        return int(value)
    flat = np.asarray(value).reshape(-1)
    if flat.size == 0 or not (flat == flat[0]).all():
        return None
    return int(flat[0])


def _token(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return int(value.reshape(-1)[0])
    return int(value)


# stepping -------------------------------------------------------------------------------------


class _Abort(BaseException):
    """Unwinds a suspended kernel when its debugging session is closed or restarted."""


@dataclass
class Pause:
    """Where a stepped kernel is suspended: before op `op_id`, on lane vector `ctx`."""

    op_id: int
    ctx: LaneVector
    mask: Mask
    frame: Any  # the generated function's frame (its locals hold the SSA values)

    def locals(self) -> dict[str, Any]:
        return dict(self.frame.f_locals) if self.frame is not None else {}


@dataclass
class Step(Instrument):
    """Suspend before ops and resume on demand: the debugger's engine.

    The launch runs in a worker thread; `before` blocks it until the controller asks for more.
    `start(run)` begins the launch and returns at the first pause (or the end); `resume(n)`
    executes ops until `n` more `before` hooks have been reached or `stop(info, ctx, mask)`
    says to stop; `close()` abandons the launch. An exception raised by the kernel (a
    `KernelError`) is kept in `error` and re-raised by the call that ran into it.
    """

    stop: Callable[[OpInfo, Any, Any], bool] | None = None
    paused: Pause | None = None
    finished: bool = False
    error: BaseException | None = None
    last: tuple[int, Any, Any, Any] | None = None  # (op_id, ctx, mask, value) of the last op
    _budget: int = 0
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _abort: bool = False
    _thread: threading.Thread | None = None
    _running: bool = False

    def start(self, run: Callable[[], None]) -> None:
        def worker() -> None:
            try:
                run()
            except _Abort:
                pass
            except BaseException as exc:  # reported to the controller
                self.error = exc
            with self._cond:
                self.finished = True
                self.paused = None
                self._running = False
                self._cond.notify_all()

        self._budget = 0
        self._running = True
        self._thread = threading.Thread(target=worker, name="pypto-step", daemon=True)
        self._thread.start()
        self._wait_for_pause()

    def before(self, op_id: int, ctx: LaneVector, mask: Mask) -> None:
        info = self.table[op_id]
        if self._budget > 0:
            self._budget -= 1
            if self._budget > 0 and not self._stops(info, ctx, mask):
                return
        elif self._budget < 0 and not self._stops(info, ctx, mask):
            return
        with self._cond:
            self.paused = Pause(op_id, ctx, mask, _generated_frame())
            self._running = False
            self._cond.notify_all()
            while not self._running and not self._abort:
                self._cond.wait()
            if self._abort:
                raise _Abort()

    def _stops(self, info: OpInfo, ctx: LaneVector, mask: Mask) -> bool:
        return self.stop is not None and bool(self.stop(info, ctx, mask))

    def after(self, op_id: int, ctx: LaneVector, mask: Mask, value: Any) -> None:
        self.last = (op_id, ctx, mask, value)

    def resume(self, n: int = 1) -> None:
        """Run until `n` more ops are about to execute (n <= 0: until `stop` says so or the
        kernel ends)."""
        if self.finished:
            return
        with self._cond:
            self._budget = n if n > 0 else -1
            self.paused = None
            self._running = True
            self._cond.notify_all()
        self._wait_for_pause()

    def _wait_for_pause(self) -> None:
        with self._cond:
            while self._running and not self.finished:
                self._cond.wait()

    def close(self) -> None:
        with self._cond:
            self._abort = True
            self._running = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=10)


def _generated_frame() -> Any:
    frame = sys._getframe(2)
    while frame is not None and not frame.f_code.co_filename.startswith("<pto kernel"):
        frame = frame.f_back
    return frame


__all__ = ["LaneVector", "Mask", "Chain", "Count", "Event", "Instrument", "OpInfo", "OpTable", "Pause", "Step",
           "Trace", "block_counts", "location_of", "once_per_block"]
