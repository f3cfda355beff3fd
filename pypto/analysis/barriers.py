"""Static barrier analysis: L1 hazards between warps, in-flight async copies, barrier divergence.

This is the analysis behind `pto-verify-barriers` (which reports) and `pto-insert-barriers`
(which repairs); docs/barriers.md states the semantics. In short:

* A *hazard* is a pair of L1 accesses (at least one a write; two atomics never race) that lanes
  of **different warps** can make to one element with no block-level synchronisation in
  between: `pto.barrier_block` or a tile instruction (every warp reaches those). A warp
  `pto.barrier()` orders only its own warp, so it separates nothing here, and lanes of one warp
  run in lockstep, so they never race with each other.
* Which accesses can follow each other is a structured dataflow over the kernel body, like
  Triton's Membar analysis (this module): the set of *open* accesses (since the last block
  barrier) and of in-flight copies flows through ops; `scf.if` joins both branches; `scf.for`
  walks its first iteration on its own, then the rest to a fixpoint, and an access that went
  round the back edge is tagged with the loop and its age, so that it is compared with the
  next iteration's accesses as coming from the previous (or an earlier) iteration.
* Whether two accesses touch one element from different warps is decided *concretely*
  (`pypto.analysis.l1_access`): addresses and active-lane masks are evaluated with NumPy over
  every lane of the block (`pypto.analysis.lane_values`), for the iterations of the enclosing
  loops that can be enumerated. What cannot be evaluated is conservatively a hazard when the
  buffers may alias.
* An `async_load`'s destination is written, and an `async_store`'s source read, until the
  `pto.wait` of its token or a `pto.wait_all`; accessing those regions meanwhile is a hazard.
* `barrier_block` and tile instructions under lane-dependent control flow are *divergent*
  (`pypto.analysis.barrier_report`, which also words every message).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func, scf
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from pypto.analysis.barrier_report import (
    Category,
    Hazard,
    find_divergence,
    in_flight_hazard,
    is_declaration,
    lanes_hazard,
    same_instruction_hazard,
    where,
)
from pypto.analysis.guards import apart_under_guards
from pypto.analysis.l1_access import (
    Conflict,
    Footprint,
    Kind,
    LaneAccess,
    TileRegion,
    lane_access,
    lanes_conflict,
    lanes_meet_at_multiple,
    may_alias,
    region_conflict,
    region_elements,
    tile_regions,
)
from pypto.analysis.lane_values import (
    MAX_AGE,
    Affine,
    Env,
    LaneModel,
    LaneSpace,
    defined_inside,
    enclosing_loops,
    lane_model,
)
from pypto.analysis.ir_utils import kernels, root_alloc
from pypto.analysis.uniformity import walk
from pypto.diagnostics import emit_remark
from pypto.dialects import pto
from pypto.dialects.traits import (
    declared_accesses,
    is_block_collective,
    starts_copy,
    sync_scope,
    tile_vector,
    waits_on,
)

DEFAULT_BLOCK_SIZE = 256
"""Lanes per block assumed when the launch shape is not known (`pto.compile` passes the real one)."""

PAIR_LIMIT = 1024
"""Most loop-iteration combinations evaluated for one pair of accesses; beyond it, loop values
stay symbolic (less precise, still sound)."""

UNROLL_LIMIT = 16
"""Longest prefix + period of per-iteration branch decisions the dataflow unrolls."""

MAX_PERIOD = 64
"""Longest period (in iterations) of a counter-periodic index that is enumerated."""

PERIOD_WINDOW = 256
"""Iterations sampled to find the period of branches on the counter of an unbounded loop."""

@dataclass(frozen=True)


class Entry:
    """An access (or an in-flight copy) in the open set; `carried` holds the loops whose back
    edge it went round since it executed, with how many times: 1 (it is from the previous
    iteration), 2 (the one before)... up to MAX_AGE (that many iterations ago or more)."""

    op: Operation
    carried: frozenset[tuple[scf.ForOp, int]] = frozenset()

    def age(self, loop: scf.ForOp) -> int:
        """Back edges of `loop` crossed: 0 (this iteration), 1 (previous), ..., MAX_AGE (that
        many or more)."""
        return next((age for lp, age in self.carried if lp is loop), 0)

    def older(self, loop: scf.ForOp) -> Entry:
        """This entry one more time round `loop`. Round an `scf.while` (no counter, its
        iterations are never enumerated) every age is "an earlier iteration" (MAX_AGE): the
        fixpoint then needs one age per entry instead of eight."""
        age = self.age(loop)
        rest = frozenset((lp, a) for lp, a in self.carried if lp is not loop)
        new_age = MAX_AGE if isinstance(loop, scf.WhileOp) else min(age + 1, MAX_AGE)
        return Entry(self.op, rest | {(loop, new_age)})

    def without(self, loop: scf.ForOp) -> Entry:
        return Entry(self.op, frozenset((lp, a) for lp, a in self.carried if lp is not loop))

# --------------------------------------------------------------------------------------------
# Branches decided per loop iteration
# --------------------------------------------------------------------------------------------


Decisions = dict[scf.IfOp, bool]

Fixed = frozenset[tuple[SSAValue, int]]
"""Loop values of the iteration being walked on its own (see UnrollPlan)."""

@dataclass


class Iteration:
    """One iteration the dataflow walks on its own: the branches it takes and the values of
    the loop's counter / carried integers in it (as far as they are known)."""

    decisions: Decisions
    values: dict[SSAValue, int]

@dataclass


