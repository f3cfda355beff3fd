"""Full blocks: lane loops without the bounds guards that every lane of the block passes.

Most kernels guard their lanes against the edge of the data: `if i < n`, `if r < h and c < w`,
`if i >= n: return`. In a [fast block](fast_blocks.py) the guard stays in the lane loop, so
LLVM vectorises it with masked loads and stores, and with rows of 8 or 16 lanes (2-D and 3-D
blocks) the per-row loop set-up and remainder code cost as much as the row's work. Such a guard
compares a *lane-affine* value (fast_blocks.py) with a block-uniform one, and an affine function
compared with a constant is a half-space: when the comparison has one value at every corner of
the block's box of lanes, it has that value for every lane. So this module adds, per kernel:

- `@k.guards(...)` (the range function's arguments): 1 when every guard comparison has its
  *expected* value at every corner of the block (and no lane-varying i32 value of its operands
  overflows there, so the i32 comparison is the exact one);
- `@k.full.lane`: the fast lane function with each guard comparison replaced by its expected
  value (LLVM then folds the branches away: straight-line lanes).

The grid function (fast_blocks.py) runs the full lane function for a block whose range check
and guard check both pass, else the fast or checked lanes as before; with the block shape the
kernel was compiled for (`pto.compile(block=)`), the full lanes' loops have constant trip
counts, which LLVM unrolls and vectorises (a 16-lane row: one AVX-512 vector, no remainder).

The expected value is a guess made at compile time (a wrong guess costs the fast path, never
the result): `f < u` and `f <= u` (f lane-affine, u uniform) are expected true — an upper
bound; `f >= u` and `f > u` expected false when u is not a constant (`if i >= n: return`) and
true when it is (`if g >= 0`). Only signed comparisons are guards (an unsigned one is not a
half-space across 0). Same bits either way: the full lane function is the fast one with
comparisons replaced by the values they have in that block. docs/native.md#full-blocks.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, StringAttr, UnitAttr, i1, i32, i64
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from pypto.backend.native.fast_blocks import (_ACCESSES, _SWAPPED, NSW_ATTR, RANGE_ATTR,
                                              UNCHECKED_ATTR, _Analysis, _RangeBuilder)
from pypto.dialects import pto

FULL_SUFFIX = ".full"
GUARDS_SUFFIX = ".guards"
_SIGNED = ("slt", "sle", "sgt", "sge")


class Guard:
    """One guard comparison `affine <pred> uniform` (predicate normalised to the affine value
    on the left) and the value the full lane function gives it."""

    def __init__(self, op: arith.CmpiOp, pred: str, affine: SSAValue, uniform: SSAValue,
                 expected: bool):
        self.op, self.pred, self.affine, self.uniform = op, pred, affine, uniform
        self.expected = expected


def _is_constant(v: SSAValue) -> bool:
    return isinstance(v.owner, arith.ConstantOp)


def guards(lane: func.FuncOp, an: _Analysis) -> list[Guard]:
    """The guard comparisons of lane function `lane` (see the module doc)."""
    found: list[Guard] = []
    for op in lane.walk():
        if not isinstance(op, arith.CmpiOp) or id(op) in an.loop_tests:
            continue
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        if pred not in _SIGNED:
            continue
        a, b = op.lhs, op.rhs
        if an.affine(a) and an.uniform(b):
            f, u = a, b
        elif an.uniform(a) and an.affine(b):
            f, u, pred = b, a, _SWAPPED[pred]
        else:
            continue
        if _uses_split(an, f):  # (a warp or lane id: bounded per access, not per block)
            continue
        expected = pred in ("slt", "sle") or _is_constant(u)
        found.append(Guard(op, pred, f, u, expected))
    return found


def _uses_split(an: _Analysis, v: SSAValue) -> bool:
    """Whether lane-affine `v` depends on a warp or lane id (`_Analysis.split`)."""
    stack, seen = [v], set()
    while stack:
        w = stack.pop()
        if w in seen or w in an.lane_coords or w in an.loop_ivs:
            continue
        seen.add(w)
        if an.split(w):
            return True
        if not isinstance(w, BlockArgument) and an.affine(w):
            stack += [o for o in w.owner.operands if an.affine(o)]
    return False


def _guard_function(lane: func.FuncOp, name: str, num_params: int, found: list[Guard],
                    an: _Analysis) -> func.FuncOp:
    """`@k.guards`: 1 when every guard has its expected value at every corner of the block."""
    lane_args = list(lane.body.blocks[0].args)
    types = [a.type for a in lane_args[:num_params]] + [i32] * 11
    block = Block(arg_types=types)
    builder = _RangeBuilder(an, block, lane_args, list(block.args), num_params)
    for guard in found:
        dims = sorted(builder.used_dims([guard.affine]))
        u = builder.wide(guard.uniform)
        pred = guard.pred if guard.expected else \
            {"slt": "sge", "sle": "sgt", "sgt": "sle", "sge": "slt"}[guard.pred]
        for pick in range(1 << len(dims)):
            corner = sum(1 << d for k, d in enumerate(dims) if pick >> k & 1)
            value = builder.at(guard.affine, corner)  # (adds its no-overflow checks)
            builder.checks.append(builder.add(arith.CmpiOp(value, u, pred)))
    block.add_op(func.ReturnOp(builder.result()))
    fn = func.FuncOp(name + GUARDS_SUFFIX, (types, [i32]), Region(block))
    fn.attributes[RANGE_ATTR] = UnitAttr()
    return fn


def full_variants(lane: func.FuncOp, fast: func.FuncOp, name: str,
                  num_params: int) -> tuple[func.FuncOp, func.FuncOp] | None:
    """(`@name.guards`, `@name.full.lane`) for lane function `lane` and its fast variant
    `fast` (a clone of it with the same op order), or None when it has no guard."""
    an = _Analysis(lane, num_params)
    found = guards(lane, an)
    if not found:
        return None
    check = _guard_function(lane, name, num_params, found, an)
    full = fast.clone()
    full.sym_name = StringAttr(name + FULL_SUFFIX + ".lane")
    mapping: dict[int, Operation] = {id(old): new for old, new in zip(lane.walk(), full.walk())}
    for guard in found:
        cmp = mapping[id(guard.op)]
        assert isinstance(cmp, arith.CmpiOp)
        const = arith.ConstantOp(IntegerAttr(int(guard.expected), i1))
        block = cmp.parent_block()
        assert block is not None
        block.insert_op_before(const, cmp)
        cmp.results[0].replace_all_uses_with(const.result)
        cmp.detach()
        cmp.erase()
    widen_offsets(full, num_params)
    return check, full


def widen_offsets(fn: func.FuncOp, num_params: int) -> int:
    """Compute the lane-affine i32 offsets of `fn`'s unchecked accesses in i64 (`nsw`): the
    block's range check proved every lane-varying i32 value of them in range, so the i64 sums
    and products of the sign-extended terms are the same integers — and a sum of extensions,
    unlike the extension of an i32 sum, shows LLVM consecutive addresses once it has unrolled
    the lanes of a constant-length row (SLP then makes one vector of them). Returns how many
    offsets it widened."""
    an = _Analysis(fn, num_params)
    done = 0
    for op in list(fn.walk()):
        if not isinstance(op, _ACCESSES) or UNCHECKED_ATTR not in op.attributes:
            continue
        ptr = op.dst if isinstance(op, pto.FmaOp) else op.ptr
        while isinstance(ptr.owner, pto.AddPtrOp):
            addptr = ptr.owner
            if addptr.offset.type == i32 and an.affine(addptr.offset):
                wide = _widen(addptr.offset, an, addptr)
                addptr.operands[1] = wide
                done += 1
            ptr = addptr.ptr
    return done


def _widen(v: SSAValue, an: _Analysis, before: Operation) -> SSAValue:
    """`v` (lane-affine or uniform, proven not to overflow) as an i64 computed before
    `before`."""
    block = before.parent_block()
    assert block is not None

    def emit(op: Operation) -> SSAValue:
        block.insert_op_before(op, before)
        return op.results[0]

    if v.type == i64:
        return v
    if v in an.lane_coords or v in an.loop_ivs or not an.affine(v):  # a coordinate, a loop
        # counter (cf_loops.py) or a uniform i32 value
        return emit(arith.ExtSIOp(v, i64))
    op = v.owner
    assert isinstance(op, Operation)
    if isinstance(op, arith.ExtSIOp):
        return _widen(op.operands[0], an, before)
    a, b = (_widen(o, an, before) for o in op.operands)
    new = emit(type(op)(a, b))
    new.owner.attributes[NSW_ATTR] = UnitAttr()  # type: ignore[union-attr]
    return new

