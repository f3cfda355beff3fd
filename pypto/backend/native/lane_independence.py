"""Lane independence through HBM: when may lanes run one after another instead of in lockstep?

The native backend runs a block's lanes one after another between phase cuts, and blocks one
after another; the interpreter runs every op for all lanes of a block (and in grid or batch mode
for several blocks) before the next op (docs/native.md#phases). Each lane's own ops run in
program order in both. So the two agree on an HBM tensor whenever no element one lane writes
is read or written by another lane (any block): then the order between lanes cannot show. This
module proves that for the tensors the simple rules of support.py do not accept (read and
written, written by several ops, written in a loop: docs/native.md#lane-independence).

**Forms.** Every index of an access to the tensor is evaluated symbolically as an affine form
`base + sum(coef * var)` over *variables* with known ranges at launch — the *actor* variables
(the lane's local ids `lid d` in `[0, block d)` and block ids `bid d` in `[0, grid d)`) and the
*repeat* variables of one actor (the trip index `k` of an `scf.for` with uniform bounds, in
`[0, trips)`; the rows and elements of a block-level copy's tile) — whose coefficients and base
are *uniform* expressions (parameters, constants, launch dimensions and arithmetic on them).
A `get_global_id(d)` is `bid d * block_dim d + lid d`; a loop counter `lb + step * k`; a value a
loop carries as `v + u` (u uniform) is `init + u * k` (grid-stride loops). Anything else (a
loaded value, `%` or `//` of a lane value, a lane-dependent loop) makes the access *opaque*: the
tensor is refused at compile time with the reason.

**Guards.** The conditions of the enclosing `if`s (and the early `return`s the frontend turns
into them) on the way to the access, split at `and` (taken branch) / `or` (other branch), give
linear constraints `lo <= sum(coef * var) <= hi` (a `<`, `<=`, `>`, `>=`, `==` of two forms);
uniform conditions are evaluated (a site under a false one never runs).

**The proof, at launch** (`LaunchCheck.refusal`: scalar arithmetic on the launch's shape and
scalar arguments, memoised per shape and arguments). Per access site: variable ranges from the
launch, narrowed by the guards (bounds propagation: `tid == 0` pins `tid`), a variable of one
value folded into the base. Then for the tensor's sites together:

1. every actor variable that still takes several values must have a non-zero coefficient
   (else two lanes differing only there share the site's elements: a 1-D-indexed tensor in a
   2-D launch);
2. all sites have the same actor coefficients and, sorted, the same repeat coefficients (a
   repeat variable of each site is matched by its rank: their ranges joined); their bases
   differ by constants `d_a` in `[0, D]`;
3. *mixed radix*: with the variables sorted by `|coef|`, the partial sums `P_k = d_a +
   sum_{j<=k} coef_j * var_j` have an interval of width `S_k` (by intervals, or a guard
   bounding exactly that sum: `c0 + tid < ncols`, `x < w`), and each next `|coef_{k+1}| >= S_k`.

Then the map from (actor, repeat variables, site) to the element is injective: for two points
whose largest differing variable is `k`, the elements differ by at least `|coef_k| - (S_{k-1}
- 1) > 0`. Two different lanes (or blocks) therefore never touch one element, whatever the
sites, iterations or rows. Every intermediate form must also stay within its integer type over
the variables' ranges (so the kernel's wrapping arithmetic is the exact one the forms assume).

A launch the proof does not pass is refused at launch (`backend="native"`: `NativeUnsupported`
naming the access and why; `"auto"`: the interpreter runs it) — never run in an order that
could differ. Block-level instructions (copies, `tile_store`) are sites whose actor is the
block (their rows and elements repeat variables); a tensor accessed both by lanes and by
block-level instructions, or updated by atomics, is not modelled.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import BlockArgument, Operation, SSAValue

from pypto.diagnostics import op_location
from pypto.dialects.arith_semantics import DIVISIONS, INT_BINARY
from pypto.dialects.traits import (atomic_update, is_block_collective, launch_id,
                                   memory_accesses, offset_base, tile_footprint)

# --------------------------------------------------------------------------------------------
# Uniform expressions (exact integers at launch)
# --------------------------------------------------------------------------------------------

UExpr = Union[int, tuple]
"""An int, `("v", ssa)` (a uniform SSA value, evaluated as the kernel computes it),
`("+", a, b)` or `("*", a, b)`."""


def _uadd(a: UExpr, b: UExpr) -> UExpr:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if a == 0:
        return b
    if b == 0:
        return a
    return ("+", a, b)


def _umul(a: UExpr, b: UExpr) -> UExpr:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 0 or b == 0:
        return 0
    if a == 1:
        return b
    if b == 1:
        return a
    return ("*", a, b)


Var = tuple
"""("lid", d) / ("bid", d): actor variables; ("k", scf.for op), ("row", op), ("elem", op):
repeat variables of one actor."""

ACTOR_KINDS = ("lid", "bid")


@dataclass(frozen=True)
class Form:
    """`base + sum(coef * var)`, coefficients and base uniform expressions."""

    coefs: tuple[tuple[Var, UExpr], ...]
    base: UExpr

    @staticmethod
    def const(value: UExpr) -> Form:
        return Form((), value)

    @staticmethod
    def var(v: Var) -> Form:
        return Form(((v, 1),), 0)

    def __add__(self, other: Form) -> Form:
        coefs = dict(self.coefs)
        for v, c in other.coefs:
            coefs[v] = _uadd(coefs[v], c) if v in coefs else c
        return Form(tuple((v, c) for v, c in coefs.items() if c != 0),
                    _uadd(self.base, other.base))

    def scaled(self, k: UExpr) -> Form:
        if k == 0:
            return Form.const(0)
        return Form(tuple((v, _umul(c, k)) for v, c in self.coefs), _umul(self.base, k))

    def __neg__(self) -> Form:
        return self.scaled(-1)


class Opaque(Exception):
    """A value the forms cannot follow (the reason, with its location)."""


# --------------------------------------------------------------------------------------------
# Compile time: the sites of each tensor
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Constraint:
    """`lo <= base + sum(coef * var) <= hi` (lo / hi None: unbounded), from a comparison whose
    operands computed the values of `trail` (if one may wrap around its type, the comparison
    is not the forms' and the constraint is dropped at launch)."""

    form: Form
    lo: int | None
    hi: int | None
    trail: tuple[tuple[Form, int], ...] = ()


@dataclass
class Site:
    """One access to the tensor: its element `form`, guards, and the values to range-check."""

    op: Operation
    write: bool
    form: Form
    constraints: list[Constraint]
    uniform_guards: list[tuple[SSAValue, bool]]
    intermediates: list[tuple[Form, int]]
    loops: list[scf.ForOp]
    tile_operand: int | None = None  # a block-level instruction: its HBM operand

    @property
    def block_level(self) -> bool:
        return self.tile_operand is not None


def _width(value: SSAValue) -> int | None:
    t = value.type
    return t.width.data if isinstance(t, IntegerType) else None


class IndexForms:
    """Forms of a kernel's integer values (memoised), with the intermediates they passed."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.memo: dict[SSAValue, Form] = {}
        self.trail: dict[SSAValue, list[tuple[Form, int]]] = {}

    def uniform(self, value: SSAValue) -> bool:
        return not self.of(value).coefs

    def of(self, value: SSAValue) -> Form:
        if value in self.memo:
            return self.memo[value]
        form, trail = self._compute(value)
        width = _width(value)
        if width is not None and width > 1:
            trail = [*trail, (form, width)]
        self.memo[value] = form
        self.trail[value] = trail
        return form

    def trail_of(self, value: SSAValue) -> list[tuple[Form, int]]:
        self.of(value)
        return self.trail[value]

    def _sub(self, *values: SSAValue) -> tuple[list[Form], list[tuple[Form, int]]]:
        forms = [self.of(v) for v in values]
        trail = [t for v in values for t in self.trail[v]]
        return forms, trail

    def _compute(self, value: SSAValue) -> tuple[Form, list[tuple[Form, int]]]:
        where = op_location(value.owner, unknown="here") if isinstance(value.owner, Operation) \
            else op_location(value.block.parent_op() or self.kernel, unknown="here")
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            if owner is self.kernel:
                if not isinstance(value.type, IntegerType):
                    raise Opaque(f"{where}: a non-integer parameter in an index")
                return Form.const(("v", value)), []
            if isinstance(owner, scf.ForOp):
                return self._loop_value(owner, value, where)
            raise Opaque(f"{where}: an index carried by a loop or branch the analysis does not "
                         f"follow")
        op = value.owner
        assert isinstance(op, Operation)
        name = launch_id(op)
        if name is not None:
            d = op.properties["dim"].value.data if "dim" in op.properties else 0
            if name == "local_id":
                return Form.var(("lid", d)), []
            if name == "block_id":
                return Form.var(("bid", d)), []
            if name == "global_id":
                return Form(((("bid", d), ("dim", "block", d)), (("lid", d), 1)), 0), []
            if name in ("block_dim", "grid_dim"):
                return Form.const(("dim", name.removesuffix("_dim"), d)), []
            raise Opaque(f"{where}: an index through '{op.name}' (warp and lane-in-warp ids "
                         f"are not affine in the lane coordinates)")
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return Form.const(op.value.value.data), []
        if isinstance(op, arith.AddiOp | arith.SubiOp):
            (a, b), trail = self._sub(*op.operands)
            return (a + b if isinstance(op, arith.AddiOp) else a + -b), trail
        if isinstance(op, arith.MuliOp):
            (a, b), trail = self._sub(*op.operands)
            if not a.coefs:
                return (b.scaled(a.base), trail) if b.coefs else \
                    (Form.const(("v", value)), trail)
            if not b.coefs:
                return a.scaled(b.base), trail
            raise Opaque(f"{where}: a product of two lane-dependent values in an index")
        if isinstance(op, arith.ShLIOp):
            (a, b), trail = self._sub(*op.operands)
            width = _width(value) or 64
            if a.coefs and not b.coefs and isinstance(b.base, int) and 0 <= b.base < width:
                return a.scaled(1 << b.base), trail
        if isinstance(op, arith.ExtSIOp):
            (a,), trail = self._sub(op.operands[0])
            return a, trail
        if isinstance(op, arith.IndexCastOp):
            (a,), trail = self._sub(op.operands[0])
            return a, trail
        # any other integer op: uniform when its operands are (evaluated as the kernel does)
        if op.name in INT_BINARY or op.name in ("arith.select", "arith.cmpi", "arith.extui",
                                                "arith.trunci", "arith.extsi"):
            forms, trail = self._sub(*op.operands)
            if all(not f.coefs for f in forms):
                return Form.const(("v", value)), trail
            raise Opaque(f"{where}: '{op.name}' of a lane-dependent value in an index (not "
                         f"affine)")
        raise Opaque(f"{where}: an index computed by '{op.name}' (a loaded or otherwise "
                     f"unknown value)")

    def _loop_value(self, loop: scf.ForOp, value: BlockArgument,
                    where: str) -> tuple[Form, list[tuple[Form, int]]]:
        (lb, ub, step), trail = self._sub(loop.lb, loop.ub, loop.step)
        if lb.coefs or ub.coefs or step.coefs:
            raise Opaque(f"{where}: a loop whose bounds depend on the lane or an outer loop")
        k = Form.var(("k", loop))
        if value is loop.body.block.args[0]:
            return lb + k.scaled(step.base), trail
        index = loop.body.block.args.index(value) - 1
        init = loop.iter_args[index]
        yielded = loop.body.block.last_op.operands[index]
        (start,), t0 = self._sub(init)
        if isinstance(yielded.owner, arith.AddiOp | arith.SubiOp):
            a, b = yielded.owner.operands
            sign = 1 if isinstance(yielded.owner, arith.AddiOp) else -1
            other = b if a is value else a if b is value and sign == 1 else None
            if other is not None:
                (u,), t1 = self._sub(other)
                if not u.coefs:
                    return start + k.scaled(_umul(sign, u.base)), trail + t0 + t1
        raise Opaque(f"{where}: a value a loop carries other than by adding a uniform step")


def _guards(op: Operation, kernel: func.FuncOp) -> list[tuple[SSAValue, bool]]:
    """The conditions (value, taken) of the `scf.if`s enclosing `op`."""
    out: list[tuple[SSAValue, bool]] = []
    child: Operation = op
    parent = op.parent_op()
    while parent is not None and parent is not kernel:
        if isinstance(parent, scf.IfOp):
            region = child.parent_region()
            out.append((parent.cond, region is parent.true_region))
        child, parent = parent, parent.parent_op()
    return out


def _loops(op: Operation, kernel: func.FuncOp) -> list[scf.ForOp]:
    out = []
    parent = op.parent_op()
    while parent is not None and parent is not kernel:
        if isinstance(parent, scf.ForOp):
            out.append(parent)
        if isinstance(parent, scf.WhileOp):
            raise Opaque(f"{op_location(op, unknown='here')}: an access in a SIMT `while` loop "
                         f"(its trips differ between lanes)")
        parent = parent.parent_op()
    return out


PREDICATES = {"slt": (None, -1), "sle": (None, 0), "sgt": (1, None), "sge": (0, None),
              "eq": (0, 0)}
NEGATED = {"slt": "sge", "sle": "sgt", "sgt": "sle", "sge": "slt", "eq": "ne", "ne": "eq"}
PREDICATE_NAMES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


def _split_guard(forms: IndexForms, cond: SSAValue, taken: bool, constraints: list[Constraint],
                 uniform: list[tuple[SSAValue, bool]]) -> None:
    """Constraints from `cond == taken` (what is not understood is dropped: guards only
    narrow ranges, so dropping one is sound)."""
    owner = cond.owner
    try:
        if forms.uniform(cond):
            uniform.append((cond, taken))
            return
    except Opaque:
        pass
    if isinstance(owner, arith.AndIOp) and taken or isinstance(owner, arith.OrIOp) and not taken:
        for operand in owner.operands:
            _split_guard(forms, operand, taken, constraints, uniform)
        return
    if isinstance(owner, arith.XOrIOp):
        a, b = owner.operands
        for x, y in ((a, b), (b, a)):
            if isinstance(y.owner, arith.ConstantOp) and isinstance(y.owner.value, IntegerAttr) \
                    and y.owner.value.value.data in (1, -1):
                _split_guard(forms, x, not taken, constraints, uniform)
                return
        return
    if isinstance(owner, arith.CmpiOp):
        pred = PREDICATE_NAMES[owner.predicate.value.data]
        if not taken:
            pred = NEGATED.get(pred, "")
        if pred not in PREDICATES:
            return
        try:
            a, b = forms.of(owner.operands[0]), forms.of(owner.operands[1])
        except Opaque:
            return
        lo, hi = PREDICATES[pred]
        trail = (*forms.trail_of(owner.operands[0]), *forms.trail_of(owner.operands[1]))
        constraints.append(Constraint(a + -b, lo, hi, trail))


def _hbm_root(value: SSAValue, kernel: func.FuncOp) -> tuple[BlockArgument, list[SSAValue]] | None:
    """The kernel parameter a pointer offsets and the offsets on the way (addptr chain)."""
    offsets: list[SSAValue] = []
    while True:
        if isinstance(value, BlockArgument):
            return (value, offsets) if value.block.parent_op() is kernel else None
        base = offset_base(value.owner)
        if base is None:
            return None
        offsets.append(value.owner.operands[1])
        value = base


def _site(forms: IndexForms, kernel: func.FuncOp, op: Operation, operand: int, write: bool,
          offsets: list[SSAValue], block_level: bool) -> Site:
    form = Form.const(0)
    trail: list[tuple[Form, int]] = []
    for offset in offsets:
        form = form + forms.of(offset)
        trail += forms.trail_of(offset)
    loops = _loops(op, kernel)
    constraints: list[Constraint] = []
    uniform: list[tuple[SSAValue, bool]] = []
    for cond, taken in _guards(op, kernel):
        _split_guard(forms, cond, taken, constraints, uniform)
    if block_level and any(v[0] == "lid" for v, _ in form.coefs):
        raise Opaque(f"{op_location(op, unknown='here')}: a block-level instruction at a "
                     f"lane-dependent address")
    return Site(op, write, form, constraints, uniform, trail, loops,
                operand if block_level else None)


def tensor_sites(kernel: func.FuncOp, param: BlockArgument) -> list[Site]:
    """Every access to the tensor `param` as a `Site`; raises `Opaque` with the reason when one
    cannot be modelled."""
    forms = IndexForms(kernel)
    sites: list[Site] = []
    for op in kernel.walk():
        accesses = memory_accesses(op)
        if not accesses or op is kernel:
            continue
        for access in accesses:
            if access.space != "global":
                continue
            root = _hbm_root(op.operands[access.operand], kernel)
            if root is None or root[0] is not param:
                continue
            where = op_location(op, unknown="here")
            if atomic_update(op) is not None:
                raise Opaque(f"{where}: the tensor is also updated by an atomic")
            block_level = is_block_collective(op)  # (its actor is the block)
            sites.append(_site(forms, kernel, op, access.operand, access.kind == "write",
                               root[1], block_level))
    if len({s.block_level for s in sites}) > 1:
        raise Opaque(f"{op_location(sites[0].op, unknown='here')}: the tensor is accessed both "
                     f"by lanes and by block-level instructions")
    return sites


def refusal(kernel: func.FuncOp, param: BlockArgument) -> str | None:
    """Why the accesses to the written tensor `param` cannot be modelled (None: they can, and
    `LaunchCheck` decides at launch)."""
    try:
        tensor_sites(kernel, param)
    except Opaque as exc:
        return str(exc)
    return None


# --------------------------------------------------------------------------------------------
# Launch time: the proof on the launch's numbers
# --------------------------------------------------------------------------------------------


class _Undecided(Exception):
    """The proof does not pass at this launch (the reason)."""


Range = tuple[int, int]


class _Evaluator:
    """Uniform values at one launch: parameters, dimensions, arithmetic as the kernel does."""

    def __init__(self, kernel: func.FuncOp, grid: Sequence[int], block: Sequence[int],
                 scalars: Mapping[BlockArgument, Any]):
        self.kernel, self.grid, self.block, self.scalars = kernel, grid, block, scalars
        self.memo: dict[SSAValue, int | None] = {}

    def expr(self, e: UExpr) -> int:
        if isinstance(e, int):
            return e
        if e[0] == "dim":
            return int((self.grid if e[1] == "grid" else self.block)[e[2]])
        if e[0] == "v":
            value = self.ssa(e[1])
            if value is None:
                owner = e[1].owner
                where = op_location(owner, unknown="a value") \
                    if isinstance(owner, Operation) else "a parameter"
                raise _Undecided(f"{where} cannot be evaluated before the launch")
            return value
        a, b = self.expr(e[1]), self.expr(e[2])
        return a + b if e[0] == "+" else a * b

    def ssa(self, value: SSAValue) -> int | None:
        if value not in self.memo:
            self.memo[value] = self._ssa(value)
        return self.memo[value]

    def _ssa(self, value: SSAValue) -> int | None:
        if isinstance(value, BlockArgument):
            raw = self.scalars.get(value)
            return None if raw is None else int(raw)
        op = value.owner
        width = _width(value)
        if width is None:
            return None
        name = launch_id(op)
        if name in ("block_dim", "grid_dim"):
            d = op.properties["dim"].value.data
            return int((self.grid if name == "grid_dim" else self.block)[d])
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return int(op.value.value.data)
        args = [self.ssa(v) for v in op.operands]
        if any(a is None for a in args):
            return None
        if width == 1 and op.name not in ("arith.cmpi", "arith.andi", "arith.ori",
                                          "arith.xori", "arith.select", "arith.constant"):
            return None
        if op.name in INT_BINARY and width in (32, 64):
            if op.name in DIVISIONS and args[1] == 0:
                return None
            if op.name.startswith("arith.sh") and not 0 <= args[1] < width:
                return None
            dtype = np.dtype(f"int{width}")
            with np.errstate(all="ignore"):
                return int(INT_BINARY[op.name](dtype.type(args[0]), dtype.type(args[1])))
        if op.name in ("arith.andi", "arith.ori", "arith.xori") and width == 1:
            a, b = args[0] & 1, args[1] & 1
            return {"arith.andi": a & b, "arith.ori": a | b, "arith.xori": a ^ b}[op.name]
        if isinstance(op, arith.SelectOp):
            return args[1] if args[0] & 1 else args[2]
        if isinstance(op, arith.CmpiOp):
            pred = PREDICATE_NAMES[op.predicate.value.data]
            a, b = args
            if pred[0] == "u":
                mask = (1 << (_width(op.operands[0]) or 64)) - 1
                a, b = a & mask, b & mask
                pred = "s" + pred[1:]
            return int({"eq": a == b, "ne": a != b, "slt": a < b, "sle": a <= b,
                        "sgt": a > b, "sge": a >= b}[pred])
        if isinstance(op, arith.ExtSIOp | arith.IndexCastOp):
            return args[0]
        if isinstance(op, arith.ExtUIOp):
            return args[0] & ((1 << (_width(op.operands[0]) or 64)) - 1)
        if isinstance(op, arith.TruncIOp):
            half = 1 << (width - 1)
            return ((args[0] + half) & ((1 << width) - 1)) - half
        return None


@dataclass
class _Numeric:
    """One site at one launch: coefficients, base, variable ranges, guards — all numbers."""

    site: Site
    coefs: dict[Var, int]
    base: int
    ranges: dict[Var, Range]
    constraints: list[tuple[dict[Var, int], int | None, int | None]] = field(default_factory=list)


def _numeric_form(ev: _Evaluator, form: Form) -> tuple[dict[Var, int], int]:
    coefs = {}
    for v, c in form.coefs:
        value = ev.expr(c)
        if value:
            coefs[v] = coefs.get(v, 0) + value
    return {v: c for v, c in coefs.items() if c}, ev.expr(form.base)


def _interval(coefs: Mapping[Var, int], base: int, ranges: Mapping[Var, Range]) -> Range:
    lo = hi = base
    for v, c in coefs.items():
        a, b = ranges[v]
        lo += min(c * a, c * b)
        hi += max(c * a, c * b)
    return lo, hi


def _narrow(num: _Numeric) -> bool:
    """Bounds propagation of the guards into the variable ranges; False: the site never runs."""
    for _ in range(4):
        changed = False
        for coefs, lo, hi in num.constraints:
            for v, c in coefs.items():
                rest = {u: k for u, k in coefs.items() if u != v}
                rlo, rhi = _interval(rest, 0, num.ranges)
                # lo <= c * v + rest <= hi  =>  lo - rhi <= c * v <= hi - rlo
                vlo, vhi = num.ranges[v]
                if c > 0:
                    if hi is not None:
                        vhi = min(vhi, (hi - rlo) // c)
                    if lo is not None:
                        vlo = max(vlo, -((rhi - lo) // c))
                else:
                    if hi is not None:
                        vlo = max(vlo, -((hi - rlo) // -c))
                    if lo is not None:
                        vhi = min(vhi, (rhi - lo) // -c)
                if vlo > vhi:
                    return False
                if (vlo, vhi) != num.ranges[v]:
                    num.ranges[v] = (vlo, vhi)
                    changed = True
            if not coefs and (lo is not None and 0 < lo or hi is not None and 0 > hi):
                return False
        if not changed:
            return True
    return True


def _fold_singletons(num: _Numeric) -> None:
    """A variable of one value becomes part of the base (and of the guards' bounds)."""
    fixed = {v: r[0] for v, r in num.ranges.items() if r[0] == r[1]}
    num.base += sum(c * fixed[v] for v, c in num.coefs.items() if v in fixed)
    num.coefs = {v: c for v, c in num.coefs.items() if v not in fixed}
    out = []
    for coefs, lo, hi in num.constraints:
        shift = sum(c * fixed[v] for v, c in coefs.items() if v in fixed)
        out.append(({v: c for v, c in coefs.items() if v not in fixed},
                    None if lo is None else lo - shift, None if hi is None else hi - shift))
    num.constraints = out


MAX_ORDERS = 24
"""Orders of variables with equal |coefficient| tried (the mixed radix needs one that works)."""


def _orders(variables: list[tuple[Var, int]]) -> list[list[tuple[Var, int]]]:
    ordered = sorted(variables, key=lambda vc: abs(vc[1]))
    groups = [list(g) for _, g in itertools.groupby(ordered, key=lambda vc: abs(vc[1]))]
    choices = [list(itertools.permutations(g)) if len(g) <= 3 else [tuple(g)] for g in groups]
    out = []
    for combo in itertools.product(*choices):
        out.append([vc for g in combo for vc in g])
        if len(out) >= MAX_ORDERS:
            break
    return out


def _prove(name: str, nums: list[_Numeric]) -> None:
    """The mixed-radix proof for one tensor's live sites (raises `_Undecided`)."""
    first = nums[0]
    for num in nums:
        for v, (lo, hi) in num.ranges.items():
            if v[0] in ACTOR_KINDS and hi > lo and v not in num.coefs and \
                    not (num.site.block_level and v[0] == "lid"):
                raise _Undecided(f"the lanes differing only in {_var_name(v)} access the same "
                                 f"element at {op_location(num.site.op, unknown='here')}")
    actor = {v: c for v, c in first.coefs.items() if v[0] in ACTOR_KINDS}
    for num in nums:
        if {v: c for v, c in num.coefs.items() if v[0] in ACTOR_KINDS} != actor:
            raise _Undecided(f"the accesses at {op_location(first.site.op, unknown='here')} and "
                             f"{op_location(num.site.op, unknown='here')} have different "
                             f"strides across lanes")
    # repeat variables matched by coefficient (rank among equal ones); a site without one
    # gets it with the single value 0 (the same elements), then `_rebase` moves it
    wanted: dict[int, int] = {}
    for num in nums:
        counts: dict[int, int] = {}
        for v, c in num.coefs.items():
            if v[0] not in ACTOR_KINDS:
                counts[c] = counts.get(c, 0) + 1
        for c, k in counts.items():
            wanted[c] = max(wanted.get(c, 0), k)
    unify: list[dict[Var, Var]] = []
    for a, num in enumerate(nums):
        ren: dict[Var, Var] = {}
        for c in sorted(wanted):
            mine = sorted((v for v, x in num.coefs.items()
                           if v[0] not in ACTOR_KINDS and x == c), key=lambda v: num.ranges[v])
            for i in range(wanted[c]):
                if i < len(mine):
                    ren[mine[i]] = ("r", c, i)
                else:
                    virtual = ("virtual", a, c, i)
                    num.coefs[virtual] = c
                    num.ranges[virtual] = (0, 0)
                    ren[virtual] = ("r", c, i)
        unify.append(ren)
        _rebase(num, ren, first.base)
    ranges: dict[Var, Range] = {}
    for num, ren in zip(nums, unify):
        for v in num.coefs:
            key = ren.get(v, v)
            lo, hi = num.ranges[v]
            old = ranges.get(key)
            ranges[key] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
    coefs = {**actor, **{("r", c, i): c for c, k in wanted.items() for i in range(k)}}
    low_base = min(n.base for n in nums)
    offsets = [n.base - low_base for n in nums]
    guards = [[({ren.get(v, v): c for v, c in cs.items()}, lo, hi)
               for cs, lo, hi in num.constraints] for num, ren in zip(nums, unify)]
    failure = ""
    for order in _orders(list(coefs.items())):
        failure = _radix(order, ranges, offsets, guards)
        if not failure:
            return
    where = ", ".join(sorted({op_location(n.site.op, unknown="here") for n in nums}))
    raise _Undecided(f"{failure} (accesses of parameter {name} at {where})")


def _rebase(num: _Numeric, ren: Mapping[Var, Var], base: int) -> None:
    """Shift the site's repeat variables (largest coefficient first) so that its base comes
    as close to `base` as whole steps allow: the epilogue of a pipelined loop (its counter
    folded into the base) is the loop's counter at its last value. The same elements,
    described from the same origin as the other sites."""
    for v in sorted(ren, key=lambda u: -abs(num.coefs[u])):
        c = num.coefs[v]
        q = (num.base - base) // c
        if not q:
            continue
        lo, hi = num.ranges[v]
        num.ranges[v] = (lo + q, hi + q)
        num.base -= c * q
        num.constraints = [
            (cs, glo if glo is None or v not in cs else glo + cs[v] * q,
             ghi if ghi is None or v not in cs else ghi + cs[v] * q)
            for cs, glo, ghi in num.constraints]


def _radix(order: list[tuple[Var, int]], ranges: Mapping[Var, Range], offsets: list[int],
           guards: list[list[tuple[dict[Var, int], int | None, int | None]]]) -> str:
    """'' when the order proves the map injective, else why not."""
    lo, hi = min(offsets), max(offsets)
    prefix: dict[Var, int] = {}
    for v, c in order:
        if ranges[v][0] != ranges[v][1] and abs(c) < hi - lo + 1:
            return (f"two lanes may share an element: the stride {abs(c)} of "
                    f"{_var_name(v)} is smaller than the {hi - lo + 1} elements the smaller "
                    f"strides span")
        a, b = ranges[v]
        lo, hi = lo + min(c * a, c * b), hi + max(c * a, c * b)
        prefix[v] = c
        # a guard on exactly this partial sum (each site's) narrows it
        site_bounds = []
        for offset, site_guards in zip(offsets, guards):
            bound = None
            for cs, glo, ghi in site_guards:
                if cs == prefix:  # glo <= prefix + base <= ghi (guard of the site's form)
                    blo = lo if glo is None else max(lo, glo + offset)
                    bhi = hi if ghi is None else min(hi, ghi + offset)
                    bound = (blo, bhi) if bound is None else (max(bound[0], blo),
                                                              min(bound[1], bhi))
            site_bounds.append(bound)
        if all(b is not None for b in site_bounds):
            lo = max(lo, min(b[0] for b in site_bounds))  # type: ignore[index]
            hi = min(hi, max(b[1] for b in site_bounds))  # type: ignore[index]
    return ""


def _var_name(v: Var) -> str:
    kind = v[0]
    if kind in ACTOR_KINDS:
        return f"{'get_local_id' if kind == 'lid' else 'get_block_id'}({v[1]})"
    if kind == "k":
        return f"the counter of the loop at {op_location(v[1], unknown='here')}"
    if kind in ("row", "elem"):
        return f"the {kind}s of the tile at {op_location(v[1], unknown='here')}"
    return "a loop counter (or a tile's rows)"


class LaunchCheck:
    """The proof for a kernel's modelled tensors, run at each launch shape and arguments."""

    MEMO = 256

    def __init__(self, kernel: func.FuncOp, params: Sequence[BlockArgument]):
        self.kernel = kernel
        self.sites = {p: tensor_sites(kernel, p) for p in params}
        self.names = {p: f"{kernel.body.block.args.index(p)}" for p in params}
        self.scalar_index = [i for i, a in enumerate(kernel.body.block.args)
                             if isinstance(a.type, IntegerType)]
        self.memo: dict[Any, str | None] = {}

    def refusal(self, grid: Sequence[int], block: Sequence[int],
                bound: Sequence[Any]) -> str | None:
        """None when every modelled tensor is proven lane-independent at this launch, else
        why not."""
        if len(bound) != len(self.kernel.body.block.args):
            return "the launch's arguments are not known to the proof"
        key = (tuple(grid), tuple(block), tuple(int(bound[i]) for i in self.scalar_index))
        if key in self.memo:
            return self.memo[key]
        args = self.kernel.body.block.args
        ev = _Evaluator(self.kernel, grid, block, {args[i]: bound[i] for i in self.scalar_index})
        reason = None
        for param, sites in self.sites.items():
            try:
                self._tensor(ev, param, sites)
            except _Undecided as exc:
                reason = str(exc)
                break
        if len(self.memo) >= self.MEMO:
            self.memo.clear()
        self.memo[key] = reason
        return reason

    def _tensor(self, ev: _Evaluator, param: BlockArgument, sites: list[Site]) -> None:
        nums = []
        for site in sites:
            num = self._numeric(ev, site)
            if num is not None:
                nums.append(num)
        if not any(n.site.write for n in nums):
            return
        _prove(self.names[param], nums)

    @staticmethod
    def _fits(ev: _Evaluator, form: Form, width: int, ranges: Mapping[Var, Range]) -> bool:
        """Does `form` stay within a `width`-bit signed integer over the ranges? (A variable
        without a range — a loop the value does not need — makes it unknown: False.)"""
        fc, fb = _numeric_form(ev, form)
        if any(v not in ranges for v in fc):
            return False
        lo, hi = _interval(fc, fb, ranges)
        return -(1 << (width - 1)) <= lo and hi < 1 << (width - 1)

    def _numeric(self, ev: _Evaluator, site: Site) -> _Numeric | None:
        for cond, taken in site.uniform_guards:
            value = ev.ssa(cond)
            if value is not None and bool(value & 1) != taken:
                return None  # a uniform condition keeps every lane out: the site never runs
        ranges: dict[Var, Range] = {}
        for d in range(3):
            ranges[("lid", d)] = (0, int(ev.block[d]) - 1)
            ranges[("bid", d)] = (0, int(ev.grid[d]) - 1)
        used = {v for v, _ in site.form.coefs} | \
            {v for form, _ in site.intermediates for v, _ in form.coefs}
        for loop in site.loops:
            if ("k", loop) not in used:
                continue  # (a loop the index does not depend on: its trips do not matter)
            lb, ub, step = (ev.ssa(x) for x in (loop.lb, loop.ub, loop.step))
            if lb is None or ub is None or step is None or step <= 0:
                raise _Undecided(f"the loop at {op_location(loop, unknown='here')} has bounds "
                                 f"not known before the launch, or a step that is not positive")
            trips = max(0, -(-(ub - lb) // step))
            if trips == 0:
                return None
            ranges[("k", loop)] = (0, trips - 1)
        coefs, base = _numeric_form(ev, site.form)
        if site.block_level:
            op = site.op
            tile = tile_footprint(op, ev.ssa).get(site.tile_operand) \
                if tile_footprint(op, ev.ssa) is not None else None
            if tile is None:
                raise _Undecided(f"the size of the block-level instruction at "
                                 f"{op_location(op, unknown='here')} is not known before the "
                                 f"launch")
            if tile.elements == 0:
                return None
            coefs[("row", op)] = coefs.get(("row", op), 0) + tile.stride
            coefs[("elem", op)] = 1
            ranges[("row", op)] = (0, tile.rows - 1)
            ranges[("elem", op)] = (0, tile.row_len - 1)
        for v in coefs:
            if v not in ranges:
                raise _Undecided(f"an index at {op_location(site.op, unknown='here')} depends "
                                 f"on a loop that does not enclose it")
        num = _Numeric(site, {v: c for v, c in coefs.items() if c}, base, ranges)
        for constraint in site.constraints:
            try:
                cs, cbase = _numeric_form(ev, constraint.form)
                if any(v not in ranges for v in cs) or \
                        not all(self._fits(ev, f, w, ranges) for f, w in constraint.trail):
                    continue  # (a guard not understood only narrows less)
            except _Undecided:
                continue
            num.constraints.append((cs, None if constraint.lo is None else constraint.lo - cbase,
                                    None if constraint.hi is None else constraint.hi - cbase))
        # every value on the way stays within its type (the forms' arithmetic is exact)
        for form, width in site.intermediates:
            if not self._fits(ev, form, width, ranges):
                raise _Undecided(f"an index at {op_location(site.op, unknown='here')} may "
                                 f"wrap around its {width}-bit type")
        if not _narrow(num):
            return None
        _fold_singletons(num)
        return num
