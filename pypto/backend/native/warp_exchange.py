"""Warp shuffles and votes for the native backend: an exchange through L1 between two phases.

Compiled code runs a block's lanes one after another (docs/native.md#phases), so lane 0 cannot
read lane 1's value before lane 1 has computed it. `exchange_warp_collectives` rewrites each
warp collective (docs/language.md#warp-shuffles-and-votes) of a copy of the kernel, before the
native pipeline, into what the phase plan already compiles exactly:

    store v -> xch[linear lane id]        (an L1 write: a phase of its own, every lane)
    r = load xch[source lane]             (the next phase: every lane has written)

`xch` is an exchange buffer per element type, `pto.alloc_local` placed after the kernel's own L1
(one slot per lane of the largest block the target allows; a launch with more lanes is refused).
The phase plan ends a phase at every L1 write and never lets a write share a phase with a read
of L1, so a second collective's write comes after every lane's read of the first: one buffer per
type serves them all. The read follows the interpreter (pypto/backend/interpreter/warp_ops.py):
the lane operand modulo 32; `shfl` reads lane `k`, `shfl_up` `lane - k`, `shfl_down`
`lane + k`, `shfl_xor` `lane ^ k`; a source outside the warp (below 0, past 31, past the end of
a partial warp) reads the lane's own value. A vote reads its warp's predicates in a loop over
the warp's lanes: `vote_any` / `vote_all` their or / and, `ballot` bit `k` for lane `k`.

A collective under an `if` whose condition is the same on every lane of a warp
(pypto.analysis.uniformity, the frontend's static check) is rewritten too: the phase plan runs
the exchange for the lanes that took the branch, whole warps. One under a condition that may
split a warp (IR that skipped the frontend's check: the interpreter's `DeadlockError` at run
time) or inside a SIMT `while` is refused with a reason, and "auto" runs the interpreter.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, i1, i32
from xdsl.ir import Attribute, Operation, SSAValue

from pypto.diagnostics import op_location
from pypto.dialects import pto
from pypto.dialects.traits import warp_collective

WARP = 32
_ALIGN = 64
_MODES = {pto.ShflOp: "idx", pto.ShflUpOp: "up", pto.ShflDownOp: "down",
          pto.ShflXorOp: "xor"}


def max_lanes() -> int:
    """Lanes of the exchange buffers: the default target's largest block."""
    from pypto.backend.targets import default_target

    return default_target().max_block_lanes


def collectives(kernel: func.FuncOp) -> list[Operation]:
    return [op for op in kernel.walk() if warp_collective(op) is not None]


def refusal(kernel: func.FuncOp) -> str | None:
    """Why the kernel's warp collectives cannot be exchanged through L1 (None: they can)."""
    from pypto.analysis.uniformity import warp_divergence

    see = "docs/native.md#warp-shuffles-and-votes"
    for op in collectives(kernel):
        parent = op.parent_op()
        while parent is not None and parent is not kernel:
            if isinstance(parent, scf.WhileOp):
                return f"{op_location(op, unknown='here')}: '{op.name}' inside a SIMT loop " \
                       f"(the native backend does not compile warp shuffles and votes there: " \
                       f"{see})"
            parent = parent.parent_op()
    divergent = warp_divergence(kernel)
    if divergent is not None:
        return f"{op_location(divergent[0], unknown='here')}: '{divergent[0].name}' under a " \
               f"condition that may differ between the lanes of a warp (the interpreter " \
               f"checks at run time that the whole warp reaches it: {see})"
    return None


