"""Blocks whose accesses are proven in range run unchecked lane loops that LLVM vectorises.

A checked access (`convert-pto-to-llvm`) ends the lane function early when out of range, and a
loop with such exits is not vectorised. Most kernels address memory at *lane-affine* offsets:
`get_global_id(0) + u`, `row * ncols + local_id(0)`, ... — sums of lane coordinates times
block-uniform values. Over a block, such an offset takes its extreme values at the corners of the
block's box of lane coordinates, so checking the 8 corners (one lane per corner) checks every lane.
This module (called by `convert-pto-to-llvm` before it lowers the functions) adds, per kernel:

- `@k.range(params..., block x/y/z, grid dims x/y/z, block dims x/y/z, x lo, x hi) -> i32`: 1
  when, in this block, every lane-affine access is in range at every corner of the lanes
  `[x lo, x hi) x [0, block dim y) x [0, block dim z)` and no lane-varying i32 value of their
  offsets overflows there (so the i32 arithmetic is the exact one, and `nsw` is true); a
  phase (phase_codegen.py) passes the lanes its guards admit, `@k` the whole block;
- `@k.fast.lane`: the lane function with those accesses unchecked (and their offsets' lane-varying
  arithmetic marked `nsw`, which lets LLVM see consecutive addresses); other checks (accesses at
  data-dependent offsets, the loop watchdog, divisions) stay;
- `@k` (the grid function): per block, `@k.range` decides between the lane loops `tz, ty, tx`
  (x innermost, the interpreter's lane order) over `@k.fast.lane`, and the checked grid
  function for that one block (renamed `@k.checked`), which raises the interpreter's error.

Results are the same bits either way: the fast lane function is the checked one minus checks that
cannot fail. docs/native.md#fast-blocks.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, cf, func, scf
from xdsl.dialects.builtin import (FunctionType, IntegerAttr, IntegerType, ModuleOp, StringAttr,
                                   UnitAttr, UnrealizedConversionCastOp, i1, i32, i64)
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from pypto.backend.native import row_order
from pypto.backend.native.cf_loops import cf_loops
from pypto.backend.native.quick_ops import binary, cmpi, int_constant, keep_loop_marker
from pypto.dialects import pto

UNCHECKED_ATTR = "pto.native_unchecked"
"""On an access of a fast lane function: its offset is proven in range by the block's check."""
NSW_ATTR = "pto.native_nsw"
"""On an i32 `addi` / `subi` / `muli` of a fast lane function: proven not to overflow."""
COUNT_ATTR = "pto.native_count"
"""On an `unrealized_conversion_cast` from a pointer parameter to i64 in a range function: the
element count of that tensor (`convert-pto-to-llvm` substitutes it)."""
RANGE_ATTR = "pto.native_range"
FAST_SUFFIX = ".fast"
LAUNCH_SUFFIX = ".launch"
"""`@k.launch.range`, `@k.launch.guards`: the checks of a whole launch (launch_checks.py)."""
CHECKED_SUFFIX = ".checked"

KEEP_X_LOOPS = True
"""Keep the `tx` loop of the full lanes of the compiled block shape a loop
(`llvm.loop.unroll.disable`, pair_runs.keep_run_loops) when every access steps by 0 or 1
element along x (row_order.x_contiguous), in a block of more than one row whose rows are
`KEEP_X_WIDTHS` lanes wide: LLVM's loop vectoriser then makes each row vector code. Unrolled
whole (a constant trip count of 16), the row became 16 scalar lanes the SLP vectoriser left
scalar (scale2d's 16 x 8 blocks; docs/native.md#full-blocks). Rows of 8 (add3d) and 1-D blocks
of 256 (saxpy: unrolled after vectorising) were measured no better or slower kept."""
KEEP_X_WIDTHS = (16, 64)

_I32_MIN, _I32_MAX = -2 ** 31, 2 ** 31 - 1
_UNIFORM_I64_BOUND = 2 ** 40
"""A block-uniform i64 term of an offset must be within +-2^40 (checked per block): then sums of
a few terms never wrap i64, and the corner bound holds for the sum."""

_ACCESSES = (pto.LoadOp, pto.StoreOp, pto.FmaOp, pto.AtomicAddOp)
_AFFINE_OPS = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.ExtSIOp)
_CHECKED_DIVISIONS = (arith.DivSIOp, arith.DivUIOp, arith.RemSIOp, arith.RemUIOp,
                      arith.FloorDivSIOp, arith.CeilDivSIOp, arith.CeilDivUIOp)


_NEGATED = {"slt": "sge", "sge": "slt", "sle": "sgt", "sgt": "sle", "ult": "uge", "ule": "ugt",
            "eq": "ne"}
_SWAPPED = {"slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle", "ult": "ugt", "ugt": "ult",
            "ule": "uge", "uge": "ule", "eq": "eq", "ne": "ne"}


def x_guard(cond: SSAValue, taken: bool, is_x: "Callable[[SSAValue], bool] | SSAValue",
            uniform: Callable[[SSAValue], bool]) -> tuple[str, SSAValue] | None:
    """(predicate, u) when `cond == taken` reads `x <predicate> u` (x the lane's x coordinate,
    `is_x` a test or the value itself; u uniform, an i32), else None."""
    test = is_x if callable(is_x) else (lambda v: v is is_x)
    op = cond.owner
    if not isinstance(op, arith.CmpiOp) or op.lhs.type != i32:
        return None
    pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    if test(op.lhs) and uniform(op.rhs):
        u = op.rhs
    elif test(op.rhs) and uniform(op.lhs):
        u, pred = op.lhs, _SWAPPED[pred]
    else:
        return None
    if not taken:
        negated = _NEGATED.get(pred)
        if negated is None:
            return None
        pred = negated
    return pred, u


