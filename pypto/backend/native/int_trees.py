"""An integer tree reduction in L1 as one sum by lane 0 (docs/native.md#integer-trees).

atomic_total's block tree (tests/kernels/test_reduction.py)

    s = 128
    for _ in range(8):
        if tid < s:
            buf[tid] = buf[tid] + buf[tid + s]
        pto.barrier_block()
        s = s // 2
    ... only buf[0] is read after it

leaves in `buf[0]` the sum of `buf[0 .. 256)`, added pairwise. For integers that sum does not
depend on the order of the additions: `arith.addi` wraps modulo 2^width, a commutative group,
so any order gives the same bits. `sum_int_trees` therefore replaces the loop, on the native
backend's own copy of the kernel, with

    if tid == 0:
        acc = 0
        for k in range(256):
            acc = acc + buf[k]
        buf[0] = acc
    pto.barrier_block()

which LLVM vectorises as one reduction over the buffer, instead of eight phases over 4096
blocks (the tree's steps). The interpreter, the oracle, keeps running the tree as written;
the two agree bit for bit where the rewrite applies:

- the loop is at the kernel's top level, counts a constant `N >= 1` trips, carries one
  integer `s` from the constant `S = 2^(N-1)` halved each trip (`s // 2`, `s >> 1`), and its
  body is `if tid < s: buf[tid] = buf[tid] + buf[tid + s]` (in either order of the operands,
  `tid` the lane's `local_id(0)`), `barrier_block()` and the halving, nothing else but
  address arithmetic;
- the kernel was compiled for a 1-D block of at least `S` lanes (each step's lanes `tid < s`
  all exist: with fewer the tree would add fewer elements) and `buf` holds at least `2 S`
  integers (the steps' reads stay inside it: no access can fail);
- every other access to `buf` is a store at `buf + tid` before the loop or a load of
  `buf[0]` after it (the rewrite leaves the other elements' partial sums unwritten; nothing
  reads them), and `s`'s final value is replaced by its constant (0).

Elements no lane wrote hold L1's poison in both backends and are added alike.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import Block, Operation, Region, SSAValue

from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.phase_merge import one_dimensional
from pypto.dialects import pto

ENABLED = True
"""Off: integer trees run step by step (for measuring; the cache key follows the IR)."""


def _const(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return int(op.value.value.data)
    return None


def _is_tid(v: SSAValue) -> bool:
    op = v.owner
    return isinstance(op, pto.GetLocalIdOp) and int(op.dim.value.data) == 0


def _site(ptr: SSAValue) -> tuple[SSAValue, list[SSAValue]] | None:
    """(the L1 buffer, the offsets added to it) of an `addptr` chain, or None."""
    offsets: list[SSAValue] = []
    while isinstance(ptr.owner, pto.AddPtrOp):
        offsets.append(ptr.owner.offset)
        ptr = ptr.owner.ptr
    if not isinstance(ptr.owner, pto.AllocLocalOp):
        return None
    return ptr, offsets


def _offsets_are(offsets: list[SSAValue], want: list[SSAValue | None]) -> bool:
    """Are `offsets` the lane id (None in `want`) and the values of `want`, zeros aside?"""
    rest = [o for o in offsets if _const(o) != 0]
    if len(rest) != len(want):
        return False
    for w in want:
        hit = next((o for o in rest if (_is_tid(o) if w is None else o is w)), None)
        if hit is None:
            return False
        rest.remove(hit)
    return True


def _halves(op: Operation, s: SSAValue) -> bool:
    if isinstance(op, arith.FloorDivSIOp | arith.DivSIOp | arith.DivUIOp):
        return op.lhs is s and _const(op.rhs) == 2
    if isinstance(op, arith.ShRSIOp | arith.ShRUIOp):
        return op.lhs is s and _const(op.rhs) == 1
    return False


def _tree(loop: scf.ForOp, lanes: int) -> tuple[SSAValue, int] | None:
    """(the buffer, S) when `loop` is an integer tree of the module doc's shape, else None."""
    lb, ub, step = _const(loop.lb), _const(loop.ub), _const(loop.step)
    if lb is None or ub is None or step is None or step <= 0 or len(loop.iter_args) != 1:
        return None
    trips = max(0, -(-(ub - lb) // step))
    start = _const(loop.iter_args[0])
    if trips < 1 or start != 1 << (trips - 1) or start > lanes:
        return None
    body = loop.body.blocks[0]
    s = body.args[1]
    ops = [o for o in body.ops if not isinstance(o, pto.AddPtrOp | arith.ConstantOp | arith.CmpiOp)]
    if len(ops) != 4 or not isinstance(ops[0], scf.IfOp) or \
            not isinstance(ops[1], pto.BarrierBlockOp) or not _halves(ops[2], s) or \
            not isinstance(ops[3], scf.YieldOp) or ops[3].operands[0] is not ops[2].results[0]:
        return None
    step_if = ops[0]
    cond = step_if.cond.owner
    if step_if.results or not isinstance(cond, arith.CmpiOp) or cond.predicate.value.data != 2 \
            or not _is_tid(cond.lhs) or cond.rhs is not s or \
            (step_if.false_region.blocks and len(step_if.false_region.blocks[0].ops) > 1):
        return None
    inner = [o for o in step_if.true_region.blocks[0].ops
             if not isinstance(o, pto.AddPtrOp | arith.ConstantOp | scf.YieldOp)]
    if len(inner) != 4 or not isinstance(inner[3], pto.StoreOp) or \
            not isinstance(inner[2], arith.AddiOp) or inner[3].value is not inner[2].result:
        return None
    loads = inner[:2]
    if not all(isinstance(o, pto.LoadOp) for o in loads) or \
            {inner[2].lhs, inner[2].rhs} != {loads[0].result, loads[1].result}:
        return None
    store = _site(inner[3].ptr)
    sites = [_site(o.ptr) for o in loads]
    if store is None or any(x is None or x[0] is not store[0] for x in sites):
        return None
    buf = store[0]
    if not _offsets_are(store[1], [None]) or \
            sorted(_offsets_are(x[1], [None]) for x in sites) != [False, True] or \
            not any(_offsets_are(x[1], [None, s]) for x in sites):
        return None
    t = buf.type
    if not isinstance(pto.element_type_of(t), IntegerType) or t.size < 2 * start:
        return None
    return buf, start


def _other_uses_fit(kernel: func.FuncOp, loop: scf.ForOp, buf: SSAValue) -> bool:
    """Every access to `buf` outside `loop`: a store at `buf + tid` before it, or a load of
    `buf[0]` after it; no other use of the buffer's addresses."""
    order = {op: i for i, op in enumerate(kernel.walk())}
    inside = set(loop.walk())
    at = order[loop]
    pending = list(buf.uses)
    while pending:
        use = pending.pop()
        op = use.operation
        if op in inside:
            continue
        if isinstance(op, pto.AddPtrOp) and use.index == 0:
            pending.extend(op.result.uses)
            continue
        site = _site(op.ptr) if isinstance(op, pto.LoadOp | pto.StoreOp) and \
            use.index == (1 if isinstance(op, pto.StoreOp) else 0) else None
        if site is None or site[0] is not buf:
            return False
        if isinstance(op, pto.StoreOp):
            if order[op] > at or not _offsets_are(site[1], [None]):
                return False
        elif order[op] < at or not _offsets_are(site[1], []):
            return False
    return True


def _replacement(loop: scf.ForOp, buf: SSAValue, total: int, tid: SSAValue) -> list[Operation]:
    """`if tid == 0: buf[0] = sum(buf[0:total])` then `barrier_block()`."""
    i32 = IntegerType(32)
    elem = pto.element_type_of(buf.type)
    zero, count, one = (arith.ConstantOp(IntegerAttr(v, i32)) for v in (0, total, 1))
    acc0 = arith.ConstantOp(IntegerAttr(0, elem))
    body = Block(arg_types=[i32, elem])
    ptr = pto.AddPtrOp(buf, body.args[0])
    load = pto.LoadOp(ptr.result)
    add = arith.AddiOp(body.args[1], load.result)
    body.add_ops([ptr, load, add, scf.YieldOp(add.result)])
    summed = scf.ForOp(zero.result, count.result, one.result, [acc0.result], Region(body))
    first = pto.AddPtrOp(buf, zero.result)
    then = Block()
    then.add_ops([acc0, summed, first, pto.StoreOp(summed.results[0], first.result),
                  scf.YieldOp()])
    is_first = arith.CmpiOp(tid, zero.result, "eq")
    guarded = scf.IfOp(is_first.result, [], Region(then))
    return [zero, count, one, is_first, guarded, pto.BarrierBlockOp()]


def sum_int_trees(kernel: func.FuncOp) -> func.FuncOp:
    """A copy of `kernel` whose integer L1 trees are one sum each (see the module doc), or
    `kernel` itself when it has none. `kernel` must carry the compiled block (BLOCK_ATTR)."""
    if not ENABLED or not one_dimensional(kernel):
        return kernel
    lanes = int(kernel.attributes[BLOCK_ATTR].data[0].value.data)  # type: ignore[attr-defined]
    body = kernel.body.blocks[0]
    found = [i for i, op in enumerate(body.ops) if isinstance(op, scf.ForOp)
             and (tree := _tree(op, lanes)) is not None and _other_uses_fit(kernel, op, tree[0])]
    if not found:
        return kernel
    copy = kernel.clone()
    block = copy.body.blocks[0]
    ops = list(block.ops)
    tid_op = next((o for o in block.ops if isinstance(o, pto.GetLocalIdOp)
                   and int(o.dim.value.data) == 0), None)
    if tid_op is None:
        return kernel
    for i in found:
        loop = ops[i]
        assert isinstance(loop, scf.ForOp)
        tree = _tree(loop, lanes)
        assert tree is not None
        buf, start = tree
        if list(block.ops).index(tid_op) > list(block.ops).index(loop):
            return kernel
        new = _replacement(loop, buf, 2 * start, tid_op.results[0])
        block.insert_ops_before(new, loop)
        trips = max(0, -(-(_const(loop.ub) - _const(loop.lb)) // _const(loop.step)))  # type: ignore
        final = arith.ConstantOp(IntegerAttr(start >> trips, loop.results[0].type))
        block.insert_op_before(final, loop)
        loop.results[0].replace_all_uses_with(final.result)
        loop.detach()
        loop.erase()
    return copy


__all__ = ["ENABLED", "sum_int_trees"]
