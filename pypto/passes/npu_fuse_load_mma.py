"""`npu-fuse-load-mma`: fuse an MMA with the tile load that feeds it, as the firmware does.

The article's first pitfall: the simulator charges an MMA 8 cycles, but the NPU firmware fuses
the MMA with the LOAD feeding it into one 5-cycle instruction, so "hiding" the load by putting
other instructions between it and the MMA (padding) breaks the fusion and makes the kernel
slower. This pass makes the firmware's rule explicit in the IR.

Which pairs fuse, and how far apart they may be, are target data (`[fusion]` of the target file:
`pairs = [["npu.copy_in", "npu.mma"]]`, `max_distance`), not code. A pair fuses when
- the producer is a `npu.copy_in` into one of the MMA's inputs (A or B, the same L1 buffer, seen
  through pipeline stage results) and its token is used only by its own set/wait flags;
- both sit in the same straight-line code (pipeline stages count as straight-line; a loop or
  branch boundary ends the search) with at most `max_distance` instructions between them, not
  counting the copy's own flags, constants and allocations; those instructions only compute
  scalars, wait for flags or start other tile loads (nothing that could touch the loaded tile
  or HBM, and no lane instruction: `pypto.analysis.fusion.lane_instruction`; fusing moves the
  copy's wait down to the MMA, and a lane instruction after that wait would stop waiting for
  the copy, docs/cost-model.md#the-firmware-level-npu-dialect).
The nearest such copy is fused: it and its flags are removed and the MMA becomes
`npu.load_mma`, which performs the copy and then the MMA (results unchanged).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import Pure

from pypto.analysis.alias import conflict, footprints
from pypto.analysis.fusion import kernel_varying, lane_instruction
from pypto.analysis.ir_utils import is_pipeline, is_stage, is_stage_yield, is_tile_load
from pypto.analysis.l1_liveness import location_text
from pypto.diagnostics import emit_remark
from pypto.backend.targets import Target, resolve_target
from pypto.dialects import npu, pto
from pypto.dialects.traits import declares_buffer, signals_completion, waits_on

_FUSED_FORMS = {("npu.copy_in", "npu.mma"): npu.LoadMmaOp}
"""The fused instructions the npu dialect has, by (producer, consumer) op name."""

def _structure(op: Operation) -> bool:
    """Not instructions (terminators, immediates, declarations): they do not count as
    distance."""
    return is_stage_yield(op) or isinstance(op, arith.ConstantOp) or declares_buffer(op)


def _passive(op: Operation) -> bool:
    """Flag handshakes, declarations and other tile loads: what the firmware fuses across."""
    return (signals_completion(op) or waits_on(op) is not None or declares_buffer(op)
            or is_tile_load(op))


def _flag(op: Operation) -> bool:
    """A copy's own flag op (`npu.set_flag` / `npu.wait_flag` on its token)."""
    return signals_completion(op) or waits_on(op) == "token"


def fusion_rules(target: Target) -> tuple[set[tuple[str, str]], int]:
    """The target's fusable pairs and distance, checked against the fused forms that exist."""
    section = target.section("fusion")
    pairs = {tuple(p) for p in section.get("pairs", [])}
    unknown = [p for p in pairs if p not in _FUSED_FORMS]
    if unknown:
        known = ", ".join(f"[{a!r}, {b!r}]" for a, b in _FUSED_FORMS)
        raise ValueError(f"{target.path}: [fusion] pairs {unknown} have no fused instruction in "
                         f"the npu dialect; fusable pairs: {known}")
    distance = section.get("max_distance", 0)
    if not isinstance(distance, int) or distance < 0:
        raise ValueError(f"{target.path}: [fusion] max_distance must be a non-negative int, got "
                         f"{distance!r}")
    return pairs, distance  # type: ignore[return-value]


def origin(value: SSAValue) -> SSAValue:
    """The value a pipeline stage (or pipeline) result stands for: what its region yields."""
    while (is_stage(value.owner) or is_pipeline(value.owner)):
        owner = value.owner
        index = list(owner.results).index(value)
        value = owner.regions[0].block.last_op.operands[index]
    return value


