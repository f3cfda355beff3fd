"""Consecutive sorting-network steps `j = 16, 8, 4, 2, 1` run in registers, 16 pairs at a time.

pair_fusion.py fuses consecutive steps whose pairs stay inside aligned groups of lanes (a step
`j` pairs lane `t` with `t ^ j`, so steps `j < 2^g` never leave an aligned group of `2^g`
lanes). Here the group is 32 lanes, and each step of the fused trips is one vector operation
over the group's 16 pairs: the group's elements of every L1 buffer the step touches are loaded
once as two vectors of 16 (lanes `q .. q + 15`, `q + 16 .. q + 31`); for each trip, two
shuffles give the pairs' lower elements (`A[p]`, lane `lo(p) = (p // j) * 2j + p % j`) and upper
elements (`B[p]`, lane `lo(p) + j`), the `if`'s body runs once on vectors (each scalar op of the
kernel as the same LLVM operation on 16 lanes: `fcmp`, `select`, `and`, ...), and two shuffles
put the values it stores back in lane order; the vectors are stored once after the last trip.
A step `j = 16` needs no shuffle (its lower elements are the first vector).

Why this is the interpreter's result: the trips' pairs stay inside the group (pair_fusion.py),
the pairs of one trip are disjoint and any order of them gives the lockstep result
(pair_exchange.py), and each vector lane computes exactly the scalar ops of one pair's lane
(`tid = lo(p)`, `tid ^ j = lo(p) + j`, block-level values as that trip's, computed at its
induction value), so every element ends with the bits the scalar body gives it (NaN
payloads, -0: `select` moves bits, the comparisons are the same IEEE predicates). Loads
after a store in the body read the stored vector (program order within the pair). Every
access is in range (lanes are a power of two, at least 32). Only bodies made of top-level
L1 loads and stores at `buf + tid` / `buf + (tid ^ j)` and of `arith` ops with an exact LLVM
vector counterpart (`constant`, integer `and`/`or`/`xor`/`add`/`sub`/`mul`, which wrap like the
interpreter's, `cmpi`, `cmpf`, `select`) on 32- or 64-bit values are taken; any other body keeps
pair_fusion.py's passes. docs/native.md#merged-tree-steps.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import (DenseArrayBase, IntegerAttr, IntegerType, UnitAttr, VectorType,
                                   f32, f64, i1, i32, i64)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from pypto.backend.native import pair_runs
from pypto.backend.native.fast_blocks import UNCHECKED_ATTR
from pypto.backend.native.quick_ops import append as _add, i32_constant as _c
from pypto.dialects import pto

ENABLED = True
"""Run the steps `j <= 16` of a stage in registers (False: pair_fusion.py's passes)."""

PAIRS = 16
"""Pairs per vector operation; a group is `2 * PAIRS` lanes."""

SEQUENCES: tuple[tuple[int, ...], ...] = ((16, 8, 4, 2, 1), (8, 4, 2, 1), (4, 2, 1), (2, 1))
"""The runs of consecutive `j` run in registers, tried in this order (longest first)."""

_ELEMENTS = (f32, f64, i32, i64)
_SCALARS = (*_ELEMENTS, i1)
_BINARY = {arith.AndIOp: llvm.AndOp, arith.OrIOp: llvm.OrOp, arith.XOrIOp: llvm.XOrOp,
           arith.AddiOp: llvm.AddOp, arith.SubiOp: llvm.SubOp, arith.MuliOp: llvm.MulOp}

Resolve = Callable[[SSAValue, Block, SSAValue], SSAValue]


def applies(step: pair_runs._Step, lanes: int) -> bool:
    """Can the step's trips run in registers (see the module doc)?"""
    if not ENABLED or lanes < 2 * PAIRS or lanes & (lanes - 1):
        return False
    ops = [o for o in step.op.true_region.blocks[0].ops if not isinstance(o, scf.YieldOp)]
    ptrs: set[SSAValue] = set()
    for o in [*(v.owner for v in step.order if step.how[v] == "clone"), *ops]:
        if not isinstance(o, Operation) or o.regions:
            return False
        if isinstance(o, pto.AddPtrOp):
            if step.how.get(o.offset) not in ("lane", "partner") or \
                    step.how.get(o.ptr) != "uniform" or not isinstance(o.ptr.type, pto.L1BufferType):
                return False
            ptrs.add(o.results[0])
        elif isinstance(o, pto.LoadOp | pto.StoreOp):
            t = o.results[0].type if isinstance(o, pto.LoadOp) else o.value.type
            if o.ptr not in ptrs or t not in _ELEMENTS:
                return False
        elif isinstance(o, arith.ConstantOp):
            if o.results[0].type not in _SCALARS:
                return False
        elif type(o) in _BINARY or isinstance(o, arith.CmpiOp | arith.CmpfOp | arith.SelectOp):
            if any(v.type not in _SCALARS for v in (*o.operands, *o.results)):
                return False
            if isinstance(o, arith.CmpfOp) and \
                    arith.CMPF_COMPARISON_OPERATIONS[o.predicate.value.data] in ("false", "true"):
                return False
        else:
            return False
    return True


def _vec(t: Attribute) -> VectorType:
    return VectorType(t, [PAIRS])


def _shuffle(at: Block, a: SSAValue, b: SSAValue, mask: list[int]) -> SSAValue:
    return _add(at, llvm.ShuffleVectorOp(a, b, DenseArrayBase.from_list(i32, mask),
                                         _vec(a.type.element_type)))  # type: ignore[attr-defined]


def _splat(at: Block, v: SSAValue) -> SSAValue:
    undef = _add(at, llvm.UndefOp(_vec(v.type)))
    one = _add(at, llvm.InsertElementOp(undef, v, _add(at, arith.ConstantOp(IntegerAttr(0, i32)))))
    return _shuffle(at, one, one, [0] * PAIRS)


def _lanes(at: Block, q: SSAValue, offsets: list[int]) -> SSAValue:
    """The vector `q + offsets[p]` (i32): a splat plus a constant vector (LLVM folds the
    constant's inserts)."""
    v = _add(at, llvm.UndefOp(_vec(i32)))
    for p, off in enumerate(offsets):
        v = _add(at, llvm.InsertElementOp(v, _c(at, off), _c(at, p)))
    return _add(at, llvm.AddOp(_splat(at, q), v))


def fused_pass(at: Block, step: pair_runs._Step, seq: tuple[int, ...], ivs: list[SSAValue],
               lanes: int, resolve: Resolve) -> None:
    """for q in range(0, lanes, 2 PAIRS): the trips `seq` (induction values `ivs`) on the
    group's vectors (see the module doc)."""
    loop = Block(arg_types=[i32])
    q = loop.args[0]
    body = [o for o in step.op.true_region.blocks[0].ops if not isinstance(o, scf.YieldOp)]
    buffers: list[SSAValue] = []
    for o in body:
        if isinstance(o, pto.AddPtrOp) and o.ptr not in buffers:
            buffers.append(o.ptr)
    stored = {o.ptr.owner.ptr for o in body if isinstance(o, pto.StoreOp)}  # type: ignore[union-attr]
    halves: dict[SSAValue, list[SSAValue]] = {}
    for k, iv in enumerate(ivs):
        outside = {v: resolve(v, at, iv) for v in step.order if step.how[v] == "uniform"}
        if k == 0:
            for buf in buffers:
                halves[buf] = [_access(loop, outside[buf], q, h, None) for h in (0, 1)]
        _trip(loop, step, body, seq[k], q, outside, halves)
    for buf in buffers:
        if buf in stored:
            base = resolve(buf, at, ivs[0])
            for h in (0, 1):
                _access(loop, base, q, h, halves[buf][h])
    loop.add_op(scf.YieldOp())
    at.add_op(scf.ForOp(_c(at, 0), _c(at, lanes), _c(at, 2 * PAIRS), [], Region(loop)))


def _access(at: Block, buf: SSAValue, q: SSAValue, half: int, value: SSAValue | None
            ) -> SSAValue:
    """Load (value None) or store the group's vector `half` of L1 buffer `buf`."""
    ptr = _add(at, pto.AddPtrOp(buf, _add(at, arith.AddiOp(q, _c(at, half * PAIRS)))))
    if value is None:
        elem = buf.type.element_type  # type: ignore[attr-defined]
        op: Operation = pto.LoadOp.create(operands=[ptr], result_types=[_vec(elem)])
    else:
        op = pto.StoreOp.create(operands=[value, ptr])
    op.attributes[UNCHECKED_ATTR] = UnitAttr()
    op.attributes[pto.UNCHECKED_VECTOR_ATTR] = UnitAttr()
    at.add_op(op)
    return op.results[0] if value is None else value


def _trip(at: Block, step: pair_runs._Step, body: list[Operation], j: int, q: SSAValue,
          outside: dict[SSAValue, SSAValue], halves: dict[SSAValue, list[SSAValue]]) -> None:
    """One trip (pair distance `j`) on the group's vectors `halves` (updated)."""
    lo = [(p // j) * 2 * j + p % j for p in range(PAIRS)]
    hi = [x + j for x in lo]
    side: dict[tuple[SSAValue, str], SSAValue] = {}
    for buf, (v0, v1) in halves.items():
        side[buf, "lane"] = v0 if j == PAIRS else _shuffle(at, v0, v1, lo)
        side[buf, "partner"] = v1 if j == PAIRS else _shuffle(at, v0, v1, hi)
    mapper: dict[SSAValue, SSAValue] = {}
    ptrs: dict[SSAValue, tuple[SSAValue, str]] = {}

    def vec(v: SSAValue) -> SSAValue:
        if v in mapper:
            return mapper[v]
        kind = step.how.get(v)
        if kind == "lane":
            mapper[v] = _lanes(at, q, lo)
        elif kind == "partner":
            mapper[v] = _lanes(at, q, hi)
        elif kind == "uniform":
            mapper[v] = _splat(at, outside[v])
        else:
            o = v.owner
            assert isinstance(o, Operation)
            _op(o)
        return mapper[v]

    def _op(o: Operation) -> None:
        if isinstance(o, arith.ConstantOp):
            c = o.clone()
            at.add_op(c)
            mapper[o.results[0]] = _splat(at, c.results[0])
        elif type(o) in _BINARY:
            mapper[o.results[0]] = _add(at, _BINARY[type(o)](vec(o.operands[0]),
                                                             vec(o.operands[1])))
        elif isinstance(o, arith.CmpiOp):
            mapper[o.results[0]] = _add(at, llvm.ICmpOp(
                vec(o.lhs), vec(o.rhs), IntegerAttr(o.predicate.value.data, i64)))
        elif isinstance(o, arith.CmpfOp):
            mapper[o.results[0]] = _add(at, llvm.FCmpOp(
                vec(o.lhs), vec(o.rhs),
                arith.CMPF_COMPARISON_OPERATIONS[o.predicate.value.data]))
        elif isinstance(o, arith.SelectOp):
            mapper[o.results[0]] = _add(at, llvm.SelectOp(*(vec(x) for x in o.operands)))
        else:
            raise AssertionError(o.name)  # (applies() refused it)

    for o in body:
        if isinstance(o, pto.AddPtrOp):
            ptrs[o.results[0]] = (o.ptr, step.how[o.offset])
        elif isinstance(o, pto.LoadOp):
            mapper[o.results[0]] = side[ptrs[o.ptr]]
        elif isinstance(o, pto.StoreOp):
            side[ptrs[o.ptr]] = vec(o.value)
        else:
            _op(o)
    for buf in halves:
        a, b = side[buf, "lane"], side[buf, "partner"]
        if j == PAIRS:
            halves[buf] = [a, b]
            continue
        back = {x: p for p, x in enumerate(lo)} | {x: PAIRS + p for p, x in enumerate(hi)}
        halves[buf] = [_shuffle(at, a, b, [back[e] for e in range(PAIRS)]),
                       _shuffle(at, a, b, [back[e] for e in range(PAIRS, 2 * PAIRS)])]
