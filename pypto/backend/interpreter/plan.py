"""The access planner: an affine analysis of every address, which decides how each load and store
of the generated code runs (see docs/interpreter.md, "The access planner").

Every integer value of a kernel is normalised, when it can be, to an exact *linear form*

    value = rest + sum(coef[s] * s)      s in the lane symbols of the launch

over the lane symbols: local ids x/y/z (`l0..l2`), block ids x/y/z (`b0..b2`, lane-varying
when a vector holds several blocks: grid and batch modes; in block and warp modes they are
uniform), the warp number (`w`) and the lane in the warp (`n`). Global ids become
`b_d * block_dim_d + l_d`. `rest` and every coefficient are *polynomials of uniform values*
(kernel scalars, loop counters, block dims, constants; `2 * s * tid` has the coefficient `2*s`
on `l0`), so any arrangement of `+ - *` and shifts by constants gives the same form:
`a + (r * w + c)`, `(a + r * w) + c`, `b * bd + l`, `2 * s * t`, nested parentheses.

A pointer is a root (a kernel argument or an L1 buffer) plus one form per `addptr` offset
("parts"; each part wraps in its own integer width in the program, so each is range-checked
on its own at run time). For a load or store through such a pointer the planner emits a
*planned access* (`_ctx.planned.load_plan` / `_ctx.planned.stores.store_plan`, views.py) with
the forms' coefficients evaluated as exact Python ints; at run time the lane vector's ids are
laid out as a box (blocks x lanes, one axis per id that varies), so the addresses of the whole vector are
a strided N-D view of the buffer: a contiguous slice, a strided view, a broadcast (stride 0:
one address for every lane), rows, a window — or, when the box does not fit (a partial tail,
a form that wraps, a store whose lanes collide), the general gather, with the offsets computed
from the same forms. Values only used by planned accesses (the offset arithmetic) are not
computed at all.

The ring argument makes this exact: `+ - *` commute with wrapping modulo 2^32 (2^64), so an
offset computed in int32 with wrap-around equals the exact form whenever the form's value
lies in int32's range, which the run time checks per part over the vector's box (corners of
an affine form bound it); otherwise the general path runs on offsets wrapped exactly as the
program's.

`PYPTO_FAST_PATHS=0` makes the planner plan nothing: the generated code is then the general
path (the oracle), computing every offset as the program does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, IndexType
from xdsl.ir import BlockArgument, Operation, SSAValue

from pypto.backend.interpreter.affine import Form, Poly, const_form, sym_form
from pypto.dialects import pto
from pypto.dialects.traits import declares_buffer, launch_id, offset_base

@dataclass
class AccessPlan:
    """A planned load or store: the pointer's root (buffer) and its offset parts."""
    root: SSAValue
    parts: list[tuple[Form, int]]      # (form, integer width in bits)

    def leaves(self) -> set[str]:
        out: set[str] = set()
        for f, _ in self.parts:
            out |= f.leaves()
        return out

    def source(self) -> str:
        return "(" + "".join(f"({f.source()}, {w}), " for f, w in self.parts) + ")"


