"""A value computed again in a later loop, carried there through the element the later loop
stores to instead.

softmax_rows (tests/kernels/test_softmax.py) evaluates `exp(x[c] - mx)` twice per element: in
the loop summing it and in the loop storing `exp(x[c] - mx) / total` to `y[c]`. That is the
source's own doing (the interpreter and NumPy's equivalent do the same work), and natively the
second `exp` is half the kernel's time. The two evaluations are provably equal: the same
operations on the same operands (values defined before both loops, the loops' corresponding
counters) and loads from a tensor the kernel never writes. So, on the copy of the kernel only
the native backend compiles, the earlier loop also stores its value to `Q + c` — the element
the later loop stores to — and the later loop loads it from there instead of computing it.

Exact when, for each lane, the element it loads in the later loop holds what it stored in the
earlier one:
- both loops are top-level `scf.for`s with the same bounds and step (the same iterations), the
  value sits directly in the then-block of an `scf.if` of the same condition in each (the same
  iterations compute it), and the later loop's store is at the same index as a load of the
  value, after it;
- nothing else in the kernel accesses Q's tensor (it is written only by the later loop's store,
  now also by the earlier loop, and read only by the new load), its element type is the value's
  type, and it is a `noalias` parameter distinct from every tensor the value loads;
- one lane's iterations reach different elements (a non-zero constant step, the index `c0 + u`
  with u not depending on the counter), and no other lane touches them: the tensor is now read
  and written, so the support check proves lanes independent on it at every launch
  (docs/native.md#lane-independence), as it did for the later loop's store alone.
A store out of range in the earlier loop is one the later loop would have made: the launch's
error is replayed on the interpreter (docs/native.md#errors), which raises the kernel's own.
docs/native.md#carried-values.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from pypto.dialects import pto
from pypto.dialects.traits import memory_accesses

_COSTLY = ("math.",)
"""Op name prefixes of the values worth carrying (NumPy's transcendental loops natively)."""


def _root(ptr: SSAValue) -> SSAValue:
    while not isinstance(ptr, BlockArgument) and isinstance(ptr.owner, pto.AddPtrOp):
        ptr = ptr.owner.ptr
    return ptr


def _constant(v: SSAValue) -> object:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr | FloatAttr):
        return (type(owner.value).__name__, owner.value.value.data, str(owner.value.type))
    return None


def _inside(op: Operation | None, loop: Operation) -> bool:
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op()
    return False


def _noalias(kernel: func.FuncOp, arg: SSAValue) -> bool:
    """Is `arg` a tensor parameter of `kernel` marked `pto.noalias` (passed once)?"""
    if not isinstance(arg, BlockArgument) or arg.owner is not kernel.body.block:
        return False
    attrs = kernel.arg_attrs.data if kernel.arg_attrs is not None else ()
    return arg.index < len(attrs) and "pto.noalias" in attrs[arg.index].data  # type: ignore


