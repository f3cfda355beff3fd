"""Proving that no in-flight hazard can fire: async copies, their tokens, loops that carry them.

The interpreter performs an async copy when it is issued and keeps its regions *in flight* until
the `pto.wait` of its token (or `pto.wait_all`); touching them meanwhile is a `RaceError`
(docs/isa.md#ptoasync_load). Compiled code does the copy at issue too (collectives.py) and
compiles waits to nothing, without the in-flight checks. That is exact when no check can fire,
which this module proves (phases.py calls `check_tokens`). Where it cannot, inflight.py
compiles the check at the places `possible_hazards` names (the same walk, collecting instead of
refusing) and marks the kernel `CHECKED_ATTR`. docs/native.md#collectives.

The proof walks the kernel's structured code in order, *path by path*: a state is what one path
to the current op knows, with

- *flight*: the copies that may be in flight on it, each an *instance* — the copy op and, for
  every loop around it, the loop counter's residue when it was issued (modulo the loop's
  *period*, below) and its distance in counter values from the current iteration (None when
  unknown: an earlier run of an inner loop, or a loop already left);
- *bind*: which instance each token value in scope denotes (a value denotes exactly one copy on
  one path; the values whose copy is complete are not bound). A `pto.wait` completes the
  instance of its token on that path, whatever other values denote it; `pto.wait_all`
  completes every copy. An instance no value denotes any more stays in flight (only
  `wait_all` completes it).

An `scf.if` whose condition is known on the path (below) takes one branch, else both (two
paths). An `scf.for` is walked to a fixpoint: the states at the head of an iteration, per
residue of its counter, are the entry states and the states at the end of the body carried
round the back edge (the token iter args bound to what the yields denote; the instances
issued in the loop one iteration further back; those of inner loops forgotten (None)). The
loop's results are what the yields denote when leaving. The instances' distances are bounded
(`_MAX_AGE` iterations, then None), so the fixpoint is finite.

*Period and residues.* A loop whose counter is non-negative (a constant lower bound ≥ 0, or a
`max` with one, and a positive constant step) and whose body takes remainders `(a * i + c) % m`
of its counter (`a, c ≥ 0`, m a constant) is walked once per residue of the counter modulo the
least common multiple of those m (its period, at most `_MAX_PERIOD`). On a path with a known
residue those remainders are constants: `pto-double-buffer`'s slot `i % N` and the slot
`(i + N - 1) % N` being filled, or an `if k % 2 == 0:` ping-pong. (This assumes `a * i + c`
does not wrap, i.e. fewer than 2^31 / a iterations, as `pto-double-buffer` does.)

*While loops.* A `while` holding copies (a block-level loop of uniform condition,
while_phases.py) is walked to a fixpoint as well — its condition region, its body, round the
back edge — but its trips are not told apart (no counter, no residues): a copy issued in a trip
must be complete at the end of that trip (issue, wait, use), else refused, as is a copy in the
condition region.

*Hazards.* Every op touching memory — lane accesses and block-level instructions — is checked
against every instance in flight, by their footprints (pypto.analysis.alias: a root, an affine
start, an extent): an L1 buffer a pending load writes or a pending store reads (for a write),
an HBM tensor a pending store writes or a pending load reads (for a write). Two distinct L1
buffers clash when their placed bytes overlap; two tensor parameters unless both are
`pto.noalias`; within one root, the starts are compared with the remainders replaced by their
residues and the copy's counters moved by its distance (alias.may_overlap), a value of an
iteration other than the current one being unknown. An access that cannot be proven apart is
refused (`possible_hazards`: collected, for inflight.py to check at run time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from pypto import dtypes
from pypto.analysis.alias import Footprint, Linear, Ranges, footprints, linear, may_overlap
from pypto.analysis.ir_utils import constant_int
from pypto.diagnostics import op_location
from pypto.dialects import pto

ASYNC = (pto.AsyncLoadOp, pto.AsyncStoreOp)

_MAX_PERIOD = 16
"""Largest loop period (lcm of the counter's moduli) walked residue by residue."""

_MAX_AGE = 4
"""Iterations an instance's distance is tracked back (then unknown)."""

_MAX_STATES = 512
"""Paths kept at one point before the proof gives up (refused: the interpreter runs it)."""

Entry = tuple[scf.ForOp, "int | None", "int | None"]  # loop, residue at issue, distance
Inst = tuple[Operation, tuple[Entry, ...]]


class TokenRefused(Exception):
    """A hazard the interpreter would check might fire (reason, op)."""

    def __init__(self, reason: str, op: Operation):
        super().__init__(reason)
        self.reason = reason
        self.op = op


def _is_token(v: SSAValue) -> bool:
    return isinstance(v.type, pto.TokenType)


@dataclass(frozen=True)
class _State:
    bind: frozenset[tuple[SSAValue, Inst]] = frozenset()
    flight: frozenset[Inst] = frozenset()

    def of(self, v: SSAValue) -> Inst | None:
        for value, inst in self.bind:
            if value is v:
                return inst
        return None


@dataclass(frozen=True)
class _Loop:
    period: int          # 1: residues not tracked
    step: int | None     # a constant step, else None
    first: int | None    # the first counter's residue (constant lower bound), else None


def _loops_around(op: Operation) -> list[scf.ForOp]:
    """The `scf.for` loops enclosing `op`, outermost first."""
    out: list[scf.ForOp] = []
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, scf.ForOp):
            out.append(parent)
        parent = parent.parent_op()
    return out[::-1]