class UnrollPlan:
    """How the dataflow walks a loop: `prefix` iterations one by one, then the iterations of
    `period` (branch decisions only) repeated to a fixpoint. `exact`: the prefix is every
    iteration (a known trip count) and there is no period.

    The first iteration is always walked on its own (peeled): what flows in from before the
    loop reaches the later iterations only if the first one lets it through (a prologue's
    copy waited for in iteration 0 is not in flight in iteration 1), and accesses in it are
    compared with their counter values known. Uniform branches on the counter are decided per
    iteration, so that a loop alternating buffers by parity (`if k % 2 == 0`) is not analysed
    along paths that never run (iteration 0 taking the odd branch).
    """

    prefix: list[Iteration]
    period: list[Decisions]
    exact: bool

def plan_unrolling(model: LaneModel, loop: scf.ForOp, env: Env) -> UnrollPlan:
    """The walk of `loop` under the values `env` of the enclosing loops. Branches are decided
    where that is exact: with a known trip count, every condition computable from the counter
    and carried values; otherwise, conditions periodic in the counter."""
    branches = [op for op in walk(loop.body.block.ops)
                if isinstance(op, scf.IfOp) and op.cond not in model.varying]
    counter = loop.body.block.args[0]
    sim = model.simulate(loop, env)
    iterations: list[dict[SSAValue, int]]
    if sim is not None:
        iterations = sim.iterations
        if not iterations:
            return UnrollPlan([], [], True)
    else:
        lb, step = model.scalar(loop.lb, env), model.scalar(loop.step, env)
        if lb is None or step is None or step <= 0 or not model.is_leaf(counter):
            return UnrollPlan([Iteration({}, {})], [{}], False)
        branches = [op for op in branches if model.counter_period(op.cond, counter) is not None]
        iterations = [{counter: lb + t * step} for t in range(PERIOD_WINDOW)]
    decided: list[scf.IfOp] = []
    rows: list[list[int]] = []
    for branch in branches:
        values = [model.scalar(branch.cond, {**env, **it}) for it in iterations]
        if all(v is not None for v in values):
            decided.append(branch)
            rows.append([int(v) for v in values if v is not None])
    table = np.array(rows, dtype=bool).T if rows else np.zeros((len(iterations), 0), bool)
    decisions = [dict(zip(decided, map(bool, row))) for row in table]
    if sim is not None and len(iterations) <= UNROLL_LIMIT:
        return UnrollPlan([Iteration(d, it) for d, it in zip(decisions, iterations)], [], True)
    best: tuple[int, int] | None = None
    for period in range(1, UNROLL_LIMIT + 1):
        if period >= len(iterations):
            break
        differs = np.flatnonzero(np.any(table[:-period] != table[period:], axis=1))
        prefix = max(1, int(differs[-1]) + 1 if differs.size else 0)
        if prefix + period <= UNROLL_LIMIT and (best is None or prefix + period < sum(best)):
            best = (prefix, period)
    if best is None:  # no short pattern: peel one iteration, then take every branch
        return UnrollPlan([Iteration({}, iterations[0])], [{}], False)
    prefix, period = best
    return UnrollPlan([Iteration(decisions[t], iterations[t]) for t in range(prefix)],
                      decisions[prefix:prefix + period], False)

# --------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------

class _Stop(Exception):
    """Raised inside the walk to stop at the first access with a hazard."""

@dataclass


class _State:
    """Open lane accesses (value: a warp barrier() lies between it and here) and in-flight
    async copies."""

    open: dict[Entry, bool] = field(default_factory=dict)
    copies: dict[Entry, None] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(dict(self.open), dict(self.copies))

    def merge(self, other: _State) -> None:
        for entry, flag in other.open.items():
            self.open[entry] = self.open.get(entry, False) or flag
        for entry in other.copies:
            self.copies[entry] = None

    def same(self, other: _State) -> bool:
        return self.open == other.open and self.copies.keys() == other.copies.keys()

    def _retag(self, change: callable) -> _State:  # type: ignore[valid-type]
        out = _State()
        for entry, flag in self.open.items():
            new = change(entry)
            out.open[new] = out.open.get(new, False) or flag
        for entry in self.copies:
            out.copies[change(entry)] = None
        return out

    def around(self, loop: scf.ForOp) -> _State:
        """The state at the top of the next iteration: the loop's own accesses get older."""
        return self._retag(lambda e: e.older(loop) if loop.is_ancestor(e.op) else e)

    def leaving(self, loop: scf.ForOp) -> _State:
        """After the loop its iterations are no longer told apart."""
        return self._retag(lambda e: e.without(loop) if e.age(loop) else e)