def exchange_warp_collectives(kernel: func.FuncOp) -> func.FuncOp:
    """`kernel` itself when it has no warp collective (or one `refusal` names), else a copy
    with every collective an exchange through L1 (module doc)."""
    if not collectives(kernel) or refusal(kernel) is not None:
        return kernel
    kernel = kernel.clone()
    entry = kernel.body.block
    end = max((int(op.l1_offset or 0) + op.result.type.size *
               _itemsize(op.result.type.element_type)
               for op in kernel.walk() if isinstance(op, pto.AllocLocalOp)), default=0)
    buffers: dict[str, SSAValue] = {}
    lanes = max_lanes()

    def buffer(t: Attribute) -> SSAValue:
        nonlocal end
        key = str(t)
        if key not in buffers:
            offset = -(-end // _ALIGN) * _ALIGN
            alloc = pto.AllocLocalOp(lanes, t, offset)
            alloc.result.name_hint = f"warp_exchange_{key}"
            entry.insert_op_before(alloc, entry.first_op)
            buffers[key] = alloc.result
            end = offset + lanes * _itemsize(t)
        return buffers[key]

    for op in collectives(kernel):
        _rewrite(op, buffer)
    return kernel


def _itemsize(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return max(1, t.width.data // 8)
    return {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}[str(t)]


class _At:
    """Builds ops before an anchor."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def __call__(self, op: Operation) -> SSAValue:
        self.anchor.parent_block().insert_op_before(op, self.anchor)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def const(self, v: int, t: Attribute = i32) -> SSAValue:
        return self(arith.ConstantOp(IntegerAttr(v, t)))


def _lane_geometry(at: _At) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
    """(linear lane id, lane in warp, its warp's first linear id, its warp's lane count)."""
    warp = at(pto.GetWarpIdOp())
    lane = at(pto.GetLaneIdOp())
    start = at(arith.MuliOp(warp, at.const(WARP)))
    linear = at(arith.AddiOp(start, lane))
    dims = [at(pto.GetBlockDimOp(d)) for d in range(3)]
    lanes = at(arith.MuliOp(at(arith.MuliOp(dims[0], dims[1])), dims[2]))
    left = at(arith.SubiOp(lanes, start))
    width = at(arith.MinSIOp(left, at.const(WARP)))
    return linear, lane, start, width


def _rewrite(op: Operation, buffer) -> None:  # noqa: ANN001 - the callable above
    at = _At(op)
    linear, lane, start, width = _lane_geometry(at)
    if warp_collective(op) == "lane":
        value = op.operands[0]
        xch = buffer(value.type)
        at(pto.StoreOp(value, at(pto.AddPtrOp(xch, linear))))
        k = at(arith.AndIOp(op.operands[1], at.const(WARP - 1)))
        mode = _MODES[type(op)]
        if mode == "idx":
            j = k
        elif mode == "up":
            j = at(arith.SubiOp(lane, k))
        elif mode == "down":
            j = at(arith.AddiOp(lane, k))
        else:
            j = at(arith.XOrIOp(lane, k))
        zero = at.const(0)
        inside = at(arith.AndIOp(at(arith.CmpiOp(j, zero, "sge")),
                                 at(arith.CmpiOp(j, width, "slt"))))
        source = at(arith.SelectOp(inside, at(arith.AddiOp(start, j)), linear))
        result = at(pto.LoadOp(at(pto.AddPtrOp(xch, source))))
    else:
        xch = buffer(i1)
        at(pto.StoreOp(op.operands[0], at(pto.AddPtrOp(xch, linear))))
        result = _vote(at, op, xch, start, width)
    op.results[0].replace_all_uses_with(result)
    op.detach()
    op.erase()


def _vote(at: _At, op: Operation, xch: SSAValue, start: SSAValue, width: SSAValue) -> SSAValue:
    """A loop over the warp's lanes: or / and of the predicates, or the ballot's bits."""
    ballot = isinstance(op, pto.BallotOp)
    t = i32 if ballot else i1
    init = at.const(0, i32) if ballot else at.const(1 if isinstance(op, pto.VoteAllOp) else 0,
                                                    i1)
    zero, one = at.const(0), at.const(1)
    loop = scf.ForOp(zero, width, one, [init], _vote_body(op, xch, start, t))
    at(loop)
    return loop.results[0]


def _vote_body(op: Operation, xch: SSAValue, start: SSAValue, t: Attribute):  # noqa: ANN202
    from xdsl.ir import Block, Region

    block = Block(arg_types=[i32, t])
    k, acc = block.args
    ops: list[Operation] = []

    def emit(o: Operation) -> SSAValue:
        ops.append(o)
        return o.results[0]

    p = emit(pto.LoadOp(emit(pto.AddPtrOp(xch, emit(arith.AddiOp(start, k))))))
    if isinstance(op, pto.BallotOp):
        bit = emit(arith.ShLIOp(emit(arith.ExtUIOp(p, i32)), k))
        new = emit(arith.OrIOp(acc, bit))
    elif isinstance(op, pto.VoteAllOp):
        new = emit(arith.AndIOp(acc, p))
    else:
        new = emit(arith.OrIOp(acc, p))
    ops.append(scf.YieldOp(new))
    block.add_ops(ops)
    return Region(block)
