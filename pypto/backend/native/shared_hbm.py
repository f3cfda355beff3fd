"""Lanes that share HBM elements: each write to such a tensor a phase of its own (loop fission).

The interpreter runs every op for its whole lane vector before the next op; compiled code runs
a block's lanes one after another (docs/native.md#phases). Where the support check cannot
prove that lanes write disjoint HBM elements no other lane reads (support.py: lane-private,
one write, lane_independence.py), the tensor is *shared*: its writes become cuts of the phase
plan exactly as L1 writes are (phases.py) — a write ends its phase, a phase that writes a
shared tensor reads none — so every lane's load after a write sees every lane's write, stores
to one element land in lane order (the last lane wins, the interpreter's rule), and a load
before a write sees no lane's write, as in lockstep.

That reproduces the interpreter only when its lane vector is the block: the interpreter runs
a launch's blocks as one vector (grid and batch modes), so a shared tensor's kernel is compiled
for one-block launches and refused at the launch otherwise (jit.py `unsupported_launch`; "auto":
the interpreter). The support check records the shared parameters on the kernel
(`SHARED_ATTR`), which the phase plan and the launch check read.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64
from xdsl.ir import BlockArgument, Operation, SSAValue

from pypto.dialects import pto
from pypto.dialects.traits import memory_accesses

SHARED_ATTR = "pto.native_shared_hbm"
"""On a kernel: the indices of its parameters whose elements lanes may share (the writes are
cuts of the phase plan)."""


def mark(kernel: func.FuncOp, roots: list[BlockArgument]) -> None:
    """Record `roots` as the kernel's shared parameters (none: no attribute)."""
    if roots:
        kernel.attributes[SHARED_ATTR] = ArrayAttr(
            [IntegerAttr(r.index, i64) for r in sorted(roots, key=lambda r: r.index)])
    elif SHARED_ATTR in kernel.attributes:
        del kernel.attributes[SHARED_ATTR]


def has_shared(kernel: Operation) -> bool:
    """Does the kernel write a tensor whose elements lanes may share?"""
    return SHARED_ATTR in kernel.attributes


def _kernel_of(op: Operation) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent


def _root(value: SSAValue) -> SSAValue:
    while isinstance(value.owner, pto.AddPtrOp):
        value = value.owner.ptr
    return value


def touches(op: Operation, kind: str) -> bool:
    """Does `op` itself read (`kind` "read") or write ("write") a shared HBM tensor?"""
    accesses = [a for a in memory_accesses(op) if a.kind == kind and a.space == "global"]
    if not accesses:
        return False
    kernel = _kernel_of(op)
    if kernel is None or SHARED_ATTR not in kernel.attributes:
        return False
    attr = kernel.attributes[SHARED_ATTR]
    assert isinstance(attr, ArrayAttr)
    shared = {a.value.data for a in attr.data}  # type: ignore[attr-defined]
    args = kernel.regions[0].blocks[0].args
    for access in accesses:
        root = _root(op.operands[access.operand])
        if isinstance(root, BlockArgument) and root.block is kernel.regions[0].blocks[0] and \
                root.index in shared and root is args[root.index]:
            return True
    return False


__all__ = ["SHARED_ATTR", "has_shared", "mark", "touches"]