def _defined_in(v: SSAValue, block: Block) -> bool:
    owner = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
    while owner is not None:
        if owner is block:
            return True
        parent = owner.parent_op()
        owner = parent.parent_block() if parent is not None else None
    return False


def _inside(op: Operation, loop: scf.ForOp) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if parent is loop:
            return True
        parent = parent.parent_op()
    return False


def _within(op: Operation, block: Block) -> bool:
    """Is `op` in `block`, at any depth?"""
    b = op.parent_block()
    while b is not None:
        if b is block:
            return True
        parent = b.parent_op()
        b = parent.parent_block() if parent is not None else None
    return False


def _counter_of(v: SSAValue) -> scf.ForOp | None:
    if isinstance(v, BlockArgument) and v.index == 0 and isinstance(v.block.parent_op(),
                                                                       scf.ForOp):
        return v.block.parent_op()
    return None


def _width(v: SSAValue) -> int | None:
    width = getattr(v.type, "width", None)
    return width.data if width is not None else None


def _wrap(x: int, width: int | None) -> int:
    if width is None or width > 64:
        return x
    if width == 1:
        return x & 1
    x &= (1 << width) - 1
    return x - (1 << width) if x >> (width - 1) else x


_CMP = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b,
        3: lambda a, b: a <= b, 4: lambda a, b: a > b, 5: lambda a, b: a >= b}
_BINARY = {arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b,
           arith.MuliOp: lambda a, b: a * b, arith.AndIOp: lambda a, b: a & b,
           arith.OrIOp: lambda a, b: a | b, arith.XOrIOp: lambda a, b: a ^ b}