class BarrierAnalysis:
    """The barrier analysis of one kernel for one block shape.

    Build once, then `hazards()` as often as needed: `disabled` treats some `barrier_block`s
    as absent (how `pto-insert-barriers` asks "does this barrier order anything?").
    Evaluations are cached, and stay valid while the pass only adds, removes or replaces
    barriers. `include_global=True` also tracks HBM accesses (lanes of one block ordered by a
    `barrier_block` through HBM), so that a barrier ordering those is never considered useless.
    """

    def __init__(self, kernel: func.FuncOp, space: LaneSpace, *, include_global: bool = False):
        self.kernel = kernel
        self.space = space
        self.model = lane_model(kernel, space)
        self.include_global = include_global
        self._pairs: dict[tuple[Entry, Operation, Fixed], Conflict | None] = {}
        self._selves: dict[Operation, Conflict | None] = {}
        self._copy_pairs: dict[tuple[Entry, Operation, int, Fixed], Conflict | None] = {}
        self._trips: dict[scf.ForOp, int] = {}
        self._plans: dict[tuple[scf.ForOp, tuple[int | None, ...]], UnrollPlan] = {}
        self._accesses: dict[Operation, LaneAccess | None] = {}
        self._footprints: dict[tuple[Operation, frozenset[tuple[SSAValue, int]],
                                     frozenset[scf.IfOp]], Footprint] = {}
        self._roots: dict[SSAValue, frozenset[SSAValue] | None] = {}
        self._dep_cache: dict[Operation, tuple[SSAValue, ...]] = {}
        self._needed: dict[Operation, frozenset[scf.ForOp]] = {}

    def access(self, op: Operation) -> LaneAccess | None:
        """`lane_access(op)`, cached: the walk asks it of every open access for every new one
        (quadratic in the accesses between two block barriers, e.g. warp reductions)."""
        if op not in self._accesses:
            self._accesses[op] = lane_access(op)
        return self._accesses[op]

    # -- public ---------------------------------------------------------------------------------

    def divergence(self) -> Hazard | None:
        return find_divergence(self.kernel, self.model.varying)

    def hazards(self, *, stop_at_first: bool = False,
                disabled: frozenset[Operation] = frozenset()) -> list[Hazard]:
        """Every hazard (or those of the first access that has one), in program order."""
        walker = _Walker(self, disabled, stop_at_first)
        try:
            walker.walk_block(self.kernel.body.block, _State())
        except _Stop:
            pass
        return walker.found

    # -- footprints ------------------------------------------------------------------------------

    def lane_footprint(self, access: LaneAccess, env: Env,
                       opaque: frozenset[scf.IfOp] = frozenset()) -> Footprint:
        """Cached per (access, env, opaque): every open access is paired with every later one
        between two block barriers, and its footprint is the same each time (never mutated)."""
        key = (access.op, frozenset(env.items()), opaque)
        found = self._footprints.get(key)
        if found is None:
            model = self.model
            offset = model.offset(access.ptr, env)
            why = None if offset is not None else "depends on a value that is not known " \
                "(a loaded value, a lane-dependent loop-carried value, or an unsupported " \
                "operation)"
            found = Footprint(self.roots(access.ptr), offset, model.mask(access.op, env, opaque),
                              why=why)
            self._footprints[key] = found
        return found

    def roots(self, ptr: SSAValue) -> frozenset[SSAValue] | None:
        """`model.roots(ptr)`, cached (asked for both sides of every pair)."""
        if ptr not in self._roots:
            self._roots[ptr] = self.model.roots(ptr)
        return self._roots[ptr]

    def region_footprint(self, region: TileRegion, env: Env) -> Footprint:
        model = self.model
        offset = model.offset(region.ptr, env)
        if offset is not None and offset.lanes.ndim != 0:
            offset = None  # a lane-dependent tile address: not a region
        return Footprint(model.roots(region.ptr), offset,
                         elements=region_elements(region, model, env),
                         why=None if offset is not None else "is not known")

    def _loops_needed(self, op: Operation) -> frozenset[scf.ForOp]:
        """The loops whose values `op`'s address and mask depend on, cached per op."""
        if op not in self._needed:
            self._needed[op] = frozenset(self.model.loops_needed(self._deps(op)))
        return self._needed[op]

    def _deps(self, op: Operation) -> tuple[SSAValue, ...]:
        if op not in self._dep_cache:
            self._dep_cache[op] = self._deps_of(op)
        return self._dep_cache[op]

    def _deps_of(self, op: Operation) -> tuple[SSAValue, ...]:
        model = self.model
        values: list[SSAValue] = []
        access = self.access(op)
        if access is not None:
            values.append(access.ptr)
        for region in tile_regions(op):
            values.extend(region.op.operands)
        leaves = list(model.deps_of(values)) + list(model.mask_deps(op))
        return model._order(leaves)

    # -- environments ---------------------------------------------------------------------------

    def pair_envs(self, first: Entry, second: Operation, fixed: Fixed = frozenset()
                  ) -> tuple[list[tuple[dict[SSAValue, int], dict[SSAValue, int]]],
                             frozenset[scf.IfOp]]:
        """The joint loop iterations to evaluate a pair in: the loops around both are in the
        same iteration, except the outermost one the first access went round, where it is in
        an earlier one; loops around only one of them are independent.

        Also returns the branch conditions to take as unknown: a loop whose trip count is not
        known is enumerated over one period when the addresses depend on its counter only
        periodically (`k % 2`), and conditions that are not periodic in it (`k + 1 < n`) must
        not be decided from those few counter values.

        `fixed` holds the loop values of the iteration the dataflow is walking on its own (a
        peeled or unrolled one): the second access is in that iteration."""
        model = self.model
        pinned = dict(fixed)
        ops = (first.op, second)
        need_x, need_y = self._loops_needed(first.op), self._loops_needed(second)
        if not need_x and not need_y:
            return [({}, {})], frozenset()  # no loop value to enumerate
        around_x, around_y = enclosing_loops(first.op), enclosing_loops(second)
        common = [loop for loop in around_x if loop in around_y]
        crossed = next((loop for loop in common if first.age(loop)), None)
        age = first.age(crossed) if crossed is not None else 0
        shared = set(common[:common.index(crossed)]) if crossed is not None else set(common)
        opaque: set[scf.IfOp] = set()
        pairs: list[tuple[dict[SSAValue, int], dict[SSAValue, int]]] = [({}, {})]
        for loop in sorted(need_x | need_y, key=lambda lp: len(enclosing_loops(lp))):
            grown: list[tuple[dict[SSAValue, int], dict[SSAValue, int]]] = []
            here = {leaf: v for leaf, v in pinned.items() if model.loop_of(leaf) is loop}
            for ex, ey in pairs:
                if here and loop in around_y:
                    grown.extend(self._pinned(loop, here, ex, ey, ops, opaque,
                                              same=loop in shared, age=age if loop is crossed else 0,
                                              free_x=loop in need_x))
                elif loop in shared or loop is crossed:
                    found = self._iterations(loop, ex, ops, opaque)
                    if found is None:
                        grown.append((ex, ey))
                        continue
                    its, period = found
                    if loop is crossed:
                        firsts = range(len(its)) if period is None else range(period)
                        grown.extend(({**ex, **its[i]}, {**ey, **its[j]})
                                     for i in firsts for j in _later(i, age, len(its), period))
                    else:
                        grown.extend(({**ex, **s}, {**ey, **s})
                                     for s in (its if period is None else its[:period]))
                else:
                    xs, ys = [ex], [ey]
                    for side, env, out in ((need_x, ex, xs), (need_y, ey, ys)):
                        if loop in side and (found := self._iterations(
                                loop, env, ops, opaque)) is not None:
                            its, period = found
                            out[:] = [{**env, **s}
                                      for s in (its if period is None else its[:period])]
                    grown.extend((a, b) for a in xs for b in ys)
                if len(grown) > PAIR_LIMIT:
                    return [({}, {})], frozenset()  # too many: keep loop values symbolic
            pairs = grown
        return pairs, frozenset(opaque)

    def _pinned(self, loop: scf.ForOp, here: dict[SSAValue, int], ex: dict[SSAValue, int],
                ey: dict[SSAValue, int], ops: Sequence[Operation], opaque: set[scf.IfOp], *,
                same: bool, age: int, free_x: bool
                ) -> list[tuple[dict[SSAValue, int], dict[SSAValue, int]]]:
        """Pairs of envs when the second access is in a known iteration `here` of `loop`; the
        first is in the same one, or `age` iterations back (MAX_AGE: that many or more)."""
        ey = {**ey, **here}
        if same:
            return [({**ex, **here}, ey)]
        xs = [ex]
        found = self._iterations(loop, ex, ops, opaque) if free_x else None
        if found is not None:
            its, period = found
            counter = loop.body.block.args[0]
            step = self.model.scalar(loop.step, ex)
            now = here.get(counter)
            if age and period is None and now is not None and step is not None:
                its = [it for it in its if (it.get(counter, 0) == now - age * step
                                            if age < MAX_AGE
                                            else it.get(counter, 0) <= now - age * step)]
            elif period is not None:
                its = its[:period]
            xs = [{**ex, **it} for it in its]
        return [(x, ey) for x in xs]

    def _iterations(self, loop: scf.ForOp, env: Env, ops: Sequence[Operation],
                    opaque: set[scf.IfOp]) -> tuple[list[dict[SSAValue, int]], int | None] | None:
        """The iterations of `loop` to evaluate `ops` in: all of them (period None) when the
        loop can be simulated, else two periods of its counter when every address of `ops`
        is periodic in it (adding the non-periodic conditions around `ops` to `opaque`)."""
        model = self.model
        sim = model.simulate(loop, env)
        if sim is not None:
            return sim.iterations, None
        counter = loop.body.block.args[0]
        lb, step = model.scalar(loop.lb, env), model.scalar(loop.step, env)
        if not model.is_leaf(counter) or lb is None or step is None or step <= 0:
            return None
        period = 1
        for op in ops:
            for value in self._address_values(op):
                p = model.counter_period(value, counter)
                if p is None:
                    return None
                period = math.lcm(period, p)
        if period > MAX_PERIOD:
            return None
        for op in ops:
            for if_op, _ in model.conditions(op):
                if counter in model.deps(if_op.cond) and \
                        model.counter_period(if_op.cond, counter) is None:
                    opaque.add(if_op)
        # enough iterations that every pair (i in the first period, i + age + period) exists
        return [{counter: lb + t * step} for t in range(2 * period + MAX_AGE)], period

    @staticmethod
    def _address_values(op: Operation) -> list[SSAValue]:
        access = lane_access(op)
        if access is not None:
            return [access.ptr]
        values: list[SSAValue] = []
        for region in tile_regions(op):  # the L1 side: its address and the sizes
            values.append(region.ptr)
            values.extend(v for v in op.operands
                          if not isinstance(v.type, pto.PtrType | pto.L1BufferType))
        return values

    def _older(self, fp: Footprint, entry: Entry, second: Operation) -> Footprint:
        """An access from an earlier iteration of a loop has other values of that loop's
        symbolic terms: rename them so they cannot cancel against the later access."""
        common = [lp for lp in enclosing_loops(entry.op) if lp in enclosing_loops(second)]
        crossed = next((lp for lp in common if entry.age(lp)), None)
        if crossed is None or fp.offset is None or not fp.offset.terms:
            return fp
        model = self.model

        def rename(term: object) -> object:
            if any(defined_inside(leaf, crossed) for leaf in model.term_leaves(term)):
                return ("earlier iteration", term)
            return term

        terms = frozenset((rename(t), c) for t, c in fp.offset.terms)
        return Footprint(fp.roots, Affine(terms, fp.offset.lanes), fp.mask, fp.elements, fp.why)

    def _apart_across_iterations(self, fx: Footprint, fy: Footprint, entry: Entry,
                                 second: Operation, env: Env) -> bool:
        """Symbolic check for a loop too long to enumerate (issue 8): the earlier access is at
        `c*r' + F(lane)`, the later at `c*r + G(lane)` with `r' != r` counters of the crossed
        loop (step `s`), everything else equal. They meet only where `F(x) - G(y)` is a
        non-zero multiple of `c*s`; True when no lane pair of different warps has that."""
        common = [lp for lp in enclosing_loops(entry.op) if lp in enclosing_loops(second)]
        crossed = next((lp for lp in common if entry.age(lp)), None)
        if crossed is None or fx.offset is None or fy.offset is None or fx.mask is None \
                or fy.mask is None or fx.roots is None or fx.roots != fy.roots \
                or len(fx.roots) != 1 or fx.offset.terms != fy.offset.terms:
            return False
        model = self.model
        moved = [(t, c) for t, c in fx.offset.terms
                 if any(defined_inside(leaf, crossed) for leaf in model.term_leaves(t))]
        if len(moved) != 1:
            return False
        if isinstance(crossed, scf.ForOp):
            counter = crossed.body.block.args[0]
            step_value: SSAValue | None = crossed.step
        else:  # a SIMT loop's induction variable (LaneModel._eval_while_arg): its own step
            counter = next(iter(model.term_leaves(moved[0][0])), None)
            step_value = model.while_step(crossed, counter) \
                if isinstance(counter, BlockArgument) and counter.block.parent_op() is crossed \
                else None
        if moved[0][0] != ("v", counter) or step_value is None:
            return False
        step = model.scalar(step_value, env)
        if not step:
            return False
        return not lanes_meet_at_multiple(self.space, fx, fy, abs(moved[0][1] * step))

    # -- pair checks ----------------------------------------------------------------------------

    def lane_pair(self, first: Entry, second: Operation, fixed: Fixed = frozenset()
                  ) -> Conflict | None:
        key = (first, second, fixed)
        if key not in self._pairs:
            self._pairs[key] = self._lane_pair(first, second, fixed)
        return self._pairs[key]

    def _lane_pair(self, first: Entry, second: Operation, fixed: Fixed) -> Conflict | None:
        ax, ay = self.access(first.op), self.access(second)
        assert ax is not None and ay is not None
        what = (f"{ax.kind.name.lower()}", f"{ay.kind.name.lower()}")
        if not may_alias(self.roots(ax.ptr), self.roots(ay.ptr)):
            return None
        envs, opaque = self.pair_envs(first, second, fixed)
        for ex, ey in envs:
            raw = self.lane_footprint(ax, ex, opaque)
            fx = self._older(raw, first, second)
            fy = self.lane_footprint(ay, ey, opaque)
            found = lanes_conflict(self.space, fx, fy, what=what)
            if found is not None and not found.exact and \
                    self._apart_across_iterations(raw, fy, first, second, ex):
                continue
            if found is not None and not found.exact and fx is raw and \
                    self._carried_by_none(first, second) and \
                    apart_under_guards(self.model, self.space, fx, fy, first.op, second,
                                       ex, ey, opaque, what):
                continue  # apart for every value of the unknown term, by the guards
            if found is not None:
                found.env_first, found.env_second = self._shown(first.op, ex), \
                    self._shown(second, ey)
                return found
        return None

    def same_instruction(self, op: Operation) -> Conflict | None:
        if op not in self._selves:
            self._selves[op] = self._same_instruction(op)
        return self._selves[op]

    def _same_instruction(self, op: Operation) -> Conflict | None:
        access = self.access(op)
        assert access is not None
        model = self.model
        envs = model.enumerate(model.loops_needed(self._deps(op)), {}, PAIR_LIMIT) or [{}]
        for env in envs:
            fp = self.lane_footprint(access, env)
            if fp.offset is None or fp.roots is None:
                continue  # unknown addresses are reported against other accesses, not here
            found = lanes_conflict(self.space, fp, fp, same_instruction=True)
            if found is not None:
                found.env_first = found.env_second = self._shown(op, env)
                return found
        return None

    def copy_pair(self, copy: Entry, second: Operation, index: int, fixed: Fixed = frozenset()
                  ) -> Conflict | None:
        """The in-flight region of `copy` against access `index` of `second` (-1: its lanes)."""
        key = (copy, second, index, fixed)
        if key not in self._copy_pairs:
            self._copy_pairs[key] = self._copy_pair(copy, second, index, fixed)
        return self._copy_pairs[key]

    def _copy_pair(self, copy: Entry, second: Operation, index: int, fixed: Fixed
                   ) -> Conflict | None:
        region = tile_regions(copy.op)[0]
        access = self.access(second) if index < 0 else None
        other = tile_regions(second)[index] if index >= 0 else None
        if region.kind is Kind.READ and (access or other).kind is Kind.READ:  # type: ignore
            return None
        envs, opaque = self.pair_envs(copy, second, fixed)
        for ex, ey in envs:
            fr = self._older(self.region_footprint(region, ex), copy, second)
            fo = self.lane_footprint(access, ey, opaque) if access is not None else \
                self.region_footprint(other, ey)  # type: ignore[arg-type]
            found = region_conflict(self.space, fr, fo, ("copy", "access"))
            if found is not None:
                found.env_first, found.env_second = self._shown(copy.op, ex), \
                    self._shown(second, ey)
                return found
        return None

    @staticmethod
    def _carried_by_none(first: Entry, second: Operation) -> bool:
        """Both accesses in the same iteration of every loop around both (a term defined in
        such a loop then has one value for both, and guards can be substituted into)."""
        return not any(first.age(lp) for lp in enclosing_loops(first.op)
                       if lp in enclosing_loops(second))

    def _shown(self, op: Operation, env: Env) -> dict[SSAValue, int]:
        """The loop values worth printing with a hazard: those the access depends on."""
        deps = self._deps(op)
        return {leaf: value for leaf, value in env.items() if leaf in deps}

    def min_trips(self, loop: scf.ForOp) -> int:
        if loop not in self._trips:
            self._trips[loop] = self.model.min_trips(loop)
        return self._trips[loop]

    def unroll_plan(self, loop: scf.ForOp, env: Env) -> UnrollPlan:
        key = (loop, tuple(env.get(leaf) for leaf in self.model.loop_deps(loop)))
        if key not in self._plans:
            self._plans[key] = plan_unrolling(self.model, loop, env)
        return self._plans[key]