@dataclass
class Planner:
    """The affine analysis of one kernel for one code variant.

    `uniform(v)`: is v the same on every lane of the vector (codegen's uniformity);
    `name(v)`: the generated code's variable for a uniform value (a polynomial leaf);
    `block_ids_vary`: block ids differ within a vector (grid and batch modes)."""
    uniform: Callable[[SSAValue], bool]
    name: Callable[[SSAValue], str]
    block_ids_vary: bool
    forms: dict[SSAValue, Form | None] = field(default_factory=dict)
    leaf_values: dict[str, SSAValue] = field(default_factory=dict)
    pointers: dict[SSAValue, tuple[SSAValue, list[tuple[Form, int]]] | None] = \
        field(default_factory=dict)

    # integer values ---------------------------------------------------------------------

    def form(self, v: SSAValue) -> Form | None:
        """The linear form of integer value `v`, or None (not affine in the lane symbols)."""
        if v in self.forms:
            return self.forms[v]
        self.forms[v] = None  # cycles (loop-carried values) are not affine
        f = self._form(v)
        self.forms[v] = f
        return f

    def _form(self, v: SSAValue) -> Form | None:
        if not isinstance(v.type, IntegerType | IndexType):
            return None
        op = v.owner
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return const_form(op.value.value.data)
        which = launch_id(op) if isinstance(op, Operation) else None
        if which in ("block_dim", "grid_dim"):  # launch constants
            kind = "block" if which == "block_dim" else "grid"
            return Form.make({(f"_ctx.{kind}[{op.dim_index}]",): 1}, {})  # type: ignore
        if self.uniform(v):
            name = self.name(v)
            self.leaf_values[name] = v
            return Form.make({(name,): 1}, {})
        if isinstance(v, BlockArgument):
            return self._induction(v)
        if not isinstance(op, Operation):
            return None
        d = getattr(op, "dim_index", None)
        if which == "local_id":
            return sym_form(f"l{d}")
        if which == "block_id":
            return sym_form(f"b{d}") if self.block_ids_vary else None
        if which == "global_id":
            if not self.block_ids_vary:
                return Form.make({tuple(sorted((f"_ctx.block_id({d})", f"_ctx.block[{d}]"))): 1},
                                 {f"l{d}": {(): 1}})
            return Form.make({}, {f"b{d}": {(f"_ctx.block[{d}]",): 1}, f"l{d}": {(): 1}})
        if which == "warp_id":
            return sym_form("w")
        if which == "lane_id":
            return sym_form("n")
        if isinstance(op, arith.AddiOp | arith.SubiOp):
            a, b = (self.form(x) for x in op.operands)
            if a is None or b is None:
                return None
            return a + b if isinstance(op, arith.AddiOp) else a - b
        if isinstance(op, arith.MuliOp):
            a, b = (self.form(x) for x in op.operands)
            if a is None or b is None:
                return None
            if a.uniform:
                return b.scaled(a.rest_poly)
            if b.uniform:
                return a.scaled(b.rest_poly)
            return None
        if isinstance(op, arith.ShLIOp):
            a = self.form(op.operands[0])
            k = op.operands[1].owner
            if a is not None and isinstance(k, arith.ConstantOp) and \
                    isinstance(k.value, IntegerAttr) and 0 <= k.value.value.data < 63:
                return a.scaled({(): 1 << k.value.value.data})
            return None
        return None

    def _induction(self, v: BlockArgument) -> Form | None:
        """A value carried by an `scf.for` that each trip advances by a loop-invariant uniform
        step (`i = i + stride` of a grid-stride loop): `init + (iv - lb) * step` when the loop
        counts by 1 from a constant `lb` (the counter `iv` is a uniform leaf)."""
        block = v.owner
        loop = block.parent_op()
        if not isinstance(loop, scf.ForOp) or v.index == 0:
            return None
        iv = block.args[0]
        lb, step = loop.lb.owner, loop.step.owner
        if not (isinstance(lb, arith.ConstantOp) and isinstance(lb.value, IntegerAttr) and
                isinstance(step, arith.ConstantOp) and isinstance(step.value, IntegerAttr) and
                step.value.value.data == 1 and self.uniform(iv)):
            return None
        init = self.form(loop.iter_args[v.index - 1])
        last = block.last_op
        if init is None or not isinstance(last, scf.YieldOp):
            return None
        carry = f"_carry{id(v)}"  # stands for v while the update's form is worked out
        # a planner of its own: forms through the stand-in are not v's, and this planner may
        # be in the middle of the update's form (v's form was asked for from inside it)
        sub = Planner(self.uniform, self.name, self.block_ids_vary)
        sub.forms[v] = Form.make({(carry,): 1}, {})
        update = sub.form(last.operands[v.index - 1])
        if update is None:
            return None
        delta = update - Form.make({(carry,): 1}, {})
        if not delta.uniform or carry in delta.leaves():
            return None
        for leaf in delta.leaves():  # the step must not change from trip to trip
            value = sub.leaf_values.get(leaf)
            if value is None:
                if not leaf.startswith("_ctx."):
                    return None
            elif _inside(value, loop):
                return None
        self.leaf_values.update(sub.leaf_values)
        name = self.name(iv)
        self.leaf_values[name] = iv
        trips = {(name,): 1}
        if lb.value.value.data:
            trips[()] = -lb.value.value.data
        return init + delta.scaled(trips)

    # pointers ---------------------------------------------------------------------------

    def pointer(self, p: SSAValue) -> tuple[SSAValue, list[tuple[Form, int]]] | None:
        """(root, offset parts) of pointer `p`: a kernel argument or L1 buffer plus `addptr`s
        whose offsets are linear forms; None otherwise."""
        if p in self.pointers:
            return self.pointers[p]
        self.pointers[p] = None
        op = p.owner
        out = None
        if isinstance(p, BlockArgument) and isinstance(p.owner.parent_op(), func.FuncOp):
            out = (p, [])
        elif isinstance(op, Operation) and declares_buffer(op):
            out = (p, [])
        elif isinstance(op, Operation) and offset_base(op) is not None:
            base = self.pointer(op.operands[0])
            f = self.form(op.operands[1])
            width = _width(op.operands[1].type)
            if base is not None and f is not None and width is not None:
                out = (base[0], base[1] + [(f, width)])
        self.pointers[p] = out
        return out

    def ramp_base(self, v: SSAValue, mode: str) -> tuple[Poly, str, bool] | None:
        """For a value equal to `lane ramp + uniform` in a 1-D launch (a global id however it
        is written, `b * bd + l + u`; in block and warp modes, and block-locally in batch
        mode, `l + u`): (the uniform part, the vector's offset it adds, block-local?);
        codegen then treats it as its lane-affine values (slices, `ramp_compare`)."""
        f = self.form(v)
        if f is None or f.uniform:
            return None
        coef = f.coef_polys
        local = coef == {"l0": {(): 1}}
        global_ = coef == {"l0": {(): 1}, "b0": {("_ctx.block[0]",): 1}}
        if mode in ("block", "warp") and local:
            return f.rest_poly, "_ctx.local_base", False
        if mode in ("grid", "batch") and global_:
            return f.rest_poly, "_ctx.first_lane", False
        if mode == "batch" and local:
            return f.rest_poly, "0", True
        return None

    def plan(self, p: SSAValue) -> AccessPlan | None:
        """The planned access through pointer `p`, if it has one worth planning (some part
        varies across lanes)."""
        ptr = self.pointer(p)
        if ptr is None:
            return None
        if all(f.uniform for f, _ in ptr[1]):
            # one address for every lane: a scalar access, except in L1 when the vector
            # holds several blocks (a broadcast of each block's element)
            t = ptr[0].type
            local = isinstance(t, pto.L1BufferType) or \
                isinstance(t, pto.PtrType) and t.space == "local"
            if not (self.block_ids_vary and local):
                return None
        return AccessPlan(ptr[0], ptr[1])


    def block_plan(self, p: SSAValue) -> AccessPlan | None:
        """The address of a block-level operand (a bulk copy's L1 or HBM pointer) when it
        varies with the block ids only (`x + block_id * ntiles * T + k * T`, batch mode): the
        run time then computes one offset per block from the forms instead of an offset per
        lane, which the copy would reduce to one per block again."""
        ptr = self.pointer(p)
        if ptr is None or not self.block_ids_vary:
            return None
        syms = {s for f, _ in ptr[1] for s, _ in f.coef}
        if not syms or not syms <= {"b0", "b1", "b2"}:
            return None
        return AccessPlan(ptr[0], ptr[1])


