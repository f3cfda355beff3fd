"""Tile stores as row copies (docs/native.md#tile-stores).

A phase that stages a tile in L1 (`As[ty * 16 + tx] = A[row * K + t + tx]`) is, per row of
lanes, a copy of consecutive elements. LLVM turns a row's lane loop into one `memcpy` (or a few
vector moves) only when it can see that: the lane loop's trip count a constant (then the copy
has a constant length and is inlined, not a libc call per row) and each address's offset an
affine function of `tx` (`sext(bx * 16 + tx)` is not one: LLVM cannot push the extension
through an `add` it does not know cannot wrap, and vectorises the loop over rows instead, with
gathers). Both are decided here from the range analysis, not from how the kernel is written:

- `tile_store(ops)`: the phase is straight-line loads, address arithmetic and L1 stores (no
  loop, call, atomic, HBM write or block-level instruction), so its constant lane loops (in the
  interpreter's lane order) are the same loop nest as the launch's, with known bounds;
- `split_offsets(fast)`: in a fast lane function, `p + (a + b)` with `a + b` proven not to wrap
  (the range function checked it: `NSW_ATTR`) becomes `(p + a) + b`, so each term is extended
  to 64 bits on its own (the same 64-bit offset, since the 32-bit sum does not wrap).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, func, scf
from xdsl.ir import Operation

from pypto.backend.native.fast_blocks import NSW_ATTR
from pypto.dialects import pto
from pypto.dialects.traits import memory_accesses

_PLAIN = (pto.StoreOp, pto.LoadOp, pto.AddPtrOp)


def tile_store(ops: Sequence[Operation]) -> bool:
    """Is this phase straight-line code whose only writes are `pto.store`s to L1?"""
    stores = 0
    for top in ops:
        for op in top.walk():
            if isinstance(op, func.CallOp | scf.ForOp | scf.WhileOp | scf.IfOp):
                return False
            if op.name.startswith("pto.") and not op.name.startswith("pto.get_") and \
                    not isinstance(op, _PLAIN):
                return False
            for access in memory_accesses(op):
                if access.kind == "read":
                    continue
                if not isinstance(op, pto.StoreOp) or access.space != "local":
                    return False
                stores += 1
    return stores > 0


def split_offsets(fast: func.FuncOp) -> int:
    """Split `pto.addptr p, (a + b)` into `pto.addptr (pto.addptr p, a), b` where the 32-bit
    `a + b` carries `NSW_ATTR` (proven not to wrap by the range function); repeatedly, so every
    term of a proven sum is a separate 64-bit offset. Returns the number of splits."""
    splits = 0
    work = [op for op in fast.walk() if isinstance(op, pto.AddPtrOp)]
    while work:
        op = work.pop()
        add = op.offset.owner
        if not isinstance(add, arith.AddiOp) or NSW_ATTR not in add.attributes:
            continue
        inner = pto.AddPtrOp(op.ptr, add.lhs)
        block = op.parent_block()
        assert block is not None
        block.insert_op_before(inner, op)
        op.operands = [inner.result, add.rhs]
        work += [inner, op]
        splits += 1
    return splits