class _Checker:
    def __init__(self, kernel: func.FuncOp, lanes: int | None = None,
                 cache: dict[Operation, list[Footprint]] | None = None,
                 collect: dict[Operation, list[Operation]] | None = None):
        from pypto.backend.native.warp_exchange import max_lanes

        self.kernel = kernel
        self.collect = collect  # (None: raise at the first possible hazard)
        attrs = kernel.arg_attrs.data if kernel.arg_attrs is not None else ()
        self.noalias = {a for i, a in enumerate(kernel.body.block.args)
                        if i < len(attrs) and "pto.noalias" in attrs[i].data}
        # lane ids: below the target's largest block, or below `lanes` in every dimension
        self.ranges = Ranges(max_lanes=max_lanes()) if lanes is None else \
            Ranges(block=(lanes, lanes, lanes))
        self.loops: dict[scf.ForOp, _Loop] = {}
        self._footprints: dict[Operation, list[Footprint]] = {} if cache is None else cache

    def footprints(self, op: Operation) -> list[Footprint]:
        found = self._footprints.get(op)
        if found is None:
            found = self._footprints[op] = footprints(op)
        return found

    # loops and the values known on a path ----------------------------------------------------

    def loop(self, loop: scf.ForOp) -> _Loop:
        if loop not in self.loops:
            self.loops[loop] = self._loop(loop)
        return self.loops[loop]

    def _loop(self, loop: scf.ForOp) -> _Loop:
        step = constant_int(loop.step)
        lb = constant_int(loop.lb)
        if step is None or step <= 0 or not self._non_negative(loop.lb):
            return _Loop(1, step if step and step > 0 else None, None)
        iv = loop.body.block.args[0]
        moduli = []
        for op in loop.body.walk():
            if isinstance(op, arith.RemSIOp | arith.RemUIOp):
                m = constant_int(op.rhs)
                form = linear(op.lhs)
                if m is not None and 2 <= m <= _MAX_PERIOD and form.coef(iv) > 0:
                    moduli.append(m)
        period = reduce(math.lcm, moduli, 1)
        if period > _MAX_PERIOD:
            period = 1
        return _Loop(period, step, None if lb is None else lb % period)

    @staticmethod
    def _non_negative(v: SSAValue) -> bool:
        c = constant_int(v)
        if c is not None:
            return c >= 0
        if isinstance(v, OpResult) and isinstance(v.op, arith.MaxSIOp):
            return any((k := constant_int(o)) is not None and k >= 0 for o in v.op.operands)
        return False

    def value(self, v: SSAValue, residues: dict[scf.ForOp, int | None], depth: int = 0
              ) -> int | None:
        """`v` as an integer when the residues of the loop counters determine it."""
        c = constant_int(v)
        if c is not None:
            return _wrap(c, _width(v))
        if depth > 32 or not isinstance(v, OpResult):
            return None
        op = v.op
        if isinstance(op, arith.RemSIOp | arith.RemUIOp):
            m = self.value(op.rhs, residues, depth + 1)
            if m is None or m <= 0:
                return None
            x = self.value(op.lhs, residues, depth + 1)
            if x is not None:
                return int(math.fmod(x, m)) if isinstance(op, arith.RemSIOp) and x < 0 \
                    else (x % m if x >= 0 else None)
            return self._remainder(op.lhs, m, residues)
        if isinstance(op, arith.CmpiOp):
            a, b = (self.value(o, residues, depth + 1) for o in op.operands)
            pred = op.predicate.value.data
            if a is None or b is None:
                return None
            if pred in (0, 1, 2, 3, 4, 5):
                return int(_CMP[pred](a, b))
            w = _width(op.lhs) or 64
            ua, ub = a % (1 << w), b % (1 << w)
            return int(_CMP[pred - 4](ua, ub))  # ult ule ugt uge: 6 7 8 9 -> < <= > >=
        if isinstance(op, arith.SelectOp):
            cond = self.value(op.cond, residues, depth + 1)
            if cond is not None:
                return self.value(op.operands[1 if cond else 2], residues, depth + 1)
            a, b = (self.value(o, residues, depth + 1) for o in op.operands[1:])
            return a if a is not None and a == b else None
        for kind, fn in _BINARY.items():
            if isinstance(op, kind):
                a, b = (self.value(o, residues, depth + 1) for o in op.operands)
                return None if a is None or b is None else _wrap(fn(a, b), _width(v))
        if isinstance(op, arith.ExtSIOp | arith.ExtUIOp | arith.IndexCastOp):
            return self.value(op.operands[0], residues, depth + 1)
        return None

    def _remainder(self, x: SSAValue, m: int, residues: dict[scf.ForOp, int | None]
                   ) -> int | None:
        """`x % m` for `x = a * i + c` (i a loop counter of known residue, a, c >= 0)."""
        form = linear(x)
        if len(form.coefs) != 1 or form.const < 0:
            return None
        (iv, a), = form.coefs
        loop = _counter_of(iv)
        if loop is None or a < 0 or residues.get(loop) is None:
            return None
        period = self.loop(loop).period
        if period % m:
            return None
        return (a * residues[loop] + form.const) % m

    # footprints -------------------------------------------------------------------------------

    def _start(self, form: Linear, residues: dict[scf.ForOp, int | None]) -> Linear:
        out = Linear(const=form.const)
        for v, c in form.coefs:
            known = self.value(v, residues)
            out = out + (Linear(const=c * known) if known is not None
                         else Linear.of(v).scaled(c))
        return out

    def _copy_start(self, form: Linear, inst: Inst, now: Operation) -> Linear | None:
        """The start of an in-flight copy's footprint as seen from `now`: the remainders at its
        iteration's residues, its loop counters moved by its distance; None when it depends on
        a value of another iteration."""
        copy, ctx = inst
        residues = {loop: r for loop, r, _ in ctx}
        around_now = set(_loops_around(now))
        differs = next((loop for loop, _, d in ctx if d != 0 or loop not in around_now), None)
        out = Linear(const=form.const)
        for v, c in form.coefs:
            known = self.value(v, residues)
            if known is not None:
                out = out + Linear(const=c * known)
                continue
            loop = _counter_of(v)
            entry = next((e for e in ctx if e[0] is loop), None) if loop is not None else None
            if entry is not None:
                _, _, d = entry
                if d is None or loop not in around_now:
                    return None
                out = out + Linear.of(v).scaled(c) + Linear(const=c * d)
            elif differs is not None and _defined_in(v, differs.body.block):
                return None
            else:
                out = out + Linear.of(v).scaled(c)
        return out

    def _same_tensor(self, a: SSAValue, b: SSAValue) -> bool:
        if a is b:
            return True
        if isinstance(a, BlockArgument) and isinstance(b, BlockArgument) and \
                a.block is b.block:  # two parameters: one tensor unless both are noalias
            return not (a in self.noalias and b in self.noalias)
        return True  # (an unknown root)

    def _clash(self, acc: Footprint, now: Operation, residues: dict[scf.ForOp, int | None],
               held: Footprint, inst: Inst) -> bool:
        if acc.root is None or held.root is None:
            return True
        if acc.space == "local":
            if acc.root is not held.root:
                return _l1_overlap(acc.root, held.root)
        elif acc.root is not held.root:
            return self._same_tensor(acc.root, held.root)
        start = self._copy_start(held.start, inst, now)
        if start is None:
            return True
        first = Footprint(held.op, held.root, start, held.extent, held.kind, held.space)
        second = Footprint(acc.op, acc.root, self._start(acc.start, residues), acc.extent,
                           acc.kind, acc.space)
        return may_overlap(first, second, ranges=self.ranges)

    def check(self, op: Operation, state: _State, residues: dict[scf.ForOp, int | None]
              ) -> None:
        if not state.flight:
            return
        accesses = self.footprints(op)
        if not accesses:
            return
        for inst in state.flight:
            copy = inst[0]
            for held in self.footprints(copy):
                for acc in accesses:
                    if acc.space != held.space or (acc.kind == "read" and held.kind == "read"):
                        continue
                    if self._clash(acc, op, residues, held, inst):
                        if self.collect is not None:  # (checked at run time: inflight.py)
                            copies = self.collect.setdefault(op, [])
                            if copy not in copies:
                                copies.append(copy)
                            continue
                        raise TokenRefused(
                            f"{op_location(op, unknown='here')}: '{op.name}' may touch the "
                            f"{'L1 buffer' if acc.space == 'local' else 'tensor'} of the async "
                            f"copy at {op_location(copy, unknown='an earlier line')} while it "
                            f"may still be in flight (the interpreter checks that hazard, "
                            f"compiled code does not: wait for the copy first)", op)

    # the walk -------------------------------------------------------------------------------

    def block(self, block: Block, states: set[_State],
              residues: dict[scf.ForOp, int | None]) -> set[_State]:
        for op in block.ops:
            states = self.op(op, states, residues)
            if len(states) > _MAX_STATES:
                raise TokenRefused(f"{op_location(op, unknown='here')}: too many paths to "
                                   f"prove that no async copy in flight is touched", op)
        return states

    def op(self, op: Operation, states: set[_State], residues: dict[scf.ForOp, int | None]
           ) -> set[_State]:
        if isinstance(op, pto.WaitOp):
            return {_waited(s, s.of(op.token)) for s in states}
        if isinstance(op, pto.WaitAllOp):
            return {_State()} if states else states
        if isinstance(op, scf.IfOp):
            return self._if(op, states, residues)
        if isinstance(op, scf.ForOp):
            return self._for(op, states, residues)
        if isinstance(op, scf.WhileOp) and any(isinstance(o, ASYNC) for o in op.walk()):
            return self._while(op, states, residues)
        if op.regions:  # (while loops without copies: no block-level instruction inside)
            for o in op.walk():
                if o is not op:
                    for s in states:
                        self.check(o, s, residues)
                    if isinstance(o, ASYNC):
                        raise TokenRefused(f"{op_location(o, unknown='here')}: an async copy "
                                           f"inside '{op.name}'", o)
            return states
        for s in states:
            self.check(op, s, residues)
        if not isinstance(op, ASYNC):
            return states
        ctx = tuple((loop, residues.get(loop), 0) for loop in _loops_around(op))
        inst: Inst = (op, ctx)
        return {_State(s.bind | {(op.results[0], inst)}, s.flight | {inst}) for s in states}

    def _if(self, op: scf.IfOp, states: set[_State], residues: dict[scf.ForOp, int | None]
            ) -> set[_State]:
        out: set[_State] = set()
        for s in states:
            cond = self.value(op.cond, residues)
            taken = (0, 1) if cond is None else ((0,) if cond else (1,))
            for i in taken:
                region = op.regions[i]
                if not region.blocks:
                    out.add(s)
                    continue
                b = region.blocks[0]
                y = b.last_op
                for end in self.block(b, {s}, residues):
                    results = {r: y.operands[r.index] for r in op.results if _is_token(r)}
                    out.add(_leave(end, b, results))
        return out

    def _for(self, loop: scf.ForOp, states: set[_State],
             residues: dict[scf.ForOp, int | None]) -> set[_State]:
        info = self.loop(loop)
        body = loop.body.block
        y = body.last_op
        tokens = [i for i, a in enumerate(loop.iter_args) if _is_token(a)]
        firsts: list[int | None] = ([info.first] if info.first is not None else
                                    list(range(info.period)) if info.period > 1 else [None])
        seen: dict[int | None, set[_State]] = {}
        work: list[tuple[int | None, _State]] = []
        exits: set[_State] = set()
        for s in states:
            exits.add(_leave(s, None, {loop.results[i]: loop.iter_args[i] for i in tokens}))
            entry = _leave(s, None, {body.args[i + 1]: loop.iter_args[i] for i in tokens})
            for r in firsts:
                if entry not in seen.setdefault(r, set()):
                    seen[r].add(entry)
                    work.append((r, entry))
        while work:
            r, head = work.pop()
            for end in self.block(body, {head}, {**residues, loop: r}):
                exits.add(self._retag(
                    _leave(end, body, {loop.results[i]: y.operands[i] for i in tokens}),
                    loop, None, loop))
                nxt = self._retag(
                    _leave(end, body, {body.args[i + 1]: y.operands[i] for i in tokens}),
                    loop, info.step, loop)
                r2 = None if r is None else (r + (info.step or 0)) % info.period
                if nxt not in seen.setdefault(r2, set()):
                    seen[r2].add(nxt)
                    work.append((r2, nxt))
                    if sum(len(v) for v in seen.values()) > _MAX_STATES:
                        raise TokenRefused(f"{op_location(loop, unknown='here')}: too many "
                                           f"paths to prove that no async copy in flight is "
                                           f"touched", loop)
        return exits

    def _while(self, loop: scf.WhileOp, states: set[_State],
               residues: dict[scf.ForOp, int | None]) -> set[_State]:
        """A `while` holding copies (a block-level loop, while_phases.py), walked to a
        fixpoint: its condition region, then its body and round the back edge. Its trips are
        not told apart, so every copy issued in a trip must be complete at the end of that trip
        (waited in the body, the usual issue-wait-use loop), and a copy issued in the
        condition region complete when the condition is decided (waited there); one still in
        flight there is refused."""
        before, after = loop.before_region.block, loop.after_region.block
        condition, y = before.last_op, after.last_op
        tokens = [i for i, a in enumerate(loop.arguments) if _is_token(a)]
        passed = [i for i, a in enumerate(after.args) if _is_token(a)]
        seen: set[_State] = set()
        work: list[_State] = []
        for s in states:
            entry = _leave(s, None, {before.args[i]: loop.arguments[i] for i in tokens})
            if entry not in seen:
                seen.add(entry)
                work.append(entry)
        exits: set[_State] = set()
        while work:
            head = work.pop()
            for tested in self.block(before, {head}, residues):
                pending = next((c for c, _ in tested.flight if _within(c, before)), None)
                if pending is not None:
                    raise TokenRefused(
                        f"{op_location(pending, unknown='here')}: an async copy issued in the "
                        f"condition of the while loop at "
                        f"{op_location(loop, unknown='an outer line')} may still be in flight "
                        f"when the condition is decided (wait for it in the condition)",
                        pending)
                exits.add(_leave(tested, before,
                                 {loop.results[i]: condition.operands[i + 1] for i in passed}))
                inside = _leave(tested, before,
                                {after.args[i]: condition.operands[i + 1] for i in passed})
                for end in self.block(after, {inside}, residues):
                    pending = next((c for c, _ in end.flight if _inside(c, loop)), None)
                    if pending is not None:
                        raise TokenRefused(
                            f"{op_location(pending, unknown='here')}: an async copy issued in "
                            f"the while loop at {op_location(loop, unknown='an outer line')} "
                            f"may still be in flight at the end of its trip (the proof does "
                            f"not tell a while loop's trips apart: wait for it in the trip)",
                            pending)
                    nxt = _leave(end, after, {before.args[i]: y.operands[i] for i in tokens})
                    if nxt not in seen:
                        seen.add(nxt)
                        work.append(nxt)
                        if len(seen) > _MAX_STATES:
                            raise TokenRefused(f"{op_location(loop, unknown='here')}: too many "
                                               f"paths to prove that no async copy in flight "
                                               f"is touched", loop)
        return exits

    def _retag(self, s: _State, loop: scf.ForOp, step: int | None, at: Operation) -> _State:
        """`s` one iteration of `loop` later (`step`: its constant step) or, with `step`
        None, after leaving it: the loop's distances grow by a step (or become unknown),
        those of loops inside it become unknown. Refused when two copies a value may still
        name would become one instance."""
        def moved(inst: Inst) -> Inst:
            copy, ctx = inst
            new: list[Entry] = []
            for lp, r, d in ctx:
                if lp is loop:
                    d = None if step is None or d is None or d - step < -_MAX_AGE * step \
                        else d - step
                elif _inside(lp, loop):
                    d = None
                new.append((lp, r, d))
            return copy, tuple(new)

        mapping = {inst: moved(inst) for inst in s.flight}
        bound = {inst for _, inst in s.bind}
        merged: dict[Inst, list[Inst]] = {}
        for old, new in mapping.items():
            merged.setdefault(new, []).append(old)
        for new, olds in merged.items():
            if len(olds) > 1 and any(o in bound for o in olds):
                raise TokenRefused(
                    f"{op_location(new[0], unknown='here')}: copies of this op from several "
                    f"iterations of the loop at {op_location(loop, unknown='an outer line')} "
                    f"may be in flight at once, one of them still named by a token (the "
                    f"proof tells iterations apart only {_MAX_AGE} back)", at)
        return _State(frozenset((v, mapping[i]) for v, i in s.bind),
                      frozenset(mapping.values()))


