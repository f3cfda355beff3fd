"""Live ranges of L1 buffers and their placement in a block's L1 (behind `pto-allocate-l1`).

An `alloc_local` is a static declaration (one buffer per allocation site per block, alive for
the whole kernel, as CUDA's `__shared__`), so "liveness" here is about *bytes*: two buffers may
share bytes when no execution can need both at once. The analysis is deliberately simple and
sound rather than clever:

* Program points are the pre-order positions of the ops of the kernel `func.func`.
* A buffer is *used* by every op that takes an address derived from it (through `pto.addptr`,
  `arith.select`, `scf.if` / `scf.for` / `pto.stage` / `pto.pipeline` results and loop-carried
  values). An address whose buffer cannot be traced is a use of every buffer.
* An async copy keeps its L1 side busy until the copy completes: until every `pto.wait` of its
  token, and until the first `pto.wait_all` (or `pto.wait` of its token) that is sure to run
  after it — or the end of the kernel when there is none.
* A use inside a loop makes the buffer live over the whole outermost loop around it: the
  buffer's contents may flow from one iteration to the next.
* Two buffers may share bytes only when one's range ends before the other's starts **and** a
  block-level synchronisation point (`pto.barrier_block` or a tile instruction, which every warp
  reaches) sits between them in straight-line code, or is itself the first buffer's last use or
  the second's first use: program order is per warp, so without it a fast warp could start
  writing the second buffer while a slow one still reads the first.

Placement is greedy first-fit, largest buffers first (as TFLite's arena planner), at offsets that
are multiples of the target's `l1_align_bytes`; the *peak* is the end of the highest buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from pypto import dtypes
from pypto.analysis.alias import roots
from pypto.analysis.ir_utils import kernels, passes_yield, structured_body, yielded
from pypto.analysis.uniformity import walk
from pypto.diagnostics import op_location
from pypto.dialects import pto
from pypto.dialects.traits import (
    declares_buffer,
    is_block_collective,
    offset_base,
    starts_copy,
    tile_vector,
    waits_on,
)

SLOTS_ATTR = "pto.slots"
"""Discardable attribute `pto-double-buffer` puts on a multi-slot `alloc_local` (its slot count),
so that the L1 map can say "A_tile (2 slots)"."""

_LOOPS = (scf.ForOp, scf.WhileOp)


def buffer_bytes(alloc: pto.AllocLocalOp) -> int:
    """Bytes of an `alloc_local` (element count times element size)."""
    t = alloc.result.type
    return t.size * dtypes.np_dtype_of(t.element_type).itemsize


def buffer_label(alloc: pto.AllocLocalOp) -> str:
    """A buffer's name in messages: the Python variable it was assigned to, if known."""
    return alloc.result.name_hint or "<unnamed buffer>"


def slots_of(alloc: pto.AllocLocalOp) -> int:
    attr = alloc.attributes.get(SLOTS_ATTR)
    return attr.value.data if isinstance(attr, IntegerAttr) else 1


def location_text(op: Operation) -> str:
    """`file:line` of the Python line an op came from, or its op name."""
    return op_location(op, short=True, column=False, unknown=op.name)


# --------------------------------------------------------------------------------------------
# Which buffers an address (or a token) stands for
# --------------------------------------------------------------------------------------------


def trace_sources(value: SSAValue, is_source: Callable[[Operation], bool],
                  seen: set[SSAValue] | None = None) -> set[Operation] | None:
    """The ops `is_source` accepts whose result `value` may be (or point into): buffer
    declarations for an address (`declares_buffer`), async copies for a token (`starts_copy`).
    None when it cannot be traced (an argument)."""
    seen = set() if seen is None else seen
    if value in seen:
        return set()
    seen.add(value)
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op()
        if isinstance(owner, scf.ForOp) and value.index > 0:
            parts = [owner.iter_args[value.index - 1], *yielded(owner, value.index - 1)]
            return _union(trace_sources(v, is_source, seen) for v in parts)
        if isinstance(owner, scf.WhileOp):
            return _union(trace_sources(v, is_source, seen)
                          for v in while_arg_sources(owner, value))
        return None
    assert isinstance(value, OpResult)
    op = value.op
    if is_source(op):
        return {op}
    base = offset_base(op)
    if base is not None:
        return trace_sources(base, is_source, seen)
    if isinstance(op, arith.SelectOp):
        return _union(trace_sources(v, is_source, seen) for v in op.operands[1:])
    if passes_yield(op):
        return _union(trace_sources(v, is_source, seen) for v in yielded(op, value.index))
    if isinstance(op, scf.ForOp):
        parts = [op.iter_args[value.index], *yielded(op, value.index)]
        return _union(trace_sources(v, is_source, seen) for v in parts)
    if isinstance(op, scf.WhileOp):
        return _union(trace_sources(v, is_source, seen) for v in while_result_sources(op, value))
    return None