def preceding(op: Operation) -> Iterator[Operation | None]:
    """The instructions before `op` in straight-line program order, nearest first; yields None
    at a boundary (a loop, a branch, the function start).

    Pipeline stages and pipelines run their bodies exactly once, in program order, so they are
    straight-line code: the walk enters the body of an earlier stage (from its end) and leaves
    the stage it starts in. Any other op with regions (`scf.if`, `scf.for`, ...) is a boundary:
    what it holds may run zero or many times, so nothing inside it may be moved past it."""
    current: Operation | None = op
    while current is not None:
        prev = current.prev_op
        while prev is not None:
            if (is_stage(prev) or is_pipeline(prev)):
                for inner in _backwards(prev):
                    yield inner
                    if inner is None:
                        return
            elif prev.regions:
                yield None
                return
            else:
                yield prev
            prev = prev.prev_op
        parent = current.parent_op()
        if not (is_stage(parent) or is_pipeline(parent)):
            yield None
            return
        current = parent


def _backwards(region_op: Operation) -> Iterator[Operation | None]:
    """The ops of a stage or pipeline body from last to first, entering nested stages; None
    (and the end) at an op with regions of another kind."""
    op = region_op.regions[0].block.last_op
    while op is not None:
        if (is_stage(op) or is_pipeline(op)):
            for inner in _backwards(op):
                yield inner
                if inner is None:
                    return
        elif op.regions:
            yield None
            return
        else:
            yield op
        op = op.prev_op


def _own_flag(op: Operation, token: SSAValue) -> bool:
    return _flag(op) and op.operands[0] == token


def _only_flags(value: SSAValue) -> bool:
    """Is `value` (a token) used only by flag ops, possibly through stage/pipeline yields whose
    results are used the same way?"""
    for use in value.uses:
        user = use.operation
        if _flag(user):
            continue
        parent = user.parent_op()
        if is_stage_yield(user) and (is_stage(parent) or is_pipeline(parent)):
            if _only_flags(parent.results[use.index]):
                continue
        return False
    return True


def _fusable_token(copy: npu.CopyInOp) -> bool:
    return _only_flags(copy.token)


def _drop_token(value: SSAValue, rewriter: PatternRewriter) -> None:
    """Erase the flag ops of a token and the stage/pipeline results that hand it on."""
    for use in list(value.uses):
        user = use.operation
        if _flag(user):
            rewriter.erase(user)
        else:
            _drop_result(user.parent_op(), use.index, rewriter)


def _drop_result(op: Operation, index: int, rewriter: PatternRewriter) -> None:
    """Rebuild a stage or pipeline without its result `index` (a token nobody waits for)."""
    _drop_token(op.results[index], rewriter)
    old_yield = op.regions[0].block.last_op
    kept = [v for i, v in enumerate(old_yield.operands) if i != index]
    new_yield = pto.YieldOp(*kept)
    new_yield.location = old_yield.location
    rewriter.replace(old_yield, new_yield, [])
    types = [r.type for i, r in enumerate(op.results) if i != index]
    region = Rewriter.move_region_contents_to_new_regions(op.regions[0])
    if is_stage(op):
        new: Operation = pto.StageOp(op.stage_name, op.after_names, types, region)
    else:
        new = pto.PipelineOp(types, region)
    new.location = op.location
    new.attributes.update(op.attributes)
    results: list[SSAValue | None] = list(new.results)
    results.insert(index, None)
    for old, fresh in zip([r for i, r in enumerate(op.results) if i != index], new.results):
        fresh.name_hint = old.name_hint
    rewriter.replace(op, new, results)


def find_feeding_load(mma: npu.MmaOp, max_distance: int) -> tuple[npu.CopyInOp, str] | None:
    """The nearest copy_in feeding `mma` within the distance, and which operand it loads.

    Fusing moves the copy down to the MMA, past every instruction between them; that is safe
    only when none of them touches what the copy writes (its L1 destination) or writes what it
    reads (its HBM source), by the shared alias query (pypto.analysis.alias), and none depends
    on the copy other than its own flag handshake."""
    inputs = {"a": origin(mma.a), "b": origin(mma.b)}
    between: list[Operation] = []
    for op in preceding(mma):
        if op is None:
            return None
        if _structure(op):
            continue
        if is_tile_load(op):
            dst = origin(op.dst)
            for name, value in inputs.items():
                if dst != value or not _fusable_token(op):
                    continue
                others = [x for x in between if not _own_flag(x, op.token)]
                if len(others) > max_distance:
                    return None
                if not all(x.has_trait(Pure) or _passive(x) for x in others):
                    return None
                varying = kernel_varying(mma)
                lane = next((x for x in others if lane_instruction(x, varying)), None)
                if lane is not None:
                    emit_remark(mma, f"npu-fuse-load-mma: the MMA{_at(mma)} is not fused with "
                                f"the copy{_at(op)}: the lane instruction '{lane.name}'"
                                f"{_at(lane)} sits between them (fused, it would no longer "
                                f"wait for the copy)")
                    return None
                crossed = next((x for x in others if _crosses(op, x)), None)
                if crossed is not None:
                    emit_remark(mma, f"npu-fuse-load-mma: the MMA{_at(mma)} is not fused with "
                                f"the copy{_at(op)}: '{crossed.name}'{_at(crossed)} between "
                                f"them may touch the memory that copy reads or writes")
                    return None
                return op, name
        between.append(op)
        if len(between) > max_distance + 8:  # far beyond any copy's own flags
            return None
    return None