# --------------------------------------------------------------------------------------------
# The dataflow walk
# --------------------------------------------------------------------------------------------

def _later(i: int, age: int, count: int, period: int | None) -> range:
    """Indices of the iterations an access `age` iterations older than iteration i... seen
    from i: exactly `age` later (age < MAX_AGE) or any later one from there (age MAX_AGE;
    within one period when periodic)."""
    if age < MAX_AGE:
        return range(i + age, min(i + age + 1, count))
    end = count if period is None else min(count, i + age + period)
    return range(i + age, end)

def _denotes(instances: frozenset[tuple[Operation, scf.ForOp | None, int]],
             entry: Entry) -> bool:
    """Whether a token standing for `instances` may be the copy `entry` (its latest execution,
    or the one of the previous / an earlier iteration of a loop it was carried round)."""
    for op, loop, age in instances:
        if op is entry.op and (entry.age(loop) == age if loop is not None
                               else not entry.carried):
            return True
    return False

class _Walker:
    def __init__(self, analysis: BarrierAnalysis, disabled: frozenset[Operation],
                 stop_at_first: bool):
        self.a = analysis
        self.disabled = disabled
        self.stop_at_first = stop_at_first
        self.found: list[Hazard] = []
        self._seen: set[tuple[object, ...]] = set()
        self.decided: Decisions = {}
        self.fixed: dict[SSAValue, int] = {}  # loop values of the iterations walked one by one

    def _record(self, hazards: Sequence[Hazard]) -> None:
        for h in hazards:
            if h.key not in self._seen:
                self._seen.add(h.key)
                self.found.append(h)
        if hazards and self.stop_at_first:
            raise _Stop

    def walk_block(self, block: Block, state: _State) -> _State:
        for op in block.ops:
            state = self.visit(op, state)
        return state

    def visit(self, op: Operation, state: _State) -> _State:
        scope = sync_scope(op)
        if scope == "block":
            if op not in self.disabled:
                state.open.clear()
        elif scope == "warp":
            for entry in state.open:
                state.open[entry] = True
        elif is_block_collective(op) and not is_declaration(op):
            self._tile(op, state)
        elif (access := self.a.access(op)) is not None:
            self._lane(access, state)
        elif isinstance(op, scf.IfOp):
            taken = self.decided.get(op)
            if taken is not None:  # a uniform branch this loop iteration is known to take
                if taken:
                    return self.walk_block(op.true_region.block, state)
                return self.walk_block(op.false_region.block, state) \
                    if op.false_region.blocks else state
            then = self.walk_block(op.true_region.block, state.copy())
            other = self.walk_block(op.false_region.block, state.copy()) \
                if op.false_region.blocks else state.copy()
            then.merge(other)
            return then
        elif isinstance(op, scf.ForOp):
            return self._loop(op, state)
        elif isinstance(op, scf.WhileOp):
            return self._while(op, state)
        else:
            for region in op.regions:
                for block in region.blocks:
                    state = self.walk_block(block, state)
        return state

    def _loop(self, loop: scf.ForOp, before: _State) -> _State:
        plan = self.a.unroll_plan(loop, self.fixed)
        min_trips = self.a.min_trips(loop)
        exits = [before.copy()] if min_trips == 0 else []
        state = before.copy()
        for t, iteration in enumerate(plan.prefix):
            end = self._body(loop, state, iteration.decisions, iteration.values)
            last = t + 1 == len(plan.prefix)
            if (last or not plan.exact) and t + 1 >= min_trips:
                exits.append(end)
            state = end.around(loop)
        if plan.period:
            head = state
            while True:
                current = head.copy()
                for decisions in plan.period:
                    end = self._body(loop, current, decisions, {})
                    exits.append(end)
                    current = end.around(loop)
                nxt = head.copy()
                nxt.merge(current)
                if nxt.same(head):
                    break
                head = nxt
        out = _State()
        for end in exits:
            out.merge(end)
        return out.leaving(loop)

    def _while(self, loop: scf.WhileOp, before: _State) -> _State:
        """A SIMT loop, any number of iterations: the condition region runs first and is where
        lanes leave; the body's accesses go round the back edge (renamed as an earlier
        iteration's) until the state at the top of the loop stops changing."""
        exits: list[_State] = []
        head = before.copy()
        while True:
            checked = self.walk_block(loop.before_region.block, head.copy())
            exits.append(checked)
            end = self.walk_block(loop.after_region.block, checked.copy())
            nxt = head.copy()
            nxt.merge(end.around(loop))
            if nxt.same(head):
                break
            head = nxt
        out = _State()
        for state in exits:
            out.merge(state)
        return out.leaving(loop)

    def _fixed(self) -> Fixed:
        return frozenset(self.fixed.items())

    def _body(self, loop: scf.ForOp, state: _State, decisions: Decisions,
              values: dict[SSAValue, int]) -> _State:
        saved = self.decided, self.fixed
        self.decided = {**self.decided, **decisions}
        self.fixed = {**self.fixed, **values}
        try:
            return self.walk_block(loop.body.block, state.copy())
        finally:
            self.decided, self.fixed = saved

    # -- lane accesses --------------------------------------------------------------------------

    def _lane(self, access: LaneAccess, state: _State) -> None:
        a = self.a
        hazards: list[Hazard] = []
        if access.space == "local":
            for copy in state.copies:
                conflict = a.copy_pair(copy, access.op, -1, self._fixed())
                if conflict is not None:
                    hazards.append(self._in_flight(copy, access.op, access.kind, access.ptr,
                                                   conflict, None))
        if access.space == "global" and not a.include_global:
            self._record(hazards)
            return
        if access.space == "local" and access.kind is Kind.WRITE:
            conflict = a.same_instruction(access.op)
            if conflict is not None:
                hazards.append(self._same_instruction(access, conflict))
        access_of, space, reads_only = a.access, access.space, access.kind is Kind.READ
        for entry, warp_barrier in state.open.items():  # every open access: keep this lean
            other = access_of(entry.op)
            if other is None:  # a tile vector instruction (_tile)
                hazard = _vector_then_lane(entry.op, access)
                if hazard is not None:
                    hazards.append(hazard)
                continue
            if other.space != space or (reads_only and other.kind is Kind.READ):
                continue  # two reads never conflict
            if other.kind is Kind.ATOMIC and access.kind is Kind.ATOMIC:
                continue  # atomics do not race with each other
            conflict = a.lane_pair(entry, access.op, self._fixed())
            if conflict is not None:
                hazards.append(self._warps(entry, other, access, conflict, warp_barrier))
        self._record(hazards)
        state.open[Entry(access.op)] = False

    def _carried_by(self, entry: Entry, op: Operation) -> tuple[scf.ForOp | None, int]:
        """The loop around both `entry` and `op` that carries `entry` round to `op`, and how
        many iterations back (None, 0: the same iteration)."""
        loop = next((lp for lp in enclosing_loops(entry.op) if entry.age(lp)
                     and lp in enclosing_loops(op)), None)
        return loop, (entry.age(loop) if loop is not None else 0)

    def _warps(self, entry: Entry, first: LaneAccess, second: LaneAccess, conflict: Conflict,
               warp_barrier: bool) -> Hazard:
        loop, age = self._carried_by(entry, second.op)
        return lanes_hazard(first, second, conflict, self.a.model, self.a.space,
                            first_op=entry.op, loop=loop, age=age, warp_barrier=warp_barrier)

    def _same_instruction(self, access: LaneAccess, conflict: Conflict) -> Hazard:
        return same_instruction_hazard(access, conflict, self.a.model, self.a.space)

    # -- tile instructions and async copies -----------------------------------------------------

    def _tile(self, op: Operation, state: _State) -> None:
        hazards: list[Hazard] = []
        for index, region in enumerate(tile_regions(op)):
            for copy in state.copies:  # (this op's own copy is not in flight yet; an
                # earlier iteration's is, and is another copy)
                conflict = self.a.copy_pair(copy, op, index, self._fixed())
                if conflict is not None:
                    hazards.append(self._in_flight(copy, op, region.kind, region.ptr, conflict,
                                                   region.role))
        if tile_vector(op) is not None:
            hazards.extend(self._lanes_before_vector(op, state))
            self._record(hazards)
            # not a barrier: the lanes' accesses stay open, and so do the vector unit's own
            # (a later lane access of its tiles needs a barrier_block too)
            state.open[Entry(op)] = False
            return
        self._record(hazards)
        state.open.clear()  # every warp reaches a tile instruction: it orders like a barrier
        waits = waits_on(op)
        if starts_copy(op):
            state.copies[Entry(op)] = None
        elif waits == "token":
            instances = self.a.model.token_instances(op.operands[0]) or frozenset()
            for entry in [e for e in state.copies if _denotes(instances, e)]:
                del state.copies[entry]
        elif waits == "all":
            state.copies.clear()

    def _lanes_before_vector(self, op: Operation, state: _State) -> list[Hazard]:
        """A tile vector instruction reads (writes) its tiles through the vector unit, which
        does not wait for the lanes' L1 stores (docs/barriers.md#tile-vector-instructions):
        a lane write of one of its tiles (any lane access, for a tile it writes) with no
        `pto.barrier_block()` in between is a hazard, at the tile instruction."""
        hazards: list[Hazard] = []
        for entry in state.open:
            access = self.a.access(entry.op)
            if access is None or access.space != "local":
                continue  # (another tile vector instruction: the vector unit runs them in order)
            for index, reads, writes in _vector_tiles(op):
                kind = _vector_kind(access.kind.writes, reads, writes, lanes_first=True)
                if kind is None or not _same_tile(access.ptr, op.operands[index]):
                    continue
                verb = "write" if access.kind.writes else "read"
                name = op.operands[index].name_hint or "its tile"
                message = (f"{kind} hazard on L1 tile '{name}': lanes {verb} it at "
                           f"{where(entry.op)} and {op.name} at {where(op)} "
                           f"{'writes' if writes else 'reads'} it through the vector unit, "
                           f"which does not wait for lane stores; put pto.barrier_block() "
                           f"between them (a tile vector instruction is not a barrier)")
                hazards.append(Hazard(Category.WARPS, kind, op, entry.op, message,
                                      f"the lane {verb} of '{name}'", None))
                break
        return hazards

    def _in_flight(self, copy: Entry, op: Operation, kind: Kind, ptr: SSAValue,
                   conflict: Conflict, role: str | None) -> Hazard:
        loop, age = self._carried_by(copy, op)
        copy_writes = tile_regions(copy.op)[0].kind is Kind.WRITE
        return in_flight_hazard(copy.op, copy_writes, op, kind, ptr, conflict, role,
                                self.a.model, self.a.space, loop=loop, age=age)