def clip_x(block: Block, lo: SSAValue, hi: SSAValue, pred: str,
           u: SSAValue) -> tuple[SSAValue, SSAValue]:
    """[lo, hi) (i32) clipped to the x with `x <pred> u`; an empty range ends with hi <= lo.
    The predicates it does not know (ne, uge, ugt) leave the range as it is (a superset)."""
    def add(op: Operation) -> SSAValue:
        block.add_op(op)
        return op.results[0]

    def sel(c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return add(arith.SelectOp(c, a, b))

    def cmp(a: SSAValue, b: SSAValue, p: str) -> SSAValue:
        return add(arith.CmpiOp(a, b, p))

    one = add(arith.ConstantOp(IntegerAttr(1, i32)))
    if pred in ("slt", "ult"):                # x < u
        hi = sel(cmp(u, hi, pred), u, hi)
    if pred in ("sle", "ule", "eq"):          # x <= u (u < hi: u + 1 cannot wrap)
        hi = sel(cmp(u, hi, "ult" if pred == "ule" else "slt"), add(arith.AddiOp(u, one)), hi)
    if pred in ("sge", "eq"):                 # x >= u
        lo = sel(cmp(u, lo, "sgt"), u, lo)
    if pred == "sgt":                         # x > u
        lo = sel(cmp(u, lo, "sge"), sel(cmp(u, hi, "slt"), add(arith.AddiOp(u, one)), hi), lo)
    return lo, hi


def _access_ptr(op: Operation) -> SSAValue:
    return op.dst if isinstance(op, pto.FmaOp) else op.ptr


class _Analysis:
    """Which values of a lane function are block-uniform, which lane-affine (see module doc)."""

    def __init__(self, lane: func.FuncOp, num_params: int):
        args = lane.body.blocks[0].args
        self.entry_args = set(args[:num_params]) | set(args[num_params:num_params + 3]) | \
            set(args[num_params + 6:num_params + 12])
        self.lane_coords = list(args[num_params + 3:num_params + 6])
        self.uniform_memo: dict[SSAValue, bool] = {}
        self.affine_memo: dict[SSAValue, bool] = {}
        self.loop_ivs: dict[SSAValue, scf.ForOp] = {}
        """The induction variables of `scf.for` loops (a lane function in scf form: a phase's)
        with uniform bounds and a constant positive step: each lies between its first value lb
        and its last, lb + (ub - 1 - lb) // step * step, whenever the body runs: a further
        dimension of the box the range check takes the corners of (`tile + tid + k` for k in
        range(K): checked at k = 0 and K - 1; `a + t + tx` for t in range(0, n, 16): at the
        last tile's t, not n - 1)."""
        for op in lane.walk():
            if isinstance(op, scf.ForOp) and op.body.block.args[0].type == i32:
                step = op.step.owner
                if isinstance(step, arith.ConstantOp) and step.value.value.data > 0 and \
                        self.uniform(op.lb) and self.uniform(op.ub):
                    self.loop_ivs[op.body.block.args[0]] = op
        self.loop_tests: set[int] = set()
        """The comparisons `iv < ub` of the counted loops of a lane function in `cf` form
        (cf_loops.py), whose counters are box dimensions as an `scf.for`'s are: a loop's own
        test, not a lane guard (full_blocks.py keeps it)."""
        if lane.body.blocks and len(lane.body.blocks) > 1:
            for iv, loop in cf_loops(lane, self.uniform).items():
                self.loop_ivs[iv] = loop  # type: ignore[assignment]
                self.loop_tests.add(id(loop.test))

    def uniform(self, v: SSAValue) -> bool:
        """Computable from parameters, block coordinates, dims and constants by pure arith ops
        that cannot fail (no division by a run-time divisor)."""
        if v in self.uniform_memo:
            return self.uniform_memo[v]
        ok = False
        if isinstance(v, BlockArgument):
            ok = v in self.entry_args and not isinstance(v.type, pto.PtrType)
        elif isinstance(v.owner, arith.ConstantOp):
            ok = isinstance(v.type, IntegerType)
        elif v.owner.dialect_name() == "arith" and not v.owner.regions and \
                all(isinstance(r.type, IntegerType) for r in v.owner.results):
            op = v.owner
            if isinstance(op, arith.FPToSIOp | arith.FPToUIOp):  # checked (may fail)
                self.uniform_memo[v] = False
                return False
            if isinstance(op, _CHECKED_DIVISIONS):
                c = op.operands[1].owner
                if not (isinstance(c, arith.ConstantOp) and c.value.value.data != 0):
                    self.uniform_memo[v] = False
                    return False
            ok = all(self.uniform(o) for o in op.operands)
        self.uniform_memo[v] = ok
        return ok

    def affine(self, v: SSAValue) -> bool:
        """Lane-varying and affine in the lane coordinates: a lane coordinate, or i32 add / sub
        / mul-by-uniform of such values and uniform ones, or its sign extension to i64."""
        if v in self.affine_memo:
            return self.affine_memo[v]
        ok = False
        if v in self.lane_coords or v in self.loop_ivs or self.split(v):
            ok = True
        elif not isinstance(v, BlockArgument) and isinstance(v.owner, _AFFINE_OPS):
            op = v.owner
            if isinstance(op, arith.ExtSIOp):
                ok = op.operands[0].type == i32 and self.affine(op.operands[0])
            elif v.type == i32:
                a, b = op.operands
                if isinstance(op, arith.MuliOp):
                    ok = self.affine(a) and self.uniform(b) or self.uniform(a) and self.affine(b)
                else:
                    ok = (self.affine(a) or self.uniform(a)) and \
                        (self.affine(b) or self.uniform(b)) and \
                        (self.affine(a) or self.affine(b))
        self.affine_memo[v] = ok
        return ok

    def split(self, v: SSAValue) -> bool:
        """`a // c` or `a % c` (i32 `divui` / `remui`) of a lane-affine `a` by a constant
        `0 < c < 2^31`: the warp and the lane in its warp of the linear lane id
        (simt_to_lanes.py). Not affine in the lane coordinates, but an offset affine in it
        and them is affine in the box of both, so the range check takes it as a coordinate of
        its own, bounded by `a`'s bounds and the guards around the access (docs/native.md#fast-phases)."""
        if isinstance(v, BlockArgument) or v.type != i32 or \
                not isinstance(v.owner, arith.DivUIOp | arith.RemUIOp):
            return False
        c = v.owner.operands[1].owner
        return isinstance(c, arith.ConstantOp) and 0 < c.value.value.data < 2 ** 31 and \
            self.affine(v.owner.operands[0])

    def offsets(self, ptr: SSAValue) -> list[SSAValue] | None:
        """The offsets `pto.addptr` adds to a parameter to give `ptr` (outermost last), when each
        is uniform or lane-affine; else None."""
        chain: list[SSAValue] = []
        while not isinstance(ptr, BlockArgument):
            op = ptr.owner
            if isinstance(op, pto.AllocLocalOp):  # an L1 buffer (a phase's): its own count
                break
            if not isinstance(op, pto.AddPtrOp):
                return None
            if not (self.uniform(op.offset) or self.affine(op.offset)):
                return None
            chain.append(op.offset)
            ptr = op.ptr
        return chain[::-1]


class _RangeBuilder:
    """Emits the body of `@k.range`: uniform values cloned once, lane-affine ones evaluated at
    each corner in exact i64 arithmetic, with the checks the module doc lists."""

    def __init__(self, an: _Analysis, block: Block, lane_args: list[SSAValue],
                 range_args: list[SSAValue], num_params: int):
        self.an = an
        self.block = block
        self.map: dict[SSAValue, SSAValue] = {}
        for i in range(num_params):
            self.map[lane_args[i]] = range_args[i]
        for j in range(3):  # block coords, grid dims, block dims
            self.map[lane_args[num_params + j]] = range_args[num_params + j]
            self.map[lane_args[num_params + 6 + j]] = range_args[num_params + 3 + j]
            self.map[lane_args[num_params + 9 + j]] = range_args[num_params + 6 + j]
        self.bdims = range_args[num_params + 6:num_params + 9]
        self.x_box = tuple(range_args[num_params + 9:num_params + 11])  # lanes [lo, hi) in x
        self.box_args = self.x_box
        self.checks: list[SSAValue] = []
        self.corner_memo: dict[tuple[SSAValue, int, tuple], SSAValue] = {}
        self.corner_coords: dict[tuple[int, tuple], list[SSAValue]] = {}
        self.splits: list[SSAValue] = []  # `a // c`, `a % c` values: coordinates 3, 4, ...
        self.bounds: dict[SSAValue, tuple[SSAValue, SSAValue]] = {}  # per access, inclusive
        self.epoch = 0  # one per access: the split coordinates' bounds depend on its guards
        self.access_op: Operation | None = None
        self.unreached: list[SSAValue] = []  # per access: a split coordinate's bounds are empty

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def const(self, value: int, t: IntegerType = i64) -> SSAValue:
        return self.add(int_constant(value, t))  # (quick_ops: docs/native.md#compile-time)

    def uniform(self, v: SSAValue) -> SSAValue:
        found = self.map.get(v)
        if found is not None:
            return found
        op = v.owner
        operands = [self.uniform(o) for o in op.operands]
        new = op.clone(value_mapper={o: m for o, m in zip(op.operands, operands)})
        for name in list(new.attributes):
            del new.attributes[name]
        self.block.add_op(new)
        self.map[v] = new.results[0]
        return new.results[0]

    def wide(self, v: SSAValue) -> SSAValue:
        """A uniform value as i64 (sign-extended: the value the lane function computes with)."""
        u = self.uniform(v)
        return u if u.type == i64 else self.add(arith.ExtSIOp(u, i64))

    def coords(self, corner: int) -> list[SSAValue]:
        if (corner, self.x_box) not in self.corner_coords:
            one = self.const(1, i32)
            coords = []
            for d in range(3):
                if corner >> d & 1:
                    end = self.x_box[1] if d == 0 else self.bdims[d]
                    last = self.add(arith.SubiOp(end, one))
                    coords.append(self.add(arith.ExtSIOp(last, i64)))
                elif d == 0:
                    coords.append(self.add(arith.ExtSIOp(self.x_box[0], i64)))
                else:
                    coords.append(self.const(0))
            self.corner_coords[corner, self.x_box] = coords
        return self.corner_coords[corner, self.x_box]

    def in_range(self, x: SSAValue, lo: int, hi: int) -> None:
        ge = self.add(cmpi(x, self.const(lo), "sge"))
        le = self.add(cmpi(x, self.const(hi), "sle"))
        self.checks.append(self.add(binary(arith.AndIOp, ge, le)))

    def at(self, v: SSAValue, corner: int) -> SSAValue:
        """The exact value of lane-affine `v` (i64) at `corner`."""
        key = (v, corner, self.x_box, self.epoch)
        if key in self.corner_memo:
            return self.corner_memo[key]
        if v in self.an.lane_coords:
            result = self.coords(corner)[self.an.lane_coords.index(v)]
        elif self.an.split(v):
            lo, hi = self.split_bounds(v)
            result = hi if corner >> self.split_dim(v) & 1 else lo
        elif v in self.an.loop_ivs:  # (dimension 3 + its index: its first or last value)
            loop = self.an.loop_ivs[v]
            lb = self.wide(loop.lb)
            if corner >> (3 + list(self.an.loop_ivs).index(v)) & 1:
                # lb + max(0, ub - 1 - lb) // step * step: the last value (lb if none runs)
                span = self.add(arith.SubiOp(self.add(arith.SubiOp(self.wide(loop.ub),
                                                                   self.const(1))), lb))
                span = self.add(arith.MaxSIOp(span, self.const(0)))
                step = self.const(loop.step.owner.value.value.data)  # (a constant > 0)
                span = self.add(arith.MuliOp(self.add(arith.DivSIOp(span, step)), step))
                result = self.add(arith.AddiOp(lb, span))
                # (the step after the last value must not wrap i32: cf form's `iv + step`
                # would re-enter the body below lb)
                self.in_range(self.add(arith.AddiOp(result, step)), _I32_MIN, _I32_MAX)
            else:
                result = lb
        else:
            op = v.owner
            if isinstance(op, arith.ExtSIOp):
                result = self.at(op.operands[0], corner)
            else:
                a, b = (self.at(o, corner) if self.an.affine(o) else self.wide(o)
                        for o in op.operands)
                cls = {arith.AddiOp: arith.AddiOp, arith.SubiOp: arith.SubiOp,
                       arith.MuliOp: arith.MuliOp}[type(op)]
                result = self.add(binary(cls, a, b))
                self.in_range(result, _I32_MIN, _I32_MAX)  # an i32 value: no overflow
        self.corner_memo[key] = result
        return result

    def used_dims(self, values: list[SSAValue]) -> set[int]:
        """The lane coordinates (0, 1, 2 for x, y, z) the lane-affine `values` depend on."""
        found: set[int] = set()
        stack, seen = list(values), set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in self.an.lane_coords:
                found.add(self.an.lane_coords.index(v))
            elif self.an.split(v):
                found.add(self.split_dim(v))
            elif v in self.an.loop_ivs:
                found.add(3 + list(self.an.loop_ivs).index(v))
            elif not isinstance(v, BlockArgument) and self.an.affine(v):
                stack += [o for o in v.owner.operands if self.an.affine(o)]
        return found

    def split_dim(self, v: SSAValue) -> int:
        """The corner bit of split coordinate `v` (after x, y, z and the loop counters)."""
        if v not in self.splits:
            self.splits.append(v)
        return 3 + len(self.an.loop_ivs) + self.splits.index(v)

    def split_bounds(self, v: SSAValue) -> tuple[SSAValue, SSAValue]:
        """[lo, hi] (i64, inclusive) of split coordinate `v = a // c` or `a % c` over the
        lanes of the current access: from a's least and greatest values at the corners (checked
        to be in [0, 2^31): `divui` / `remui` then divide the signed value), clipped by the
        `if`s around the access comparing `v` with a uniform value (`lane < s`)."""
        if v in self.bounds:
            return self.bounds[v]
        op = v.owner
        a, c = op.operands[0], op.operands[1].owner.value.value.data
        dims = sorted(self.used_dims([a]))
        lo = hi = None
        for pick in range(1 << len(dims)):
            corner = sum(1 << d for k, d in enumerate(dims) if pick >> k & 1)
            x = self.at(a, corner)
            lo = x if lo is None else self.add(arith.MinSIOp(lo, x))
            hi = x if hi is None else self.add(arith.MaxSIOp(hi, x))
        assert lo is not None and hi is not None
        self.in_range(lo, 0, _I32_MAX)
        self.in_range(hi, 0, _I32_MAX)
        valid = self.add(arith.AndIOp(self.checks[-2], self.checks[-1]))
        cc = self.const(c)
        if isinstance(op, arith.DivUIOp):
            lo, hi = self.add(arith.DivSIOp(lo, cc)), self.add(arith.DivSIOp(hi, cc))
        else:
            same = self.add(arith.CmpiOp(self.add(arith.DivSIOp(lo, cc)),
                                         self.add(arith.DivSIOp(hi, cc)), "eq"))
            lo = self.add(arith.SelectOp(same, self.add(arith.RemSIOp(lo, cc)), self.const(0)))
            hi = self.add(arith.SelectOp(same, self.add(arith.RemSIOp(hi, cc)),
                                         self.const(c - 1)))
        one = self.const(1)
        assert self.access_op is not None
        child: Operation = self.access_op
        parent = child.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp):
            if isinstance(parent, scf.IfOp):
                guard = x_guard(parent.cond, child.parent_region() is parent.true_region, v,
                                self.an.uniform)
                if guard is not None:
                    pred, u = guard[0], self.wide(guard[1])
                    if pred in ("slt", "eq"):
                        hi = self.add(arith.MinSIOp(hi, self.add(arith.SubiOp(u, one))
                                                    if pred == "slt" else u))
                    if pred == "sle":
                        hi = self.add(arith.MinSIOp(hi, u))
                    if pred in ("sge", "eq"):
                        lo = self.add(arith.MaxSIOp(lo, u))
                    if pred == "sgt":
                        lo = self.add(arith.MaxSIOp(lo, self.add(arith.AddiOp(u, one))))
            child, parent = parent, parent.parent_op()
        self.bounds[v] = lo, hi
        self.unreached.append(self.add(arith.AndIOp(valid,
                                                     self.add(arith.CmpiOp(hi, lo, "slt")))))
        return lo, hi

    def guarded_box(self, op: Operation) -> tuple[SSAValue, SSAValue]:
        """The lanes along x that reach `op`: the block's box clipped by the enclosing `if`s
        of the lane function comparing the lane's x with a uniform value (`tid >= d`)."""
        lo, hi = self.box_args
        child: Operation = op
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp):
            if isinstance(parent, scf.IfOp):
                guard = x_guard(parent.cond, child.parent_region() is parent.true_region,
                                self.an.lane_coords[0], self.an.uniform)
                if guard is not None:
                    lo, hi = clip_x(self.block, lo, hi, guard[0], self.uniform(guard[1]))
            child, parent = parent, parent.parent_op()
        return lo, hi

    def access(self, param: SSAValue, offsets: list[SSAValue], op: Operation) -> None:
        """Check one access (through `param` plus `offsets`) at every corner of the lanes that
        reach it; an access no lane reaches passes."""
        self.x_box = self.guarded_box(op)
        self.access_op, self.bounds, self.unreached = op, {}, []
        self.epoch += 1
        first = len(self.checks)
        self._access(param, offsets)
        ok = self.const(1, i1)
        for c in self.checks[first:]:
            ok = self.add(arith.AndIOp(ok, c))
        empty = self.add(arith.CmpiOp(self.x_box[1], self.x_box[0], "sle"))
        for c in self.unreached:  # a split coordinate with no value: no lane reaches it
            empty = self.add(arith.OrIOp(empty, c))
        self.checks[first:] = [self.add(arith.OrIOp(ok, empty))]
        self.x_box = self.box_args

    def _access(self, param: SSAValue, offsets: list[SSAValue]) -> None:
        if isinstance(param.owner, pto.AllocLocalOp):  # an L1 buffer: its element count
            count = self.const(param.owner.result.type.size)
        else:
            count = self.add(UnrealizedConversionCastOp.get([self.map[param]], [i64]))
            count.owner.attributes[COUNT_ATTR] = UnitAttr()
        uniform_sum = self.const(0)
        lane = [o for o in offsets if self.an.affine(o)]
        for o in offsets:
            if not self.an.affine(o):
                w = self.wide(o)
                if o.type == i64:
                    self.in_range(w, -_UNIFORM_I64_BOUND, _UNIFORM_I64_BOUND)
                uniform_sum = self.add(arith.AddiOp(uniform_sum, w))
        dims = sorted(self.used_dims(lane))
        for pick in range(1 << len(dims)):  # the corners over the coordinates used
            corner = sum(1 << d for k, d in enumerate(dims) if pick >> k & 1)
            total = uniform_sum
            for o in lane:
                total = self.add(arith.AddiOp(total, self.at(o, corner)))
            self.checks.append(self.add(arith.CmpiOp(total, count, "ult")))

    def result(self) -> SSAValue:
        ok = self.const(1, i1)
        for c in self.checks:
            ok = self.add(arith.AndIOp(ok, c))
        return self.add(arith.ExtUIOp(ok, i32))


