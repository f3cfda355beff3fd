"""Compare-exchange steps of a sorting network as one phase: `if tid ^ j > tid: ...`.

A bitonic sort's step (the CUDA SDK's `ixj = tid ^ j; if (ixj > tid) { a = s[tid]; b =
s[ixj]; if (...) { s[tid] = b; s[ixj] = a; } }`) would be split by the phase plan at every L1
write: the reads in one phase, each store in its own (guard-split, the values and conditions
in spill slots) — five lane loops per step. The lanes the condition admits own disjoint pairs
`{tid, tid ^ j}`: if two admitted lanes `t1 != t2` shared an element then `t2 == t1 ^ j`, and
`t1 ^ j > t1` with `t2 ^ j > t2` would give `t2 > t1` and `t1 > t2` (for every `j`, in signed
32-bit compares too). So no lane reads or writes what another admitted lane touches, and
running each lane's whole `if` before the next lane's (one phase) gives the interpreter's
lockstep result.

The `if` is taken as one phase op when (docs/native.md#merged-tree-steps):

- the kernel is compiled for a 1-D block (`tid` is `local_id(0)`, distinct per lane; the plan
  then pins the block shape as for merged tree steps) and every L1 buffer the `if` touches
  holds at least the block's lanes (`buf[tid]` is always in range);
- its condition is `tid ^ j > tid` (or `tid < tid ^ j`), `j` uniform, and it has no else
  branch and no results;
- every L1 access inside is a `pto.load` / `pto.store` at `buf + tid` or `buf + (tid ^ j)`
  (that same `j`), nothing inside touches HBM or can raise (no division, cast to int,
  barrier, block-level instruction, loop or printf), and the first access at `tid ^ j` comes
  before any nested region and after nothing but `buf + tid` loads and pure arithmetic — so
  when `tid ^ j` is outside a buffer, the first admitted lane for which it is fails at that
  access in both backends (same lane, same op, same message), and all buffers accessed at
  `tid ^ j` have one size (one failure condition).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, scf
from xdsl.ir import Operation, SSAValue

from pypto.dialects import pto
from pypto.dialects.traits import launch_id, memory_accesses

_RAISING = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
            "arith.ceildivsi", "arith.ceildivui", "arith.fptosi", "arith.fptoui", "math.ipowi")


def _is_tid(v: SSAValue) -> bool:
    o = v.owner
    return isinstance(o, Operation) and launch_id(o) == "local_id" and \
        o.properties["dim"].value.data == 0  # type: ignore[union-attr]


def _xor_of_tid(v: SSAValue, uniform: Callable[[SSAValue], bool]) -> SSAValue | None:
    """`j` when `v` is `tid ^ j` (either order) with `j` uniform, else None."""
    o = v.owner
    if not isinstance(o, arith.XOrIOp):
        return None
    a, b = o.operands
    if _is_tid(a) and uniform(b):
        return b
    if _is_tid(b) and uniform(a):
        return a
    return None


def _pair_condition(cond: SSAValue, uniform: Callable[[SSAValue], bool]) -> SSAValue | None:
    """`j` when `cond` is `tid ^ j > tid` or `tid < tid ^ j` (signed), else None."""
    o = cond.owner
    if not isinstance(o, arith.CmpiOp):
        return None
    pred = o.predicate.value.data
    lhs, rhs = o.operands
    if pred == 4 and _is_tid(rhs):      # sgt: ixj > tid
        return _xor_of_tid(lhs, uniform)
    if pred == 2 and _is_tid(lhs):      # slt: tid < ixj
        return _xor_of_tid(rhs, uniform)
    return None


def _l1_site(op: Operation) -> tuple[pto.AllocLocalOp, SSAValue] | None:
    """(buffer, index) of an L1 load / store at `alloc + index`, else None."""
    ptr = op.operands[0] if isinstance(op, pto.LoadOp) else op.operands[1]
    add = ptr.owner
    if not isinstance(add, pto.AddPtrOp) or not isinstance(add.ptr.owner, pto.AllocLocalOp):
        return None
    return add.ptr.owner, add.operands[1]


def _size(buf: pto.AllocLocalOp) -> int:
    return int(buf.result.type.size)


def pair_exchange(op: Operation, lanes: int | None,
                  uniform: Callable[[SSAValue], bool]) -> bool:
    """Is `op` a compare-exchange `if` that may run as one phase (see the module doc)?
    `lanes`: the compiled 1-D block's lane count (None: not compiled for a 1-D block)."""
    if lanes is None or not isinstance(op, scf.IfOp) or op.results or \
            op.false_region.blocks and len(op.false_region.blocks[0].ops) > 1:
        return False
    j = _pair_condition(op.cond, uniform)
    if j is None or not op.true_region.blocks:
        return False
    pair_sizes: set[int] = set()
    first_pair: Operation | None = None
    seen_region = False
    for inner in op.walk():
        if inner is op or isinstance(inner, scf.YieldOp):
            continue
        if inner.regions:
            if not isinstance(inner, scf.IfOp):
                return False
            seen_region = True
            continue
        accesses = memory_accesses(inner)
        if accesses:
            if not isinstance(inner, pto.LoadOp | pto.StoreOp) or \
                    any(a.space != "local" for a in accesses):
                return False
            site = _l1_site(inner)
            if site is None:
                return False
            buf, index = site
            if _size(buf) < lanes:
                return False
            if _is_tid(index):
                continue
            if _xor_of_tid(index, uniform) is not j and \
                    not (_xor_of_tid(index, uniform) is not None and
                         _same_value(_xor_of_tid(index, uniform), j)):
                return False
            pair_sizes.add(_size(buf))
            if first_pair is None:
                if seen_region or inner.parent_op() is not op or isinstance(inner, pto.StoreOp):
                    return False
                first_pair = inner
            continue
        if inner.name in _RAISING or not (inner.dialect_name() in ("arith", "math") or
                                          isinstance(inner, pto.AddPtrOp) or
                                          launch_id(inner) is not None):
            return False
    if first_pair is None or len(pair_sizes) != 1:
        return False
    for before in op.true_region.blocks[0].ops:  # only tid loads and arithmetic before it
        if before is first_pair:
            break
        if isinstance(before, pto.StoreOp):
            return False
    return True


def _same_value(a: SSAValue, b: SSAValue) -> bool:
    """The same constant (two `arith.constant`s of one value), else SSA identity."""
    if a is b:
        return True
    oa, ob = a.owner, b.owner
    return isinstance(oa, arith.ConstantOp) and isinstance(ob, arith.ConstantOp) and \
        oa.value == ob.value