def _vector_tiles(op: Operation) -> list[tuple[int, bool, bool]]:
    """(operand index, read, written) of each tile of a tile vector instruction."""
    trait = tile_vector(op)
    assert trait is not None
    declared = declared_accesses(op)
    out = []
    for index in trait.tiles(op, lambda v: None):
        reads = any(a.kind == "read" and a.operand == index for a in declared)
        writes = any(a.kind != "read" and a.operand == index for a in declared) or not reads
        out.append((index, reads, writes))
    return out


def _vector_kind(lane_writes: bool, reads: bool, writes: bool, lanes_first: bool) -> str | None:
    """The hazard between a lane access and a tile vector instruction's access of one tile
    (`lanes_first`: the lane access comes first), or None (both only read)."""
    if lane_writes and writes:
        return "WAW"
    if lane_writes and reads:
        return "RAW" if lanes_first else "WAR"
    if writes:
        return "WAR" if lanes_first else "RAW"
    return None


def _same_tile(ptr: SSAValue, tile: SSAValue) -> bool:
    """May a lane address point into a tile operand's buffer? (Per buffer; an address whose
    buffer cannot be told may point anywhere.)"""
    root, tile_root = root_alloc(ptr), root_alloc(tile)
    return root is None or tile_root is None or root is tile_root