def _range_function(lane: func.FuncOp, name: str, num_params: int,
                    proven: list[tuple[Operation, SSAValue, list[SSAValue]]],
                    an: _Analysis) -> func.FuncOp:
    lane_args = list(lane.body.blocks[0].args)
    types = [a.type for a in lane_args[:num_params]] + [i32] * 11
    block = Block(arg_types=types)
    builder = _RangeBuilder(an, block, lane_args, list(block.args), num_params)
    for op, param, offsets in proven:
        builder.access(param, offsets, op)
    block.add_op(func.ReturnOp(builder.result()))
    fn = func.FuncOp(name + ".range", (types, [i32]), Region(block))
    fn.attributes[RANGE_ATTR] = UnitAttr()
    return fn


BLOCK_ATTR = "pto.native_block"
"""On a kernel (and its grid function): the block shape it was compiled for (`pto.compile`'s
`block`); the fast lane loops get a copy with that shape's constant trip counts, which LLVM
unrolls and vectorises without remainder loops (a 16 x 8 block: one 16-lane vector per row)."""


def _block_shape(grid: func.FuncOp) -> tuple[int, int, int] | None:
    attr = grid.attributes.get(BLOCK_ATTR)
    if attr is None:
        return None
    shape = tuple(int(v.value.data) for v in attr.data)  # type: ignore[attr-defined]
    return (shape + (1, 1, 1))[:3]  # type: ignore[return-value]


