"""Integer values of a kernel evaluated over every lane of one block at once.

`pto-verify-barriers` and `pto-insert-barriers` must decide whether two L1 accesses can touch one
element from lanes of different warps. Index expressions in real kernels are small: a lane id,
constants, uniform parameters, loop counters (`buf[tid + s]`, `buf[lid ^ 1]`,
`tile[(ty + j) * 33 + tx]`). Rather than solving them symbolically (GPUVerify's route), this
module *evaluates* them with NumPy over all lanes of the block, which is exact for any mix of
`^`, `//`, `%`, `select`... as long as every input is known:

* lane ids (`get_local_id`, `get_lane_id`, `get_warp_id`, `get_global_id` whose block part is a
  uniform term) and constants are concrete vectors;
* uniform values that are not known (parameters, block ids, values computed from them) stay
  symbolic as *terms* of an `Affine` form `sum(coef * term) + lanes`, so `buf[n + lid]` and
  `buf[n + lid ^ 1]` are still compared exactly: equal terms cancel;
* loop counters and integer loop-carried values of loops with known bounds are *enumerated*: a
  loop is simulated (its scalar recurrence run concretely), and callers evaluate an access once
  per iteration (`Env` assigns the values). Left out of an `Env`, they are symbolic terms too.

Anything else (a value loaded from memory, a lane-dependent loop-carried value) is unknown
(`None`) and callers must be conservative.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from pypto.analysis.cache import cached
from pypto.analysis.lane_pointers import PointerModel
from pypto.analysis.lane_space import (
    MAX_AGE,
    MAX_TRIPS,
    Affine,
    Env,
    LaneSpace,
    Simulation,
    Term,
    TriBool,
)
from pypto.analysis.lane_tokens import TokenModel
from pypto.analysis.ir_utils import yielded as _yielded
from pypto.analysis.uniformity import varying_values, walk
from pypto.dialects.arith_semantics import DIVISIONS, INT_BINARY
from pypto.dialects.traits import (
    checks_uniform,
    forwards_yield,
    lane_reads_memory,
    launch_id,
    offset_base,
)

# --------------------------------------------------------------------------------------------
# Concrete arithmetic
# --------------------------------------------------------------------------------------------


def _width(t: Any) -> int | None:
    return t.width.data if isinstance(t, IntegerType) else None


def _wrap(values: np.ndarray, width: int | None) -> np.ndarray:
    """Two's-complement wrap of int64 values to `width` bits (i1 stays 0/1)."""
    if width is None or width >= 64:
        return values
    if width == 1:
        return values & 1
    half = 1 << (width - 1)
    return ((values + half) & ((1 << width) - 1)) - half


def _unsigned(values: np.ndarray, width: int) -> np.ndarray:
    return values & ((1 << width) - 1) if width < 64 else values