def _vector_then_lane(op: Operation, access: LaneAccess) -> Hazard | None:
    """A lane access after a tile vector instruction with no `pto.barrier_block()` in between:
    the lanes do not wait for the vector unit either (docs/barriers.md#tile-vector-instructions)."""
    if access.space != "local":
        return None
    for index, reads, writes in _vector_tiles(op):
        kind = _vector_kind(access.kind.writes, reads, writes, lanes_first=False)
        if kind is None or not _same_tile(access.ptr, op.operands[index]):
            continue
        verb = "write" if access.kind.writes else "read"
        name = op.operands[index].name_hint or "its tile"
        message = (f"{kind} hazard on L1 tile '{name}': {op.name} at {where(op)} "
                   f"{'writes' if writes else 'reads'} it through the vector unit and lanes "
                   f"{verb} it at {where(access.op)}, which do not wait for the vector unit; "
                   f"put pto.barrier_block() between them (a tile vector instruction is not a "
                   f"barrier)")
        return Hazard(Category.WARPS, kind, access.op, op, message,
                      f"{op.name} on '{name}'", None)
    return None

# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------

def lane_space(block: int | Sequence[int] | None, warp_size: int = pto.WARP_SIZE) -> LaneSpace:
    """The lanes of a block: an int is a lane count (x/y/z split unknown), a tuple a shape;
    `warp_size` is the target's."""
    if block is None:
        return LaneSpace.of(DEFAULT_BLOCK_SIZE, warp_size=warp_size)
    return LaneSpace.of(block if isinstance(block, int) else tuple(block), warp_size=warp_size)

