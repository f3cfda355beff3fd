"""Which error a failed native launch reports: the interpreter's, found by replaying the launch.

Compiled code runs a block's lanes one after another (each lane its whole loop), the
interpreter runs each op for a whole lane vector (a block, a batch of blocks or a chunk of the
grid, docs/interpreter.md#execution-modes) in lockstep. When several lanes would fail, the two
orders meet different failures first: natively lane 1's second access, on the interpreter
lane 4's first one (it ran before any lane's second); inside a loop, lane 10's fourth
iteration against lane 16's first. The interpreter's order of detection is the definition
(docs/native.md#errors), and it depends on its lane vector, so the native runtime does not
imitate it: when compiled code detects an error, the launch is run again on the interpreter,
which raises its own error, message and location (`pypto.compiler`'s native launch).

The replay starts from the tensors as the failed native run left them. That is the launch's
starting state for every value the replay's *error* depends on when no value read from memory
the native run may have written (an HBM tensor the kernel writes, by any alias; L1 holding
such data) decides an address, a branch, a loop bound, a divisor, a checked cast, an
exponent or a block-level instruction's operand: `replay_refusal` proves that by following
such values through the kernel (pure arithmetic, `if` / loop results and carried values,
shuffles, stores into L1). Kernels it cannot prove keep the error compiled code detected (the
lowest lane of the first block to fail, in its lane order) — documented, and tested.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any, Sequence

import numpy as np

from xdsl.dialects import arith, func, math, scf
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from pypto.diagnostics import op_location
from pypto.dialects import pto
from pypto.dialects.traits import Access, memory_accesses

_DIVISIONS = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
              "arith.ceildivsi", "arith.ceildivui")
"""Their divisor (operand 1) is checked for zero; a dividend only computes."""
ENABLED = True
"""Replay failed launches (tests turn it off to see the error compiled code detected)."""
_CHECKED_OPERAND = (arith.FPToSIOp, arith.FPToUIOp, math.IPowIOp)
"""Ops whose operand decides an error (a cast's range, `**`'s negative exponent)."""


def written_params(kernel: func.FuncOp) -> set[int] | None:
    """The tensor parameters the kernel may write (None: an address it cannot follow)."""
    found: set[int] = set()
    for op in kernel.walk():
        for a in memory_accesses(op):
            if a.kind == "write" and a.space != "local":
                root = _root(op.operands[a.operand], kernel)
                if root is None:
                    return None
                found.add(root)
    return found


def _root(v: SSAValue, kernel: func.FuncOp) -> int | None:
    while isinstance(v, OpResult) and isinstance(v.op, pto.AddPtrOp):
        v = v.op.ptr
    if isinstance(v, BlockArgument) and v.block is kernel.body.block:
        return v.index
    return None


def replay_refusal(kernel: func.FuncOp, changed: set[int] | None = None) -> str | None:
    """Why replaying a failed launch on the interpreter might not find the error the launch
    would have raised there (None: it finds exactly that error; the module doc). `changed`:
    the tensor parameters whose memory the native run may have written (None: every one)."""
    ops = list(kernel.walk())
    if changed is not None and not changed:
        return None  # the native run changed no memory the replay reads
    tainted: set[SSAValue] = set()
    l1_tainted = False
    changed_flag = True

    def reads_changed(op: Operation, a: Access) -> bool:
        if a.space == "local":
            return l1_tainted
        root = _root(op.operands[a.operand], kernel)
        return changed is None or root is None or root in changed

    while changed_flag:  # (values carried round loops: a fixpoint)
        changed_flag = False
        for op in ops:
            why, new, l1 = _visit(op, tainted, any(
                a.kind == "read" and reads_changed(op, a) for a in memory_accesses(op)))
            if why is not None:
                return f"{op_location(op) or op.name}: {why}"
            if l1 and not l1_tainted:
                l1_tainted = changed_flag = True
            for v in new:  # (a token names a copy, not its data)
                if v not in tainted and not isinstance(v.type, pto.TokenType):
                    tainted.add(v)
                    changed_flag = True
    return None


def _visit(op: Operation, tainted: set[SSAValue],
           reads_changed: bool) -> tuple[str | None, list[SSAValue], bool]:
    """(why the error may depend on changed data, values that now carry changed data, whether
    L1 now holds some)."""
    hit = [i for i, v in enumerate(op.operands) if v in tainted]
    accesses = memory_accesses(op)
    writes_l1 = any(a.kind == "write" and a.space == "local" for a in accesses)
    address_ops = {a.operand for a in accesses}
    if isinstance(op, scf.YieldOp | scf.ConditionOp):
        return _carry(op, hit, tainted)
    if isinstance(op, scf.IfOp | scf.ForOp | scf.WhileOp):
        if isinstance(op, scf.WhileOp):
            args = op.before_region.blocks[0].args
            return None, [args[i] for i in hit], False
        if hit and (isinstance(op, scf.IfOp) or min(hit) < 3):
            return "a value read from a tensor the kernel writes decides this branch or loop", \
                [], False
        if isinstance(op, scf.ForOp):
            return None, [op.body.block.args[i - 2] for i in hit], False
        return None, [], False
    if accesses:  # memory ops: their addresses must not depend on changed data
        if any(i in address_ops for i in hit) or \
                hit and not isinstance(op, pto.StoreOp):
            return "a value read from a tensor the kernel writes decides this access", [], False
        return None, list(op.results) if reads_changed else [], \
            writes_l1 and (bool(hit) or reads_changed)
    if not hit:
        return None, [], False
    if op.name in _DIVISIONS and 1 in hit or isinstance(op, _CHECKED_OPERAND):
        return "a value read from a tensor the kernel writes decides this op's error", [], False
    if op.dialect_name() in ("arith", "math") or isinstance(op, pto.AddPtrOp | pto.PrintfOp) \
            or isinstance(op, pto.WARP_OPS):
        return None, list(op.results), False
    return f"a value read from a tensor the kernel writes reaches '{op.name}'", [], False


def _carry(op: Operation, hit: list[int],
           tainted: set[SSAValue]) -> tuple[str | None, list[SSAValue], bool]:
    """A yield or condition: changed data flows to the parent's results and carried values."""
    parent = op.parent_op()
    new: list[SSAValue] = []
    if isinstance(op, scf.ConditionOp):
        if 0 in hit:
            return "a value read from a tensor the kernel writes decides this loop", [], False
        assert isinstance(parent, scf.WhileOp)
        after = parent.after_region.blocks[0].args
        new = [v for i in hit for v in (parent.results[i - 1], after[i - 1])]
    elif isinstance(parent, scf.WhileOp):  # the after region's yield: the next iteration
        new = [parent.before_region.blocks[0].args[i] for i in hit]
    elif isinstance(parent, scf.ForOp):
        new = [v for i in hit for v in (parent.results[i], parent.body.block.args[i + 1])]
    elif isinstance(parent, scf.IfOp):
        new = [parent.results[i] for i in hit]
    elif hit:
        return f"a value read from a tensor the kernel writes leaves '{parent.name}'", [], False
    return None, new, False


