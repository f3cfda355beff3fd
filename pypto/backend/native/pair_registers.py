"""Consecutive sorting-network steps `j = G/2, ..., 2, 1` run in registers, 16 pairs per vector op.

pair_fusion.py fuses consecutive steps whose pairs stay inside aligned groups of lanes (a step
`j` pairs lane `t` with `t ^ j`, so steps `j < G` never leave an aligned group of `G` lanes,
`G` a power of two). Here each step of the fused trips is `G / 32` vector operations over the
group's pairs, 16 pairs each: the group's elements of every L1 buffer the step touches are
loaded once as `G / 16` vectors of 16; for each trip and each 16 pairs (pair `p` has lanes
`lo(p) = (p // j) * 2j + p % j` and `lo(p) + j`), the pairs' lower and upper elements are
whole vectors when `j >= 16`, else two-source shuffles of the 32-lane window holding them;
the `if`'s body runs once on vectors (each scalar op of the kernel as the same LLVM operation
on 16 lanes: `fcmp`, `select`, `and`, ...), and two shuffles put the values it stores back in
lane order; the vectors are stored once after the last trip. `G` (`GROUP_BYTES`) is the
largest power of two of lanes whose data fit in eight 64-byte vectors, at least 32.

Why this is the interpreter's result: the trips' pairs stay inside the group (pair_fusion.py),
the pairs of one trip are disjoint and any order of them gives the lockstep result
(pair_exchange.py), and each vector lane computes exactly the scalar ops of one pair's lane
(`tid = lo(p)`, `tid ^ j = lo(p) + j`, block-level values as that trip's, computed at its
induction value), so every element ends with the bits the scalar body gives it (NaN
payloads, -0: `select` moves bits, the comparisons are the same IEEE predicates). Loads
after a store in the body read the stored vector (program order within the pair). Every
access is in range (lanes are a power of two, at least `G`). Only bodies made of top-level
L1 loads and stores at `buf + tid` / `buf + (tid ^ j)` and of `arith` ops with an exact LLVM
vector counterpart (`constant`, integer `and`/`or`/`xor`/`add`/`sub`/`mul`, which wrap like the
interpreter's, `cmpi`, `cmpf`, `select`) on 32- or 64-bit values are taken; any other body keeps
pair_fusion.py's passes. docs/native.md#merged-tree-steps.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import (DenseArrayBase, DenseIntOrFPElementsAttr, IntegerAttr,
                                   UnitAttr, VectorType,
                                   f32, f64, i1, i32, i64)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from pypto.backend.native import pair_runs
from pypto.backend.native.fast_blocks import UNCHECKED_ATTR
from pypto.backend.native.quick_ops import append as _add, i32_constant as _c
from pypto.dialects import pto

ENABLED = True
"""Run a step loop's short trips in registers (False: pair_fusion.py's passes)."""

PAIRS = 16
"""Pairs per vector operation (vectors of 16 elements)."""

GROUP_BYTES = 512
"""The most bytes of L1 data (over the buffers the step touches) a group holds in registers:
eight 64-byte vectors. The group is the largest power of two of lanes within it (at least 32,
at most the block): 128 lanes of one float32 buffer. Bitonic sort 2^20 (256 per block), per
launch: 128 bytes (groups of 32) 1.40-1.55 ms, 512 bytes 1.21-1.29, 1024 bytes (the whole
block, sixteen vectors: LLVM spills) 1.50-1.53 (alternated, cpu clock)."""

_ELEMENTS = (f32, f64, i32, i64)
_SCALARS = (*_ELEMENTS, i1)
_BINARY = {arith.AndIOp: llvm.AndOp, arith.OrIOp: llvm.OrOp, arith.XOrIOp: llvm.XOrOp,
           arith.AddiOp: llvm.AddOp, arith.SubiOp: llvm.SubOp, arith.MuliOp: llvm.MulOp}

Resolve = Callable[[SSAValue, Block, SSAValue], SSAValue]


def sequences(step: pair_runs._Step, lanes: int) -> list[tuple[int, ...]]:
    """The runs of consecutive `j` run in registers (longest first: `j = group / 2, ..., 1`
    down to `2, 1`), none when the step's body is not taken (see the module doc)."""
    if not _vectorisable(step, lanes):
        return []
    size = sum(b.type.element_type.bitwidth // 8  # type: ignore[attr-defined]
               for b in _buffers(_body(step)))
    group = 2 * PAIRS
    while 2 * group <= lanes and 2 * group * size <= GROUP_BYTES:
        group *= 2
    top = group.bit_length() - 2  # (j = group / 2)
    return [tuple(1 << e for e in range(t, -1, -1)) for t in range(top, 0, -1)]