def _waited(s: _State, inst: Inst | None) -> _State:
    if inst is None:
        return s
    return _State(frozenset((v, i) for v, i in s.bind if i != inst), s.flight - {inst})


def _leave(s: _State, block: Block | None, results: dict[SSAValue, SSAValue]) -> _State:
    """The state after `block` (None: a loop entered or skipped): `results` bound to what the
    yielded values denote, the values defined in `block` out of scope (their copies stay in
    flight, anonymous)."""
    bind = {(r, inst) for r, y in results.items() if (inst := s.of(y)) is not None}
    for v, inst in s.bind:
        if block is None or not _defined_in(v, block):
            bind.add((v, inst))
    return _State(frozenset(bind), s.flight)


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


def _prove(kernel: func.FuncOp, lanes: int | None,
           cache: dict[Operation, list[Footprint]]) -> None:
    _Checker(kernel, lanes, cache).block(kernel.body.block, {_State()}, {})


CHECKED_ATTR = "pto.native_inflight_checked"
"""On a kernel inflight.py instrumented: its in-flight hazards are checked at run time."""


def possible_hazards(kernel: func.FuncOp) -> dict[Operation, list[Operation]]:
    """Every op that may touch a copy in flight (for the target's largest block), with the
    copy ops it may touch, in walk order; raises `TokenRefused` when the walk itself cannot
    be done (too many paths, copies in a `while`, iterations the proof cannot tell apart)."""
    found: dict[Operation, list[Operation]] = {}
    _Checker(kernel, None, None, found).block(kernel.body.block, {_State()}, {})
    return found


