"""Per-block event simulation: the heart of the cost model (docs/cost-model.md#the-machine-the-engine-models).

Input: one block's executed instructions in program order (events of the executor's trace:
op id, active lanes, "exec" / "issue" (an async copy, with its token) / "wait" (for a token)),
the static facts of each op (facts.py) and the model's numbers (params.py).

The machine modelled, in one paragraph: a front end dispatches instructions in program order,
`dispatch_width` per cycle, into one in-order queue per pipe; pipes run in parallel. An
instruction starts when it has been dispatched, its pipe is free, the SSA values it reads are
ready (RAW) and the L1 buffers it touches are not being written / read by an earlier
instruction (RAW, WAR, WAW through L1). It occupies its pipe for `latency + repeats - 1` cycles,
`repeats` being its work over the pipe's throughput (lanes x bytes over the vector width, bytes
over the MTE bandwidth, MACs over the Cube rate; a fused load+MMA streams its operand while it
computes: the larger of the two, and its copy occupies MTE_IN meanwhile, as every copy does).
A lane access's data is ready its memory level's latency after the instruction (HBM farther
than L1); its work is the memory sectors its lanes touch (global), its L1 bank passes (local),
and lanes of a block on one address serialise for atomics (access.py). A copy's data lands
HBM's latency (the same a lane load pays) plus its MTE set-up after its start, and every
transfer to or from HBM books the block's share of the chip's bandwidth (`HbmChannel`: the
blocks of a wave never draw more than the peak together). Async copies run on
their MTE pipe while the front end goes on; a wait stalls the front end until its copy has
completed, a barrier until every pipe has drained, a synchronous tile store until its copy has. Time the pipe spends idle
before an instruction that was held back is a bubble, attributed to what held it back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from pypto.analysis.ir_utils import yielded
from pypto.backend.cost_model.access import STATS
from pypto.backend.cost_model.facts import (
    ANY_L1,
    L1Ref,
    BLOCKING_BARRIER,
    BLOCKING_SYNC_COPY,
    BLOCKING_WAIT,
    FOLD_OPERAND,
    FOLD_RESULT,
    OpFacts,
)
from pypto.backend.cost_model.params import PIPES, ModelParams
from pypto.backend.cost_model.rates import copy_repeats, cube_repeats, vector_repeats


@dataclass(frozen=True)
class Cause:
    """Why an instruction could not start earlier."""

    kind: str                 # dependency | l1 | wait | barrier | sync-copy | dispatch | pipe
    op_id: int | None         # the instruction waited for (producer, copy, ...)
    detail: str = ""          # e.g. the SSA value or buffer
    note: str = ""            # e.g. that the value comes from HBM, with its latency

    def describe(self, facts: dict[int, OpFacts]) -> str:
        what = ""
        if self.op_id is not None and self.op_id in facts:
            f = facts[self.op_id]
            what = f"{f.kind} at {f.source}"
        if self.kind == "dependency":
            return f"waits for {self.detail} produced by {what}{self.note}"
        if self.kind == "l1":
            return f"L1 {self.detail} with {what}"
        if self.kind == "wait":
            return f"wait for async copy token {self.detail} ({what})"
        if self.kind == "barrier":
            return f"barrier at {what}: every pipe drains first"
        if self.kind == "sync-copy":
            return f"synchronous tile store ({what}) must complete"
        if self.kind == "pipe":
            return f"pipe busy with {what}"
        if self.kind == "hbm":
            return self.detail
        return "in-order dispatch"


@dataclass(frozen=True)
class Slice:
    """One instruction on its pipe, in cycles from the block's start."""

    op_id: int
    pipe: str
    start: int
    end: int
    lanes: int
    dispatch: int
    cause: Cause | None       # what set its start (None: only the in-order front end)
    part: bool = False        # a further resource the instruction occupies (a fused load's
                              # copy on MTE_IN): not a second instruction
    hbm_extra: int = 0        # cycles the block's share of HBM bandwidth added to its
                              # transfer (docs/cost-model.md#hbm-shared-by-the-blocks-of-a-wave)