def _body(step: pair_runs._Step) -> list[Operation]:
    return [o for o in step.op.true_region.blocks[0].ops if not isinstance(o, scf.YieldOp)]


def _buffers(body: list[Operation]) -> list[SSAValue]:
    """The L1 buffers the body accesses, in order of first access."""
    found: list[SSAValue] = []
    for o in body:
        if isinstance(o, pto.AddPtrOp) and o.ptr not in found:
            found.append(o.ptr)
    return found


def _vectorisable(step: pair_runs._Step, lanes: int) -> bool:
    if not ENABLED or lanes < 2 * PAIRS or lanes & (lanes - 1):
        return False
    ops = _body(step)
    ptrs: set[SSAValue] = set()
    for o in [*(v.owner for v in step.order if step.how[v] == "clone"), *ops]:
        if not isinstance(o, Operation) or o.regions:
            return False
        if isinstance(o, pto.AddPtrOp):
            if step.how.get(o.offset) not in ("lane", "partner") or \
                    step.how.get(o.ptr) != "uniform" or \
                    not isinstance(o.ptr.type, pto.L1BufferType):
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


def _lanes(at: Block, qs: SSAValue, offsets: list[int]) -> SSAValue:
    """The vector `q + offsets[p]` (i32), `qs` the splat of `q`."""
    const = _add(at, llvm.ConstantOp(DenseIntOrFPElementsAttr.from_list(_vec(i32), offsets),
                                     _vec(i32)))
    return _add(at, llvm.AddOp(qs, const))