def check_kernel(kernel: func.FuncOp, block: int | Sequence[int] | None = None,
                 warp_size: int = pto.WARP_SIZE) -> None:
    """Raise `BarrierError` for the first divergent barrier or hazard of `kernel`."""
    analysis = BarrierAnalysis(kernel, lane_space(block, warp_size))
    divergence = analysis.divergence()
    if divergence is not None:
        raise divergence.error()
    found = analysis.hazards()
    proven = [h for h in found if is_proven(h)]
    if proven:
        raise proven[0].error()
    for hazard in found:
        defer(hazard)


def is_proven(hazard: Hazard) -> bool:
    """A hazard the analysis has shown (known indices meeting from different warps), as opposed
    to one it cannot rule out (docs/barriers.md#prove-or-defer)."""
    return hazard.conflict is None or hazard.conflict.exact


def defer(hazard: Hazard) -> None:
    """A hazard the analysis can neither prove nor rule out: a remark naming both accesses; the
    run-time race detector (on by default) checks the launch."""
    notes: list[tuple[str, Operation | None]] = []
    if hazard.first is not None and hazard.first_note is not None:
        notes.append((hazard.first_note, hazard.first))
    emit_remark(hazard.second, f"{hazard.message} [not proven: left to the run-time race "
                f"detector, on by default (pto.compile(..., race_check=True)); "
                f"docs/barriers.md#prove-or-defer]", notes)

def find_hazards(kernel: func.FuncOp, block: int | Sequence[int] | None = None,
                 warp_size: int = pto.WARP_SIZE) -> list[Hazard]:
    """Every hazard of `kernel` (divergence first), without raising."""
    analysis = BarrierAnalysis(kernel, lane_space(block, warp_size))
    divergence = analysis.divergence()
    return ([divergence] if divergence is not None else []) + analysis.hazards()


__all__ = ["BarrierAnalysis", "Category", "DEFAULT_BLOCK_SIZE", "Entry", "Hazard", "UnrollPlan",
           "check_kernel", "defer", "find_divergence", "is_proven", "find_hazards", "kernels", "lane_space",
           "plan_unrolling"]
