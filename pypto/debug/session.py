"""A debugging session: one launch of one block, suspended before instructions on demand.

The session runs on the one executor. It compiles the kernel with `pto.compile`, then launches
the chosen block (`Executable.run(..., blocks=[b])`, so block ids are those of the full grid)
with two instruments chained: `_Watch` (records what executed, for trace lines and for "the
line we came from") and the executor's `Step` (suspends the launch's worker thread before an op
when the session's stop rule says so). Nothing here interprets IR.

Granularity: `step()` moves by PTO instruction (instructions.py says which ops are ones),
`stepi()` by op, `next()` to the first instruction of another Python line. Trace lines are
rendered by view.py, timelines come from timeline.py.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from pypto.backend.interpreter.instruments import (
    Chain,
    Instrument,
    OpInfo,
    OpTable,
    Step,
    location_of,
)
from pypto.debug.describe import Describer
from pypto.debug.inspector import DebugError, Inspector, Pointer, _whole
from pypto.debug.instructions import is_instruction, kind_of, position
from pypto.debug.view import Executed, render, source_context
from pypto.errors import KernelError

MODELS = ("fused", "table")
"""The cost models a session's timeline can use (docs/cost-model.md#two-models-the-articles-pitfall-1)."""

DEFAULT_BLOCK = (256, 1, 1)
"""The article's launch: one block of 256 lanes."""

# ---------------------------------------------------------------------------------------------


class _Watch(Instrument):
    """Records, for the session, what executes in the focus (block, optionally one warp)."""

    def __init__(self, session: Session):
        self.s = session
        self.current: tuple[int, Any, Any] | None = None  # op about to execute
        self.last_ctx: Any = None
        self.recording: str | None = None  # None | "instructions" | "ops"
        self.records: list[Executed] = []
        self.executed = 0          # instructions executed in the focus since the last resume
        self.executed_ops = 0      # ops executed in the focus since the last resume
        self.left_line = False     # an op of another line executed since the last resume
        self.start_line: tuple[str, int] | None = None
        self.prev_line: tuple[str, int] | None = None  # (file, line) last executed in focus
        self.run_instructions = 0  # instructions executed since the focus entered prev_line

    def begin(self, table: OpTable, grid: tuple[int, int, int],
              block: tuple[int, int, int]) -> None:
        self.table = table
        self.s.table = table  # the running variant's table: where its SSA values live

    def before(self, op_id: int, ctx: Any, mask: Any) -> None:
        self.current = (op_id, ctx, mask)
        info = self.table[op_id]
        if info.op.regions:  # if / for / pipeline: executing it means entering it
            self._executed(info, ctx, mask, None)

    def after(self, op_id: int, ctx: Any, mask: Any, value: Any) -> None:
        self.last_ctx = ctx
        info = self.table[op_id]
        if not info.op.regions:
            self._executed(info, ctx, mask, value)

    def _executed(self, info: OpInfo, ctx: Any, mask: Any, value: Any) -> None:
        if not self.s._in_focus(info, ctx, mask):
            return
        self.executed_ops += 1
        if is_instruction(info):
            self.executed += 1
        if info.line is not None:
            here = position(info)
            if here != self.start_line:
                self.left_line = True
            if here != self.prev_line:
                self.run_instructions = 0
            self.prev_line = here
        if is_instruction(info):
            self.run_instructions += 1
        if self.recording == "ops" or self.recording == "instructions" and is_instruction(info):
            frame = _kernel_frame(3)
            self.records.append(self.s._describe(info, ctx, mask, value,
                                                 dict(frame.f_locals) if frame else {}))


def _kernel_frame(depth: int) -> Any:
    """The generated kernel function's frame, `depth` or more calls up."""
    frame = sys._getframe(depth)
    while frame is not None and not frame.f_code.co_filename.startswith("<pto kernel"):
        frame = frame.f_back
    return frame


@dataclass(frozen=True)
class Breakpoint:
    number: int
    line: int | None = None       # a Python source line of the kernel (in `file`), or
    kind: str | None = None       # an instruction kind (LOAD, MMA, ...)
    file: str | None = None       # the line's file (the kernel's own, or a helper's)

    def __str__(self) -> str:
        return f"breakpoint {self.number} at " + (f"line {self.line}" if self.line is not None
                                                  else f"every {self.kind}")

    @property
    def position(self) -> tuple[str | None, int | None]:
        return (self.file, self.line)


