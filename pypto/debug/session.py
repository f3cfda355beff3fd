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
from xdsl.ir import BlockArgument, OpResult, SSAValue
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect

from pypto import dtypes
from pypto.backend.interpreter.instruments import (
    Chain,
    Instrument,
    OpInfo,
    OpTable,
    Step,
    location_of,
)
from pypto.debug.instructions import is_instruction, kind_of, position
from pypto.debug.view import Access, Executed, Lanes, render, source_context, value_name
from pypto.dialects import pto
from pypto.errors import KernelError, PtoError

MODELS = ("fused", "table")
"""The cost models a session's timeline can use (SPEC §6)."""

DEFAULT_BLOCK = (256, 1, 1)
"""The article's launch: one block of 256 lanes."""

class DebugError(PtoError):
    """A debugger command that cannot be done (bad name, line, lane or block)."""


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


class Session:
    """A kernel under the debugger (make one with `debug_kernel`)."""

    def __init__(self, compiled: Any, args: Sequence[Any], grid: tuple[int, int, int],
                 block: tuple[int, int, int], *, block_id: int = 0, warp: int | None = None,
                 model: str = "fused", names: dict[int, str] | None = None, fold: bool = True,
                 out: TextIO | None = None):
        self.compiled = compiled
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

        dt = dtypes.as_dtype(dtype).np_dtype
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
        if ctx is not None and ctx.arenas:
            arena = ctx.arenas[0]
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

    # timeline ---------------------------------------------------------------------------------

    def get_instruction_timeline(self, every_op: bool = False) -> list[Any]:
        """Which instruction issued on which cycle, for the focus block: entries with
        `.cycle`, `.end`, `.lane`, `.inst`, `.source`, `.pipe`, `.model` (see timeline.py for
        where the cycles come from). `every_op=True` also lists ids, address and lane
        arithmetic where the cost model costs them."""
        from pypto.debug.timeline import instruction_timeline

        return instruction_timeline(self, every_op)

    # describing executed instructions ---------------------------------------------------------

    def _describe(self, info: OpInfo, ctx: Any, mask: Any, value: Any,
                  locals_: dict[str, Any]) -> Executed:
        lanes = Lanes(self._focus_lanes(ctx, mask))
        rec = Executed(info.id, kind_of(info), lanes, info.line, info.location)
        op = info.op
        positions = lanes.ids - ctx.local_base
        lane_access = _lane_access(op) if not info.collective else None
        if lane_access is not None:
            address, kinds = lane_access
            acc = self._access(address, locals_, ctx, positions)
            if acc is not None:
                return self._memory_record(rec, op, kinds, acc, ctx, positions, locals_)
        operands = ", ".join(value_name(v) for v in op.operands)
        result = ""
        if op.results:
            names = [value_name(r) for r in op.results]
            result = " -> " + ", ".join(names)
            summary = "" if op.name == "arith.constant" else _summary(value, positions)
            if summary:
                result += f" = {summary}"
        rec.text = f"{operands}{result}".strip()
        return rec

    def _access(self, ptr: SSAValue, locals_: dict[str, Any], ctx: Any,
                positions: np.ndarray) -> Access | None:
        gen_name = self.table.names.get(ptr)
        buf = locals_.get(f"{gen_name}_b") if gen_name else None
        off = self.table.read(locals_, ptr, ctx)
        if buf is None or off is None:
            return None
        idx = np.broadcast_to(np.asarray(off, dtype=np.int64), (ctx.count,))[positions]
        isz = buf.data.itemsize
        if buf.space == "local":
            return Access("L1", idx + buf.offset // isz, isz)
        return Access(self._buffer_label(buf), idx, isz)

    def _slot(self, op: Any, locals_: dict[str, Any], ctx: Any,
              positions: np.ndarray) -> Access | None:
        slot = getattr(op, "slot", None)
        if slot is None:
            return None
        gen_name = self.table.names.get(slot)
        buf = locals_.get(f"{gen_name}_b") if gen_name else None
        if buf is None:
            return None
        lane_ids = positions + ctx.local_base
        isz = buf.data.itemsize
        return Access("L1", lane_ids + buf.offset // isz, isz)

    def _memory_record(self, rec: Executed, op: Any, kinds: set[str], acc: Access, ctx: Any,
                       positions: np.ndarray, locals_: dict[str, Any]) -> Executed:
        """A lane memory instruction: reads go `address -> value` (or its L1 slot), writes
        `value (or its slot) -> address`, read-modify-writes `address += value`."""
        slot = self._slot(op, locals_, ctx, positions)
        rec.nbytes = acc.itemsize
        values = [v for v in op.operands if not isinstance(v.type, pto.PtrType | pto.L1BufferType)]
        if kinds == {"read"}:
            rec.src = acc
            if slot is not None:
                rec.dst = [slot]
            elif op.results:
                rec.expr = value_name(op.results[0])
        elif kinds == {"write"}:
            if slot is not None and len(values) == 1:
                rec.src = slot  # the value leaves from its staging slot
            elif len(values) == 3:  # a multiply-add with its store fused
                a, b, c = (value_name(v) for v in values)
                rec.expr = f"{a} * {b} + {c}"
            else:
                rec.expr = ", ".join(value_name(v) for v in values)
            rec.dst = ([slot] if slot is not None and len(values) != 1 else []) + [acc]
        else:  # read-modify-write: atomic_add
            rec.src = acc
            rec.update = "+= " + ", ".join(value_name(v) for v in values)
            if op.results:
                rec.expr = value_name(op.results[0])
        return rec


def _lane_access(op: Any) -> tuple[SSAValue, set[str]] | None:
    """(address operand, {"read", "write"}) of a lane memory instruction, from the op facts
    (`memory_accesses`); ops that declare none but name their address `ptr` / `dst` (as npu
    lane ops) are read from those names."""
    from pypto.dialects.traits import memory_accesses

    accesses = [a for a in memory_accesses(op)
                if a.operand < len(op.operands) and
                isinstance(op.operands[a.operand].type, pto.PtrType)]
    if accesses:
        return op.operands[accesses[0].operand], {a.kind for a in accesses}
    if not (op.has_trait(MemoryReadEffect) or op.has_trait(MemoryWriteEffect)):
        return None
    for name, kind in (("ptr", "read" if op.results else "write"), ("dst", "write")):
        value = getattr(op, name, None)
        if isinstance(value, SSAValue) and isinstance(value.type, pto.PtrType):
            return value, {kind}
    return None


def _active(ctx: Any, mask: Any) -> np.ndarray:
    """Lane ids (within the block) of the active lanes of a lane vector."""
    base = ctx.local_base
    if mask is None:
        return np.arange(base, base + ctx.count)
    if mask is False:
        return np.zeros(0, dtype=np.int64)
    return np.nonzero(np.asarray(mask))[0] + base


def _summary(value: Any, positions: np.ndarray) -> str:
    """A short text for an op's result on the active lanes: one value when uniform."""
    if value is None or positions.size == 0:
        return ""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return _short(arr[()])
    if arr.ndim != 1 or arr.size <= int(positions.max()):
        return ""
    vals = arr[positions]
    if np.all(vals == vals[0]):
        return _short(vals[0])
    shown = ", ".join(_short(v) for v in vals[:4])
    return f"[{shown}{', ...' if vals.size > 4 else ''}]"


def _short(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):.6g}"
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    return ""


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


def _whole(value: Any, what: str) -> int:
    """`value` as an int, or a `DebugError` saying `what` must be one (1.5, "x", True are not)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise DebugError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    return int(value)