def fused_pass(at: Block, step: pair_runs._Step, seq: tuple[int, ...], ivs: list[SSAValue],
               lanes: int, resolve: Resolve) -> None:
    """for q in range(0, lanes, group): the trips `seq` (induction values `ivs`) on the
    group's vectors (see the module doc); the group is `2 * seq[0]` lanes, at least 32."""
    group = max(2 * PAIRS, 2 * seq[0])
    loop = Block(arg_types=[i32])
    q = loop.args[0]
    body = _body(step)
    buffers = _buffers(body)
    stored = {o.ptr.owner.ptr for o in body  # type: ignore[union-attr]
              if isinstance(o, pto.StoreOp)}
    parts: dict[SSAValue, list[SSAValue]] = {}
    qs = _splat(loop, q)
    for k, iv in enumerate(ivs):
        outside = {v: resolve(v, at, iv) for v in step.order if step.how[v] == "uniform"}
        if k == 0:
            for buf in buffers:
                parts[buf] = [_access(loop, outside[buf], q, h, None)
                              for h in range(group // PAIRS)]
        splats: dict[SSAValue, SSAValue] = {}  # (the trip's uniform values as vectors)
        for m in range(group // (2 * PAIRS)):
            _vector_op(loop, step, body, seq[k], m, qs, outside, splats, parts)
    for buf in buffers:
        if buf in stored:
            base = resolve(buf, at, ivs[0])
            for h, v in enumerate(parts[buf]):
                _access(loop, base, q, h, v)
    loop.add_op(scf.YieldOp())
    at.add_op(scf.ForOp(_c(at, 0), _c(at, lanes), _c(at, group), [], Region(loop)))


def _access(at: Block, buf: SSAValue, q: SSAValue, part: int, value: SSAValue | None
            ) -> SSAValue:
    """Load (value None) or store the group's vector `part` of L1 buffer `buf`."""
    ptr = _add(at, pto.AddPtrOp(buf, _add(at, arith.AddiOp(q, _c(at, part * PAIRS)))))
    if value is None:
        elem = buf.type.element_type  # type: ignore[attr-defined]
        op: Operation = pto.LoadOp.create(operands=[ptr], result_types=[_vec(elem)])
    else:
        op = pto.StoreOp.create(operands=[value, ptr])
    op.attributes[UNCHECKED_ATTR] = UnitAttr()
    op.attributes[pto.UNCHECKED_VECTOR_ATTR] = UnitAttr()
    at.add_op(op)
    return op.results[0] if value is None else value


def _vector_op(at: Block, step: pair_runs._Step, body: list[Operation], j: int, m: int,
               qs: SSAValue, outside: dict[SSAValue, SSAValue],
               splats: dict[SSAValue, SSAValue], parts: dict[SSAValue, list[SSAValue]]) -> None:
    """Pairs `16 m .. 16 m + 15` of the group (pair distance `j`) on the group's vectors
    `parts` (updated). `j >= 16`: their lower and upper elements are whole vectors; else
    both lie in the vectors `2 m`, `2 m + 1` (a window of 32 lanes), shuffled."""
    lo = [(p // j) * 2 * j + p % j for p in range(PAIRS * m, PAIRS * (m + 1))]
    hi = [x + j for x in lo]
    side: dict[tuple[SSAValue, str], SSAValue] = {}
    for buf, vs in parts.items():
        if j >= PAIRS:
            side[buf, "lane"], side[buf, "partner"] = vs[lo[0] // PAIRS], vs[hi[0] // PAIRS]
        else:
            w = 2 * PAIRS * m
            side[buf, "lane"] = _shuffle(at, vs[2 * m], vs[2 * m + 1], [x - w for x in lo])
            side[buf, "partner"] = _shuffle(at, vs[2 * m], vs[2 * m + 1], [x - w for x in hi])
    mapper: dict[SSAValue, SSAValue] = {}
    ptrs: dict[SSAValue, tuple[SSAValue, str]] = {}

    def vec(v: SSAValue) -> SSAValue:
        if v in mapper:
            return mapper[v]
        kind = step.how.get(v)
        if kind == "lane":
            mapper[v] = _lanes(at, qs, lo)
        elif kind == "partner":
            mapper[v] = _lanes(at, qs, hi)
        elif kind == "uniform":
            if v not in splats:
                splats[v] = _splat(at, outside[v])
            mapper[v] = splats[v]
        else:
            o = v.owner
            assert isinstance(o, Operation)
            _op(o)
        return mapper[v]

    def _op(o: Operation) -> None:
        if isinstance(o, arith.ConstantOp):
            t = o.results[0].type
            if t in (i32, i64):  # (a dense vector; floats and bools as a splat: their bits)
                value = o.value.value.data  # type: ignore[attr-defined]
                mapper[o.results[0]] = _add(at, llvm.ConstantOp(
                    DenseIntOrFPElementsAttr.from_list(_vec(t), [value] * PAIRS), _vec(t)))
            else:
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
    for buf, vs in parts.items():
        a, b = side[buf, "lane"], side[buf, "partner"]
        if j >= PAIRS:
            vs[lo[0] // PAIRS], vs[hi[0] // PAIRS] = a, b
            continue
        w = 2 * PAIRS * m
        back = {x - w: p for p, x in enumerate(lo)} | {x - w: PAIRS + p for p, x in enumerate(hi)}
        vs[2 * m] = _shuffle(at, a, b, [back[e] for e in range(PAIRS)])
        vs[2 * m + 1] = _shuffle(at, a, b, [back[e] for e in range(PAIRS, 2 * PAIRS)])