def replayed_error(compiled: Any, executable: Any, native: Any, grid: tuple[int, int, int],
                   block: tuple[int, int, int], args: Sequence[Any], bound: Sequence[Any],
                   error: Exception) -> Exception:
    """The error a failed native launch raises: the interpreter's, by a replay, when
    `replay_refusal` proves the replay exact for this launch's tensors (`bound`: which of them
    share memory with a written one) and compiled code stopped at a checked op (the loop
    watchdog and the time limit are not replayed: the interpreter would run the same trips
    again); else `error`, the one compiled code detected."""
    from pypto.backend.interpreter import Executable
    from pypto.backend.native.to_llvm import TIME_LIMIT, WATCHDOG
    from pypto.errors import PtoError

    from pypto.backend.native import printf

    buffered = getattr(native, "printf_lines", None) is not None  # (lines of one block, kept)
    if not ENABLED or getattr(native, "last_error_code", 0) in (WATCHDOG, TIME_LIMIT):
        if buffered:
            printf.flush(native)
        return error
    cache = compiled.__dict__
    written = cache.get("_native_written", False)
    if written is False:
        written = cache["_native_written"] = written_params(compiled.func)
    changed = None if written is None else _sharing(bound, written)
    key = ("_native_replay", None if changed is None else frozenset(changed))
    why = cache.get(key, False)
    if why is False:
        why = cache[key] = replay_refusal(compiled.func, changed)
    if why is not None:
        if buffered:
            printf.flush(native)
        return error
    replay = executable
    if executable.race_check or executable.check_uninitialized:  # instruments native lacks
        replay = cache.get("_native_replay_exe")
        if replay is None:
            replay = cache["_native_replay_exe"] = Executable(
                compiled.func, target=executable.target, race_check=False)
    if buffered:
        native.printf_lines.clear()  # the interpreter prints its own lines of the launch
    try:  # (unbuffered printf lines were printed by the native run)
        with contextlib.nullcontext() if buffered else contextlib.redirect_stdout(io.StringIO()):
            replay.run(grid, block, args)
    except PtoError as found:
        return found
    return error  # (the interpreter found nothing: the native run's own error stands)


def _sharing(bound: Sequence[Any], written: set[int]) -> set[int]:
    """The tensor parameters whose bytes overlap a written one's (itself included)."""
    spans: dict[int, tuple[int, int]] = {}
    for i, b in enumerate(bound):
        data = getattr(b, "data", None)
        if isinstance(data, np.ndarray):
            start = data.__array_interface__["data"][0]
            spans[i] = (start, start + max(data.nbytes, 1))
    changed = set(written)
    for i, (lo, hi) in spans.items():
        if any(j in spans and spans[j][0] < hi and lo < spans[j][1] for j in written):
            changed.add(i)
    return changed