def _i32_constant(block: Block, v: int) -> SSAValue:
    """Append the i32 constant `v` to `block`; its value."""
    op = arith.ConstantOp(IntegerAttr(v, i32))
    block.add_op(op)
    return op.result


def _append(block: Block, op: Operation) -> SSAValue:
    """Append `op` to `block`; its first result."""
    block.add_op(op)
    return op.results[0]


def _lane_loops(region: Region, lane: str, before: Block, params: list[SSAValue],
                block_ids: tuple[SSAValue, ...], dims: tuple[SSAValue, ...],
                grid_dims: tuple[SSAValue, ...], err: SSAValue, nextb: Block,
                done: Block, keep_x: bool = False) -> Block:
    """The loops `tz, ty, tx < dims` (x innermost: the interpreter's lane order) calling lane
    function `lane`, inserted after `before`; returns their entry block (branch to it with
    no arguments). An error status ends the grid function (`done`), else `nextb` follows.
    `keep_x`: the `tx` loop is kept a loop (`KEEP_X_LOOPS`)."""
    bx, by, bz = dims

    c, add = _i32_constant, _append

    start = Block()
    zy, yx, xb, inner, xnext = (Block(arg_types=[i32]), Block(arg_types=[i32, i32]),
                                Block(arg_types=[i32, i32, i32]), Block(arg_types=[i32] * 3),
                                Block(arg_types=[i32, i32, i32]))
    ynext, znext = Block(arg_types=[i32, i32]), Block(arg_types=[i32])
    last = before
    for blk in (start, zy, yx, xb, inner, xnext, ynext, znext):
        region.insert_block_after(blk, last)
        last = blk
    start.add_op(cf.BranchOp(zy, c(start, 0)))
    tz = zy.args[0]  # z loop head: tz < bz ? y loop : next block
    zy.add_op(cf.ConditionalBranchOp(add(zy, arith.CmpiOp(tz, bz, "slt")), yx,
                                     [tz, c(zy, 0)], nextb, []))
    tz1, ty = yx.args
    yx.add_op(cf.ConditionalBranchOp(add(yx, arith.CmpiOp(ty, by, "slt")), xb,
                                     [tz1, ty, c(yx, 0)], znext, [tz1]))
    znext.add_op(cf.BranchOp(zy, add(znext, arith.AddiOp(znext.args[0], c(znext, 1)))))
    tz2, ty2, tx = xb.args
    xb.add_op(cf.ConditionalBranchOp(add(xb, arith.CmpiOp(tx, bx, "slt")), inner,
                                     [tz2, ty2, tx], ynext, [tz2, ty2]))
    iz, iy, ix = inner.args
    if keep_x:
        inner.add_op(keep_loop_marker())
    st = add(inner, func.CallOp(lane, [*params, *block_ids, ix, iy, iz, *grid_dims, bx, by, bz,
                                       err], [i32]))
    inner.add_op(cf.ConditionalBranchOp(add(inner, arith.CmpiOp(st, c(inner, 0), "eq")), xnext,
                                        [iz, iy, ix], done, [st]))
    nz, ny, nx = xnext.args
    xnext.add_op(cf.BranchOp(xb, nz, ny, add(xnext, arith.AddiOp(nx, c(xnext, 1)))))
    ynext.add_op(cf.BranchOp(yx, ynext.args[0], add(ynext, arith.AddiOp(ynext.args[1],
                                                                       c(ynext, 1)))))
    return start