def while_arg_sources(loop: scf.WhileOp, arg: BlockArgument) -> list[SSAValue]:
    """What an `scf.while` block argument may hold: for the condition region, the initial
    value and the body's yield; for the body, what `scf.condition` forwards."""
    index = arg.index
    if arg.block is loop.before_region.block:
        values = [loop.arguments[index]]
        last = loop.after_region.block.last_op
        if last is not None and index < len(last.operands):
            values.append(last.operands[index])
        return values
    return while_result_sources(loop, arg)


def while_result_sources(loop: scf.WhileOp, value: SSAValue) -> list[SSAValue]:
    """What `scf.condition` forwards at `value`'s position (a result or a body argument)."""
    condition = loop.before_region.block.last_op
    index = value.index
    if isinstance(condition, scf.ConditionOp) and index < len(condition.args):
        return [condition.args[index]]
    return []


def _union(parts: Iterable[set[Operation] | None]) -> set[Operation] | None:
    found: set[Operation] = set()
    for part in parts:
        if part is None:
            return None
        found |= part
    return found


def _is_local_address(value: SSAValue) -> bool:
    t = value.type
    return isinstance(t, pto.L1BufferType) or (isinstance(t, pto.PtrType) and t.space == "local")


def is_block_sync(op: Operation) -> bool:
    """Ops every warp of a block reaches together and waits at: block barriers, copies, waits,
    fills, `mma` (not `alloc_local`, a declaration; not a tile vector instruction, which the
    vector unit runs without waiting for the lanes' L1 accesses nor they for it:
    docs/barriers.md#tile-vector-instructions)."""
    return is_block_collective(op) and not declares_buffer(op) and tile_vector(op) is None


# --------------------------------------------------------------------------------------------
# Live ranges
# --------------------------------------------------------------------------------------------


@dataclass
class LiveRange:
    """Where a buffer is live, in program points (pre-order op positions), both ends included."""

    alloc: pto.AllocLocalOp
    start: int
    end: int
    first: Operation
    """The op at `start` (after widening to loops): the buffer's first use."""
    last: Operation
    """The op at `end`: its last use."""
    uses: list[Operation] = field(default_factory=list[Operation])

    @property
    def name(self) -> str:
        return buffer_label(self.alloc)

    @property
    def nbytes(self) -> int:
        return buffer_bytes(self.alloc)


