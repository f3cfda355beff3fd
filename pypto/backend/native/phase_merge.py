"""Merged tree steps: an L1 write joins the phase of the L1 reads before it, when provably exact.

phases.py gives an L1 write a phase of its own when the code before it reads L1: then no lane
can read, in the same phase, what another lane wrote (the interpreter runs each op for every
lane before the next one; docs/native.md#phases). A tree step `buf[tid] = buf[tid] +
buf[tid + s]` under `tid < s` becomes two lane loops and a spill slot between them. This
module proves, at compile time, that one phase gives the same result: for any two different
lanes `a`, `b` the phase admits, the element `a` writes is not one `b` reads (nor, for the same
element written twice, in another order: writes stay in lane order). Then each lane may read,
compute and write before the next lane starts (docs/native.md#merged-tree-steps).

The proof, on the element offsets into one L1 buffer (writes to and reads from different
buffers never meet: an access outside its buffer raises the interpreter's error in both):

- offsets are linear forms over the lane's x coordinate (`local_id(0)`; `warp * 32 + lane` is x
  in a 1-D block) and *uniform* atoms (values the same for the whole block: parameters, the
  counters and carried values of block-level loops), with integer coefficients;
- the read is the write's offset plus a uniform `d` (same lane part, coefficient 1 on x);
- `d == 0`: lane `a` reads only its own element (x differs between lanes of a 1-D block);
- a guard `x < u` admits x in `[0, u)`: lanes differ by at most `u - 1`, so `d >= u` or
  `d <= -u` keeps every lane's read off every other lane's write;
- a guard `lane_id < u` admits the first `u` lanes of *every* warp: also `|d| + u <= 32`, so
  no read reaches into the admitted lanes of a neighbouring warp;
- `d - u` and `32 - u - |d|` are checked symbolically (the same atom cancels, `d = u = s`)
  and by value ranges of the atoms: a constant, or a block-level loop's value starting at a
  constant `c >= 0` and divided or shifted right by a positive constant each trip (`s = s //
  2`: in `[0, c]`), or multiplied by one in a loop of constant trip count (`s = s * 2`);
- a strided write `C * x + e` (`2 * s * tid`, `C` a uniform form `>= 1`) takes any read
  `C * x + e + d` with `1 <= |d| <= C - 1` (strictly between two lanes' writes), offsets
  bounded below 2^31 so their arithmetic cannot wrap.

Only for a kernel compiled for a 1-D block (`fast_blocks.BLOCK_ATTR`); such a launch in another
shape is refused (jit.py, `NativeKernel.unsupported_launch`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from pypto.backend.native.fast_blocks import BLOCK_ATTR, x_guard
from pypto.dialects import pto
from pypto.dialects.traits import launch_id, memory_accesses

WARP = pto.WARP_SIZE
Form = dict[object, int]
"""A linear form: `X` (the lane's x), `WARP_ID`, `LANE_ID`, uniform SSA values (atoms) and
`ONE` (the constant term) to integer coefficients."""
X, WARP_ID, LANE_ID, ONE = "x", "warp", "lane", 1
_DIVIDES = (arith.DivSIOp, arith.DivUIOp, arith.FloorDivSIOp, arith.ShRSIOp, arith.ShRUIOp)


def one_dimensional(kernel: func.FuncOp) -> bool:
    """Was the kernel compiled for a 1-D block (`pto.compile(..., block=(n,))`)?"""
    attr = kernel.attributes.get(BLOCK_ATTR)
    if not isinstance(attr, ArrayAttr):
        return False
    shape = [int(v.value.data) for v in attr.data]  # type: ignore[attr-defined]
    return all(v == 1 for v in shape[1:])


def _const(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return int(op.value.value.data)
    return None


def _plus(a: Form, b: Form, k: int = 1) -> Form:
    out = dict(a)
    for key, c in b.items():
        out[key] = out.get(key, 0) + k * c
    return {key: c for key, c in out.items() if c != 0}


def _lane_part(key: object) -> bool:
    """Does `key` vary between the lanes of a block (x, warp, lane, or x times an atom)?"""
    return key in (X, WARP_ID, LANE_ID) or isinstance(key, tuple)


def _times(a: Form, b: Form) -> Form | None:
    """The product of a uniform form and a form in x alone (`(2 * s) * tid`: `{(x, s): 2}`),
    or None when it is not linear in x with uniform coefficients."""
    if any(_lane_part(k) for k in a):
        a, b = b, a
    if any(_lane_part(k) for k in a) or any(k not in (X, ONE) for k in b):
        return None
    out: Form = {}
    for ka, ca in a.items():
        for kb, cb in b.items():
            key = kb if ka is ONE else ka if kb is ONE else (X, ka)
            out[key] = out.get(key, 0) + ca * cb
    return {key: c for key, c in out.items() if c != 0}


class _Forms:
    def __init__(self, uniform: Callable[[SSAValue], bool]):
        self.uniform = uniform

    def of(self, v: SSAValue) -> Form | None:
        c = _const(v)
        if c is not None:
            return {ONE: c} if c else {}
        op = v.owner
        if isinstance(op, arith.AddiOp | arith.SubiOp):
            a, b = self.of(op.lhs), self.of(op.rhs)
            if a is not None and b is not None:
                return _plus(a, b, 1 if isinstance(op, arith.AddiOp) else -1)
        if isinstance(op, arith.MuliOp | arith.ShLIOp):
            a, b = self.of(op.lhs), _const(op.rhs)
            if isinstance(op, arith.MuliOp) and b is None and _const(op.lhs) is not None:
                a, b = self.of(op.rhs), _const(op.lhs)
            if a is not None and b is not None and (isinstance(op, arith.MuliOp) or 0 <= b < 31):
                k = b if isinstance(op, arith.MuliOp) else 1 << b
                return {key: c * k for key, c in a.items() if c * k != 0}
        if isinstance(op, arith.MuliOp):  # `2 * s * tid`: a uniform times a lane form
            a, b = self.of(op.lhs), self.of(op.rhs)
            product = _times(a, b) if a is not None and b is not None else None
            if product is not None:
                return product
        if isinstance(op, arith.ExtSIOp | arith.IndexCastOp):
            return self.of(op.operands[0])
        if self.uniform(v):
            return {v: 1}
        if isinstance(op, Operation):
            name = launch_id(op)
            dim = op.properties["dim"].value.data if "dim" in op.properties else 0  # type: ignore
            if name == "local_id" and dim == 0:
                return {X: 1}
            if name == "warp_id":
                return {WARP_ID: 1}
            if name == "lane_id":
                return {LANE_ID: 1}
        return None

    def address(self, p: SSAValue) -> tuple[Operation, Form] | None:
        """(the L1 buffer's alloc, the element offset's form in a 1-D block), or None."""
        offset: Form = {}
        while isinstance(p.owner, pto.AddPtrOp):
            f = self.of(p.owner.offset)
            if f is None:
                return None
            offset = _plus(offset, f)
            p = p.owner.ptr
        if not isinstance(p.owner, pto.AllocLocalOp):
            return None
        # warp * 32 + lane is the linear lane id, x in a 1-D block
        k = offset.get(LANE_ID, 0)
        if offset.get(WARP_ID, 0) == WARP * k:
            offset = _plus({key: c for key, c in offset.items()
                            if key not in (WARP_ID, LANE_ID)}, {X: k})
        return p.owner, offset


def _trips(loop: scf.ForOp) -> int | None:
    """The trip count of a loop with constant bounds, or None."""
    lb, ub, step = (_const(v) for v in (loop.lb, loop.ub, loop.step))
    if lb is None or ub is None or step is None or step < 1:
        return None
    return max(0, -(-(ub - lb) // step))


def _value_range(v: object) -> tuple[int, int] | None:
    """[lo, hi] of a uniform atom, or None when unknown: a constant, or a block-level loop's
    carried value from a constant `c >= 0` divided or shifted right by a positive constant
    each trip (`[0, c]`), or multiplied or shifted left (`s = s * 2`: `[c, c * 2^trips]`,
    with constant loop bounds, below 2^31)."""
    if not isinstance(v, BlockArgument):
        return None
    loop = v.block.parent_op()
    if not isinstance(loop, scf.ForOp) or v.index == 0:
        return None
    init = _const(loop.iter_args[v.index - 1])
    step = loop.body.block.last_op.operands[v.index - 1].owner  # type: ignore[union-attr]
    if init is None or init < 0:
        return None
    if isinstance(step, arith.MuliOp | arith.ShLIOp):
        k = _const(step.rhs) if step.lhs is v else \
            _const(step.lhs) if isinstance(step, arith.MuliOp) and step.rhs is v else None
        trips = _trips(loop)
        if k is None or trips is None or not (0 <= k < 31 if isinstance(step, arith.ShLIOp)
                                              else k >= 1):
            return None
        factor = 1 << k if isinstance(step, arith.ShLIOp) else k
        hi = init * factor ** min(trips, 64)
        return (init, hi) if hi < 2 ** 31 else None
    if not isinstance(step, _DIVIDES) or step.lhs is not v:
        return None
    k = _const(step.rhs)
    shift = isinstance(step, arith.ShRSIOp | arith.ShRUIOp)
    if k is None or (k < 0 if shift else k < 1):
        return None
    return 0, init


def _at_least(form: Form, bound: int) -> bool:
    """Is `form >= bound` for every value of its atoms?"""
    low = form.get(ONE, 0)
    for key, c in form.items():
        if key is ONE:
            continue
        r = _value_range(key)
        if r is None:
            return False
        low += c * (r[0] if c > 0 else r[1])
    return low >= bound


def _admitted(guards: Iterable[tuple[SSAValue, bool]],
              uniform: Callable[[SSAValue], bool], forms: _Forms) -> tuple[str, Form] | None:
    """("x" | "lane", u): the phase's guards admit only x < u, or lane_id < u in each warp."""
    found: tuple[str, Form] | None = None
    pending = list(guards)
    while pending:
        cond, taken = pending.pop()
        if taken and isinstance(cond.owner, arith.AndIOp):  # `a and b`: both hold
            pending += [(cond.owner.lhs, True), (cond.owner.rhs, True)]
            continue
        for kind, test in (("x", lambda v: forms.of(v) == {X: 1} and not uniform(v)),
                           ("lane", lambda v: forms.of(v) == {LANE_ID: 1})):
            g = x_guard(cond, taken, test, uniform)
            if g is not None and g[0] == "slt":
                u = forms.of(g[1])
                if u is not None and (found is None or found[0] == "lane"):
                    found = (kind, u)
    return found


def mergeable(kernel: func.FuncOp, ops: list[Operation],
              guards: Iterable[tuple[SSAValue, bool]],
              uniform: Callable[[SSAValue], bool]) -> bool:
    """May `ops` (with the ops nested in them) run as one phase of a 1-D block: the L1 reads
    before an L1 write, then the write (or an `if` holding L1 writes)? See the module doc."""
    if not one_dimensional(kernel):
        return False
    forms = _Forms(uniform)
    reads: list[tuple[Operation, Form]] = []
    writes: dict[Operation, list[Form]] = {}
    for op in (o for r in ops for o in r.walk()):
        for access in memory_accesses(op):
            if access.space != "local":
                continue
            at = forms.address(op.operands[access.operand])
            if at is None:
                return False
            if access.kind == "read":
                reads.append(at)
            elif isinstance(op, pto.StoreOp):
                writes.setdefault(at[0], []).append(at[1])
            else:
                return False  # (an atomic or fma to L1: its own phase)
    for buffer, ws in writes.items():
        w = ws[0]
        shared = [r for b, r in reads if b is buffer]
        if len(ws) == 1 and not shared:
            continue  # lanes write in lane order, as in lockstep
        if any(other != w for other in ws) or WARP_ID in w or LANE_ID in w:
            return False
        if w.get(X) == 1 and not any(isinstance(k, tuple) for k in w):
            # (x + uniform: lanes write different elements)
            if not all(_apart(_plus(r, w, -1), guards, uniform, forms) for r in shared):
                return False
        elif not _strided(w, shared, _block_x(kernel)):
            return False
    return True


def _block_x(kernel: func.FuncOp) -> int:
    attr = kernel.attributes[BLOCK_ATTR]
    return int(attr.data[0].value.data)  # type: ignore[attr-defined]


def _bound(form: Form, xs: int) -> int | None:
    """A bound on `|form|` and on every partial sum and product computing it (x in `[0, xs)`),
    or None when an atom's range is unknown."""
    total = 0
    for key, c in form.items():
        big = 1
        for atom in (key[1],) if isinstance(key, tuple) else () if key in (ONE, X) else (key,):
            r = _value_range(atom)
            if r is None:
                return None
            big = max(abs(r[0]), abs(r[1]))
        total += abs(c) * big * (xs - 1 if key == X or isinstance(key, tuple) else 1)
    return total


def _strided(w: Form, reads: list[Form], xs: int) -> bool:
    """Lane x writes at `C * x + e` (`C` uniform: `2 * s * tid`) and reads at `C * x + e + d`.
    With `C >= 1` lanes write different elements; a read with `1 <= |d| <= C - 1` lies strictly
    between two lanes' writes (`C * (b - a) = d` needs `|d| >= C`), so it is no other lane's
    write. Every offset's terms stay below 2^31 in magnitude (the i32 arithmetic cannot wrap)."""
    c: Form = {(k[1] if isinstance(k, tuple) else ONE): v for k, v in w.items()
               if k == X or isinstance(k, tuple)}
    if not c or not _at_least(c, 1):
        return False
    for f in (w, *reads):
        b = _bound(f, xs)
        if b is None or b >= 2 ** 31:
            return False
    for r in reads:
        d = _plus(r, w, -1)
        if any(_lane_part(k) for k in d):
            return False
        if not d:
            continue  # (its own element)
        negative = {k: -v for k, v in d.items()}
        if not any(_at_least(e, 1) and _at_least(_plus(c, e, -1), 1) for e in (d, negative)):
            return False
    return True


def _apart(d: Form, guards: Iterable[tuple[SSAValue, bool]], uniform: Callable[[SSAValue], bool],
           forms: _Forms) -> bool:
    """Does no admitted lane read, at its write offset plus `d`, another lane's write?"""
    if X in d or WARP_ID in d or LANE_ID in d:
        return False
    if not d:
        return True
    admitted = _admitted(guards, uniform, forms)
    if admitted is None:
        return False
    kind, u = admitted
    negative = {k: -c for k, c in d.items()}
    if not (_at_least(_plus(d, u, -1), 0) or _at_least(_plus(negative, u, -1), 0)):
        return False
    if kind == "lane":  # 32 - u - |d| >= 0 (for d >= u: 32 - u - d; else 32 - u + d)
        room = _plus({ONE: WARP}, u, -1)
        return _at_least(_plus(room, d, -1), 0) and _at_least(_plus(d, u, -1), 0) or \
            _at_least(_plus(room, d, 1), 0) and _at_least(_plus(negative, u, -1), 0)
    return True