def _wrapper(name: str, grid: func.FuncOp, num_params: int, full: bool,
             launch: bool = False, rows: bool = False, keep_x: bool = False) -> func.FuncOp:
    """The grid function choosing per block between the full or fast lane loops and
    `@k.checked` (`full`: the kernel has `@k.guards` and `@k.full.lane`, full_blocks.py;
    `launch`: also `@k.launch.range` and `@k.launch.guards`, launch_checks.py, which when
    both pass let every block run its full lanes without a per-block check; `rows`: the full
    lanes may then run in row order when the launch allows it, row_order.py; `keep_x`: the
    full lanes' `tx` loops of the compiled shape are kept loops, `KEEP_X_LOOPS`)."""
    inputs = list(grid.function_type.inputs.data)
    entry = Block(arg_types=inputs)
    a = list(entry.args)
    params = a[:num_params]
    gx, gy, gz, bx, by, bz, first, end = a[num_params:num_params + 8]
    err = a[-1]  # (the pointers between, the L1 arena and spill slots, go to `@k.checked`)

    c, add = _i32_constant, _append

    head, body, fast, slow, done = (Block(arg_types=[i32]), Block(), Block(), Block(),
                                    Block(arg_types=[i32]))
    nextb = Block()
    region = Region([entry, head, body, fast, slow, nextb, done])
    if launch:
        _launch_path(name, region, entry, head, done, params, a[num_params:num_params + 8],
                     err, _block_shape(grid), rows, keep_x)
    else:
        entry.add_op(cf.BranchOp(head, first))
    b = head.args[0]
    head.add_op(cf.ConditionalBranchOp(add(head, arith.CmpiOp(b, end, "slt")), body, [],
                                       done, [c(head, 0)]))
    cbx = add(body, arith.RemUIOp(b, gx))
    rest = add(body, arith.DivUIOp(b, gx))
    cby = add(body, arith.RemUIOp(rest, gy))
    cbz = add(body, arith.DivUIOp(rest, gy))
    ok = add(body, func.CallOp(name + ".range", [*params, cbx, cby, cbz, gx, gy, gz, bx, by, bz,
                                                 c(body, 0), bx], [i32]))
    body.add_op(cf.ConditionalBranchOp(add(body, arith.CmpiOp(ok, c(body, 0), "ne")), fast, [],
                                       slow, []))
    ids, gdims, rdims = (cbx, cby, cbz), (gx, gy, gz), (bx, by, bz)

    def loops(before: Block, lane: str, dims: tuple[SSAValue, ...]) -> Block:
        return _lane_loops(region, lane, before, params, ids, dims, gdims, err, nextb, done)

    plain = name + FAST_SUFFIX + ".lane"
    if not full:
        fast.add_op(cf.BranchOp(loops(fast, plain, rdims)))
    else:  # full blocks (full_blocks.py): no guards, constant trip counts for the compiled shape
        whole, partial = Block(), Block()
        region.insert_block_after(whole, fast)
        region.insert_block_after(partial, whole)
        passed = add(fast, func.CallOp(name + ".guards", [*params, *ids, *gdims, *rdims,
                                                          c(fast, 0), bx], [i32]))
        fast.add_op(cf.ConditionalBranchOp(add(fast, arith.CmpiOp(passed, c(fast, 0), "ne")),
                                           whole, [], partial, []))
        partial.add_op(cf.BranchOp(loops(partial, plain, rdims)))
        lane_name = name + ".full.lane"
        shape = _block_shape(grid)
        if shape is None:
            whole.add_op(cf.BranchOp(loops(whole, lane_name, rdims)))
        else:
            known, generic = Block(), Block()
            region.insert_block_after(known, whole)
            region.insert_block_after(generic, known)
            same = add(whole, arith.ConstantOp(IntegerAttr(1, i1)))
            for value, size in zip(rdims, shape):
                eq = add(whole, arith.CmpiOp(value, c(whole, size), "eq"))
                same = add(whole, arith.AndIOp(same, eq))
            whole.add_op(cf.ConditionalBranchOp(same, known, [], generic, []))
            known.add_op(cf.BranchOp(_lane_loops(
                region, lane_name, known, params, ids, tuple(c(known, size) for size in shape),
                gdims, err, nextb, done, keep_x)))
            generic.add_op(cf.BranchOp(loops(generic, lane_name, rdims)))
    one = c(slow, 1)
    st = add(slow, func.CallOp(name + CHECKED_SUFFIX,
                               [*params, gx, gy, gz, bx, by, bz, b,
                                add(slow, arith.AddiOp(b, one)), *a[num_params + 8:]], [i32]))
    slow.add_op(cf.ConditionalBranchOp(add(slow, arith.CmpiOp(st, c(slow, 0), "eq")), nextb, [],
                                       done, [st]))
    nextb.add_op(cf.BranchOp(head, add(nextb, arith.AddiOp(b, c(nextb, 1)))))
    done.add_op(func.ReturnOp(done.args[0]))
    fn = func.FuncOp(name, FunctionType.from_lists(inputs, [i32]), region)
    for key, value in grid.attributes.items():
        if key not in ("sym_name", "function_type"):
            fn.attributes[key] = value
    return fn


