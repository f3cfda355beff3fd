"""Counted loops of a lane function in `cf` form, found again after `convert-scf-to-cf`.

The range check of a fast block (fast_blocks.py) takes the counter of a loop with uniform
bounds and a constant positive step as a further coordinate of the block's box of lanes: an
access at `A + r * ncols + c` inside `for c in range(ncols)` is checked at c = 0 and at
c = ncols - 1, then runs unchecked. In a phase's lane function the loop is still an `scf.for`;
a kernel without phases reaches fast_blocks.py after `convert-scf-to-cf`, which lowered the
loop to (xDSL's ForLowering)

    ^init: ... cf.br ^cond(lb, inits...)
    ^cond(iv, carried...): %t = arith.cmpi slt, iv, ub ; cf.cond_br %t, ^body, ^end
    ^body ... ^last: %n = arith.addi iv, step ; cf.br ^cond(n, ...)

This module recognises that shape: `^cond` has exactly two incoming edges, one from outside
the body passing a uniform lb and one from inside passing `iv + step` (step a constant > 0),
and every use of `iv` other than the comparison and the step is in a body block (the blocks
reachable from `^body` without passing `^cond`, each entered only from the body or `^cond`).
So wherever `iv` is used (except the loop test itself) the body runs, and `lb <= iv <= last`
with `last = lb + (ub - 1 - lb) // step * step`. docs/native.md#fast-blocks.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, cf, func
from xdsl.dialects.builtin import i32
from xdsl.ir import Block, Operation, SSAValue


class CfLoop:
    """A counted loop in `cf` form: `lb`, `ub` (uniform i32 values) and `step` (an
    `arith.constant` > 0) as an `scf.for` has them, and `test`, the loop's own comparison
    `iv < ub` (not a lane guard: full_blocks.py must keep it)."""

    def __init__(self, lb: SSAValue, ub: SSAValue, step: SSAValue, test: arith.CmpiOp):
        self.lb, self.ub, self.step, self.test = lb, ub, step, test


def _edges(fn: func.FuncOp) -> dict[Block, list[tuple[Block, Operation, int]]]:
    """Per block, its incoming edges: (source block, terminator, successor index)."""
    edges: dict[Block, list[tuple[Block, Operation, int]]] = {}
    for blk in fn.body.blocks:
        term = blk.last_op
        if term is None:
            continue
        for index, succ in enumerate(term.successors):
            edges.setdefault(succ, []).append((blk, term, index))
    return edges


def _edge_args(term: Operation, index: int) -> tuple[SSAValue, ...] | None:
    """The block arguments a `cf.br` / `cf.cond_br` passes along successor `index`."""
    if isinstance(term, cf.BranchOp):
        return tuple(term.arguments)
    if isinstance(term, cf.ConditionalBranchOp):
        return tuple(term.then_arguments if index == 0 else term.else_arguments)
    return None


def _body(head: Block, entry: Block,
          edges: dict[Block, list[tuple[Block, Operation, int]]]) -> set[Block] | None:
    """The blocks reachable from `entry` without passing `head`, when each is entered only
    from that set (or `entry` only from `head`): then every one runs only after `head`'s test
    passed. None otherwise."""
    body, stack = {entry}, [entry]
    while stack:
        blk = stack.pop()
        term = blk.last_op
        for succ in term.successors if term is not None else ():
            if succ is not head and succ not in body:
                body.add(succ)
                stack.append(succ)
    for blk in body:
        sources = [src for src, _, _ in edges.get(blk, [])]
        if blk is entry:
            if sources != [head]:
                return None
        elif any(src not in body for src in sources):
            return None
    return body


def cf_loops(fn: func.FuncOp, uniform: Callable[[SSAValue], bool]) -> dict[SSAValue, CfLoop]:
    """The counters of `fn`'s counted loops in `cf` form (see the module doc), by value."""
    found: dict[SSAValue, CfLoop] = {}
    edges = _edges(fn)
    for head in fn.body.blocks:
        term = head.last_op
        if not isinstance(term, cf.ConditionalBranchOp) or not head.args or \
                head.args[0].type != i32:
            continue
        iv = head.args[0]
        test = term.cond.owner
        if not isinstance(test, arith.CmpiOp) or test.parent_block() is not head or \
                arith.CMPI_COMPARISON_OPERATIONS[test.predicate.value.data] != "slt" or \
                test.lhs is not iv or not uniform(test.rhs):
            continue
        entry = term.successors[0]
        if entry is head or term.successors[1] is head:
            continue
        body = _body(head, entry, edges)
        incoming = edges.get(head, [])
        if body is None or len(incoming) != 2:
            continue
        lb = step = stepped = None
        for src, br, index in incoming:
            args = _edge_args(br, index)
            if args is None or not args:
                break
            if src in body:
                op = args[0].owner
                if isinstance(op, arith.AddiOp) and op.lhs is iv and \
                        isinstance(op.rhs.owner, arith.ConstantOp) and \
                        op.rhs.owner.value.value.data > 0:
                    step, stepped = op.rhs, op
            elif src is not head and uniform(args[0]):
                lb = args[0]
        if lb is None or step is None or stepped is None:
            continue
        if all(use.operation is test or use.operation is stepped or
               use.operation.parent_block() in body for use in iv.uses):
            found[iv] = CfLoop(lb, test.rhs, step, test)
    return found