def lane_limit(kernel: func.FuncOp) -> int | None:
    """None when no in-flight hazard can fire in any block; else the largest block extent
    (lanes per dimension) for which none can — a lane reading `slot + tid` of a slotted
    buffer stays in its slot only while `tid` is below the slot's length. Raises
    `TokenRefused` (the reason for the target's largest block) when not even one lane is
    safe. Proofs with fewer lanes prove at least as much, so the limit is a binary search."""
    from pypto.backend.native.warp_exchange import max_lanes

    if CHECKED_ATTR in kernel.attributes or not any(isinstance(op, ASYNC)
                                                    for op in kernel.walk()):
        return None
    cache: dict[Operation, list[Footprint]] = {}  # (footprints: one per op, every proof)
    try:
        _prove(kernel, None, cache)
        return None
    except TokenRefused as exc:
        refused = exc
    lo, hi = 0, max_lanes()  # lo: proven (0: none yet), hi: refused
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            _prove(kernel, mid, cache)
            lo = mid
        except TokenRefused:
            hi = mid
    if lo == 0:
        raise refused
    return lo


def check_tokens(kernel: func.FuncOp) -> None:
    """Raise `TokenRefused` unless no in-flight hazard can fire in some blocks (see the module
    doc; `lane_limit` says which: `NativeKernel` refuses the others per launch)."""
    lane_limit(kernel)


def launch_refusal(limit: int | None, block: tuple[int, int, int], name: str) -> str | None:
    """Why a launch with `block` is not proven free of in-flight hazards (None: it is)."""
    if limit is None or max(block) <= limit:
        return None
    return (f"the native backend proved that no lane of kernel '{name}' touches an async copy "
            f"in flight only for blocks of at most {limit} lanes per dimension (its lanes "
            f"address a buffer being loaded at offsets from their ids), not for block "
            f"{block}; run it on the interpreter (backend='interpreter' or 'auto'), whose "
            f"in-flight check decides")