def _launch_path(name: str, region: Region, entry: Block, head: Block, done: Block,
                 params: list[SSAValue], dims: list[SSAValue], err: SSAValue,
                 shape: tuple[int, int, int] | None, rows: bool = False,
                 keep_x: bool = False) -> None:
    """End `entry` with the launch checks (launch_checks.py): when both pass and the launch
    has the compiled block shape (if any), a loop over the blocks `[first, end)` running the
    full lane loops (that shape's constant trip counts) — or, with `rows` when the launch
    allows it, the lanes in row order (row_order.py); else the per-block loop `head`."""
    gx, gy, gz, bx, by, bz, first, end = dims
    c, add = _i32_constant, _append
    gdims, rdims = (gx, gy, gz), (bx, by, bz)
    zero = c(entry, 0)
    ok = add(entry, arith.ConstantOp(IntegerAttr(1, i1)))
    for suffix in (".range", ".guards"):
        r = add(entry, func.CallOp(name + LAUNCH_SUFFIX + suffix,
                                   [*params, zero, zero, zero, *gdims, *rdims, zero, bx], [i32]))
        ok = add(entry, arith.AndIOp(ok, add(entry, arith.CmpiOp(r, zero, "ne"))))
    for value, size in zip(rdims, shape or ()):  # (another launch block: per-block path)
        ok = add(entry, arith.AndIOp(ok, add(entry, arith.CmpiOp(value, c(entry, size), "eq"))))
    lhead, lbody, lnext = Block(arg_types=[i32]), Block(), Block()
    last = entry
    for blk in (lhead, lbody, lnext):
        region.insert_block_after(blk, last)
        last = blk
    if rows and shape is not None:
        checked, ordered = Block(), Block()
        region.insert_block_after(checked, entry)
        region.insert_block_after(ordered, checked)
        entry.add_op(cf.ConditionalBranchOp(ok, checked, [], head, [first]))
        allowed = row_order.allowed(checked, err, first, end, gdims)
        checked.add_op(cf.ConditionalBranchOp(allowed, ordered, [], lhead, [first]))
        ordered.add_op(cf.BranchOp(row_order.row_loops(
            region, ordered, name + ".full.lane", params, gdims, shape, err, done,
            keep_x and shape is not None)))
    else:
        entry.add_op(cf.ConditionalBranchOp(ok, lhead, [first], head, [first]))
    b = lhead.args[0]
    lhead.add_op(cf.ConditionalBranchOp(add(lhead, arith.CmpiOp(b, end, "slt")), lbody, [],
                                        done, [c(lhead, 0)]))
    cbx = add(lbody, arith.RemUIOp(b, gx))
    rest = add(lbody, arith.DivUIOp(b, gx))
    ids = (cbx, add(lbody, arith.RemUIOp(rest, gy)), add(lbody, arith.DivUIOp(rest, gy)))
    sizes = tuple(c(lbody, size) for size in shape) if shape is not None else rdims
    lbody.add_op(cf.BranchOp(_lane_loops(region, name + ".full.lane", lbody, params, ids,
                                         sizes, gdims, err, lnext, done,
                                         keep_x and shape is not None)))
    lnext.add_op(cf.BranchOp(lhead, add(lnext, arith.AddiOp(b, c(lnext, 1)))))


