"""Which executions of which async copies a token may stand for: the job of `LaneModel`
(pypto.analysis.lane_values) that follows tokens through region results and round loops, so
the barrier analysis can tell a copy issued this iteration from one issued an iteration ago."""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import BlockArgument, OpResult, SSAValue

from pypto.analysis.ir_utils import passes_yield, yielded as _yielded
from pypto.analysis.lane_space import MAX_AGE, Instance
from pypto.dialects.traits import starts_copy


class TokenModel:
    """Mixin of `LaneModel`: async-copy tokens."""

    def token_instances(self, token: SSAValue) -> frozenset[Instance] | None:
        """The copies a token may stand for, as (async op, loop, age): loop None means the op's
        latest execution; otherwise the execution `age` iterations of that loop back (1: the
        previous iteration, 2: the one before...; MAX_AGE: that many or more), for a token carried round the loop. None when
        the token cannot be traced (a function argument)."""
        return self._token_instances(token, {})

    def _token_instances(self, token: SSAValue, memo: dict[SSAValue, frozenset[Instance] | None]
                         ) -> frozenset[Instance] | None:
        if token in memo:
            return memo[token]
        if isinstance(token, BlockArgument):
            owner = token.block.parent_op()
            if not isinstance(owner, scf.ForOp) or token.index == 0:
                return None
            return self._carried_token(owner, token, memo)
        if not isinstance(token, OpResult):
            return None
        op = token.op
        if starts_copy(op):
            return frozenset({(op, None, 0)})
        if not (passes_yield(op) or isinstance(op, scf.ForOp)):
            return None
        values = _yielded(op, token.index)
        if isinstance(op, scf.ForOp):  # after the loop: its last iteration's, or the initial one
            values = [op.iter_args[token.index], *values]
        found: frozenset[Instance] = frozenset()
        for value in values:
            part = self._token_instances(value, memo)
            if part is None:
                return None
            if isinstance(op, scf.ForOp):  # after the loop, its iterations are not told apart
                part = frozenset((o, None, 0) if loop is op else (o, loop, age)
                                 for o, loop, age in part)
            found |= part
        memo[token] = found
        return found

    def _carried_token(self, loop: scf.ForOp, arg: BlockArgument,
                       memo: dict[SSAValue, frozenset[Instance] | None]
                       ) -> frozenset[Instance] | None:
        """A token loop-carried value: the initial copy, or a copy yielded one iteration ago
        (which may itself be older, when the body passes the token on): a small fixpoint."""
        index = arg.index - 1
        initial = self._token_instances(loop.iter_args[index], dict(memo))
        if initial is None:
            return None
        found = initial
        for _ in range(MAX_AGE + 2):
            inner = dict(memo)
            inner[arg] = found
            grown = initial
            for value in _yielded(loop, index):
                part = self._token_instances(value, inner)
                if part is None:
                    return None
                # A copy issued outside the loop (a prologue) has one execution for the whole
                # loop: handing its token on round the back edge does not make it older.
                grown |= {((o, loop, 1) if loop.is_ancestor(o) else (o, lp, age))
                          if lp is None else
                          (o, lp, min(age + 1, MAX_AGE)) if lp is loop else (o, lp, age)
                          for o, lp, age in part}
            if grown == found:
                break
            found = grown
        memo[arg] = found
        return found