@dataclass(frozen=True)
class Bubble:
    pipe: str
    start: int
    end: int
    op_id: int                # the instruction that waited
    cause: Cause
    leading: bool = False     # before the pipe's first instruction (the pipeline filling)

    @property
    def cycles(self) -> int:
        return self.end - self.start


@dataclass
class BlockSchedule:
    slices: list[Slice] = field(default_factory=list)
    bubbles: list[Bubble] = field(default_factory=list)
    cycles: int = 0
    hbm_bytes: int = 0
    hbm_by_tensor: dict[int | None, int] = field(default_factory=dict)
    busy: dict[str, int] = field(default_factory=lambda: {p: 0 for p in PIPES})
    traffic: dict[int, int] = field(default_factory=dict)  # op id -> HBM bytes it moved
    # every transfer to or from global memory: (op id, start, end, bytes moved); the bytes
    # flow in [start, end) (a copy while it streams, a lane access until its data is there)
    hbm_use: list[tuple[int, int, int, int]] = field(default_factory=list)

    def hbm_peak(self, miss: float = 1.0) -> float:
        """The most HBM bandwidth (bytes per cycle) the block draws at any moment, counting
        `miss` of each transfer's bytes (the share that misses in L2)."""
        return peak_rate([(s, e, b * miss) for _, s, e, b in self.hbm_use])


def peak_rate(transfers: Sequence[tuple[int, int, float]]) -> float:
    """The largest sum of rates (bytes / (end - start)) of the transfers in flight at one
    moment: a sweep over their starts and ends."""
    points: list[tuple[int, float]] = []
    for start, end, nbytes in transfers:
        if end > start and nbytes > 0:
            rate = nbytes / (end - start)
            points.append((start, rate))
            points.append((end, -rate))
    points.sort(key=lambda p: (p[0], p[1]))  # an end before a start at the same cycle
    best = level = 0.0
    for _, delta in points:
        level += delta
        best = max(best, level)
    return best


class HbmChannel:
    """The block's share of HBM bandwidth as a resource with a capacity (llvm-mca's resource
    occupancy, in bytes per cycle): the blocks of a wave run at once on the AI cores, and
    their transfers together never draw more than the chip's peak, so each core's draws at
    most `share` = peak / cores in use at any moment (docs/cost-model.md#hbm-shared-by-the-blocks-of-a-wave).
    A transfer gets what the block's earlier transfers leave of the share over its span; when
    that is less than its pipe's own rate it streams slower (it is stretched), and when
    nothing is left it starts once a transfer in flight ends. `miss`: the share of a
    transfer's bytes that reach HBM (the launch's L2 rule; hits are served by the L2)."""

    def __init__(self, share: float | None, miss: float = 1.0) -> None:
        self.share = share
        self.miss = miss
        self.booked: list[tuple[int, int, float]] = []   # (start, end, HBM bytes per cycle)

    def level(self, lo: int, hi: int) -> float:
        """The most bandwidth already booked at any moment of [lo, hi)."""
        points: list[tuple[int, float]] = []
        for s, e, rate in self.booked:
            if s < hi and lo < e:
                points.append((max(s, lo), rate))
                points.append((min(e, hi), -rate))
        points.sort(key=lambda p: (p[0], p[1]))
        best = level = 0.0
        for _, delta in points:
            level += delta
            best = max(best, level)
        return best

    def place(self, start: int, nbytes: int, span: int, settled: int = 0) -> tuple[int, int]:
        """(start, span) of a transfer of `nbytes` that would take `span` cycles at its own
        rate, from `start` on, within the share; booked. It starts at `start` when anything
        is left of the share there, else when a transfer in flight ends; its span grows until
        its rate fits in what is left over the whole span."""
        if self.share is None or nbytes <= 0:
            return start, span
        need = nbytes * self.miss
        # transfers that ended by `settled` (the front end's cycle: nothing later starts
        # earlier) cannot overlap this one or any later one
        self.booked = [b for b in self.booked if b[1] > settled]
        candidates = [start] + sorted({e for _, e, _ in self.booked if e > start})
        for t in candidates:
            length = max(span, math.ceil(need / self.share - 1e-9))
            while True:  # a longer span may overlap more transfers: to a fixed point
                free = self.share - self.level(t, t + length)
                if free <= 1e-9:
                    break
                longer = max(length, math.ceil(need / free - 1e-9))
                if longer == length:
                    self.booked.append((t, t + length, need / length))
                    return t, length
                length = longer
        raise AssertionError("unreachable: after every booked transfer the share is free")

    def describe(self) -> str:
        return (f"this block may draw {self.share:g} B/cycle of HBM while its wave runs "
                f"({self.miss:.0%} of its bytes miss in L2)")