def _inside(v: SSAValue, loop: Operation) -> bool:
    """Is `v` defined inside `loop`'s body (a block argument of it included)?"""
    op = v.owner.parent_op() if isinstance(v, BlockArgument) else v.owner
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op()
    return False


def _width(t: object) -> int | None:
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, IndexType):
        return 64
    return None


PURE = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.ShLIOp, arith.ConstantOp)
"""Arithmetic that computes addresses and cannot fail (`pure_address_op`)."""


def pure_address_op(op: Operation) -> bool:
    """Computes an address and cannot fail (integer arithmetic, pointer offsets, launch ids):
    left out when only planned accesses use it."""
    return isinstance(op, PURE) or offset_base(op) is not None or launch_id(op) is not None


def dead_ops(ops: Iterable[Operation], virtual: Callable[[Operation, int], bool],
             leaf_values: set[SSAValue]) -> set[Operation]:
    """Pure ops whose results nothing needs once the planned accesses and promoted values
    compute themselves from their forms: used only by such *virtual* uses (`virtual(user,
    operand index)`) or by other dead ops, and not a leaf (a uniform value a form reads)."""
    walked = list(ops)
    dead: set[Operation] = set()
    changed = True
    while changed:
        changed = False
        for op in reversed(walked):
            if op in dead or not pure_address_op(op) or op.regions:
                continue
            needed = False
            for r in op.results:
                if r in leaf_values:
                    needed = True
                    break
                for use in r.uses:
                    user = use.operation
                    if user in dead:
                        continue
                    if virtual(user, use.index):
                        continue
                    needed = True
                    break
                if needed:
                    break
            if not needed:
                dead.add(op)
                changed = True
    return dead