def _binary(op: Operation, a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray | None:
    """The concrete result of an integer binary arith op (`pypto.dialects.arith_semantics`,
    in the op's own integer type), or None; a lane dividing by zero gets 0 (the interpreter
    reports it when it runs)."""
    fn = INT_BINARY.get(op.name)
    if fn is None:
        return None
    dtype = np.int32 if width == 32 else np.int64  # i1 values (0/1) wrap in the caller
    a, b = _wrap(a, width).astype(dtype), _wrap(b, width).astype(dtype)
    if op.name in DIVISIONS:
        zero = b == 0
        with np.errstate(all="ignore"):
            return np.where(zero, 0, fn(a, np.where(zero, dtype(1), b))).astype(np.int64)
    with np.errstate(all="ignore"):
        return np.asarray(fn(a, b)).astype(np.int64)


def _compare(predicate: int, a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray | None:
    if predicate >= 6:  # unsigned
        a, b = _unsigned(a, width), _unsigned(b, width)
        predicate -= 4
    match predicate:
        case 0:
            return a == b
        case 1:
            return a != b
        case 2:
            return a < b
        case 3:
            return a <= b
        case 4:
            return a > b
        case 5:
            return a >= b
    return None


_CASTS = (arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp, arith.IndexCastOp)
_BLOCK_SHAPED_IDS = frozenset({"local_id", "global_id", "block_id", "block_dim"})
"""Ids whose y / z dimensions depend on how the block's lanes split into x, y, z."""


# --------------------------------------------------------------------------------------------
# The model of one kernel
# --------------------------------------------------------------------------------------------


def lane_model(kernel: func.FuncOp, space: LaneSpace) -> LaneModel:
    """The `LaneModel` of `kernel` over `space`, shared by every analysis of the same IR
    (`pypto.analysis.cache`): lane roots and token instances are computed once."""
    return cached(kernel, ("lane_model", space), lambda: LaneModel(kernel, space))


@dataclass(eq=False)
class LaneModel(PointerModel, TokenModel):
    """Evaluates the integer values, conditions and L1 addresses of one kernel over a block.

    By job: affine evaluation of integer values, loop simulation and active-lane masks here;
    where addresses point in `PointerModel` (lane_pointers.py); which copies a token stands
    for in `TokenModel` (lane_tokens.py); the value types in lane_space.py.

    All results are memoised per value and per the `Env` values it depends on, so a model is
    built once per kernel and shared by every query (and by the re-analyses of
    `pto-insert-barriers`, whose edits never change values).
    """

    kernel: func.FuncOp
    space: LaneSpace
    varying: frozenset[SSAValue] = field(init=False)
    _memo: dict[tuple[SSAValue, tuple[int | None, ...]], Affine | None] = field(
        init=False, default_factory=dict)
    _deps: dict[SSAValue, tuple[SSAValue, ...]] = field(init=False, default_factory=dict)
    _leaf_order: dict[SSAValue, int] = field(init=False, default_factory=dict)
    _sims: dict[tuple[scf.ForOp, tuple[int | None, ...]], Simulation | None] = field(
        init=False, default_factory=dict)
    _term_leaves: dict[Term, frozenset[SSAValue]] = field(init=False, default_factory=dict)
    _term_names: dict[Term, str] = field(init=False, default_factory=dict)
    _multi_dim: bool = field(init=False)

    def __post_init__(self) -> None:
        self.varying = varying_values(self.kernel)
        self._multi_dim = any(launch_id(op) in _BLOCK_SHAPED_IDS and op.dim_index != 0
                              for op in walk(self.kernel.body.block.ops))

    # -- lanes ----------------------------------------------------------------------------------

    def _local_id(self, dim: int) -> np.ndarray | None:
        if not self.space.exact_dims and (dim != 0 or self._multi_dim):
            return None  # only the lane count is known, not how it splits into x, y, z
        return self.space.local_id(dim)

    def _block_dim(self, dim: int) -> int | None:
        if not self.space.exact_dims and (dim != 0 or self._multi_dim):
            return None
        return self.space.block_dim(dim)

    # -- terms ----------------------------------------------------------------------------------

    def _term(self, key: Term, leaves: Iterable[SSAValue], name: str) -> Affine:
        if key not in self._term_leaves:
            self._term_leaves[key] = frozenset(leaves)
            self._term_names[key] = name
        return Affine(frozenset({(key, 1)}), np.asarray(0, dtype=np.int64))

    def term_leaves(self, key: Term) -> frozenset[SSAValue]:
        """The SSA values (block arguments, results of non-arith ops) a term is computed from."""
        return self._term_leaves.get(key, frozenset())

    def term_name(self, key: Term) -> str:
        return self._term_names.get(key, "?")

    def _leaf_term(self, value: SSAValue) -> Affine | None:
        if value in self.varying:
            return None
        return self._term(("v", value), [value], value_name(value))

    # -- dependencies on enumerable values ------------------------------------------------------

    def is_leaf(self, value: SSAValue) -> bool:
        """A loop counter or integer loop-carried value that loops can enumerate."""
        if not isinstance(value, BlockArgument) or value in self.varying:
            return False
        owner = value.block.parent_op()
        if not isinstance(owner, scf.ForOp):
            return False
        return _width(value.type) is not None

    def loop_of(self, leaf: SSAValue) -> scf.ForOp:
        assert isinstance(leaf, BlockArgument)
        owner = leaf.block.parent_op()
        assert isinstance(owner, scf.ForOp)
        return owner

    def _order(self, leaves: Iterable[SSAValue]) -> tuple[SSAValue, ...]:
        for leaf in leaves:
            self._leaf_order.setdefault(leaf, len(self._leaf_order))
        return tuple(sorted(set(leaves), key=self._leaf_order.__getitem__))

    def deps(self, value: SSAValue) -> tuple[SSAValue, ...]:
        """The enumerable leaves `value` depends on (its evaluation varies only with them)."""
        found = self._deps.get(value)
        if found is not None:
            return found
        self._deps[value] = ()  # no cycles in SSA outside loop arguments; guard anyway
        leaves: list[SSAValue] = []
        if isinstance(value, BlockArgument):
            if self.is_leaf(value):
                leaves.append(value)
        elif isinstance(value, OpResult):
            op = value.op
            if isinstance(op, scf.ForOp):
                leaves.extend(self.loop_deps(op))
            elif isinstance(op, scf.IfOp):
                leaves.extend(self.deps(op.cond))
                for v in _yielded(op, value.index):
                    leaves.extend(self.deps(v))
            elif op.regions and forwards_yield(op):
                for v in _yielded(op, value.index):
                    leaves.extend(self.deps(v))
            elif not lane_reads_memory(op):  # a value read from memory depends on no operand
                for operand in op.operands:
                    leaves.extend(self.deps(operand))
        result = self._order(leaves)
        self._deps[value] = result
        return result

    def loop_deps(self, loop: scf.ForOp) -> tuple[SSAValue, ...]:
        """Leaves of enclosing loops that the iterations of `loop` depend on."""
        own = set(loop.body.block.args)
        leaves: list[SSAValue] = []
        for v in (loop.lb, loop.ub, loop.step, *loop.iter_args):
            leaves.extend(self.deps(v))
        last = loop.body.block.last_op
        for v in (last.operands if last is not None else ()):
            leaves.extend(leaf for leaf in self.deps(v) if leaf not in own)
        return self._order(leaves)

    def deps_of(self, values: Iterable[SSAValue]) -> tuple[SSAValue, ...]:
        leaves: list[SSAValue] = []
        for v in values:
            leaves.extend(self.deps(v))
        return self._order(leaves)

    # -- evaluation -----------------------------------------------------------------------------

    def eval(self, value: SSAValue, env: Env) -> Affine | None:
        """`value` over the lanes of a block, with the loop values of `env`; None if unknown."""
        key = (value, tuple(env.get(leaf) for leaf in self.deps(value)))
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None  # guard against (malformed) cycles
        result = self._eval(value, env)
        self._memo[key] = result
        return result

    def scalar(self, value: SSAValue, env: Env) -> int | None:
        found = self.eval(value, env)
        return None if found is None else found.scalar

    def _eval(self, value: SSAValue, env: Env) -> Affine | None:
        if _width(value.type) is None:
            return None
        if isinstance(value, BlockArgument):
            if value in env:
                return Affine.const(env[value])
            loop = value.block.parent_op()
            if isinstance(loop, scf.WhileOp):
                return self._eval_while_arg(loop, value, env)
            return self._leaf_term(value)
        if not isinstance(value, OpResult):
            return None
        op = value.op
        if checks_uniform(op):  # pto.loop_step: its operand, checked uniform at run time
            return self.eval(op.operands[0], env)
        match op:
            case arith.ConstantOp():
                attr = op.value
                if isinstance(attr, IntegerAttr):
                    return Affine.const(_wrap(np.asarray(int(attr.value.data), dtype=np.int64),
                                              _width(value.type)))
                return None
            case scf.ForOp():
                return self._eval_loop_result(op, value, env)
            case scf.WhileOp():  # a SIMT loop's results: an opaque uniform value, if uniform
                return None if value in self.varying else self._leaf_term(value)
            case scf.IfOp():
                return self._eval_if_result(op, value, env)
        ident = launch_id(op)
        if ident is not None:
            return self._eval_id(ident, getattr(op, "dim_index", 0))
        if op.regions and forwards_yield(op):
            yielded = _yielded(op, value.index)
            return self.eval(yielded[0], env) if yielded else None
        return self._eval_arith(op, value, env)

    def _eval_id(self, ident: str, d: int) -> Affine | None:
        """Id `ident` of the launch along dimension `d`, per lane of the block."""
        space = self.space
        if ident == "local_id":
            lid = self._local_id(d)
            return None if lid is None else Affine.const(lid)
        if ident == "warp_id":
            return Affine.const(space.warp)
        if ident == "lane_id":
            return Affine.const(space.lane)
        if ident == "global_id":
            lid, bdim = self._local_id(d), self._block_dim(d)
            if lid is None or bdim is None:
                return None
            block = self._term(("block_id", d), [], f"block_id.{'xyz'[d]}")
            return block.scaled(bdim) + Affine.const(lid)
        if ident == "block_dim":
            bdim = self._block_dim(d)
            if bdim is not None:
                return Affine.const(bdim)
        # block_id, grid_dim (and a block_dim not known): a uniform term
        return self._term((ident, d), [], f"{ident}.{'xyz'[d]}")

    def _eval_while_arg(self, loop: scf.WhileOp, arg: BlockArgument, env: Env) -> Affine | None:
        """A SIMT loop's carried value. An induction variable `i = init; ...; i = i + s` with
        `s` the same on every lane (the grid-stride loop, `range(tid, n, block_dim)`) is
        `init + T`: `T = k * s` after k iterations is uniform, because every lane still in the
        loop has run the same iterations. Anything else: a uniform term, or unknown."""
        condition = loop.before_region.block.last_op
        if not isinstance(condition, scf.ConditionOp):
            return None
        if arg.block is loop.after_region.block:  # what scf.condition forwards
            if arg.index >= len(condition.args):
                return None
            return self.eval(condition.args[arg.index], env)
        step = self.while_step(loop, arg)
        if step is None:
            return self._leaf_term(arg)
        init = self.eval(loop.arguments[arg.index], env)
        if init is None:
            return None
        return init + self._term(("v", arg), [arg], value_name(arg))

    def while_step(self, loop: scf.WhileOp, arg: BlockArgument) -> SSAValue | None:
        """The uniform increment `s` when the before-region argument `arg` is an induction
        variable (forwarded unchanged to the body, which yields `arg + s`), else None."""
        condition = loop.before_region.block.last_op
        body = loop.after_region.block
        last = body.last_op
        if not isinstance(condition, scf.ConditionOp) or last is None or \
                arg.index >= len(last.operands):
            return None
        forwarded = [i for i, v in enumerate(condition.args) if v is arg]
        nxt = last.operands[arg.index].owner
        if not forwarded or not isinstance(nxt, arith.AddiOp):
            return None
        a, b = nxt.operands
        for mine, other in ((a, b), (b, a)):
            if isinstance(mine, BlockArgument) and mine.block is body and \
                    mine.index in forwarded and other not in self.varying and \
                    not defined_inside(other, loop):
                return other
        return None

    def _eval_arith(self, op: Operation, value: OpResult, env: Env) -> Affine | None:
        width = _width(value.type) or 64
        args = [self.eval(o, env) for o in op.operands]
        known = all(a is not None for a in args)
        if known and len(args) == 2:
            a, b = args
            assert a is not None and b is not None
            linear = self._linear(op, a, b)
            if linear is not None:
                return linear
        if known and all(a is not None and a.concrete for a in args):
            result = self._concrete(op, [a.lanes for a in args if a is not None], width)
            if result is not None:
                return Affine.const(_wrap(result, width))
        if known and isinstance(op, arith.CmpiOp):
            a, b = args
            assert a is not None and b is not None
            if a.terms == b.terms:  # the uniform parts cancel: compare the concrete parts
                diff = (a - b).lanes
                cmp = _compare(op.predicate.value.data, diff, np.zeros_like(diff), 64) \
                    if op.predicate.value.data < 6 else None
                if cmp is not None:
                    return Affine.const(cmp.astype(np.int64))
        if value in self.varying:
            return None
        if not known or op.regions:
            return self._leaf_term(value)
        # A uniform value computed from uniform ones: a term named by its structure, so that the
        # same expression written twice (the frontend does not CSE) is the same term.
        props = tuple(sorted((k, str(v)) for k, v in op.properties.items()))
        key = ("op", op.name, props, tuple(a.canon() for a in args if a is not None))
        leaves = {leaf for a in args if a is not None for t, _ in a.terms
                  for leaf in self.term_leaves(t)}
        return self._term(key, leaves, value_name(value))

    @staticmethod
    def _linear(op: Operation, a: Affine, b: Affine) -> Affine | None:
        """+, -, and * or << by a constant keep unknown uniform terms symbolic."""
        if isinstance(op, arith.AddiOp):
            return a + b
        if isinstance(op, arith.SubiOp):
            return a - b
        if isinstance(op, arith.MuliOp):
            if b.scalar is not None:
                return a.scaled(b.scalar)
            if a.scalar is not None:
                return b.scaled(a.scalar)
            if a.concrete and b.concrete:
                return Affine.const(a.lanes * b.lanes)
        if isinstance(op, arith.ShLIOp) and b.scalar is not None and 0 <= b.scalar < 62 \
                and a.terms:
            return a.scaled(1 << b.scalar)
        return None

    def _concrete(self, op: Operation, args: list[np.ndarray], width: int) -> np.ndarray | None:
        if isinstance(op, arith.CmpiOp):
            in_width = _width(op.operands[0].type) or 64
            cmp = _compare(op.predicate.value.data, args[0], args[1], in_width)
            return None if cmp is None else cmp.astype(np.int64)
        if isinstance(op, arith.SelectOp):
            return np.where(args[0] != 0, args[1], args[2])
        if isinstance(op, arith.ExtUIOp):
            return _unsigned(args[0], _width(op.operands[0].type) or 64)
        if isinstance(op, _CASTS):
            return args[0]
        if len(args) == 2:
            in_width = _width(op.operands[0].type) or 64
            return _binary(op, args[0], args[1], in_width)
        return None

    def _eval_if_result(self, op: scf.IfOp, value: OpResult, env: Env) -> Affine | None:
        yielded = _yielded(op, value.index)
        if len(yielded) != 2:
            return None if value in self.varying else self._leaf_term(value)
        then, other = self.eval(yielded[0], env), self.eval(yielded[1], env)
        cond = self.eval_bool(op.cond, env)
        if then is not None and other is not None and then.terms == other.terms \
                and cond.is_exact:
            return Affine(then.terms, np.where(cond.may_true, then.lanes, other.lanes))
        return None if value in self.varying else self._leaf_term(value)

    def _eval_loop_result(self, op: scf.ForOp, value: OpResult, env: Env) -> Affine | None:
        sim = self.simulate(op, env)
        if sim is not None and value in sim.final:
            return Affine.const(sim.final[value])
        return None if value in self.varying else self._leaf_term(value)

    def eval_bool(self, value: SSAValue, env: Env) -> TriBool:
        """An i1 condition per lane, exact where known, "may be either" elsewhere."""
        found = self.eval(value, env)
        if found is not None and found.concrete:
            return TriBool.exact(found.lanes != 0)
        if isinstance(value, OpResult):
            op = value.op
            if isinstance(op, arith.AndIOp | arith.OrIOp | arith.XOrIOp):
                a, b = (self.eval_bool(o, env) for o in op.operands)
                if isinstance(op, arith.AndIOp):
                    return a.and_(b)
                return a.or_(b) if isinstance(op, arith.OrIOp) else a.xor(b)
            if isinstance(op, arith.SelectOp):
                c, a, b = (self.eval_bool(o, env) for o in op.operands)
                return c.and_(a).or_(c.negated().and_(b))
        return TriBool.unknown()

    # -- loops ----------------------------------------------------------------------------------

    def simulate(self, loop: scf.ForOp, env: Env) -> Simulation | None:
        """Run the uniform integer recurrence of `loop` under `env`; None if its bounds are not
        known there (or it runs more than MAX_TRIPS iterations)."""
        key = (loop, tuple(env.get(leaf) for leaf in self.loop_deps(loop)))
        if key in self._sims:
            return self._sims[key]
        self._sims[key] = None
        result = self._simulate(loop, env)
        self._sims[key] = result
        return result

    def _simulate(self, loop: scf.ForOp, env: Env) -> Simulation | None:
        lb, ub, step = (self.scalar(v, env) for v in (loop.lb, loop.ub, loop.step))
        if lb is None or ub is None or step is None or step <= 0:
            return None
        trips = max(0, -((lb - ub) // step))
        if trips > MAX_TRIPS:
            return None
        body = loop.body.block
        counter, carried = body.args[0], list(body.args[1:])
        last = body.last_op
        yielded = list(last.operands) if last is not None else []
        live = [i for i, a in enumerate(carried) if self.is_leaf(a)
                and self.scalar(loop.iter_args[i], env) is not None and i < len(yielded)]
        while True:
            values = {i: self.scalar(loop.iter_args[i], env) for i in live}
            iterations: list[dict[SSAValue, int]] = []
            failed: int | None = None
            for t in range(trips):
                state: dict[SSAValue, int] = {counter: lb + t * step}
                state.update({carried[i]: v for i, v in values.items() if v is not None})
                iterations.append(state)
                inner = {**env, **state}
                nxt: dict[int, int | None] = {}
                for i in live:
                    nxt[i] = self.scalar(yielded[i], inner)
                    if nxt[i] is None:
                        failed = i
                        break
                if failed is not None:
                    break
                values = nxt
            if failed is None:
                final = {loop.results[i]: v for i, v in values.items() if v is not None}
                return Simulation(iterations, final)
            live.remove(failed)  # that carried value is not a known recurrence: keep it symbolic

    def min_trips(self, loop: scf.ForOp) -> int:
        """A lower bound of the loop's trip count over every execution (0 when unknown)."""
        lb, ub, step = (self.scalar(v, {}) for v in (loop.lb, loop.ub, loop.step))
        if lb is not None and ub is not None and step is not None and step > 0:
            return max(0, -((lb - ub) // step))
        envs = self.enumerate(self.loops_needed(self.loop_deps(loop)), {}, limit=256)
        if envs is None:
            return 0
        counts = []
        for env in envs:
            sim = self.simulate(loop, env)
            if sim is None:
                return 0
            counts.append(len(sim.iterations))
        return min(counts, default=0)

    def loops_needed(self, leaves: Iterable[SSAValue]) -> list[scf.ForOp]:
        """The loops to enumerate to give `leaves` values (with the loops their bounds need),
        outermost first."""
        needed: set[scf.ForOp] = set()
        todo = [self.loop_of(leaf) for leaf in leaves]
        while todo:
            loop = todo.pop()
            if loop in needed:
                continue
            needed.add(loop)
            todo.extend(self.loop_of(leaf) for leaf in self.loop_deps(loop))
        return sorted(needed, key=loop_depth)

    def enumerate(self, loops: Sequence[scf.ForOp], base: Env,
                  limit: int) -> list[dict[SSAValue, int]] | None:
        """Every joint iteration of `loops` (outermost first) under `base`; None beyond `limit`.

        A loop that cannot be simulated under some partial env leaves its values out of it
        (callers then see them as symbolic terms).
        """
        envs: list[dict[SSAValue, int]] = [dict(base)]
        for loop in loops:
            grown: list[dict[SSAValue, int]] = []
            for env in envs:
                sim = self.simulate(loop, env)
                if sim is None:
                    grown.append(env)
                    continue
                grown.extend({**env, **state} for state in sim.iterations)
                if len(grown) > limit:
                    return None
            envs = grown
        return envs

    # -- periodicity in a loop counter ----------------------------------------------------------

    def counter_period(self, value: SSAValue, counter: SSAValue) -> int | None:
        """How many iterations `value` takes to repeat as a function of loop counter k: 1 when
        it does not depend on k, the lcm of the moduli when it depends on k only through
        `(a*k + b) % c` or `(a*k + b) & c` with constant c, None otherwise (e.g. `k + 1 < n`).

        Such a value can be evaluated exactly over one period of iterations even when the loop's
        trip count is not known (a double buffer's slot `k % 2`)."""
        shape, period = self._counter_shape(value, counter, {})
        return period if shape != "other" and shape != "linear" else None

    def _counter_shape(self, value: SSAValue, counter: SSAValue,
                       memo: dict[SSAValue, tuple[str, int]]) -> tuple[str, int]:
        if value in memo:
            return memo[value]
        memo[value] = ("other", 0)
        if value is counter:
            result = ("linear", 1)
        elif counter not in self.deps(value):
            result = ("const", 1)
        elif not isinstance(value, OpResult) or value.op.regions:
            result = ("other", 0)
        else:
            op = value.op
            parts = [self._counter_shape(o, counter, memo) for o in op.operands]
            shapes = [shape for shape, _ in parts]
            period = 1
            for shape, p in parts:
                if shape == "periodic":
                    period = math.lcm(period, p)
            modulus = self.scalar(op.operands[1], {}) if len(op.operands) == 2 else None
            if "other" in shapes:
                result = ("other", 0)
            elif isinstance(op, arith.RemSIOp | arith.RemUIOp) and modulus and shapes[1] == "const":
                result = ("periodic", math.lcm(period, abs(modulus)))
            elif isinstance(op, arith.AndIOp) and modulus is not None and modulus >= 0 \
                    and shapes[1] == "const":
                result = ("periodic", math.lcm(period, 1 << modulus.bit_length()))
            elif "linear" not in shapes:
                result = ("periodic", period)
            elif "periodic" not in shapes and (
                    isinstance(op, arith.AddiOp | arith.SubiOp) or offset_base(op) is not None or (
                        isinstance(op, arith.MuliOp) and shapes.count("linear") == 1)):
                result = ("linear", 1)
            else:
                result = ("other", 0)
        memo[value] = result
        return result

    # -- which lanes execute an op -------------------------------------------------------------

    def conditions(self, op: Operation) -> list[tuple[scf.IfOp, bool]]:
        """The `scf.if`s enclosing `op` (up to the kernel) and whether `op` is in the then-branch."""
        found: list[tuple[scf.IfOp, bool]] = []
        child: Operation = op
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp):
            if isinstance(parent, scf.IfOp):
                region = child.parent_region()
                found.append((parent, region is parent.true_region))
            child, parent = parent, parent.parent_op()
        return found

    def mask(self, op: Operation, env: Env,
             opaque: frozenset[scf.IfOp] = frozenset()) -> np.ndarray:
        """Lanes that may execute `op`: enclosing conditions known from lane ids are exact;
        those in `opaque` are taken as unknown."""
        active = np.ones(self.space.size, dtype=bool)
        for if_op, then in self.conditions(op):
            if if_op in opaque:
                continue
            cond = self.eval_bool(if_op.cond, env)
            active &= cond.may_true if then else cond.may_false
        return active

    def mask_deps(self, op: Operation) -> tuple[SSAValue, ...]:
        return self.deps_of(if_op.cond for if_op, _ in self.conditions(op))

def loop_depth(op: Operation) -> int:
    depth = 0
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.ForOp):
            depth += 1
        parent = parent.parent_op()
    return depth


def enclosing_loops(op: Operation) -> list[scf.ForOp]:
    """The `scf.for`s and `scf.while`s around `op`, outermost first (a while loop's iterations
    are never enumerated; it is listed so that an access carried round it is renamed)."""
    loops: list[scf.ForOp] = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.ForOp | scf.WhileOp):
            loops.append(parent)
        parent = parent.parent_op()
    return loops[::-1]


def defined_inside(value: SSAValue, op: Operation) -> bool:
    """Whether `value` is defined in a region of `op` (a block argument or a nested result)."""
    if isinstance(value, BlockArgument):
        block: Block | None = value.block
        parent = block.parent_op() if block is not None else None
        return parent is not None and (parent is op or op.is_ancestor(parent))
    if isinstance(value, OpResult):
        return value.op is not op and op.is_ancestor(value.op)
    return False


def value_name(value: SSAValue) -> str:
    """How a value is shown in a diagnostic: its name hint (the Python variable) if it has one."""
    if value.name_hint:
        return value.name_hint
    if isinstance(value, OpResult):
        return f"<{value.op.name} result>"
    return "<argument>"


__all__ = ["Affine", "Env", "LaneModel", "LaneSpace", "MAX_AGE", "MAX_TRIPS", "Simulation", "TriBool",
           "defined_inside", "enclosing_loops", "loop_depth", "value_name"]