def _at(op: Operation) -> str:
    text = location_text(op)
    return "" if text == op.name else f" at {text}"


def _crosses(copy: Operation, other: Operation) -> bool:
    """May moving `copy` below `other` change a result? Yes when one of them may write memory
    the other touches (the shared alias query's `conflict`)."""
    theirs = footprints(other)
    return any(conflict(mine, fp) for mine in footprints(copy) for fp in theirs)


@dataclass(frozen=True)
class NpuFuseLoadMma(ModulePass):
    """Fuse an MMA with the tile load feeding it (npu.load_mma), as the target's firmware does.

    Fusable pairs and their distance come from the target file's `[fusion]` table (option
    `target`: a target TOML file; default: the package's default target).
    """

    name = "npu-fuse-load-mma"
    target: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(self.target or None)
        pairs, distance = fusion_rules(target)
        if ("npu.copy_in", "npu.mma") not in pairs:
            return
        PatternRewriteWalker(FuseLoadMma(distance), apply_recursively=False).rewrite_module(op)


class FuseLoadMma(RewritePattern):
    """`npu.mma` whose feeding `npu.copy_in` is within `distance` -> `npu.load_mma` (the copy
    and its flags erased, its address computation re-materialised at the MMA)."""

    def __init__(self, distance: int):
        super().__init__()
        self.distance = distance

    @op_type_rewrite_pattern
    def match_and_rewrite(self, mma: npu.MmaOp, rewriter: PatternRewriter, /) -> None:
        found = find_feeding_load(mma, self.distance)
        if found is None:
            return
        copy, operand = found
        clones: list[Operation] = []
        operands = [_materialize(v, mma, clones) for v in copy.operands[1:]]
        if any(v is None for v in operands):
            return  # the copy's operands are not computable at the MMA
        for clone in clones:
            rewriter.insert(clone, InsertPoint.before(mma))
        fused = npu.LoadMmaOp(mma.c, mma.a, mma.b, *operands, operand, mma.shape)
        fused.location = mma.location
        rewriter.replace(mma, fused)
        _drop_token(copy.token, rewriter)
        dead = list(copy.operands)
        rewriter.erase(copy)
        _erase_dead(dead, rewriter)


def _visible(value: SSAValue, at: Operation) -> bool:
    """Is `value` defined in `at`'s block or a block enclosing it (so usable at `at`)?"""
    home = value.owner.parent_block() if isinstance(value.owner, Operation) else value.owner
    block = at.parent_block()
    while block is not None:
        if block is home:
            return True
        parent = block.parent_op()
        block = parent.parent_block() if parent is not None else None
    return False


def _materialize(value: SSAValue, at: Operation, clones: list[Operation]) -> SSAValue | None:
    """`value` usable at `at`: itself when visible, else a clone of its pure computation
    (appended to `clones` in dependency order); None when it cannot be recomputed there."""
    if _visible(value, at):
        return value
    owner = value.owner
    if not isinstance(owner, Operation) or not owner.has_trait(Pure) or owner.regions:
        return None
    operands = [_materialize(v, at, clones) for v in owner.operands]
    if any(v is None for v in operands):
        return None
    clone = owner.clone()
    for index, v in enumerate(operands):
        clone.operands[index] = v
    clone.location = owner.location
    clones.append(clone)
    return clone.results[list(owner.results).index(value)]


def _erase_dead(values: list[SSAValue], rewriter: PatternRewriter) -> None:
    """Erase the pure ops that computed only the fused copy's operands."""
    work = list(values)
    while work:
        value = work.pop()
        owner = value.owner
        if isinstance(owner, Operation) and owner.parent is not None and \
                owner.has_trait(Pure) and not any(r.uses for r in owner.results):
            work.extend(owner.operands)
            rewriter.erase(owner)
