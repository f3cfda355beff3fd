"""`convert-pto-to-npu`: lower the virtual ISA to the firmware level (SPEC §5, dialect `npu`).

What changes, op by op (everything else stays a `pto` op, see `pypto.dialects.npu`):

    pto.load / store / fma on HBM  ->  npu.load / store / fma `via` an L1 slot (one per op)
    pto.load / store / fma on L1   ->  npu.load / store / fma (no slot: the data is in L1)
    pto.async_load                 ->  npu.copy_in   + npu.set_flag MTE_IN  -> consumer pipe
    pto.async_store                ->  npu.copy_out  + npu.set_flag MTE_OUT -> consumer pipe
    pto.tile_store                 ->  npu.copy_out  + npu.set_flag + npu.wait_flag (synchronous)
    pto.wait / pto.wait_all        ->  npu.wait_flag (pipes of its copy) / npu.wait_flag_all
    pto.barrier_block / barrier    ->  npu.pipe_barrier / npu.warp_barrier
    pto.mma                        ->  npu.mma
    pto.tadd, pto.trowsum, ...     ->  unchanged: a tile vector instruction is already one
                                       instruction of the vector pipe at the firmware level
                                       (costed per 256-byte repeat, docs/cost-model.md)

A slot is a `pto.alloc_local` of one element per lane of the block (the pass's `block-size` /
`block-dims`, which `pto.compile` sets to the launch's block), allocated at the top of the kernel
and left unplaced: `pto-allocate-l1` gives it an offset, the interpreter places it otherwise.
A flag's consumer pipe is the pipe of the first instruction after the wait that touches memory
on another pipe than the copy's (SCALAR when there is none); a copy waited for by a `wait_all`
takes it from the first `wait_all` after it (in a loop, the next iteration's when none follows
in its own).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from pypto.analysis.ir_utils import kernels, yielded
from pypto.analysis.l1_liveness import while_arg_sources, while_result_sources
from pypto.analysis.uniformity import walk
from pypto.dialects import npu, pto
from pypto.dialects.traits import (
    copies_synchronously,
    declared_accesses,
    pipe_of,
    starts_copy,
)
from pypto.passes.verify_barriers import BlockShapeOptions


def copy_pipe(token: SSAValue) -> str:
    """The MTE pipe of the copy that made `token`, followed through region results and loop
    arguments (MTE_IN when it cannot be told: a token passed in from outside)."""
    seen: set[SSAValue] = set()
    work = [token]
    while work:
        value = work.pop()
        if value in seen:
            continue
        seen.add(value)
        owner = value.owner
        if isinstance(owner, Operation) and (starts_copy(owner) or
                                             copies_synchronously(owner)):
            return pipe_of(owner)
        if isinstance(owner, scf.WhileOp):  # a SIMT loop's result: what scf.condition forwards
            work.extend(while_result_sources(owner, value))
        elif isinstance(owner, Operation):  # a region op's result: what its regions yield there
            work.extend(yielded(owner, list(owner.results).index(value)))
        elif isinstance(owner, Block):  # a loop-carried argument: its initial value, its yield
            loop = owner.parent_op()
            if isinstance(loop, scf.ForOp) and value.index > 0:
                work.append(loop.iter_args[value.index - 1])
                last = owner.last_op
                if last is not None:
                    work.append(last.operands[value.index - 1])
            elif isinstance(loop, scf.WhileOp):
                work.extend(while_arg_sources(loop, value))
    return "MTE_IN"


def consumer_pipe(wait: Operation, src_pipe: str) -> str:
    """The pipe of the first memory instruction after `wait` (in its block and the ones around
    it) on another pipe than the copy's: the pipe its flag must hold back; SCALAR when none
    follows. (Another copy on the producer's own pipe is ordered by that pipe already.)"""
    op: Operation | None = wait
    while op is not None:
        nxt = op.next_op
        while nxt is not None:
            for inner in walk([nxt]):
                if declared_accesses(inner) and pipe_of(inner) != src_pipe:
                    return pipe_of(inner)  # the first instruction touching memory on another pipe
            nxt = nxt.next_op
        parent = op.parent_op()
        op = parent if parent is not None and not isinstance(parent, func.FuncOp) else None
    return "SCALAR"


def waiting_wait_all(copy: Operation) -> Operation | None:
    """The `pto.wait_all` that waits for `copy`: the first one after it in program order (into
    the regions that follow, then out to the enclosing blocks); inside a loop with none after
    the copy in its body, the first of the body (the next iteration's)."""
    op: Operation | None = copy
    while op is not None:
        nxt = op.next_op
        while nxt is not None:
            for inner in walk([nxt]):
                if isinstance(inner, pto.WaitAllOp):
                    return inner
            nxt = nxt.next_op
        parent = op.parent_op()
        if isinstance(parent, scf.ForOp):
            for inner in walk(parent.body.block.ops):
                if isinstance(inner, pto.WaitAllOp):
                    return inner
        op = parent if parent is not None and not isinstance(parent, func.FuncOp) else None
    return None


@dataclass(frozen=True)
class ConvertPtoToNpu(BlockShapeOptions, ModulePass):
    """Lower pto to the npu firmware level: pipes, flags for copies, lane accesses staged in L1.

    Lane loads and stores of HBM go through an L1 slot of one element per lane of a block of
    `block-size` lanes (or `block-dims`); async copies become MTE copies with set/wait flags;
    block barriers become pipe barriers. Results are unchanged (the interpreter runs both levels).
    """

    name = "convert-pto-to-npu"

    @property
    def block_lanes(self) -> int:
        shape = self.block
        if isinstance(shape, int):
            return shape
        lanes = 1
        for d in shape:
            lanes *= d
        return lanes

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in list(kernels(op)):
            _Lowering(kernel, self.block_lanes).run()


class _Lowering:
    def __init__(self, kernel: func.FuncOp, lanes: int):
        self.kernel = kernel
        self.lanes = lanes
        self.rewriter = Rewriter()
        self.last_slot: Operation | None = None

    def slot(self, element_type: Attribute, like: Operation) -> SSAValue:
        """A new staging slot at the top of the kernel (one per staged instruction)."""
        alloc = pto.AllocLocalOp(self.lanes, element_type)
        alloc.location = like.location
        entry = self.kernel.body.block
        point = (InsertPoint.after(self.last_slot) if self.last_slot is not None
                 else InsertPoint.at_start(entry))
        self.rewriter.insert_op(alloc, point)
        self.last_slot = alloc
        alloc.result.name_hint = "slot"
        return alloc.result

    def staged(self, address: SSAValue, like: Operation) -> SSAValue | None:
        if pto.memory_space_of(address.type) != "global":
            return None
        return self.slot(pto.element_type_of(address.type), like)

    def replace(self, old: Operation, new: list[Operation],
                results: list[SSAValue] | None = None) -> None:
        for n in new:
            n.location = old.location
        self.rewriter.replace_op(old, new, results)

    def run(self) -> None:
        ops = list(walk(self.kernel.body.block.ops))
        flags = {op: consumer_pipe(op, copy_pipe(op.token)) for op in ops
                 if isinstance(op, pto.WaitOp)}
        for op in ops:
            self.lower(op, flags)

    def lower(self, op: Operation, flags: dict[Operation, str]) -> None:
        if isinstance(op, pto.LoadOp):
            new = npu.LoadOp(op.ptr, self.staged(op.ptr, op))
            new.result.name_hint = op.result.name_hint
            self.replace(op, [new])
        elif isinstance(op, pto.StoreOp):
            self.replace(op, [npu.StoreOp(op.value, op.ptr, self.staged(op.ptr, op))])
        elif isinstance(op, pto.FmaOp):
            self.replace(op, [npu.FmaOp(op.dst, op.a, op.b, op.c, self.staged(op.dst, op))])
        elif isinstance(op, pto.AsyncLoadOp | pto.AsyncStoreOp | pto.TileStoreOp):
            self.lower_copy(op)
        elif isinstance(op, pto.WaitOp):
            src = copy_pipe(op.token)
            self.replace(op, [npu.WaitFlagOp(op.token, src, flags[op])])
        elif isinstance(op, pto.WaitAllOp):
            self.replace(op, [npu.WaitFlagAllOp()])
        elif isinstance(op, pto.BarrierBlockOp):
            self.replace(op, [npu.PipeBarrierOp()])
        elif isinstance(op, pto.BarrierOp):
            self.replace(op, [npu.WarpBarrierOp()])
        elif isinstance(op, pto.MmaOp):
            self.replace(op, [npu.MmaOp(op.c, op.a, op.b, *op.shape)])

    def lower_copy(self, op: pto.AsyncLoadOp | pto.AsyncStoreOp | pto.TileStoreOp) -> None:
        cls = npu.CopyInOp if isinstance(op, pto.AsyncLoadOp) else npu.CopyOutOp
        copy = cls(op.dst, op.src, op.nbytes, op.rows, op.src_stride, op.dst_stride)
        src = pipe_of(cls)
        if isinstance(op, pto.TileStoreOp):
            # synchronous: the copy, its flag and the wait for it, back to back
            dst = consumer_pipe(op, src)
            self.replace(op, [copy, npu.SetFlagOp(copy.token, src, dst),
                              npu.WaitFlagOp(copy.token, src, dst)], [])
            return
        waits = [use.operation for use in op.token.uses if isinstance(use.operation, pto.WaitOp)]
        if not waits:  # waited for by a wait_all: the pipe after that one
            wait_all = waiting_wait_all(op)
            waits = [wait_all] if wait_all is not None else []
        pipes = {consumer_pipe(w, src) for w in waits}
        dst = pipes.pop() if len(pipes) == 1 else "SCALAR"
        copy.token.name_hint = op.token.name_hint
        self.replace(op, [copy, npu.SetFlagOp(copy.token, src, dst)], [copy.token])
