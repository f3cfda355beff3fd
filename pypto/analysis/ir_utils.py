"""Small questions about the IR that analyses, passes and the cost model all ask, answered once.

    yielded(op, index)        the values the regions of `op` yield for its result `index`
    passes_yield(op)          are `op`'s results the values its regions yield (scf.if, pipeline,
                              stage)?
    root_alloc(address)       the `alloc_local` result an L1 address points into
    constant_int(value)       the int of an `arith.constant`, else None
    kernels(root)             the functions with a body under a module (or any op)
    kernel_of(op)             the `func.func` holding an op
    structured_body(fn, who)  the one block of a function, or a CompileError naming `who` when
                              convert-scf-to-cf split it into blocks and branches
    is_pipeline(op)           a `pto.pipeline` (structure whose body holds stages)
    is_stage(op)              a `pto.stage` (structure inside a pipeline)
    is_stage_yield(op)        the terminator of a pipeline or a stage
    is_tile_load(op)          an async copy into L1 (`pto.async_load`, `npu.copy_in`)

Op facts come from the traits (`pypto.dialects.traits`), never from a list of op classes.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, OpResult, SSAValue

from pypto.diagnostics import attach_op
from pypto.errors import CompileError

from pypto.dialects.traits import (
    declares_buffer,
    forwards_yield,
    offset_base,
    pipe_of,
    starts_copy,
)
from xdsl.traits import IsTerminator


def yielded(op: Operation, index: int) -> list[SSAValue]:
    """The values the regions of `op` yield for its result `index` (one per region block that
    ends with a terminator carrying that many operands)."""
    values: list[SSAValue] = []
    for region in op.regions:
        for block in region.blocks:
            last = block.last_op
            if last is not None and index < len(last.operands):
                values.append(last.operands[index])
    return values


def passes_yield(op: Operation) -> bool:
    """Are `op`'s results the values its regions yield, each region one alternative (an
    `scf.if`) or the only one (a `pto.pipeline` / `pto.stage`)? Loops are not: their results
    are also their initial values."""
    return bool(op.regions) and (isinstance(op, scf.IfOp) or forwards_yield(op))


def root_alloc(address: SSAValue, limit: int = 64) -> SSAValue | None:
    """The buffer (the result of the `alloc_local`) an L1 address points into, followed through
    pointer arithmetic and pipeline / stage results; None when that does not lead to one
    declaration (an argument, a select, a loop-carried address)."""
    value = address
    for _ in range(limit):
        owner = value.owner
        if not isinstance(owner, Operation):
            return None
        if declares_buffer(owner):
            return value
        base = offset_base(owner)
        if base is not None:
            value = base
            continue
        if owner.regions and forwards_yield(owner):
            assert isinstance(value, OpResult)
            values = yielded(owner, value.index)
            if len(values) != 1:
                return None
            value = values[0]
            continue
        return None
    return None


def constant_int(value: SSAValue) -> int | None:
    """The integer of an `arith.constant`, else None (not known at compile time)."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def kernels(root: Operation) -> Iterator[func.FuncOp]:
    """The functions with a body (kernels and helpers alike) under `root`, in order."""
    for op in root.walk():
        if isinstance(op, func.FuncOp) and op.body.blocks:
            yield op


def kernel_of(op: Operation | None) -> func.FuncOp | None:
    """The `func.func` holding `op` (`op` itself when it is one), or None."""
    while op is not None and not isinstance(op, func.FuncOp):
        op = op.parent_op()
    return op


__all__ = ["constant_int", "kernel_of", "kernels", "passes_yield", "root_alloc", "yielded"]


def _structure(op: object) -> bool:
    """Structure whose results are what its single region yields (pipeline, stage). `op` may
    be any value's owner: a block (of a block argument) is no structure."""
    return isinstance(op, Operation) and bool(op.regions) and forwards_yield(op)


def is_stage(op: Operation | None) -> bool:
    """A `pto.stage`: structure (`ForwardsYield`, with a region) inside another such op."""
    return _structure(op) and _structure(op.parent_op())  # type: ignore[union-attr]


def is_pipeline(op: Operation | None) -> bool:
    """A `pto.pipeline`: structure (`ForwardsYield`, with a region) that is not a stage."""
    return _structure(op) and not is_stage(op)


def is_stage_yield(op: Operation) -> bool:
    """The terminator that hands a pipeline's or a stage's values out (`pto.yield`)."""
    return op.has_trait(IsTerminator) and forwards_yield(op)


def is_tile_load(op: Operation) -> bool:
    """An asynchronous copy into L1 (`pto.async_load`, `npu.copy_in`): starts a copy on
    MTE_IN."""
    return starts_copy(op) and pipe_of(op) == "MTE_IN"


def structured_body(fn: func.FuncOp, who: str) -> Block:
    """The single block of `fn`'s body; a `CompileError` at `fn` if it has several.

    Analyses and passes that walk `scf` regions cannot read a function that `convert-scf-to-cf`
    (the native backend's lowering) already turned into blocks and branches; `who` names the one
    that asked ("pass 'pto-allocate-l1'", "the L1 map") in the message.
    """
    if len(fn.body.blocks) == 1:
        return fn.body.block
    raise attach_op(CompileError(
        f"{who} works on structured control flow (scf), but function @{fn.sym_name.data} has "
        f"{len(fn.body.blocks)} blocks (lowered by convert-scf-to-cf?); put the pto passes and "
        f"analyses before the native backend's lowering passes (docs/native.md#the-pipeline)"), fn)