_PRIORITY = {"dispatch": 0, "pipe": 1}
_ROOTS = ("wait", "barrier", "sync-copy")


def copy_duration(copy_bytes: int, p: ModelParams, to_cube: bool = False,
                  pipe: str = "MTE_IN") -> int:
    """Cycles from a copy's start until its last byte has landed: the latency of the memory
    level it reaches (HBM: `[cost.memory] hbm_latency`, the very figure a lane load from HBM
    pays, docs/cost-model.md#one-latency-per-memory-level), then its MTE pipe's own set-up
    (`[cost.default_latency]` MTE_IN or MTE_OUT), then its repeats: latency + head +
    repeats - 1."""
    head = p.default_latency.get(pipe, p.latency_of("COPY_IN", "MTE_IN"))
    return max(1, p.memory_latency("global") + head +
               copy_occupancy(copy_bytes, p, to_cube) - 1)


def copy_occupancy(copy_bytes: int, p: ModelParams, to_cube: bool = False) -> int:
    """Cycles a copy holds its MTE pipe: its bytes over the copy bandwidth (`copy_repeats`).
    The start-up (latency) of the next copy overlaps this one's transfer, as a DMA engine with
    several requests in flight does; the copy's data is there `copy_duration` after its
    start."""
    return copy_repeats(copy_bytes, p, to_cube)


def duration(f: OpFacts, lanes: int, p: ModelParams, work: int | None = None,
             extra: int = 0) -> int:
    """Cycles `f` occupies its pipe: latency + repeats - 1 (at least one cycle), plus `extra`
    (serialised passes: bank conflicts, same-address atomics). `work`: the bytes a lane
    access really moves (whole sectors), when known. A copy occupies its MTE pipe for its
    repeats only (`copy_occupancy`); its latency shows in when its data is there."""
    latency = p.latency_of(f.kind, f.pipe)
    if f.macs:
        repeats = cube_repeats(f.mma_shape or (f.macs, 1, 1), f.elem_bytes, f.cube_fp32, p)
        if f.copy_bytes:  # the fused load streams its operand into the Cube as it computes:
            # the Cube cannot finish before the copy's last byte has landed
            return max(latency + repeats - 1, copy_duration(f.copy_bytes, p, True))
    elif f.pipe in ("MTE_IN", "MTE_OUT"):
        return copy_occupancy(f.copy_bytes, p, f.to_cube)
    elif f.pipe == "VECTOR":
        rate = p.vector_class(f.vector_class)
        if rate is not None:  # a tile vector instruction: head + slope x 256-byte repeats
            head, slope = rate
            repeats = max(1, math.ceil(f.copy_bytes / p.vector_repeat_bytes)) * slope
            return max(1, head + repeats - 1) + extra
        repeats = vector_repeats(f.copy_bytes if f.copy_bytes else
                                 max(lanes * f.elem_bytes, work or 0), p)
    else:
        repeats = 1
    return max(1, latency + repeats - 1) + extra


def pipe_work(schedule: BlockSchedule, facts: dict[int, OpFacts],
              params: ModelParams) -> dict[str, int]:
    """Per pipe, the cycles the block's instructions need it for whatever their order: each
    slice's duration, except that a fused LOAD_MMA counts only its MMA on the CUBE (its wait
    for the copy's last byte depends on the schedule; its copy is counted on MTE_IN). No
    schedule of these instructions finishes the block before the busiest pipe's work is done
    (`Profile.resource_bound`)."""
    work = {p: 0 for p in PIPES}
    for s in schedule.slices:
        f = facts[s.op_id]
        if f.macs and f.copy_bytes and s.pipe == "CUBE":
            repeats = cube_repeats(f.mma_shape or (f.macs, 1, 1), f.elem_bytes, f.cube_fp32,
                                   params)
            work[s.pipe] += max(1, params.latency_of(f.kind, f.pipe) + repeats - 1)
        else:  # (a copy's own rate: the HBM share's stretch depends on the schedule)
            work[s.pipe] += s.end - s.start - s.hbm_extra
    return work


