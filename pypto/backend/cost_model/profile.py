"""`Profile`: what `pto.profile()` returns (docs/cost-model.md#quick-start) — modelled cycles, never measurements.

Built from a launch's trace (the executor's `Trace` instrument) and the op table of the kernel
that ran: every instruction of every distinct block behaviour is scheduled once by the engine,
and the launch result spreads the blocks over the AI cores. Everything a user reads here names
the model and the target file it came from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.backend.cost_model.engine import BlockSchedule, pipe_work
from pypto.backend.cost_model.facts import OpFacts, cube_buffers, facts_of, varying_of
from pypto.backend.cost_model.launch import LaunchResult, simulate_launch
from pypto.backend.cost_model.params import HBM, PIPES, RESOURCES, ModelParams
from pypto.backend.interpreter.instruments import OpTable


def short_source(location: str) -> str:
    """`file.py:12:8` -> `file.py:12` (the Python line)."""
    parts = location.rsplit(":", 2)
    return ":".join(parts[:2]) if len(parts) == 3 and parts[2].isdigit() else location


@dataclass(frozen=True)
class TimelineEntry:
    """One instruction of the profiled block on its pipe."""

    cycle: int            # start, in cycles from the block's start
    end: int
    pipe: str
    lanes: int            # active lanes
    inst: str             # instruction kind: LOAD, FMA, MMA, LOAD_MMA, ...
    source: str           # Python file:line
    op: str               # IR op name
    op_id: int
    block_lanes: int
    hbm_extra: int = 0    # cycles the block's share of HBM added to this transfer

    @property
    def lane(self) -> str:
        """The article's `Lane 0-255` label (the count when only some lanes are active)."""
        if self.lanes == self.block_lanes:
            return f"0-{self.lanes - 1}"
        return f"{self.lanes} of {self.block_lanes}"

    @property
    def cycles(self) -> int:
        return self.end - self.cycle


_SHARE = "HBM share: "
"""How a bubble entry of a copy stretched by its block's share of HBM starts its cause."""


@dataclass(frozen=True)
class BubbleEntry:
    """A pipe idle while its next instruction was held back, and why."""

    pipe: str
    start: int
    end: int
    inst: str             # the instruction that waited
    source: str
    cause: str            # which dependency, wait or barrier
    blocks: int           # how many blocks behave like this (its block class)
    leading: bool = False # before the pipe's first instruction: the pipeline filling up

    @property
    def cycles(self) -> int:
        return self.end - self.start

    def __str__(self) -> str:
        unit = "cycle" if self.cycles == 1 else "cycles"
        if self.cause.startswith(_SHARE):  # not idle: a copy streaming slower than its pipe
            return (f"{self.inst} at {self.source} stretched by {self.cycles} {unit} "
                    f"({self.start}-{self.end}): {self.cause}")
        first = " (its first)" if self.leading else ""
        return (f"{self.pipe} idle for {self.cycles} {unit} ({self.start}-{self.end}) before "
                f"{self.inst}{first} at {self.source}: {self.cause}")


@dataclass(frozen=True)
class ResourceBound:
    """The fewest cycles any schedule of the launch's instructions could take (a roofline from
    the model itself): every block needs each pipe for its work (`engine.pipe_work`), so a
    block takes at least its start plus its busiest pipe's work; the cores take at least the
    longest block and an even share of all blocks; HBM at least its roofline."""

    cycles: int               # launch_cycles + max(cores' lower bound, HBM roofline)
    resource: str             # what binds: the busiest pipe of the longest block, or HBM
    block_work: dict[str, int]  # per pipe, the work of block 0's class (cycles)

    def __str__(self) -> str:
        work = ", ".join(f"{p} {c}" for p, c in self.block_work.items() if c)
        return (f"no schedule of these instructions takes fewer than {self.cycles} cycles: "
                f"bound by {self.resource} (block 0's work per pipe: {work})")


@dataclass(frozen=True)
class KindCost:
    kind: str
    latency: int          # the model's latency of one instruction of this kind
    pipe: str
    count: int            # instructions executed in the whole launch (per block)
    busy: int             # pipe cycles they occupy, whole launch