class Liveness:
    """Live ranges of the `alloc_local`s of one kernel, and which pairs may share bytes."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.ops: list[Operation] = list(walk(structured_body(kernel, "the L1 map").ops))
        self.position: dict[Operation, int] = {op: i for i, op in enumerate(self.ops)}
        self.extent: dict[Operation, int] = {}
        for op in reversed(self.ops):
            end = self.position[op]
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.ops:
                        end = max(end, self.extent[inner])
            self.extent[op] = end
        self.allocs: list[pto.AllocLocalOp] = [op for op in self.ops  # type: ignore[misc]
                                               if declares_buffer(op)]
        self.ranges: dict[pto.AllocLocalOp, LiveRange] = {}
        self._compute()

    # -- ranges ---------------------------------------------------------------------------------

    def _compute(self) -> None:
        uses: dict[pto.AllocLocalOp, list[Operation]] = {a: [] for a in self.allocs}
        for op in self.ops:
            if declares_buffer(op):
                continue
            touched: set[Operation] = set()
            for operand in op.operands:
                if not _is_local_address(operand):
                    continue
                found = roots(operand)  # the one alias query's roots (pypto.analysis.alias)
                owners = [r.op if isinstance(r, OpResult) else None for r in found or ()]
                if found is None or any(o not in uses for o in owners):
                    touched |= set(self.allocs)  # an address not traced to one of its buffers
                else:
                    touched |= set(owners)  # type: ignore[arg-type]
            for alloc in touched:
                uses[alloc].append(op)
                if starts_copy(op):
                    uses[alloc].extend(self._completions(op))
        for alloc, used in uses.items():
            if not used:
                self.ranges[alloc] = LiveRange(alloc, self.position[alloc], self.position[alloc],
                                               alloc, alloc)
                continue
            spans = [self._widened(op) for op in used]
            first = min(spans, key=lambda s: s[0])
            last = max(spans, key=lambda s: s[1])
            self.ranges[alloc] = LiveRange(alloc, first[0], last[1], first[2], last[3], used)

    def _widened(self, op: Operation) -> tuple[int, int, Operation, Operation]:
        """The span of `op`, or of the outermost loop around it (as (start, end, op, op))."""
        outer: Operation = op
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp):
            if isinstance(parent, _LOOPS):
                outer = parent
            parent = parent.parent_op()
        return self.position[outer], self.extent[outer], outer, outer

    def _completions(self, copy: Operation) -> list[Operation]:
        """Ops up to which an async copy may still be in flight: the waits of its token, and the
        first wait sure to run after it (a `wait_all` or a wait of its token in the copy's block
        or an enclosing one); the kernel's last op when there is none."""
        found: list[Operation] = []
        waits = [op for op in self.ops if waits_on(op) == "token"
                 and copy in (trace_sources(op.operands[0], starts_copy) or {copy})]
        found.extend(waits)
        op: Operation | None = copy
        while op is not None and not isinstance(op, func.FuncOp):
            nxt = op.next_op
            while nxt is not None:
                if waits_on(nxt) == "all" or nxt in waits:
                    found.append(nxt)
                    return found
                nxt = nxt.next_op
            op = op.parent_op()
        found.append(self.ops[-1])
        return found

    # -- sharing --------------------------------------------------------------------------------

    def may_share(self, a: pto.AllocLocalOp, b: pto.AllocLocalOp) -> bool:
        """Whether two buffers may occupy the same bytes (see the module docstring)."""
        ra, rb = self.ranges[a], self.ranges[b]
        if ra.end < rb.start:
            return self._separated(ra.last, rb.first)
        if rb.end < ra.start:
            return self._separated(rb.last, ra.first)
        return False

    def _separated(self, before: Operation, after: Operation) -> bool:
        """A block-level sync op runs between `before` and `after` on every path."""
        chain_a = _ancestors(before)
        chain_b = _ancestors(after)
        common: Block | None = None
        for block_a, op_a in chain_a:
            for block_b, op_b in chain_b:
                if block_a is block_b:
                    common = block_a
                    start, stop = op_a, op_b
                    break
            if common is not None:
                break
        if common is None or start is stop:
            return False
        # A block-level op on the straight-line path is itself the separation: every warp has
        # finished the first buffer's last use when it completes, and reaches the second
        # buffer's first use only together with the other warps.
        if (start is before and is_block_sync(before)) or (stop is after and is_block_sync(after)):
            return True
        op = start.next_op
        while op is not None and op is not stop:
            if is_block_sync(op):
                return True
            op = op.next_op
        return False

    def live_at(self, point: int) -> list[LiveRange]:
        return [r for r in self.ranges.values() if r.start <= point <= r.end]


def _ancestors(op: Operation) -> list[tuple[Block, Operation]]:
    """(block, the ancestor of `op` directly in it), innermost first, up to the kernel body."""
    chain: list[tuple[Block, Operation]] = []
    current: Operation | None = op
    while current is not None and current.parent_block() is not None:
        chain.append((current.parent_block(), current))  # type: ignore[arg-type]
        parent = current.parent_op()
        if parent is None or isinstance(parent, func.FuncOp):
            break
        current = parent
    return chain