class Session(Inspector, Describer):
    """A kernel under the debugger (make one with `debug_kernel`): launching, stepping,
    breakpoints and where we are here; variables and L1 in `Inspector` (inspector.py); the
    trace line of an executed instruction in `Describer` (describe.py)."""

    def __init__(self, compiled: Any, args: Sequence[Any], grid: tuple[int, int, int],
                 block: tuple[int, int, int], *, block_id: int = 0, warp: int | None = None,
                 model: str = "fused", names: dict[int, str] | None = None, fold: bool = True,
                 out: TextIO | None = None, host_arrays: Any = None):
        self.compiled = compiled
        self.host_arrays = host_arrays
        """NumPy arrays the caller passed (`pypto.runtime.host_arrays.StagedArgs`): `args`
        holds their device copies, copied back each time the focus block finishes."""
        self.exe = compiled.executable
        self.args = tuple(args)
        self.grid = grid
        self.block = block
        self.model = model
        self.fold = fold
        self.max_lines = 32
        self._out = out
        self.block_lanes = block[0] * block[1] * block[2]
        n_blocks = grid[0] * grid[1] * grid[2]
        self._check_focus(block_id, warp, n_blocks)
        if model not in MODELS:
            raise DebugError(f"unknown cost model {model!r}; use one of: {', '.join(MODELS)}")
        self.block_id = block_id
        self.warp = warp
        self._tensor_names = self._buffer_names(names or {})
        self._breakpoints: dict[int, Breakpoint] = {}
        self._next_bp = 1
        self._rule: Callable[[OpInfo, Any, Any], bool] = lambda info, ctx, mask: False
        self.error: KernelError | None = None
        self._error_frame: Any = None
        self._error_op: int | None = None
        self.table: OpTable = self.exe.op_table
        self._step: Step | None = None
        self._finalizer: Any = None
        self._launch()

    # set-up -----------------------------------------------------------------------------------

    @property
    def out(self) -> TextIO:
        return self._out if self._out is not None else sys.stdout

    def _print(self, *lines: str) -> None:
        for line in lines:
            print(line, file=self.out)

    def _check_focus(self, block_id: int, warp: int | None, n_blocks: int) -> None:
        if not isinstance(block_id, int) or not 0 <= block_id < n_blocks:
            raise DebugError(f"block {block_id!r} is not in the grid {self.grid} (linear block "
                             f"ids 0..{n_blocks - 1})")
        if warp is not None:
            n_warps = -(-self.block_lanes // self.exe.target.warp_size)
            if not isinstance(warp, int) or not 0 <= warp < n_warps:
                raise DebugError(f"warp {warp!r} is not in a block of {self.block_lanes} lanes "
                                 f"(warps 0..{n_warps - 1})")

    def _buffer_names(self, names: dict[int, str]) -> dict[int, str]:
        """id(tensor data) -> the name trace lines use: the caller's variable name when known
        (`d_a`, as in the article), else the kernel parameter's."""
        out = {}
        for i, arg in enumerate(self.args):
            data = getattr(arg, "_data", None)
            if isinstance(data, np.ndarray):
                out[id(data)] = names.get(i) or self.exe.param_names[i]
        return out

    def _launch(self) -> None:
        self.close()
        self.error = None
        self._error_frame = None
        self._error_op = None
        # the worker thread sees the session only through a weak proxy, so that dropping the
        # session lets garbage collection close the suspended launch (the finalizer below)
        me = weakref.proxy(self)
        self._watch = _Watch(me)
        step = Step(stop=lambda info, ctx, mask: me._rule(info, ctx, mask))
        self._step = step
        # the step instrument first: it decides whether to stop before an op from what the
        # watch recorded *up to* that op (entering an if / for is recorded at its before hook)
        chain = Chain(step, self._watch)
        grid, block, args, blocks = self.grid, self.block, self.args, [self.block_id]
        exe = self.exe
        self._finalizer = weakref.finalize(self, step.close)
        step.start(lambda: exe.run(grid, block, args, instrument=chain, blocks=blocks))
        # the session starts before the first instruction in the focus (or a breakpoint)
        self._resume(lambda info, ctx, mask: self._in_focus(info, ctx, mask) and (
            is_instruction(info) or self._hit(info)), first=True)
        if self.error is not None or self.finished:  # nothing to stop at in the focus
            self._report([])

    def close(self) -> None:
        """Abandon the suspended launch (restart() and garbage collection do it too)."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None

    def __repr__(self) -> str:
        state = "failed at" if self.error is not None else "paused before"
        where = f"{state} {self._where_text()}" if self._paused_info() is not None else \
            "finished"
        return (f"<pypto.debug session: kernel '{self.exe.name}' ({self.level} level), block "
                f"{self.block_coords}{f', warp {self.warp}' if self.warp is not None else ''}, "
                f"{where}>")

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # focus ------------------------------------------------------------------------------------

    def _in_focus(self, info: OpInfo, ctx: Any, mask: Any) -> bool:
        """Does the op run on a lane of the focus? (Block-level ops always do.)"""
        if info.collective:
            return True
        if self.warp is None:
            return mask is None or mask is not False and bool(np.any(mask))
        return self._focus_lanes(ctx, mask).size > 0

    def _focus_lanes(self, ctx: Any, mask: Any) -> np.ndarray:
        """Active lane ids (within the block) of a lane vector, restricted to the chosen warp.
        With a warp schedule each warp is its own lane vector; in lockstep execution all warps
        run together and choosing a warp narrows what is shown and stopped for."""
        lanes = _active(ctx, mask)
        if self.warp is None:
            return lanes
        ws = self.exe.target.warp_size
        return lanes[(lanes >= self.warp * ws) & (lanes < (self.warp + 1) * ws)]

    # running ----------------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """The focus block has run to its end (or failed)."""
        return self._step is None or self._step.finished

    def _resume(self, rule: Callable[[OpInfo, Any, Any], bool], first: bool = False,
                record: str | None = None) -> list[Executed]:
        step = self._step
        assert step is not None
        w = self._watch
        w.records = []
        w.recording = record
        w.executed = w.executed_ops = 0
        w.left_line = False
        here = self._paused_info()
        w.start_line = position(here) if here is not None and here.line is not None else None
        self._rule = rule
        if not first or step.paused is not None and not rule(
                self.table[step.paused.op_id], step.paused.ctx, step.paused.mask):
            self._go(step)
        w.recording = None
        if step.error is not None and self.error is None:
            self._fail(step.error)
        if self.host_arrays is not None and self.error is None and step.finished:
            self.host_arrays.copy_back()
        return w.records

    def _go(self, step: Step) -> None:
        """Resume the launch until the stop rule holds; Ctrl-C pauses it at the next op of
        the focus instead (as in gdb), so a long `continue` can be looked into."""
        try:
            step.resume(0)
        except KeyboardInterrupt:
            self._rule = lambda info, ctx, mask: self._in_focus(info, ctx, mask)
            step._wait_for_pause()
            self._print(f"Interrupted: paused at {self._where_text()}.")

    def _fail(self, exc: BaseException) -> None:
        if not isinstance(exc, KernelError):
            raise exc
        self.error = exc
        current = self._watch.current
        self._error_op = current[0] if current is not None else None
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename.startswith("<pto kernel"):
                self._error_frame = tb.tb_frame
            tb = tb.tb_next

    def _running_check(self) -> bool:
        """Says so (and returns False) when there is nothing left to execute."""
        if self.error is not None:
            self._print(f"The kernel stopped with an error at {self._where_text()}; "
                        f"restart runs it again.", f"  {type(self.error).__name__}: "
                        f"{self.error}")
            return False
        if self.finished:
            self._print(f"The kernel has finished (block {self.block_coords}); nothing left to "
                        f"execute. restart runs it again.")
            return False
        return True

    def _report(self, records: list[Executed]) -> None:
        for rec in records:
            self._print(*render(rec, self.fold, self.max_lines))
        if self.error is not None:
            self._print(f"Kernel error at {self._where_text()}:",
                        f"  {type(self.error).__name__}: {self.error}")
        elif self.finished:
            self._print(f"Kernel finished (block {self.block_coords}).")

    def step(self, n: int = 1) -> None:
        """Execute `n` PTO instructions and print their trace lines; stops early at a
        breakpoint, an error or the end of the kernel."""
        n = max(1, _whole(n, "the count of step()"))
        if not self._running_check():
            return
        w = self._watch
        records = self._resume(lambda info, ctx, mask: self._in_focus(info, ctx, mask) and (
            is_instruction(info) and w.executed >= n or self._hit(info)), record="instructions")
        self._report(records)

    def stepi(self, n: int = 1) -> None:
        """Execute `n` ops of any kind (ids, address arithmetic, branches included)."""
        n = max(1, _whole(n, "the count of stepi()"))
        if not self._running_check():
            return
        w = self._watch
        records = self._resume(lambda info, ctx, mask: self._in_focus(info, ctx, mask) and (
            w.executed_ops >= n or self._hit(info)), record="ops")
        self._report(records)

    def next(self) -> None:
        """Execute up to the first instruction of another Python source line."""
        if not self._running_check():
            return
        w = self._watch
        records = self._resume(lambda info, ctx, mask: self._in_focus(info, ctx, mask) and (
            is_instruction(info) and w.executed > 0 and w.left_line or self._hit(info)),
            record="instructions")
        self._report(records)

    def continue_(self) -> None:
        """Run to the next breakpoint, an error or the end of the kernel."""
        if not self._running_check():
            return
        self._resume(lambda info, ctx, mask: self._in_focus(info, ctx, mask) and self._hit(info))
        if self.error is None and not self.finished:
            info = self._paused_info()
            assert info is not None
            bp = self._matching_breakpoint(info)
            self._print(f"{bp if bp else 'stopped'}: {self._where_text()}")
            self._print(*self._context_lines(0))
        else:
            self._report([])

    def restart(self, block_id: int | None = None, warp: int | None = ...) -> None:  # type: ignore[assignment]
        """Launch again from the start (breakpoints stay); optionally focus another block or
        warp. Device memory is not reset: the kernel sees what the last run left there."""
        b = self.block_id if block_id is None else block_id
        w = self.warp if warp is ... else warp
        self._check_focus(b, w, self.grid[0] * self.grid[1] * self.grid[2])
        self.block_id, self.warp = b, w
        self._launch()

    # breakpoints ------------------------------------------------------------------------------

    def break_at(self, where: int | str) -> int:
        """A breakpoint on a Python source line of the kernel (`19`, `"19"`,
        `"vector_add.py:19"`) or on an instruction kind (`"LOAD"`, `"mma"`); returns its
        number."""
        file, line, kind = _parse_where(where)
        if line is not None:
            file = self._source_file(file)
            lines = sorted({i.line for i in self.table
                            if i.line is not None and i.hooked and position(i)[0] == file})
            if line not in lines:
                raise DebugError(f"no instruction of kernel '{self.exe.name}' is on line {line} "
                                 f"of {os.path.basename(file)}; lines with instructions: "
                                 f"{', '.join(map(str, lines))}")
        else:
            assert kind is not None
            kinds = sorted({kind_of(i) for i in self.table if i.hooked})
            if kind not in kinds:
                raise DebugError(f"kernel '{self.exe.name}' has no {kind} instruction at this "
                                 f"level; its instruction kinds: {', '.join(kinds)}")
        bp = Breakpoint(self._next_bp, line, kind, file)
        self._breakpoints[bp.number] = bp
        self._next_bp += 1
        return bp.number

    def _source_file(self, given: str | None) -> str:
        """The full path of a kernel source file named by `given` (a path or its tail; None:
        the file the kernel is defined in)."""
        files = sorted({position(i)[0] for i in self.table if i.line is not None})
        if given is None:
            own = location_of(self.exe.func).rsplit(":", 2)[0]
            return own if own in files or not files else files[0]
        matches = [f for f in files if f == given or f.endswith("/" + given.lstrip("/"))]
        if not matches:
            raise DebugError(f"kernel '{self.exe.name}' has no instruction from {given}; its "
                             f"source files: {', '.join(os.path.basename(f) for f in files)}")
        return matches[0]

    def delete(self, number: int | None = None) -> None:
        """Delete breakpoint `number` (all of them when None)."""
        if number is None:
            self._breakpoints.clear()
        elif self._breakpoints.pop(number, None) is None:
            raise DebugError(f"no breakpoint {number}; breakpoints: "
                             f"{', '.join(map(str, self._breakpoints)) or 'none'}")

    @property
    def breakpoints(self) -> list[Breakpoint]:
        return list(self._breakpoints.values())

    def _matching_breakpoint(self, info: OpInfo) -> Breakpoint | None:
        for bp in self._breakpoints.values():
            if bp.kind is not None and kind_of(info) == bp.kind:
                return bp
            if bp.line is not None and position(info) == bp.position:
                return bp
        return None

    def _hit(self, info: OpInfo) -> bool:
        """A breakpoint stops here: an op of its kind, or the first instruction of its line
        each time the kernel comes to that line (the line's first op when it has no
        instruction, e.g. `i = pto.get_global_id()`)."""
        for bp in self._breakpoints.values():
            if bp.kind is not None and kind_of(info) == bp.kind:
                return True
            if bp.line is not None and position(info) == bp.position:
                w = self._watch
                entering = w.prev_line != bp.position
                if bp.position not in self._instruction_lines:
                    if entering:
                        return True
                elif is_instruction(info) and (entering or w.run_instructions == 0):
                    return True
        return False

    @property
    def _instruction_lines(self) -> set[tuple[str, int]]:
        lines = getattr(self, "_instr_lines_cache", None)
        if lines is None:
            lines = {position(i) for i in self.table if is_instruction(i) and i.line is not None}
            self._instr_lines_cache = lines
        return lines

    # where ------------------------------------------------------------------------------------

    @property
    def level(self) -> str:
        """"npu" when the kernel was lowered to the npu dialect (lane loads staged through L1
        slots), else "pto"."""
        return "npu" if any(i.name.startswith("npu.") for i in self.table) else "pto"

    @property
    def block_coords(self) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        b = self.block_id
        return (b % gx, (b // gx) % gy, b // (gx * gy))

    def _paused_info(self) -> OpInfo | None:
        step = self._step
        if step is not None and step.paused is not None:
            return self.table[step.paused.op_id]
        if self.error is not None and self._error_op is not None:
            return self.table[self._error_op]
        return None

    @property
    def location(self) -> tuple[str, int | None, str] | None:
        """(file, line, instruction kind) of the instruction about to execute (or that
        failed); None when the kernel has finished."""
        info = self._paused_info()
        if info is None:
            return None
        return info.location.rsplit(":", 2)[0], info.line, kind_of(info)

    def _where_text(self) -> str:
        info = self._paused_info()
        if info is None:
            return "the end of the kernel"
        file = info.location.rsplit(":", 2)[0]
        short = file.rsplit("/", 1)[-1]
        return f"{short}:{info.line} ({kind_of(info)}, op {info.id})"

    def _context_lines(self, around: int) -> list[str]:
        info = self._paused_info()
        if info is None or info.line is None:
            return []
        return source_context(info.location.rsplit(":", 2)[0], info.line, around)

    def where(self, context: int = 2) -> None:
        """Print where the kernel is: the instruction about to execute, the active lanes and
        the Python source around it."""
        info = self._paused_info()
        if info is None:
            self._print(f"The kernel has finished (block {self.block_coords}).")
            return
        lanes = self.active_lanes()
        state = "failed at" if self.error is not None else "paused before"
        focus = f"block {self.block_coords}" + (f", warp {self.warp}" if self.warp is not None
                                                else "")
        self._print(f"{focus}: {state} {kind_of(info)} ({info.name}, op {info.id}) on "
                    f"{lanes.label().lower()}", f"  {info.location}")
        self._print(*self._context_lines(context))

    # timeline ---------------------------------------------------------------------------------

    def get_instruction_timeline(self, every_op: bool = False) -> list[Any]:
        """Which instruction issued on which cycle, for the focus block: entries with
        `.cycle`, `.end`, `.lane`, `.inst`, `.source`, `.pipe`, `.model` (see timeline.py for
        where the cycles come from). `every_op=True` also lists ids, address and lane
        arithmetic where the cost model costs them."""
        from pypto.debug.timeline import instruction_timeline

        return instruction_timeline(self, every_op)

def _active(ctx: Any, mask: Any) -> np.ndarray:
    """Lane ids (within the block) of the active lanes of a lane vector."""
    base = ctx.local_base
    if mask is None:
        return np.arange(base, base + ctx.count)
    if mask is False:
        return np.zeros(0, dtype=np.int64)
    return np.nonzero(np.asarray(mask))[0] + base


def _parse_where(where: int | str) -> tuple[str | None, int | None, str | None]:
    """(file or None, line, None) for a line, (None, None, KIND) for a kind."""
    if isinstance(where, int | np.integer) and not isinstance(where, bool):
        return None, int(where), None
    if not isinstance(where, str) or not where.strip():
        raise DebugError(f"break_at() takes a source line (19, '19', 'file.py:19') or an "
                         f"instruction kind ('LOAD', 'MMA'), got {where!r}")
    text = where.strip()
    head, _, tail = text.rpartition(":")
    if tail.isdigit():
        return head or None, int(tail), None
    kind = text.split(".", 1)[-1].upper()
    return None, None, kind


__all__ = ["Breakpoint", "DebugError", "Pointer", "Session"]