class CycleBreakdown(list[KindCost]):
    """Cycles per instruction kind; `str()` prints the article's `LOAD: 3 cycles` lines."""

    header: str = ""

    def __str__(self) -> str:
        lines = [f"# {self.header}"] if self.header else []
        for k in self:
            unit = "cycle" if k.latency == 1 else "cycles"
            lines.append(f"{k.kind}: {k.latency} {unit} (x{k.count} on {k.pipe}, "
                         f"{k.busy} pipe cycles)")
        return "\n".join(lines)

    def latency(self, kind: str) -> int:
        for k in self:
            if k.kind == kind:
                return k.latency
        raise KeyError(f"no {kind} instruction in this profile; kinds: "
                       f"{', '.join(k.kind for k in self)}")


class Profile:
    """The cost model's view of one launch (see the module docstring and docs/cost-model.md)."""

    def __init__(self, kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                 params: ModelParams, facts: dict[int, OpFacts], launch: LaunchResult):
        self.kernel = kernel
        self.grid = grid
        self.block = block
        self.params = params
        self.facts = facts
        self.launch = launch

    # headline numbers -------------------------------------------------------------------------

    @property
    def model(self) -> str:
        return self.params.model

    @property
    def header(self) -> str:
        return self.params.header

    @property
    def total_cycles(self) -> int:
        """Modelled cycles of the whole launch: max(compute over the cores, HBM roofline)."""
        return self.launch.total_cycles

    @property
    def compute_cycles(self) -> int:
        return self.launch.compute_cycles

    @property
    def roofline_cycles(self) -> int:
        return self.launch.roofline_cycles

    @property
    def hbm_bytes(self) -> int:
        return self.launch.hbm_bytes

    @property
    def seconds(self) -> float:
        """total_cycles at the target's clock."""
        return self.total_cycles / (self.params.target.clock_ghz * 1e9)

    @property
    def block_lanes(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def summary(self) -> str:
        lr = self.launch
        return (f"{self.kernel}: {self.total_cycles} cycles, bound by {lr.bound} (compute "
                f"{lr.compute_cycles} cycles: {lr.n_blocks} block(s) on {lr.cores_used} core(s) in "
                f"{lr.waves} wave(s), {len(lr.classes)} distinct block behaviour(s); HBM "
                f"{lr.hbm_bytes} bytes{self._l2_note()} at "
                f"{self.params.target.hbm_bytes_per_cycle:g} B/cycle = {lr.roofline_cycles} "
                f"cycles)")

    def _l2_note(self) -> str:
        lr = self.launch
        if lr.l2_resident and lr.traffic_bytes > lr.hbm_bytes:
            return f" (of {lr.traffic_bytes} moved; the rest hits in L2)"
        return ""

    def __repr__(self) -> str:
        return f"<pto.Profile {self.summary()} — {self.header}>"

    # per instruction --------------------------------------------------------------------------

    @property
    def representative(self) -> BlockSchedule:
        """The schedule of block 0 (the timeline shows it)."""
        return self.launch.classes[0].schedule if self.launch.classes else BlockSchedule()

    def entries(self, schedule: BlockSchedule, hbm_wait: int = 0) -> list[TimelineEntry]:
        """The schedule's slices in start order (a fused load+MMA shows on CUBE and on MTE_IN);
        `hbm_wait`: cycles the block then waits for its share of HBM (an `HBM_WAIT` entry)."""
        out = []
        for s in sorted(schedule.slices, key=lambda s: (s.start, RESOURCES.index(s.pipe))):
            f = self.facts[s.op_id]
            out.append(TimelineEntry(s.start, s.end, s.pipe, s.lanes, f.kind,
                                     short_source(f.source), f.name, s.op_id, self.block_lanes,
                                     s.hbm_extra))
        last = max((e.end for e in out), default=0)
        if schedule.cycles > last:  # accesses still landing after the last instruction
            out.append(TimelineEntry(last, schedule.cycles, HBM, self.block_lanes,
                                     "MEM_DRAIN", self.kernel, "", -1, self.block_lanes))
        if hbm_wait > 0:
            out.append(TimelineEntry(schedule.cycles, schedule.cycles + hbm_wait, HBM,
                                     self.block_lanes, "HBM_WAIT", self.kernel, "", -1,
                                     self.block_lanes))
        return out

    def hbm_wait(self, block: int = 0) -> int:
        """Cycles block `block` waits at its end for its share of the HBM bandwidth."""
        wait = self.launch.block_wait
        return int(wait[block]) if wait is not None and block < len(wait) else 0

    @property
    def timeline(self) -> list[TimelineEntry]:
        """Block 0's instructions in start order, with cycle, pipe, lanes, inst, source (and,
        when the launch is HBM-bound, the block's wait for HBM, on the `HBM` row)."""
        return self.entries(self.representative, self.hbm_wait(0))

    def cycle_breakdown(self) -> CycleBreakdown:
        """Per instruction kind: its latency in the model, how many ran, their pipe cycles."""
        count: dict[str, int] = {}
        busy: dict[str, int] = {}
        pipe: dict[str, str] = {}
        for c in self.launch.classes:
            n = len(c.blocks)
            for s in c.schedule.slices:
                if s.part:  # the fused load's copy on MTE_IN: the same instruction
                    continue
                f = self.facts[s.op_id]
                count[f.kind] = count.get(f.kind, 0) + n
                busy[f.kind] = busy.get(f.kind, 0) + (s.end - s.start) * n
                pipe[f.kind] = f.pipe
        out = CycleBreakdown(
            KindCost(k, self.params.latency_of(k, pipe[k]), pipe[k], count[k], busy[k])
            for k in sorted(busy, key=lambda k: (-busy[k], k)))
        out.header = self.header
        return out

    def bubbles(self) -> list[BubbleEntry]:
        """Stall intervals of every distinct block behaviour with their cause: stalls between a
        pipe's instructions first, longest (x blocks) first, then each pipe's idle start."""
        out = []
        for c in self.launch.classes:
            for b in c.schedule.bubbles:
                f = self.facts[b.op_id]
                out.append(BubbleEntry(b.pipe, b.start, b.end, f.kind, short_source(f.source),
                                       b.cause.describe(self.facts), len(c.blocks), b.leading))
            for s in c.schedule.slices:  # a copy stretched by the block's share of HBM
                if s.hbm_extra:
                    f = self.facts[s.op_id]
                    out.append(BubbleEntry(HBM, s.end - s.hbm_extra, s.end, f.kind,
                                           short_source(f.source), self._share_cause(s),
                                           len(c.blocks)))
            wait = self.hbm_wait(c.blocks[0]) if c.blocks else 0
            if wait > 0:
                end = c.schedule.cycles
                out.append(BubbleEntry(HBM, end, end + wait, "HBM_WAIT", self.kernel,
                                       self._hbm_cause(), len(c.blocks)))
        # stalls between instructions first (longest, weighted by blocks), then the fill-up
        out.sort(key=lambda b: (b.leading, -b.cycles * b.blocks, b.start))
        return out

    def _share_cause(self, s: Any) -> str:
        lr = self.launch
        f = self.facts[s.op_id]
        own = s.end - s.start - s.hbm_extra
        return (f"{_SHARE}{lr.cores_used} blocks run at once and share "
                f"{self.params.target.hbm_bytes_per_cycle:g} B/cycle of HBM ({lr.hbm_share:g} "
                f"B/cycle each, {lr.l2_miss:.0%} of the bytes missing in L2): this copy of "
                f"{f.copy_bytes} bytes streams in {s.end - s.start} cycles instead of {own}")

    def _hbm_cause(self) -> str:
        lr = self.launch
        bw = self.params.target.hbm_bytes_per_cycle
        return (f"HBM bandwidth: the launch moves {lr.hbm_bytes} bytes to/from HBM at {bw:g} "
                f"B/cycle ({lr.roofline_cycles} cycles) but its blocks compute in "
                f"{lr.compute_cycles}: every block waits for its share of the bandwidth")

    def utilization(self) -> dict[str, float]:
        """Per pipe: busy cycles over (total cycles x cores used), whole launch, in [0, 1];
        `HBM`: bytes moved over what the bandwidth could move in the launch's cycles."""
        lr = self.launch
        span = max(1, self.total_cycles * lr.cores_used)
        out = {p: sum(c.schedule.busy[p] * len(c.blocks) for c in lr.classes) / span
               for p in PIPES}
        out[HBM] = lr.hbm_bytes / max(1.0, self.total_cycles *
                                      self.params.target.hbm_bytes_per_cycle)
        return out

    def resource_bound(self) -> ResourceBound:
        """The launch's roofline from the model (`ResourceBound`): `total_cycles` is never
        below it, and `total_cycles / resource_bound().cycles` says how far any other
        schedule of the same instructions (double buffering, reordering) could improve."""
        lr = self.launch
        p = self.params
        longest, longest_pipe, share = 0, "SCALAR", 0
        shortest = p.block_cycles if lr.n_blocks > sum(len(c.blocks) for c in lr.classes) \
            else None                                      # blocks with no event
        first: dict[str, int] = {}
        for c in lr.classes:
            work = pipe_work(c.schedule, self.facts, p)
            if not first:
                first = work
            pipe = max(work, key=lambda k: work[k])
            need = p.block_cycles + work[pipe]
            # its bytes that reach HBM, at its share of the bandwidth (blocks of a wave)
            if lr.hbm_share > 0:
                hbm = math.ceil(c.schedule.hbm_bytes * lr.l2_miss / lr.hbm_share - 1e-9)
                if p.block_cycles + hbm > need:
                    pipe, need = HBM, p.block_cycles + hbm
            share += need * len(c.blocks)
            shortest = need if shortest is None else min(shortest, need)
            if need > longest:
                longest, longest_pipe = need, pipe
        share += (lr.n_blocks - sum(len(c.blocks) for c in lr.classes)) * p.block_cycles
        cores = max(1, min(p.target.ai_cores, lr.n_blocks))
        # some core runs ceil(blocks / cores) whole blocks (blocks are not split)
        compute = max(longest, math.ceil(share / cores),
                      -(-lr.n_blocks // cores) * (shortest or 0))
        resource = HBM if lr.roofline_cycles > compute else longest_pipe
        return ResourceBound(lr.launch_cycles + max(compute, lr.roofline_cycles), resource,
                             first)

    # outputs -----------------------------------------------------------------------------------

    def to_text(self, *, max_instructions: int = 60) -> str:
        from pypto.backend.cost_model.report import profile_text

        return profile_text(self, max_instructions=max_instructions)

    def to_chrome_trace(self, path: str | Path | None = None, *,
                        max_slices: int = 200_000) -> dict[str, Any]:
        """Chrome / Perfetto trace JSON (one track per pipe per modelled core); written to
        `path` when given; returns the JSON object."""
        from pypto.backend.cost_model.chrome import chrome_trace

        return chrome_trace(self, path, max_slices=max_slices)


class _KnownFacts:
    """The facts of the ops of one kernel (op table) asked so far, by op id, and the kernel's
    lane-varying values (the uniformity analysis, run once)."""

    def __init__(self, ops: Sequence[Any]) -> None:
        self.ops = ops
        self.varying = varying_of(ops[0].op) if len(ops) else None
        self.cube = cube_buffers(ops[0].op) if len(ops) else None
        self.facts: dict[int, OpFacts] = {}

    def of(self, ids: set[int]) -> dict[int, OpFacts]:
        known = self.facts
        for i in ids.difference(known):
            known[i] = facts_of(i, self.ops[i].op, self.varying, self.cube)
        return {i: known[i] for i in ids}


def build_profile(kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                  params: ModelParams, ops: Sequence[Any],
                  block_classes: Sequence[tuple[list[int], Sequence[Any]]],
                  tensor_bytes: dict[int, int] | None = None,
                  footprints: dict[int, int] | None = None) -> Profile:
    """A Profile from an op table (`.op` per op id) and the trace's block classes;
    `tensor_bytes`: the size of each tensor argument, by parameter index; `footprints`: the
    bytes of each the launch touches (footprint.py), which the L2 rule prefers."""
    used = {ev.op_id for _, events in block_classes for ev in events}
    # an executable's op table keeps the facts asked of its ops' traits for the next profiles
    known = ops.derived("cost-facts", _KnownFacts) if isinstance(ops, OpTable) else \
        _KnownFacts(ops)
    facts = known.of(used)
    n_blocks = grid[0] * grid[1] * grid[2]
    return Profile(kernel, grid, block, params, facts,
                   simulate_launch(block_classes, facts, params, n_blocks, tensor_bytes,
                                   footprints))