# --------------------------------------------------------------------------------------------
# Placement
# --------------------------------------------------------------------------------------------


@dataclass
class Placement:
    """One buffer in the layout: its offset and (aligned) footprint in bytes."""

    live: LiveRange
    offset: int
    size: int
    """Bytes reserved: the buffer's bytes rounded up to the alignment."""

    @property
    def name(self) -> str:
        return self.live.name

    @property
    def nbytes(self) -> int:
        return self.live.nbytes

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass
class Layout:
    """Offsets for every `alloc_local` of a kernel, the peak usage and the liveness behind it."""

    kernel: func.FuncOp
    liveness: Liveness
    placements: list[Placement]
    align: int
    capacity: int

    @property
    def peak(self) -> int:
        """Bytes of L1 the kernel needs: the end of the highest buffer."""
        return max((p.end for p in self.placements), default=0)

    @property
    def total(self) -> int:
        """Bytes without any reuse (every buffer at its own offset)."""
        return sum(p.size for p in self.placements)

    def live_peak(self) -> tuple[int, list[Placement]]:
        """The most bytes live at one program point, and the buffers live there."""
        best, best_set = 0, []
        points = sorted({p.live.start for p in self.placements})
        for point in points:
            here = [p for p in self.placements if p.live.start <= point <= p.live.end]
            size = sum(p.size for p in here)
            if size > best:
                best, best_set = size, here
        return best, best_set

    @property
    def fits(self) -> bool:
        return self.peak <= self.capacity

    def by_alloc(self) -> dict[pto.AllocLocalOp, Placement]:
        return {p.live.alloc: p for p in self.placements}


def _round_up(n: int, align: int) -> int:
    return -(-n // align) * align


def plan_layout(kernel: func.FuncOp, *, capacity: int, align: int) -> Layout:
    """Place every buffer of `kernel` (first fit, largest first); does not modify the IR."""
    if align <= 0 or align & (align - 1):
        raise ValueError(f"L1 alignment must be a positive power of two, got {align}")
    liveness = Liveness(kernel)
    order = sorted(liveness.allocs, key=lambda a: (-buffer_bytes(a),
                                                   liveness.ranges[a].start,
                                                   liveness.position[a]))
    placed: list[Placement] = []
    for alloc in order:
        size = _round_up(max(buffer_bytes(alloc), 1), align)
        busy = sorted(((p.offset, p.end) for p in placed
                       if not liveness.may_share(alloc, p.live.alloc)))
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, _round_up(hi, align))
        placed.append(Placement(liveness.ranges[alloc], offset, size))
    placed.sort(key=lambda p: (p.offset, p.live.start))
    return Layout(kernel, liveness, placed, align, capacity)


def layout_from_ir(kernel: func.FuncOp, *, capacity: int, align: int) -> Layout:
    """The layout the IR already holds (`offset` properties); buffers without one are placed
    one after another after the highest, as the interpreter does."""
    liveness = Liveness(kernel)
    placed: list[Placement] = []
    pending: list[pto.AllocLocalOp] = []
    for alloc in liveness.allocs:
        size = _round_up(max(buffer_bytes(alloc), 1), align)
        if alloc.l1_offset is None:
            pending.append(alloc)
        else:
            placed.append(Placement(liveness.ranges[alloc], alloc.l1_offset, size))
    top = max((p.end for p in placed), default=0)
    for alloc in pending:
        size = _round_up(max(buffer_bytes(alloc), 1), align)
        placed.append(Placement(liveness.ranges[alloc], top, size))
        top += size
    placed.sort(key=lambda p: (p.offset, p.live.start))
    return Layout(kernel, liveness, placed, align, capacity)


def functions(root: Operation) -> list[func.FuncOp]:
    """The functions with a body (kernels and helpers alike) under `root`."""
    return list(kernels(root))


__all__ = ["Layout", "LiveRange", "Liveness", "Placement", "SLOTS_ATTR", "buffer_bytes",
           "buffer_label", "functions", "is_block_sync", "layout_from_ir", "location_text",
           "plan_layout", "slots_of", "trace_sources"]