class _Match:
    """Structural equality of values of two loops at one lane and iteration."""

    def __init__(self, kernel: func.FuncOp, first: scf.ForOp, second: scf.ForOp,
                 written: set[int]):
        self.kernel, self.first, self.second, self.written = kernel, first, second, written
        self.pairs: dict[int, SSAValue] = {
            id(second.body.block.args[0]): first.body.block.args[0]}

    def _outside(self, v: SSAValue) -> bool:
        return isinstance(v, BlockArgument) and v.owner is self.kernel.body.block or \
            isinstance(v.owner, Operation) and not (
                _inside(v.owner, self.first) or _inside(v.owner, self.second))

    def same(self, a: SSAValue, b: SSAValue) -> bool:
        """Does `b` (of the second loop) equal `a` (of the first) at every lane and
        iteration where both are computed? (Records the pairs it proves.)"""
        if self.pairs.get(id(b)) is a:
            return True
        if a is b:
            return self._outside(a)
        if _constant(a) is not None:
            return _constant(a) == _constant(b)
        if isinstance(a, BlockArgument) or isinstance(b, BlockArgument):
            return False
        x, y = a.owner, b.owner
        assert isinstance(x, Operation) and isinstance(y, Operation)
        if x.name != y.name or len(x.operands) != len(y.operands) or x.regions or \
                y.regions or x.properties != y.properties or \
                [r.type for r in x.results] != [r.type for r in y.results] or \
                list(x.results).index(a) != list(y.results).index(b):
            return False
        if isinstance(x, pto.LoadOp):  # (a tensor nothing writes, passed once)
            root = _root(x.ptr)
            if id(root) in self.written or not _noalias(self.kernel, root):
                return False
        elif x.name.startswith("pto.") and not isinstance(x, pto.AddPtrOp) and \
                not x.name.startswith("pto.get_"):
            return False
        elif any(m.kind != "read" for m in memory_accesses(x)):
            return False
        if not all(self.same(p, q) for p, q in zip(x.operands, y.operands)):
            return False
        self.pairs[id(b)] = a
        return True


def _written_roots(kernel: func.FuncOp) -> set[int]:
    """The tensors (and L1 buffers) something in the kernel may write."""
    roots: set[int] = set()
    for op in kernel.body.walk():
        if isinstance(op, func.CallOp):
            return {id(a) for a in kernel.body.block.args}  # (a helper may write anything)
        if any(m.kind != "read" for m in memory_accesses(op)):
            roots.update(id(_root(v)) for v in op.operands if isinstance(v.type, pto.PtrType))
    return roots


def _accesses(kernel: func.FuncOp, root: SSAValue) -> int:
    """How many ops (besides address arithmetic) take an address into `root`."""
    return sum(1 for op in kernel.body.walk() if not isinstance(op, pto.AddPtrOp) and
               any(_root(v) is root for v in op.operands if isinstance(v.type, pto.PtrType)))


def _guarded(op: Operation, loop: scf.ForOp) -> scf.IfOp | None:
    """The `scf.if` whose then-block holds `op`, itself directly in `loop`'s body."""
    block = op.parent_block()
    if_op = block.parent_op() if block is not None else None
    if isinstance(if_op, scf.IfOp) and block is if_op.true_region.block and \
            if_op.parent_block() is loop.body.block:
        return if_op
    return None


def _same_iterations(a: scf.ForOp, b: scf.ForOp) -> bool:
    def eq(x: SSAValue, y: SSAValue) -> bool:
        return x is y or _constant(x) is not None and _constant(x) == _constant(y)
    step = _constant(a.step)
    return eq(a.lb, b.lb) and eq(a.ub, b.ub) and eq(a.step, b.step) and step is not None \
        and step[1] != 0  # type: ignore[index]


def _counter_plus_outside(match: _Match, index: SSAValue, loop: scf.ForOp) -> bool:
    """Is `index` the counter or `counter + u` with u from outside both loops (one lane's
    iterations then reach different elements: the counters differ, adding u is a bijection)?"""
    counter = loop.body.block.args[0]
    if index is counter:
        return True
    owner = index.owner
    if not isinstance(owner, arith.AddiOp):
        return False
    a, b = owner.operands
    return a is counter and match._outside(b) or b is counter and match._outside(a)


_Found = tuple[Operation, Operation, pto.StoreOp, SSAValue]