def _root(ptr: SSAValue) -> SSAValue:
    """The parameter or L1 buffer (`pto.alloc_local`) a pointer is an offset of."""
    while not isinstance(ptr, BlockArgument) and isinstance(ptr.owner, pto.AddPtrOp):
        ptr = ptr.owner.ptr
    return ptr


def fast_variants(lane: func.FuncOp, name: str,
                  num_params: int) -> tuple[func.FuncOp, func.FuncOp, int]:
    """(`@name.range`, `@name.fast.lane`, number of accesses proven) for lane function `lane`:
    the range function checks the lane-affine accesses at the corners of a block, the fast lane
    function is `lane` with those accesses unchecked. With nothing proven the range function
    returns 1 and the fast lane function keeps every check."""
    an = _Analysis(lane, num_params)
    proven: list[tuple[Operation, SSAValue, list[SSAValue]]] = []
    for op in lane.walk():
        if isinstance(op, _ACCESSES):
            offsets = an.offsets(_access_ptr(op))
            if offsets is None or not any(an.affine(o) for o in offsets):
                continue
            proven.append((op, _root(_access_ptr(op)), offsets))
    rng = _range_function(lane, name, num_params, proven, an)
    fast = lane.clone()
    fast.sym_name = StringAttr(name + FAST_SUFFIX + ".lane")
    mapping = dict(zip(lane.walk(), fast.walk()))
    proven_ops = {id(op) for op, _, _ in proven}
    lane_varying: set[int] = set()
    for op, _, offsets in proven:
        stack = [o for o in offsets if an.affine(o)]
        while stack:
            v = stack.pop()
            if isinstance(v, BlockArgument) or id(v.owner) in lane_varying:
                continue
            lane_varying.add(id(v.owner))
            stack += [o for o in v.owner.operands if an.affine(o)]
    for old, new in mapping.items():
        if id(old) in proven_ops:
            new.attributes[UNCHECKED_ATTR] = UnitAttr()
        if id(old) in lane_varying and \
                not isinstance(old, arith.ExtSIOp | arith.DivUIOp | arith.RemUIOp):
            new.attributes[NSW_ATTR] = UnitAttr()
    return rng, fast, len(proven)


