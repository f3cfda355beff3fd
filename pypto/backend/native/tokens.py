"""Proving that no in-flight hazard can fire: async copies, their tokens, loops that carry them.

The interpreter performs an async copy when it is issued and keeps its regions *in flight* until
the `pto.wait` of its token (or `pto.wait_all`); touching them meanwhile is a `RaceError`
(docs/isa.md#ptoasync_load). Compiled code does the copy at issue too (collectives.py) and
compiles waits to nothing, without the in-flight checks. That is exact when no check can fire,
which this module proves or refuses (phases.py calls `check_tokens`; "auto" then runs the
interpreter, which raises the error if the kernel has one).

The proof walks the kernel's structured code in order with an abstract state:

- *pending*: the token values (SSA values) whose copy may still be in flight, plus *anonymous*
  sets of copies whose token went out of scope (only `pto.wait_all` completes those);
- *completed*: token values waited for on every path to this point.

A pending value denotes the copies it may be (`_may`: a copy's result is that copy; an `if`'s
or a loop's token result any copy its yields or inits may be), minus what is already complete:
a value waited for is complete, and an `if` result whose yield in some branch is a completed
value is complete in that branch (`resolve`). Every op touching memory — lane accesses and
block-level instructions — is checked against every copy pending: an L1 buffer a pending load
writes or a pending store reads (for a write), an HBM tensor a pending store writes or a
pending load reads (for a write), compared by buffer and by tensor parameter (two parameters
not both `pto.noalias` may be one tensor). A loop's body starts with its token iter args
pending and must end with nothing pending but its yielded tokens and what was pending before
it: then the state at the head is the same on every iteration (a loop invariant).

This is the double-buffering pattern (`pto-double-buffer`, tests/kernels/test_double_buffer.py):
the prefetch of tile k+1 is pending while tile k, waited for, is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func, scf
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from pypto import dtypes
from pypto.diagnostics import op_location
from pypto.dialects import pto
from pypto.dialects.traits import memory_accesses

ASYNC = (pto.AsyncLoadOp, pto.AsyncStoreOp)


class TokenRefused(Exception):
    """A hazard the interpreter would check might fire (reason, op)."""

    def __init__(self, reason: str, op: Operation):
        super().__init__(reason)
        self.reason = reason
        self.op = op


def _is_token(v: SSAValue) -> bool:
    return isinstance(v.type, pto.TokenType)


def _root(v: SSAValue) -> SSAValue:
    """The `pto.alloc_local` result or kernel parameter a pointer is an offset of."""
    while not isinstance(v, BlockArgument) and isinstance(v.owner, pto.AddPtrOp):
        v = v.owner.ptr
    return v


@dataclass
class _State:
    pending: set[SSAValue] = field(default_factory=set)
    anonymous: set[Operation] = field(default_factory=set)
    completed: set[SSAValue] = field(default_factory=set)

    def copy(self) -> "_State":
        return _State(set(self.pending), set(self.anonymous), set(self.completed))


class _Checker:
    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        attrs = kernel.arg_attrs.data if kernel.arg_attrs is not None else ()
        self.noalias = {a for i, a in enumerate(kernel.body.block.args)
                        if i < len(attrs) and "pto.noalias" in attrs[i].data}
        self.may_sets = self._may_sets()

    # what a token value may denote ------------------------------------------------------------

    def _sources(self, v: SSAValue) -> list[SSAValue]:
        """The token values `v` takes its copy from (a loop's init and yield, an `if`'s
        yields, a loop result's iter arg)."""
        if isinstance(v, BlockArgument):
            loop = v.block.parent_op()
            if isinstance(loop, scf.ForOp) and v.index > 0:
                return [loop.iter_args[v.index - 1],
                        loop.body.block.last_op.operands[v.index - 1]]
            return []
        if isinstance(v.owner, scf.IfOp):
            return [r.blocks[0].last_op.operands[v.index] for r in v.owner.regions
                    if r.blocks]
        if isinstance(v.owner, scf.ForOp):
            return [v.owner.body.block.args[v.index + 1]]
        return []

    def _may_sets(self) -> dict[SSAValue, frozenset[Operation]]:
        """Every copy each token value may denote, whatever was waited for: a fixpoint over
        the kernel's token values (a loop's value feeds its own yield)."""
        values: list[SSAValue] = []
        for op in self.kernel.walk():
            values += [r for r in op.results if _is_token(r)]
            for region in op.regions:
                for b in region.blocks:
                    values += [a for a in b.args if _is_token(a)]
        sets: dict[SSAValue, set[Operation]] = {
            v: ({v.owner} if not isinstance(v, BlockArgument) and isinstance(v.owner, ASYNC)
                else set()) for v in values}
        changed = True
        while changed:
            changed = False
            for v in values:
                before = len(sets[v])
                for src in self._sources(v):
                    sets[v] |= sets.get(src, set())
                changed |= len(sets[v]) != before
        return {v: frozenset(c) for v, c in sets.items()}

    def may(self, v: SSAValue) -> frozenset[Operation]:
        """Every copy `v` may denote, whatever was waited for (flow-insensitive)."""
        return self.may_sets.get(v, frozenset())

    def resolve(self, v: SSAValue, state: _State) -> set[Operation]:
        """The copies `v` may denote that may still be in flight."""
        if v in state.completed:
            return set()
        owner = v.owner
        if isinstance(owner, scf.IfOp):
            out: set[Operation] = set()
            for r in owner.regions:
                if r.blocks:
                    out |= self.resolve(r.blocks[0].last_op.operands[v.index], state)
            return out
        return set(self.may(v))

    def in_flight(self, state: _State) -> set[Operation]:
        out = set(state.anonymous)
        for v in state.pending:
            out |= self.resolve(v, state)
        return out

    # hazards --------------------------------------------------------------------------------

    def _same_tensor(self, a: SSAValue, b: SSAValue) -> bool:
        if a is b:
            return True
        if isinstance(a, BlockArgument) and isinstance(b, BlockArgument) and \
                a.block is b.block:  # two parameters: one tensor unless both are noalias
            return not (a in self.noalias and b in self.noalias)
        return False

    def _touches(self, copy: Operation) -> list[tuple[SSAValue, str, str]]:
        """(root, space, kind) of the regions an in-flight copy holds: a load's L1
        destination and HBM source, a store's L1 source and HBM destination."""
        return [(_root(copy.operands[a.operand]), a.space, a.kind)
                for a in memory_accesses(copy)]

    def check(self, op: Operation, state: _State) -> None:
        accesses = [(_root(op.operands[a.operand]), a.space, a.kind)
                    for a in memory_accesses(op)]
        if not accesses:
            return
        for copy in self.in_flight(state):
            for root, space, kind in accesses:
                for held, held_space, held_kind in self._touches(copy):
                    if space != held_space or (kind == "read" and held_kind == "read"):
                        continue
                    if space == "local":
                        clash = root is held or _l1_overlap(root, held)
                    else:
                        clash = self._same_tensor(root, held)
                    if clash:
                        raise TokenRefused(
                            f"{op_location(op, unknown='here')}: '{op.name}' may touch the "
                            f"{'L1 buffer' if space == 'local' else 'tensor'} of the async "
                            f"copy at {op_location(copy, unknown='an earlier line')} while it "
                            f"may still be in flight (the interpreter checks that hazard, "
                            f"compiled code does not: wait for the copy first)", op)

    # the walk -------------------------------------------------------------------------------

    def block(self, block: Block, state: _State) -> None:
        for op in block.ops:
            self.op(op, state)

    def op(self, op: Operation, state: _State) -> None:
        if isinstance(op, pto.WaitOp):
            state.completed.add(op.token)
            state.pending.discard(op.token)
            return
        if isinstance(op, pto.WaitAllOp):
            state.pending.clear()
            state.anonymous.clear()
            return
        if isinstance(op, scf.IfOp):
            self._if(op, state)
            return
        if isinstance(op, scf.ForOp):
            self._for(op, state)
            return
        if op.regions:  # (while loops: no block-level instruction inside, phases.py)
            for o in op.walk():
                if o is not op:
                    self.check(o, state)
                    if isinstance(o, ASYNC):
                        raise TokenRefused(f"{op_location(o, unknown='here')}: an async copy "
                                           f"inside '{op.name}'", o)
            return
        self.check(op, state)
        if isinstance(op, ASYNC):
            state.pending.add(op.results[0])

    def _leaving(self, region_state: _State, yields: dict[SSAValue, set[SSAValue]],
                 inside: Block) -> _State:
        """The state after a region: yielded pending values become the results, values of
        the region itself that stay pending become anonymous copies."""
        out = _State(set(), set(region_state.anonymous), set(region_state.completed))
        for v in region_state.pending:
            out.pending |= yields.get(v, set())
            if not _defined_in(v, inside):
                out.pending.add(v)  # (still pending itself too)
            elif v not in yields:
                out.anonymous |= self.resolve(v, region_state)
        return out

    def _if(self, op: scf.IfOp, state: _State) -> None:
        outs: list[_State] = []
        for region in op.regions:
            inner = state.copy()
            if region.blocks:
                b = region.blocks[0]
                self.block(b, inner)
                yields: dict[SSAValue, set[SSAValue]] = {}
                for y, r in zip(b.last_op.operands, op.results):
                    if _is_token(y):
                        yields.setdefault(y, set()).add(r)
                outs.append(self._leaving(inner, yields, b))
            else:
                outs.append(inner)
        merged = _State(set(), set(), set(state.completed))
        merged.completed |= set.intersection(*(o.completed for o in outs)) if outs else set()
        for o in outs:
            merged.pending |= o.pending
            merged.anonymous |= o.anonymous
        # a result whose every branch yields a completed value is complete
        for r in op.results:
            if _is_token(r) and all(
                    reg.blocks and reg.blocks[0].last_op.operands[r.index] in o.completed
                    for reg, o in zip(op.regions, outs)):
                merged.completed.add(r)
                merged.pending.discard(r)
        state.pending, state.anonymous, state.completed = (merged.pending, merged.anonymous,
                                                           merged.completed)

    def _for(self, op: scf.ForOp, state: _State) -> None:
        body = op.body.block
        tokens = [i for i, a in enumerate(op.iter_args) if _is_token(a)]
        carried = {op.iter_args[i] for i in tokens}
        outer_pending = {v for v in state.pending if v not in carried}
        inner = _State({body.args[i + 1] for i in tokens} | outer_pending,
                       set(state.anonymous), set(state.completed))
        self.block(body, inner)
        y = body.last_op
        allowed = {y.operands[i] for i in tokens} | outer_pending
        left = {v for v in inner.pending if v not in allowed and self.resolve(v, inner)}
        if left or inner.anonymous - state.anonymous:
            raise TokenRefused(f"{op_location(op, unknown='here')}: a copy issued in this "
                               f"loop may still be in flight at the end of an iteration "
                               f"without its token carried to the next one", op)
        state.pending = outer_pending | {op.results[i] for i in tokens}


def _defined_in(v: SSAValue, block: Block) -> bool:
    owner = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
    while owner is not None:
        if owner is block:
            return True
        parent = owner.parent_op()
        owner = parent.parent_block() if parent is not None else None
    return False


def _l1_overlap(a: SSAValue, b: SSAValue) -> bool:
    """Do two L1 buffers (`pto.alloc_local` results) share bytes? (Unplaced: assume so.)"""
    oa, ob = a.owner, b.owner
    if not isinstance(oa, pto.AllocLocalOp) or not isinstance(ob, pto.AllocLocalOp):
        return True
    if oa.l1_offset is None or ob.l1_offset is None:
        return True
    sa, sb = _span(oa), _span(ob)
    return sa[0] < sb[1] and sb[0] < sa[1]


def _span(op: pto.AllocLocalOp) -> tuple[int, int]:
    """The bytes of a placed L1 buffer."""
    t = op.result.type
    start = int(op.l1_offset or 0)
    return start, start + t.size * np.dtype(dtypes.np_dtype_of(t.element_type)).itemsize


def check_tokens(kernel: func.FuncOp) -> None:
    """Raise `TokenRefused` unless no in-flight hazard can fire (see the module doc)."""
    if not any(isinstance(op, ASYNC) for op in kernel.walk()):
        return
    checker = _Checker(kernel)
    checker.block(kernel.body.block, _State())