def lane_access(f: OpFacts, lanes: int, access: dict[tuple[SSAValue, str], int],
                p: ModelParams) -> tuple[int | None, int, int]:
    """(bytes moved, extra serialised cycles, HBM bytes) of a lane memory instruction on
    `lanes` active lanes, from the addresses its lanes touched (`access`, recorded by the cost
    trace) or, without a record, from its address being uniform (one address) or not
    (contiguous lanes assumed)."""
    if f.address is None:
        return None, 0, f.hbm_bytes_per_lane * lanes
    warps = max(1, -(-lanes // p.warp_size))
    extra = 0
    moved: int | None = None
    hbm = 0
    if f.space == "global":
        sectors = access.get((f.address, "sectors"))
        if sectors is None:
            sectors = warps if f.uniform_address else \
                max(1, -(-lanes * f.elem_bytes // p.sector_bytes))
        moved = sectors * p.sector_bytes
        hbm = moved * (2 if f.atomic else 1)
    elif f.space == "local":
        passes = access.get((f.address, "banks"), warps)
        extra += max(0, passes - warps)
    if f.atomic:
        same = access.get((f.address, "same"))
        if same is None:
            same = lanes if f.uniform_address else 1
        extra += max(0, same - 1) * p.atomic_cycles
    return moved, extra, hbm


class _Ready:
    """When each SSA value becomes available (its producer's end), through region results."""

    def __init__(self) -> None:
        self.times: dict[SSAValue, tuple[int, int | None]] = {}

    def get(self, value: SSAValue, depth: int = 0) -> tuple[int, int | None]:
        known = self.times.get(value)
        if known is not None or depth > 6:
            return known or (0, None)
        owner = value.owner
        sources: list[SSAValue] = []
        if isinstance(owner, Block):
            loop = owner.parent_op()
            if isinstance(loop, scf.ForOp) and value.index > 0:
                sources.append(loop.iter_args[value.index - 1])
                last = owner.last_op
                if last is not None and value.index - 1 < len(last.operands):
                    sources.append(last.operands[value.index - 1])
            elif isinstance(loop, scf.WhileOp):  # carried: the initial value or the yield
                if owner is loop.before_region.block:
                    sources.append(loop.arguments[value.index])
                    last = loop.after_region.block.last_op
                else:
                    last = loop.before_region.block.last_op  # scf.condition: (cond, *args)
                    sources.append(last.operands[value.index + 1] if last is not None and
                                   value.index + 1 < len(last.operands) else value)
                    last = None
                if last is not None and value.index < len(last.operands):
                    sources.append(last.operands[value.index])
        elif isinstance(owner, scf.WhileOp):  # a result: what scf.condition forwarded
            condition = owner.before_region.block.last_op
            if condition is not None and value.index + 1 < len(condition.operands):
                sources.append(condition.operands[value.index + 1])
        elif isinstance(owner, Operation) and owner.regions:
            sources.extend(yielded(owner, list(owner.results).index(value)))
        best: tuple[int, int | None] = (0, None)
        for source in sources:
            found = self.get(source, depth + 1)
            if found[0] > best[0]:
                best = found
        return best


_WHOLE = (0, float("inf"))


class _L1Tracker:
    """Who is reading and writing which elements of which L1 buffer until when."""

    def __init__(self) -> None:
        self.offsets: dict[SSAValue, int] = {}
        # (buffer, lo, hi, end, op_id): the access ends at `end`
        self.written: list[tuple[object, float, float, int, int]] = []
        self.read: list[tuple[object, float, float, int, int]] = []

    def region(self, ref: L1Ref) -> tuple[object, float, float]:
        if ref.buffer is ANY_L1 or ref.extent is None or ref.address is None:
            return (ref.buffer, *_WHOLE)
        if ref.address is ref.buffer:
            start = 0
        elif ref.address in self.offsets:
            start = self.offsets[ref.address]
        else:
            return (ref.buffer, *_WHOLE)
        return (ref.buffer, start, start + ref.extent)

    def forget_before(self, t: int) -> None:
        """Accesses that ended by `t` cannot hold back anything dispatched from `t` on."""
        if len(self.written) + len(self.read) > 64:
            self.written = [a for a in self.written if a[3] > t]
            self.read = [a for a in self.read if a[3] > t]

    @staticmethod
    def latest(table: list[tuple[object, float, float, int, int]],
               region: tuple[object, float, float]) -> tuple[int, int] | None:
        buffer, lo, hi = region
        best: tuple[int, int] | None = None
        for other, olo, ohi, end, op_id in table:
            same = other is buffer or other is ANY_L1 or buffer is ANY_L1
            if same and olo < hi and lo < ohi and (best is None or end > best[0]):
                best = (end, op_id)
        return best


def simulate_block(events: Sequence[Any], facts: dict[int, OpFacts],
                   params: ModelParams, hbm_share: float | None = None,
                   l2_miss: float = 1.0) -> BlockSchedule:
    """Schedule one block's instructions (events with .op_id .lanes .token .kind).

    `hbm_share`: the HBM bandwidth (bytes per cycle) this block may draw at any moment (its
    core's share while the other blocks of its wave run; `HbmChannel`), None: unlimited;
    `l2_miss`: the share of its transfers' bytes that reach HBM (the launch's L2 rule)."""
    out = BlockSchedule()
    channel = HbmChannel(hbm_share, l2_miss)
    width = params.dispatch_width
    front = 0                      # earliest dispatch cycle of the next instruction
    issued = 0                     # instructions dispatched in cycle `front`
    stall_until = 0
    stall_cause: Cause | None = None
    pipe_free = {p: 0 for p in PIPES}
    pipe_last: dict[str, int | None] = {p: None for p in PIPES}
    ready = _Ready()
    l1 = _L1Tracker()
    tokens: dict[int, tuple[int, int]] = {}
    drained = 0
    retired = 0                    # the block's memory accesses have all completed
    held_back: dict[int, Cause | None] = {}
    access: dict[tuple[SSAValue, str], int] = {}
    lane_rule = params.model == "fused"  # docs/cost-model.md#the-lane-rule
    fetched: dict[SSAValue, tuple[OpFacts, int]] = {}  # a folded load's value: (load, lanes)
    spans: dict[int, int] = {}     # op id -> cycles its last execution held its pipe

    def dispatch() -> tuple[int, Cause | None]:
        nonlocal front, issued
        t = front
        cause = None
        if stall_until > t:
            t, cause = stall_until, stall_cause
            issued = 0
        issued += 1
        if issued >= width:
            front, issued = t + 1, 0
        else:
            front = t
        return t, cause

    for ev in events:
        f = facts[ev.op_id]
        if ev.kind == "offset":  # where a tile pointer points (CostTrace)
            l1.offsets[f.writes[0]] = ev.token
            continue
        if ev.kind in STATS:  # what the lanes of a pointer touch (CostTrace, access.py)
            access[(f.writes[0], ev.kind)] = ev.lanes
            continue
        if f.free:
            continue
        if lane_rule and f.fold == FOLD_OPERAND:
            # an operand fetch of the instructions that use the value: costed in them
            fetched[f.writes[0]] = (f, ev.lanes)
            continue
        if lane_rule and f.fold == FOLD_RESULT:
            # the producer's write to UB: ordered in L1 like a store, no head, no pipe time
            # the write lands when the producer ends; and, as if the producer had waited for
            # the store's address and destination, no earlier than its duration after those
            # (so that a store folded into an added instruction never finishes sooner than
            # the store alone would: docs/cost-model.md#the-lane-rule)
            value = next((v for v in f.reads if v is not f.address), None)
            produced, producer = ready.get(value) if value is not None else (0, None)
            span = spans.get(producer, 0) if producer is not None else 0
            after = max([ready.get(v)[0] for v in f.reads if v is not value] + [0])
            regions = [l1.region(ref) for ref in f.l1_writes]
            for region in regions:
                for table in (l1.read, l1.written):
                    hit = l1.latest(table, region)
                    if hit:
                        after = max(after, hit[0])
            done = max(produced, after + span)
            for region in regions:
                l1.written.append((*region, done, ev.op_id))
            retired = max(retired, done + params.memory_latency(f.space))
            drained = max(drained, done)
            continue
        t_disp, disp_cause = dispatch()
        if f.blocking == BLOCKING_WAIT:
            if ev.kind == "wait" and ev.token in tokens:
                done, copy_op = tokens[ev.token]
                if done > stall_until:
                    stall_until = done
                    stall_cause = Cause("wait", copy_op, str(ev.token))
            continue
        if f.blocking == BLOCKING_BARRIER:
            if drained > stall_until:
                stall_until = drained
                stall_cause = Cause("barrier", ev.op_id)
            continue
        # an instruction on a pipe: find what holds it back
        constraints: list[tuple[int, Cause | None]] = [
            (t_disp, disp_cause or Cause("dispatch", None))]
        pipe = f.pipe
        if pipe_last[pipe] is not None:
            constraints.append((pipe_free[pipe], Cause("pipe", pipe_last[pipe])))
        fused_copy = bool(f.macs and f.copy_bytes)  # a fused load+MMA also needs MTE_IN
        if fused_copy and pipe_last["MTE_IN"] is not None:
            constraints.append((pipe_free["MTE_IN"], Cause("pipe", pipe_last["MTE_IN"])))
        for value in f.reads:
            t, producer = ready.get(value)
            if t:
                name = f"%{value.name_hint}" if value.name_hint else "its operand"
                pf = facts.get(producer) if producer is not None else None
                note = ""
                if pf is not None and pf.loads and params.memory_latency(pf.space):
                    level = "HBM" if pf.space == "global" else "L1"
                    note = (f" (data from {level}: {params.memory_latency(pf.space)} cycles of "
                            f"latency after the {pf.kind})")
                dep = Cause("dependency", producer, name, note)
                # a producer that was itself held back by a wait or barrier: name that root
                root = held_back.get(producer) if producer is not None else None
                constraints.append((t, root if root is not None else dep))
        operands = [fetched[v] for v in f.reads if v in fetched] if lane_rule else []
        for load, _ in operands:  # folded loads: their address and their L1 reads are this one's
            for value in load.reads:
                t, producer = ready.get(value)
                if t:
                    constraints.append((t, Cause("dependency", producer, "its operand's address")))
        reads = [l1.region(ref) for ref in f.l1_reads] + \
            [l1.region(ref) for load, _ in operands for ref in load.l1_reads]
        writes = [l1.region(ref) for ref in f.l1_writes]
        l1.forget_before(t_disp)
        for region in reads:
            hit = l1.latest(l1.written, region)
            if hit:
                constraints.append((hit[0], Cause("l1", hit[1], "read after write")))
        for region in writes:
            for table, what in ((l1.read, "write after read"), (l1.written, "write after write")):
                hit = l1.latest(table, region)
                if hit:
                    constraints.append((hit[0], Cause("l1", hit[1], what)))
        # the latest constraint sets the start; on a tie a real dependency is named, not the
        # pipe or the front end
        start, cause = max(constraints, key=lambda c: (c[0], _PRIORITY.get(c[1].kind, 2)
                                                        if c[1] else 0))
        moved, extra, hbm_moved = lane_access(f, ev.lanes, access, params)
        for load, lanes in operands:  # each operand streams through the unit as the result does
            fetch, more, _ = lane_access(load, lanes, access, params)
            moved = max(moved or 0, fetch or 0, lanes * load.elem_bytes)
            extra += more
        if operands:  # its head is no shorter than a fetch's alone would be (a load's)
            extra += max(0, max(params.latency_of(load.kind, load.pipe) for load, _ in operands)
                         - params.latency_of(f.kind, f.pipe))
        end = start + duration(f, ev.lanes, params, moved, extra)
        # the block's share of HBM (docs/cost-model.md#hbm-shared-by-the-blocks-of-a-wave): a
        # copy (or a fused load's copy) streams no faster than what is left of it, and starts
        # when some is left; a lane access's data comes no faster either
        is_copy = pipe in ("MTE_IN", "MTE_OUT") and not f.macs
        stretched = 0
        if (is_copy or fused_copy) and f.copy_bytes:
            own = copy_occupancy(f.copy_bytes, params, f.to_cube or fused_copy)
            at, span = channel.place(start, f.copy_bytes, own, t_disp)
            stretched = span - own
            if at > start:
                cause = Cause("hbm", None, f"HBM share: {channel.describe()}")
                start = at
            end = start + (span if is_copy else
                           max(duration(f, ev.lanes, params, moved, extra),
                               copy_duration(f.copy_bytes, params, True) + stretched))
            out.hbm_use.append((ev.op_id, start, start + span, f.copy_bytes))
        if start > pipe_free[pipe] and cause is not None and cause.kind not in ("pipe",
                                                                                 "dispatch"):
            out.bubbles.append(Bubble(pipe, pipe_free[pipe], start, ev.op_id, cause,
                                      pipe_last[pipe] is None))
        out.slices.append(Slice(ev.op_id, pipe, start, end, ev.lanes, t_disp,
                                cause if cause is not None and cause.kind != "dispatch"
                                else None, hbm_extra=stretched if is_copy else 0))
        out.busy[pipe] += end - start
        spans[ev.op_id] = end - start
        pipe_free[pipe] = end
        pipe_last[pipe] = ev.op_id
        held_back[ev.op_id] = cause if cause is not None and cause.kind in _ROOTS else None
        if fused_copy:
            copy_end = start + copy_occupancy(f.copy_bytes, params, True) + stretched
            out.slices.append(Slice(ev.op_id, "MTE_IN", start, copy_end, ev.lanes, t_disp,
                                    None, part=True, hbm_extra=stretched))
            out.busy["MTE_IN"] += copy_end - start
            pipe_free["MTE_IN"] = copy_end
            pipe_last["MTE_IN"] = ev.op_id
            # the fusion absorbed the copy's wait, not what the wait did: the front end still
            # stalls until the copy's data has landed (the Cube streams it in meanwhile), so an
            # added MMA that fuses never lets later work start sooner than the wait alone did
            # (docs/cost-model.md#what-the-model-guarantees-and-where-it-is-tested)
            landed = start + copy_duration(f.copy_bytes, params, True) + stretched
            if landed > stall_until:
                stall_until = landed
                stall_cause = Cause("wait", ev.op_id, "of the fused load")
        # when its effects are complete: a copy's data has landed (its start-up after its
        # start), a lane access's data arrived from its memory level
        if is_copy:
            done = start + copy_duration(f.copy_bytes, params, f.to_cube, pipe) + stretched
        elif f.address is not None:
            done = end + params.memory_latency(f.space)
        else:
            done = end
        if hbm_moved and not f.copy_bytes:  # a lane access's bytes flow until its data is
            at, span = channel.place(start, hbm_moved, max(1, done - start), t_disp)
            done = max(done, at + span)     # there, within the share
            out.hbm_use.append((ev.op_id, at, at + span, hbm_moved))
        retired = max(retired, done)
        for value in f.writes:
            ready.times[value] = (done if f.loads or is_copy else end, ev.op_id)
        for region in writes:  # (a staged load's slot: readers wait for its value instead)
            l1.written.append((*region, done if is_copy else end, ev.op_id))
        for region in reads:
            l1.read.append((*region, done if is_copy else end, ev.op_id))
        if ev.kind == "issue" and ev.token is not None:
            tokens[ev.token] = (done, ev.op_id)
        if f.blocking == BLOCKING_SYNC_COPY and done > stall_until:
            stall_until, stall_cause = done, Cause("sync-copy", ev.op_id)
        drained = max(drained, done if is_copy else end)
        if f.copy_bytes and f.pipe != "VECTOR":
            hbm_moved += f.copy_bytes
        if hbm_moved:
            out.hbm_bytes += hbm_moved
            out.hbm_by_tensor[f.tensor] = out.hbm_by_tensor.get(f.tensor, 0) + hbm_moved
            out.traffic[ev.op_id] = out.traffic.get(ev.op_id, 0) + hbm_moved
    out.cycles = max(drained, stall_until, front, retired)
    return out