FullVariants = Callable[[func.FuncOp, func.FuncOp, str, int],
                        "tuple[func.FuncOp, func.FuncOp] | None"]
"""`full_blocks.full_variants` (passed in: that module builds on this one)."""


LaunchVariants = Callable[[func.FuncOp, str, int], "tuple[func.FuncOp, func.FuncOp] | None"]
"""`launch_checks.launch_variants` (passed in: that module builds on this one)."""


def add_fast_blocks(module: ModuleOp, lane: func.FuncOp, grid: func.FuncOp,
                    num_params: int, variants: FullVariants | None = None,
                    launch_fns: LaunchVariants | None = None) -> bool:
    """Give the kernel of `lane` / `grid` (both in `cf` form, not lowered yet) its range
    function, fast lane function and choosing grid function, when at least one access is
    lane-affine. Returns whether it did."""
    name = grid.sym_name.data
    rng, fast, proven = fast_variants(lane, name, num_params)
    if not proven:
        return False
    full = variants(lane, fast, name, num_params) if variants is not None else None
    launch = launch_fns(lane, name, num_params) \
        if full is not None and launch_fns is not None else None
    shape = _block_shape(grid)
    rows = full is not None and launch is not None and shape is not None and \
        shape[1] * shape[2] > 1 and row_order.reorderable(full[1], UNCHECKED_ATTR)
    keep_x = KEEP_X_LOOPS and full is not None and shape is not None and \
        KEEP_X_WIDTHS[0] <= shape[0] <= KEEP_X_WIDTHS[1] and shape[1] * shape[2] > 1 and \
        row_order.x_contiguous(full[1])
    wrapper = _wrapper(name, grid, num_params, full is not None, launch is not None, rows,
                       keep_x)
    grid.sym_name = StringAttr(name + CHECKED_SUFFIX)
    module.body.block.insert_op_after(rng, lane)
    if full is not None:
        module.body.block.insert_ops_after(list(full), lane)
    if launch is not None:
        module.body.block.insert_ops_after(list(launch), lane)
    module.body.block.insert_op_after(fast, lane)
    module.body.block.insert_op_after(wrapper, grid)
    return True
