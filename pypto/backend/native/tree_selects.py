"""A tree step's data-dependent `if` as selects (branch-free merged tree steps).

argmin block's step (tests/kernels/test_users_zoo.py)

    if tid < s:
        a = vals[tid]; b = vals[tid + s]
        if b < a or (b == a and ids[tid + s] < ids[tid]):
            vals[tid] = b; ids[tid] = ids[tid + s]

runs as one merged phase (phase_merge.py). Compiled as written, LLVM vectorises the inner `if`
as masked stores; the next step's loads of those elements then wait for them (a load cannot
take its data from an earlier masked store: measured, argmin block 0.63 ms a launch, its
step loops' loads the hot spots). `select_tree_steps` rewrites the inner `if`s of such a step,
on the native backend's own copy of the kernel, into selects and one store per element
written, as exchange_selects.py does for a sorting network's compare-exchange:

    if tid < s:
        a = vals[tid]; b = vals[tid + s]; c = ...
        if tid < s:                       # the step's own condition: true here
            vals[tid] = select(c, b, a); ids[tid] = select(c, ids[tid + s], ids[tid])

(The stores stay under the step's condition so that the phase plan keeps them in the phase of
the reads — phases.py merges a lane-dependent `if` holding stores; LLVM folds the repeated
condition.) Exact when

- the outer `if` (a lane-dependent condition, no results) passes phase_merge's proof with its
  condition as the guard: no lane reads an element another lane writes, and each buffer is
  written at one offset `x + e` (lanes write different elements); so within the step every
  element a lane reads keeps its value except for the lane's own stores, in any lane order;
- every element the inner `if`s store was loaded at the step's top level before them, so
  storing its current value back on the paths that did not store is invisible (no other lane
  reads or writes it in the step);
- the inner `if`s load only elements loaded or stored before on the lane's path (no load the
  kernel did not make: no new out-of-bounds error), store only to L1, touch no HBM, and hold
  only arithmetic that cannot raise (no division, remainder, cast to an integer, power) or
  change anything when run on every path; the step has no store outside them;
- the phase plan of the rewritten kernel still merges its steps (phases.py `merged`), so a
  launch must have the compiled 1-D block (jit.py refuses others).

Bits: a select moves a value unchanged (NaN payloads, -0: the loaded bits), and each element
ends with the value the last store on the lane's path gave it, as in the kernel. Elements are
told apart by their offsets' linear forms (phase_merge.py); two stores to one buffer must have
one form (the proof's condition), so deferring the stores to the end of the step reorders
no two stores of one element.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, func, scf
from xdsl.ir import Block, Operation, Region, SSAValue

from pypto.analysis.uniformity import varying_values
from pypto.backend.native.exchange_selects import join_paths
from pypto.backend.native.phase_merge import _Forms, mergeable, one_dimensional
from pypto.backend.native.phases import merged_phases
from pypto.dialects import pto
from pypto.dialects.traits import memory_accesses

_RAISING = (arith.DivSIOp, arith.DivUIOp, arith.RemSIOp, arith.RemUIOp, arith.FloorDivSIOp,
            arith.CeilDivSIOp, arith.CeilDivUIOp, arith.FPToSIOp, arith.FPToUIOp)
ENABLED = True
"""Off: steps keep their inner `if`s (for measuring; the cache key follows the rewritten IR)."""
Key = tuple[Operation, frozenset]
"""An element a lane touches: (its buffer's `pto.alloc_local`, its offset's linear form)."""


class _GiveUp(Exception):
    """The step is not of the convertible shape: leave it as written."""


def _local(op: Operation) -> bool:
    accesses = memory_accesses(op)
    return bool(accesses) and all(a.space == "local" for a in accesses)


class _Converter:
    def __init__(self, forms: _Forms):
        self.forms = forms
        self.pointer: dict[Key, SSAValue] = {}   # each element's address (its top-level load)
        self.loaded: dict[Key, SSAValue] = {}    # its value loaded at the top level
        self.stored: list[Key] = []              # elements some path stores, in order
        self.anchor: Operation | None = None     # the inner `if` being flattened

    def key(self, ptr: SSAValue) -> Key:
        at = self.forms.address(ptr)
        if at is None:
            raise _GiveUp
        return at[0], frozenset(at[1].items())

    def _hoist(self, op: Operation) -> None:
        assert self.anchor is not None
        op.detach()
        self.anchor.parent_block().insert_op_before(op, self.anchor)  # type: ignore[union-attr]

    def run(self, ops: list[Operation], cur: dict[Key, SSAValue], top: bool) -> dict[Key, SSAValue]:
        for op in ops:
            if isinstance(op, scf.YieldOp):
                continue
            if isinstance(op, pto.LoadOp) and _local(op):
                k = self.key(op.ptr)
                if any(s[0] is k[0] and s != k for s in cur if s not in self.loaded or
                       cur[s] is not self.loaded[s]):
                    raise _GiveUp  # (another element of the buffer stored: it may alias)
                if k in cur:                       # forwarded: no second load
                    op.results[0].replace_all_uses_with(cur[k])
                    op.detach()
                    op.erase()
                    continue
                if not top:                        # a load only a nested path makes
                    raise _GiveUp
                self.pointer[k] = op.ptr
                self.loaded[k] = cur[k] = op.results[0]
                continue
            if isinstance(op, pto.StoreOp) and _local(op):
                k = self.key(op.ptr)
                if top or k not in self.loaded:    # (a store outside the inner ifs, or to an
                    raise _GiveUp                  # element never loaded)
                cur[k] = op.value
                if k not in self.stored:
                    self.stored.append(k)
                op.detach()
                op.erase()
                continue
            if isinstance(op, scf.IfOp):
                if op.results:
                    raise _GiveUp
                outer = self.anchor is None
                if outer:
                    self.anchor = op
                branches = []
                for region in (op.true_region, op.false_region):
                    inner = list(region.blocks[0].ops) if region.blocks else []
                    branches.append(self.run(inner, dict(cur), False))
                if not join_paths(op.cond, *branches, cur, self.anchor):  # type: ignore
                    raise _GiveUp
                if outer:
                    self.anchor = None
                op.detach()
                op.erase()
                continue
            if op.regions:
                raise _GiveUp
            if top:
                continue                           # (runs on every path, as before)
            if memory_accesses(op) or isinstance(op, _RAISING) or \
                    isinstance(op, func.CallOp | pto.PrintfOp) or \
                    op.name in ("math.ipowi", "math.fpowi"):
                raise _GiveUp
            self._hoist(op)                        # arithmetic that cannot raise
        return cur


def _convert(step: scf.IfOp, forms: _Forms) -> None:
    block: Block = step.true_region.blocks[0]
    conv = _Converter(forms)
    final = conv.run(list(block.ops), {}, True)
    stores = [pto.StoreOp(final[k], conv.pointer[k]) for k in conv.stored
              if final[k] is not conv.loaded[k]]
    if not conv.stored:
        raise _GiveUp  # (no inner if stores: nothing to make branch-free)
    body = Block()
    body.add_ops([*stores, scf.YieldOp()])
    block.insert_op_before(scf.IfOp(step.cond, [], Region(body)), block.last_op)
    for op in reversed(list(block.ops)):  # (the inner ifs' own addresses, now unused)
        if isinstance(op, pto.AddPtrOp) and not op.result.uses:
            op.detach()
            op.erase()


def _candidate(op: Operation, uniform: Callable[[SSAValue], bool]) -> bool:
    if not isinstance(op, scf.IfOp) or op.results or uniform(op.cond) or \
            not op.true_region.blocks or \
            op.false_region.blocks and len(op.false_region.blocks[0].ops) > 1:
        return False
    inner = [o for o in op.true_region.blocks[0].ops if isinstance(o, scf.IfOp)]
    return any(isinstance(s, pto.StoreOp) for o in inner for s in o.walk())


def select_tree_steps(kernel: func.FuncOp) -> func.FuncOp:
    """A copy of `kernel` whose tree steps' inner `if`s are selects (see the module doc), or
    `kernel` itself when it has none. `kernel` must carry the compiled block
    (fast_blocks.BLOCK_ATTR): the proof needs a 1-D block."""
    if not ENABLED or not one_dimensional(kernel):
        return kernel
    varying = varying_values(kernel)
    uniform = lambda v: v not in varying  # noqa: E731
    picked = [i for i, o in enumerate(kernel.walk()) if _candidate(o, uniform) and
              mergeable(kernel, list(o.true_region.blocks[0].ops),  # type: ignore[union-attr]
                        [(o.cond, True)], uniform)]  # type: ignore[union-attr]
    if not picked:
        return kernel
    copy = kernel.clone()
    ops = list(copy.walk())
    targets = [ops[i] for i in picked]
    changed = False
    for target in targets:
        at = list(copy.walk()).index(target)
        trial = copy.clone()
        try:  # (a shape the converter refuses leaves the copy untouched)
            _convert(list(trial.walk())[at], _Forms(_uniform_in(trial)))  # type: ignore
        except _GiveUp:
            continue
        _convert(target, _Forms(_uniform_in(copy)))  # type: ignore[arg-type]
        changed = True
    if not changed or not merged_phases(copy):
        return kernel
    return copy


def _uniform_in(kernel: func.FuncOp) -> Callable[[SSAValue], bool]:
    varying = varying_values(kernel)
    return lambda v: v not in varying
