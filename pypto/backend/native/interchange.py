"""Strided loops run iteration by iteration over the block's lanes (a loop interchange).

A lane function runs a lane's whole loop before the next lane starts. For a grid-stride loop
(`for k in range(iters): y[i + k * stride] = ...`) that means each lane walks the whole tensor
at a stride of the launch's lane count — addresses a power of two apart that land in one cache
set — and LLVM cannot vectorise across lanes (the lane loop is outside). The interpreter's
lockstep order is the other one: iteration k for every lane, then k + 1.

Running the loop at block level with a lane loop per iteration is exactly what the phase plan
does for a loop holding a barrier (docs/native.md#phases). So `interchange_strided_loops` puts a
`pto.barrier_block` at the start of the body of each top-level `scf.for` (uniform bounds, outside
any lane-dependent branch) that has an HBM access *strided across iterations and contiguous
across lanes* (its index has `local_id(0)` with coefficient 1 and the loop's counter with a
coefficient that is not a small constant: a grid-stride or block-stride loop), on a copy of the
kernel that only the native backend compiles. It also replaces a value a loop of step 1 carries
as `v + u` (u uniform) by `init + (counter - lb) * u` (exact in wrapping arithmetic too: both are the same sum
modulo 2^n), dropping the carried value when nothing after the loop reads it, so the index is
lane-affine and the phase's accesses are proven in range per iteration (fast phases).

Exact: a barrier only orders; lanes that do not communicate within the loop (what the support
check proves before a kernel is compiled, lane_independence.py) give the same result in any
order that keeps each lane's program order, and the barrier's order (iteration-major, lanes
inside) is the interpreter's own. `NativeKernel` compiles the copy only when the support check
and the phase plan accept it, else the kernel as written. docs/native.md#lane-independence.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from pypto.backend.native.lane_independence import Form, Opaque, IndexForms
from pypto.dialects import pto
from pypto.dialects.traits import memory_accesses, offset_base

SMALL_STRIDE = 32
"""A counter coefficient below this (conv1d's taps, `x + i + t`) keeps the loop inside the lane:
each lane's iterations are then close together, and a phase per iteration would cost more."""


def _offset_form(forms: IndexForms, pointer: SSAValue) -> Form | None:
    form = Form.const(0)
    value = pointer
    while not isinstance(value, BlockArgument):
        base = offset_base(value.owner)
        if base is None:
            return None
        form = form + forms.of(value.owner.operands[1])
        value = base
    return form


def _strided(forms: IndexForms, loop: scf.ForOp) -> bool:
    """Does `loop` access HBM at lane-contiguous, iteration-strided indices?"""
    counter = ("k", loop)
    by = _constant(loop.step)
    for op in loop.body.walk():
        if not isinstance(op, pto.LoadOp | pto.StoreOp | pto.FmaOp):
            continue
        for access in memory_accesses(op):
            if access.space != "global":
                continue
            try:
                form = _offset_form(forms, op.operands[access.operand])
            except Opaque:
                continue
            if form is None:
                continue
            coefs = dict(form.coefs)
            step = coefs.get(counter)
            if isinstance(step, int) and by is not None:
                step *= by  # (the memory stride of one iteration: `range(0, n, BLOCK)`)
            if coefs.get(("lid", 0)) == 1 and step is not None and \
                    not (isinstance(step, int) and abs(step) < SMALL_STRIDE):
                return True
    return False


def _uniform_bounds(forms: IndexForms, loop: scf.ForOp) -> bool:
    try:
        return all(not forms.of(v).coefs for v in (loop.lb, loop.ub, loop.step))
    except Opaque:
        return False


def _constant(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _outside(value: SSAValue, loop: scf.ForOp) -> bool:
    """Is `value` defined outside `loop` (so it can be used at the start of its body)?"""
    owner = value.owner if isinstance(value.owner, Operation) else value.block.parent_op()
    while owner is not None:
        if owner is loop:
            return False
        owner = owner.parent_op()
    return True


def _substitute(loop: scf.ForOp) -> scf.ForOp:
    """Replace carried `v + u` values by `init + k * u`; a loop whose carried values all go
    and whose results are unused is rebuilt without them. Returns the loop (maybe new)."""
    body = loop.body.block
    if _constant(loop.step) != 1:  # (k = c - lb: a division by the step would hide the
        return loop                # form from the lane-independence analysis)
    counter = body.args[0]
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    gone = []
    first = body.first_op
    for index, arg in enumerate(body.args[1:]):
        yielded = yield_op.operands[index]
        add = yielded.owner
        if not isinstance(add, arith.AddiOp):
            continue
        a, b = add.operands
        u = b if a is arg else a if b is arg else None
        if u is None or not _outside(u, loop) or not isinstance(arg.type, type(u.type)) or \
                arg.type != u.type or counter.type != arg.type:
            continue
        new_ops: list[Operation] = []
        k: SSAValue = counter
        if _constant(loop.lb) != 0:
            sub = arith.SubiOp(counter, loop.lb)
            new_ops.append(sub)
            k = sub.result
        mul = arith.MuliOp(k, u)
        value = arith.AddiOp(loop.iter_args[index], mul)
        new_ops += [mul, value]
        body.insert_ops_before(new_ops, first)
        arg.replace_uses_with_if(value.result, lambda use: use.operation is not add)
        if not list(loop.results[index].uses) and len(list(add.result.uses)) == 1:
            gone.append(index)
    if not gone or len(gone) != len(body.args) - 1:
        return loop
    # every carried value replaced and unused after the loop: a loop without them
    yield_op.detach()
    yield_op.erase()
    for index in reversed(range(len(body.args) - 1)):
        arg = body.args[index + 1]
        for use in list(arg.uses):  # (only the dead `arg + u` feeding the old yield)
            dead = use.operation
            dead.detach()
            dead.erase()
        body.erase_arg(arg)
    body.add_op(scf.YieldOp())
    region = Region()
    loop.body.move_blocks(region)
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [], region)
    loop.parent_block().insert_op_before(new, loop)
    loop.detach()
    loop.erase()
    return new


def interchange_strided_loops(kernel: func.FuncOp) -> func.FuncOp:
    """A copy of `kernel` whose top-level strided loops hold a leading barrier (see the module
    doc), or `kernel` itself when it has none."""
    forms = IndexForms(kernel)
    picked = [i for i, op in enumerate(kernel.body.block.ops)
              if isinstance(op, scf.ForOp) and _uniform_bounds(forms, op) and
              _strided(forms, op)]
    if not picked:
        return kernel
    copy = kernel.clone()
    ops = list(copy.body.block.ops)
    for i in picked:
        loop = _substitute(ops[i])
        block: Block = loop.body.block
        block.insert_op_before(pto.BarrierBlockOp(), block.first_op)
    return copy