CACHE_LANES = 1 << 15
"""Lane vector length of a grid-mode kernel that makes many passes over its lanes (see
`vector_lanes`): its per-lane temporaries (4-8 bytes a lane each) then stay in the CPU's L2
cache from one pass to the next, instead of streaming through memory."""

CACHE_PASSES = 12
"""Passes over the lane data per lane vector from which a kernel runs on cache-sized vectors;
below it (a vector_add: two loads, an add, a store) the fixed cost of more vectors weighs more
than the cache saves."""

_UNKNOWN_TRIPS = 8
"""Trips counted for a loop whose trip count is not a constant (a `while`, a kernel scalar)."""


def passes(ops: Iterable[Operation], varying: Callable[[Operation], bool],
           streams: Callable[[Operation], bool]) -> int:
    """How many passes over the same lane data the generated code makes: the ops that compute
    a per-lane value or store one (`varying(op)`), the body of a loop that does not touch memory
    counted once per trip (its constant trip count, else `_UNKNOWN_TRIPS`: popcount's shifts
    and adds work on the same lanes every trip). A loop body with a per-lane memory access
    (`streams(op)`: a lane-varying address) counts once: each trip of a grid-stride loop
    streams other data through the cache (a uniform address, as Horner's coefficients, does
    not)."""
    total = 0
    for op in ops:
        if isinstance(op, scf.ForOp | scf.WhileOp) and any(streams(x) for x in op.walk()):
            total += sum(passes(b.ops, varying, streams) for r in op.regions for b in r.blocks)
        elif isinstance(op, scf.ForOp):
            trips = _UNKNOWN_TRIPS
            lb, ub, step = (x.owner for x in (op.lb, op.ub, op.step))
            if all(isinstance(c, arith.ConstantOp) and isinstance(c.value, IntegerAttr)
                   for c in (lb, ub, step)) and step.value.value.data > 0:
                trips = max(0, -(-(ub.value.value.data - lb.value.value.data) //
                                 step.value.value.data))
            total += trips * passes(op.body.block.ops, varying, streams)
        elif isinstance(op, scf.WhileOp):
            total += _UNKNOWN_TRIPS * sum(passes(r.block.ops, varying, streams)
                                          for r in op.regions)
        elif op.regions:
            total += sum(passes(b.ops, varying, streams) for r in op.regions for b in r.blocks)
        elif varying(op):
            total += 1
    return total


def vector_lanes(ops: Iterable[Operation], varying: Callable[[Operation], bool],
                 streams: Callable[[Operation], bool]) -> int | None:
    """The lane vector length for a grid-mode kernel: `CACHE_LANES` when it makes at least
    `CACHE_PASSES` passes over its lanes (a loop of lane arithmetic such as popcount's 32
    shifts, masks and adds; a long chain of elementwise ops), else None (the executor's
    default: one vector for the launch, up to its memory bound)."""
    return CACHE_LANES if passes(ops, varying, streams) >= CACHE_PASSES else None