def _candidates(kernel: func.FuncOp) -> Iterator[_Found]:
    """(first loop's value, second loop's value, the second's store, the store's index in
    the first loop) for each value to carry."""
    loops = [op for op in kernel.body.block.ops if isinstance(op, scf.ForOp)]
    written = _written_roots(kernel)
    for j, second in enumerate(loops):
        for store in second.body.walk():
            if not isinstance(store, pto.StoreOp):
                continue
            q = _root(store.ptr)
            cond_if = _guarded(store, second)
            ptr = store.ptr.owner
            if cond_if is None or not _noalias(kernel, q) or _accesses(kernel, q) != 1 or \
                    not isinstance(ptr, pto.AddPtrOp) or ptr.parent_block() is not \
                    store.parent_block():
                continue
            after_ptr = False
            for value in store.parent_block().ops:  # the costly values after the address,
                if value is store:                  # before the store
                    break
                after_ptr = after_ptr or value is ptr
                if after_ptr and value.name.startswith(_COSTLY) and \
                        len(value.results) == 1 and \
                        value.results[0].type == store.value.type:
                    found = _partner(kernel, loops[:j], second, cond_if, value, ptr, written)
                    if found is not None:
                        yield found[0], value, store, found[1]


def _partner(kernel: func.FuncOp, earlier: list[scf.ForOp], second: scf.ForOp,
             cond_if: scf.IfOp, value: Operation, ptr: pto.AddPtrOp,
             written: set[int]) -> tuple[Operation, SSAValue] | None:
    for first in reversed(earlier):
        if not _same_iterations(first, second):
            continue
        for other in first.body.walk():
            if other.name != value.name:
                continue
            other_if = _guarded(other, first)
            if other_if is None:
                continue
            match = _Match(kernel, first, second, written)
            if not (match.same(other_if.cond, cond_if.cond) and
                    match.same(other.results[0], value.results[0]) and
                    match._outside(ptr.ptr) and id(ptr.offset) in match.pairs and
                    _counter_plus_outside(match, ptr.offset, second)):
                continue
            return other, match.pairs[id(ptr.offset)]
    return None


def carry_values(kernel: func.FuncOp) -> func.FuncOp:
    """A copy of `kernel` with each value a later loop recomputes carried from the earlier
    loop through the element the later loop stores to (see the module doc), or `kernel`."""
    found = list(_candidates(kernel))
    if not found:
        return kernel
    copy = kernel.clone()
    ops = dict(zip(kernel.walk(), copy.walk()))
    values: dict[int, SSAValue] = {}
    for old, new in ops.items():
        for r_old, r_new in zip(old.results, new.results):
            values[id(r_old)] = r_new
        for region_old, region_new in zip(old.regions, new.regions):
            for b_old, b_new in zip(region_old.blocks, region_new.blocks):
                for a_old, a_new in zip(b_old.args, b_new.args):
                    values[id(a_old)] = a_new
    for a_old, a_new in zip(kernel.body.block.args, copy.body.block.args):
        values[id(a_old)] = a_new
    carried: set[int] = set()
    for first_value, second_value, store, index in found:
        ptr = store.ptr.owner
        assert isinstance(ptr, pto.AddPtrOp)
        if id(second_value) in carried:
            continue
        carried.add(id(second_value))
        fv, sv = ops[first_value], ops[second_value]
        at = pto.AddPtrOp(values[id(ptr.ptr)], values[id(index)])
        keep = pto.StoreOp(fv.results[0], at.result)
        at.location = keep.location = store.location  # (the later store's element)
        block = fv.parent_block()
        assert block is not None
        block.insert_ops_after([at, keep], fv)
        again = pto.LoadOp(ops[ptr].results[0])
        again.location = sv.location
        later = sv.parent_block()
        assert later is not None
        later.insert_op_before(again, sv)
        sv.results[0].replace_all_uses_with(again.result)
        _erase_dead(sv)
    return copy


def _erase_dead(op: Operation) -> None:
    """Erase `op` and the ops only it used (arithmetic, math, loads, addresses)."""
    stack = [op]
    while stack:
        top = stack.pop()
        if top.parent is None or any(r.uses for r in top.results):
            continue
        operands = [v.owner for v in top.operands if isinstance(v.owner, Operation)]
        top.detach()
        top.erase()
        stack += [o for o in operands if isinstance(o, pto.LoadOp | pto.AddPtrOp) or
                  o.name.startswith(("arith.", "math.")) and
                  not isinstance(o, arith.ConstantOp)]
