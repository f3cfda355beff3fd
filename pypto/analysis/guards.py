"""Proving two L1 accesses apart through their guards, when their indices differ by an unknown
uniform value (docs/barriers.md#how-it-decides).

The classic tree reduction reads `buf[t + s]` and writes `buf[t]` under `if t < s`, with `s`
halved each round from `block_dim // 2`: a value the lane evaluation (`lane_values`) keeps as
a symbolic uniform *term*. Written and read elements are `[0, s)` and `[s, 2s)`: apart for
every `s`, but only because of the guard. Comparing the offsets alone cannot see it.

The check here: the offsets are `F(x) + c*u + T` and `G(y) + T` (`u` the one term they do not
share, `T` the shared ones). Lanes x and y of different warps meet only if `c*u = G(y) - F(x)`,
so the values of `u` worth looking at are those differences: finitely many. For each, `u` is
substituted into the guards (comparisons linear in `u`, combined with `and` / `or` / `xor`;
anything else stays "may be either") and the exact lane comparison runs. No value with a
conflict proves the accesses apart *for every value of u* (reachable or not), so the verdict
is sound without knowing which values `u` takes; a value with a conflict proves nothing
(that value may never occur), and the caller defers the pair to the run-time race detector.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.ir import Operation, OpResult, SSAValue

from pypto.analysis.l1_access import Footprint, lanes_conflict
from pypto.analysis.lane_space import Affine, Env, LaneSpace, Term, TriBool
from pypto.analysis.lane_values import LaneModel

MAX_CANDIDATES = 2048
"""Most values of the unknown term tried for one pair (beyond it: undecided, deferred)."""

_SIGNED = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater,
           5: np.greater_equal}
"""`arith.cmpi` predicates whose meaning on the (unbounded) affine difference is exact."""


def substitute(value: Affine, term: Term, number: int) -> Affine:
    """`value` with the uniform term `term` replaced by `number`."""
    coefs = dict(value.terms)
    coef = coefs.pop(term, 0)
    return Affine(frozenset(coefs.items()), value.lanes + coef * number)


def condition_at(model: LaneModel, cond: SSAValue, env: Env, term: Term, number: int
                 ) -> TriBool:
    """An i1 condition per lane with `term` = `number`: exact for signed comparisons of
    values affine in the term (and `and` / `or` / `xor` of those), else the model's answer."""
    if isinstance(cond, OpResult):
        op = cond.op
        if isinstance(op, arith.CmpiOp) and op.predicate.value.data in _SIGNED:
            a, b = (model.eval(o, env) for o in op.operands)
            if a is not None and b is not None:
                a, b = substitute(a, term, number), substitute(b, term, number)
                if a.terms == b.terms:
                    diff = (a - b).lanes
                    return TriBool.exact(_SIGNED[op.predicate.value.data](diff, 0))
        if isinstance(op, arith.AndIOp | arith.OrIOp | arith.XOrIOp):
            x, y = (condition_at(model, o, env, term, number) for o in op.operands)
            if isinstance(op, arith.AndIOp):
                return x.and_(y)
            return x.or_(y) if isinstance(op, arith.OrIOp) else x.xor(y)
    return model.eval_bool(cond, env)


def mask_at(model: LaneModel, op: Operation, env: Env, opaque: frozenset[object],
            term: Term, number: int) -> np.ndarray:
    """The lanes that may execute `op` when `term` = `number` (LaneModel.mask, substituted)."""
    active = np.ones(model.space.size, dtype=bool)
    for if_op, then in model.conditions(op):
        if if_op in opaque:
            continue
        cond = condition_at(model, if_op.cond, env, term, number)
        active &= np.broadcast_to(cond.may_true if then else cond.may_false, active.shape)
    return active


def apart_under_guards(model: LaneModel, space: LaneSpace, fx: Footprint, fy: Footprint,
                       first: Operation, second: Operation, ex: Env, ey: Env,
                       opaque: frozenset[object], what: tuple[str, str]) -> bool:
    """True when the two lane accesses (footprints `fx`, `fy` of `first`, `second`, in the
    same iteration of every loop around both) can touch one element from different warps for
    no value of the one uniform term their offsets do not share (see the module docstring)."""
    if fx.roots is None or fx.roots != fy.roots or len(fx.roots) != 1 or \
            fx.offset is None or fy.offset is None or fx.mask is None or fy.mask is None:
        return False
    delta = dict(fx.offset.terms)
    for t, c in fy.offset.terms:
        delta[t] = delta.get(t, 0) - c
    delta = {t: c for t, c in delta.items() if c}
    if len(delta) != 1:
        return False
    ((term, coef),) = delta.items()
    size = space.size
    ax = np.broadcast_to(fx.offset.lanes, (size,))[fx.mask]
    ay = np.broadcast_to(fy.offset.lanes, (size,))[fy.mask]
    xw, yw = space.warp[fx.mask], space.warp[fy.mask]
    if ax.size == 0 or ay.size == 0:
        return True
    if ax.size * ay.size > 1 << 22:
        return False
    # lane x's element is ax + coef*u (+ T), lane y's is ay (+ T): they meet where
    # coef*u = ay - ax, from different warps
    diff = ay[None, :] - ax[:, None]
    meet = (diff % coef == 0) & (xw[:, None] != yw[None, :])
    candidates = np.unique(diff[meet] // coef)
    if candidates.size > MAX_CANDIDATES:
        return False
    shared = frozenset((t, c) for t, c in fy.offset.terms)
    for number in candidates.tolist():
        at_x = Footprint(fx.roots, Affine(shared, fx.offset.lanes + coef * number),
                         mask_at(model, first, ex, opaque, term, number))
        at_y = Footprint(fy.roots, Affine(shared, fy.offset.lanes),
                         mask_at(model, second, ey, opaque, term, number))
        if lanes_conflict(space, at_x, at_y, what=what) is not None:
            return False
    return True


__all__ = ["MAX_CANDIDATES", "apart_under_guards", "condition_at", "mask_at", "substitute"]
