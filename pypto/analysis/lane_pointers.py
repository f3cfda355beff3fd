"""Where an L1 address points, lane by lane: the job of `LaneModel` (pypto.analysis.lane_values)
that follows pointers. `roots` is the set of buffers (`alloc_local` results, or kernel
arguments) an address may point into; `offset` its element offset from its single root, an
`Affine` per lane under one `Env` of loop values."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.ir import BlockArgument, OpResult, SSAValue

from pypto.analysis.ir_utils import passes_yield, yielded as _yielded
from pypto.analysis.lane_space import Affine, Env, TriBool
from pypto.dialects.traits import declares_buffer, forwards_yield, offset_base

if TYPE_CHECKING:
    from collections.abc import Callable


class PointerModel:
    """Mixin of `LaneModel`: L1 addresses (it provides `eval` and `scalar`)."""

    eval: Callable[[SSAValue, Env], Affine | None]
    eval_bool: Callable[[SSAValue, Env], TriBool]

    def roots(self, ptr: SSAValue, _seen: frozenset[SSAValue] = frozenset()
              ) -> frozenset[SSAValue] | None:
        """The buffers (alloc_local results or function arguments) `ptr` may point into."""
        if ptr in _seen:
            return frozenset()
        seen = _seen | {ptr}
        if isinstance(ptr, BlockArgument):
            owner = ptr.block.parent_op()
            if isinstance(owner, func.FuncOp):
                return frozenset({ptr})
            if isinstance(owner, scf.ForOp) and ptr.index > 0:
                return _union(self.roots(owner.iter_args[ptr.index - 1], seen),
                              *(self.roots(v, seen) for v in _yielded(owner, ptr.index - 1)))
            return None
        if not isinstance(ptr, OpResult):
            return None
        op = ptr.op
        if declares_buffer(op):
            return frozenset({ptr})
        base = offset_base(op)
        if base is not None:
            return self.roots(base, seen)
        if passes_yield(op):
            yielded = _yielded(op, ptr.index)
            return _union(*(self.roots(v, seen) for v in yielded)) if yielded else None
        if isinstance(op, scf.ForOp):
            return _union(self.roots(op.iter_args[ptr.index], seen),
                          *(self.roots(v, seen) for v in _yielded(op, ptr.index)))
        if isinstance(op, arith.SelectOp):
            return _union(self.roots(op.operands[1], seen), self.roots(op.operands[2], seen))
        return None

    def offset(self, ptr: SSAValue, env: Env) -> Affine | None:
        """The element offset of `ptr` from its (single) root, per lane; None if unknown."""
        if isinstance(ptr, BlockArgument):
            owner = ptr.block.parent_op()
            return Affine.const(0) if isinstance(owner, func.FuncOp) else None
        if not isinstance(ptr, OpResult):
            return None
        op = ptr.op
        if declares_buffer(op):
            return Affine.const(0)
        base_ptr = offset_base(op)
        if base_ptr is not None:
            base, step = self.offset(base_ptr, env), self.eval(op.operands[1], env)
            return None if base is None or step is None else base + step
        if op.regions and forwards_yield(op):
            yielded = _yielded(op, ptr.index)
            return self.offset(yielded[0], env) if yielded else None
        if isinstance(op, scf.IfOp | arith.SelectOp):
            if isinstance(op, scf.IfOp):
                cond, choices = op.cond, _yielded(op, ptr.index)
            else:
                cond, choices = op.operands[0], list(op.operands[1:])
            if len(choices) != 2:
                return None
            r0, r1 = self.roots(choices[0]), self.roots(choices[1])
            if r0 is None or r0 != r1 or len(r0) != 1:
                return None
            a, b = self.offset(choices[0], env), self.offset(choices[1], env)
            c = self.eval_bool(cond, env)
            if a is None or b is None or a.terms != b.terms:
                return None
            if np.array_equal(a.lanes, b.lanes):
                return a
            return Affine(a.terms, np.where(c.may_true, a.lanes, b.lanes)) if c.is_exact \
                else None
        return None


def _union(*sets: frozenset[SSAValue] | None) -> frozenset[SSAValue] | None:
    if any(s is None for s in sets):
        return None
    return frozenset().union(*(s for s in sets if s is not None))
