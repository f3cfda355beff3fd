"""The `npu` dialect: the firmware level below `pto` (docs/cost-model.md#the-firmware-level-npu-dialect, `convert-pto-to-npu`).

The PTO virtual ISA hides three things the firmware makes explicit, and this dialect shows them:

- **pipes**: every op issues on one pipe (SCALAR, VECTOR, CUBE, MTE_IN, MTE_OUT), declared once
  on the op as a trait (`IssuesOn`, with its memory accesses and block-collective nature, see
  `pypto.dialects.traits`); pipes run in parallel, each in order;
- **flags**: an asynchronous copy is a copy on an MTE pipe plus a `npu.set_flag` on the producer
  pipe and a `npu.wait_flag` on the consumer pipe (Ascend C's SetFlag / WaitFlag); a synchronous
  tile store is a copy followed by its flag pair; `pto.barrier_block` is a `npu.pipe_barrier`;
- **staging**: the vector unit works on L1, so a lane load from HBM lands in an L1 slot
  (`LOAD d_a[0] -> L1[0]`, docs/passes.md#the-l1-map) and a lane store to HBM leaves from one. A slot is an L1
  buffer (`pto.alloc_local`, placed by `pto-allocate-l1` or, without it, by the interpreter)
  with one element per lane of the block: lane k stages its value in element k.

The staging write is each lane's private element of its instruction's own slot, which no other
instruction reads: it is not declared as a memory access of the op (traits), so the race
detector and xDSL's effect analyses see the lane access the instruction stands for.

and one thing the firmware adds: **fusion**. `npu.load_mma` is a tile load fused with the MMA it
feeds (`npu-fuse-load-mma`), the instruction behind the article's first pitfall.

Values, pointers, buffers and tokens are the `pto` dialect's types; ops the firmware runs as the
virtual ISA defines them (ids, `pto.addptr`, `pto.alloc_local`, `pto.fill`, `pto.atomic_add`,
`pto.printf`) stay `pto` ops at this level.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, i32, i64
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.utils.exceptions import VerifyException

from pypto.dialects.lazy_format import op_definition
from pypto.dialects.traits import (
    CUBE,
    MTE_IN,
    MTE_OUT,
    PIPES,
    SCALAR,
    VECTOR,
    AccessesMemory,
    BlockCollective,
    Fence,
    InstructionKind,
    LoadMmaFootprint,
    MmaFootprint,
    SignalsCompletion,
    StartsCopy,
    Synchronizes,
    Waits,
    read,
    write,
)
from pypto.dialects.pto import (
    ADDRESS,
    COPY_FORMAT,
    BulkCopyOp,
    L1BufferType,
    TokenType,
    element_type_of,
    memory_space_of,
)

def _check_slot(op: IRDLOperation, ptr: SSAValue, slot: SSAValue | None, value_type: Attribute,
                what: str) -> None:
    """A lane access to HBM is staged through a slot; an L1 access is not (it is in L1)."""
    elem = element_type_of(ptr.type)
    if elem != value_type:
        raise VerifyException(f"{what} type {value_type} does not match the address's element "
                              f"type {elem}")
    space = memory_space_of(ptr.type)
    if space == "global" and slot is None:
        raise VerifyException("an HBM access is staged through an L1 slot: write "
                              "`via %slot` (a !pto.l1buf with one element per lane)")
    if space == "local" and slot is not None:
        raise VerifyException("an L1 access needs no staging slot (the vector unit reads L1 "
                              "directly): drop `via %slot`")
    if slot is not None:
        assert isinstance(slot.type, L1BufferType)
        if slot.type.element_type != elem:
            raise VerifyException(f"slot element type {slot.type.element_type} does not match "
                                  f"the staged value's type {elem}")


class NpuOp(IRDLOperation):
    """Base of the npu ops: every one is an instruction of the firmware. Their facts are traits
    (`pypto.dialects.traits`: the pipe, the memory accesses, block collectives, copies, waits,
    barriers, tile footprints); `InstructionKind` names the instruction in profiles."""


@op_definition
class LoadOp(NpuOp):
    """Lane load; from HBM it is staged through an L1 slot (`LOAD d_a[i] -> L1[slot + lane]`).

    semantics: every active lane k reads `*ptr`; from HBM the value is first written to element
    k (the lane's linear id in the block) of `slot`, and the result is read from there.
    syntax: `%v = npu.load %p via %slot : !pto.ptr<f32, global>, !pto.l1buf<256xf32> -> f32`
    """

    name = "npu.load"
    ptr = operand_def(ADDRESS)
    slot = opt_operand_def(L1BufferType)
    result = result_def(AnyAttr())
    assembly_format = ("$ptr (`via` $slot^)? attr-dict `:` type($ptr) (`,` type($slot)^)? "
                       "`->` type($result)")
    traits = traits_def(VECTOR, AccessesMemory(read(0)), InstructionKind("LOAD"))

    def __init__(self, ptr: SSAValue, slot: SSAValue | None):
        super().__init__(operands=[ptr, [slot] if slot is not None else []],
                         result_types=[element_type_of(ptr.type)])

    def verify_(self) -> None:
        _check_slot(self, self.ptr, self.slot, self.result.type, "result")


@op_definition
class StoreOp(NpuOp):
    """Lane store; to HBM it leaves from an L1 slot (`STORE L1[slot + lane] -> d_o[i]`).

    semantics: every active lane k writes `value` to `*ptr`; to HBM the value is first written
    to element k of `slot`, then copied out from there.
    syntax: `npu.store %v, %p via %slot : f32, !pto.ptr<f32, global>, !pto.l1buf<256xf32>`
    """

    name = "npu.store"
    value = operand_def(AnyAttr())
    ptr = operand_def(ADDRESS)
    slot = opt_operand_def(L1BufferType)
    assembly_format = ("$value `,` $ptr (`via` $slot^)? attr-dict `:` type($value) `,` "
                       "type($ptr) (`,` type($slot)^)?")
    traits = traits_def(VECTOR, AccessesMemory(write(1)), InstructionKind("STORE"))

    def __init__(self, value: SSAValue, ptr: SSAValue, slot: SSAValue | None):
        super().__init__(operands=[value, ptr, [slot] if slot is not None else []])

    def verify_(self) -> None:
        _check_slot(self, self.ptr, self.slot, self.value.type, "stored value")


@op_definition
class FmaOp(NpuOp):
    """Multiply-add with fused store, `*dst = a * b + c`, staged like `npu.store`.

    semantics: as `pto.fma`; to HBM the result is written to the lane's element of `slot` first.
    syntax: `npu.fma %dst, %a, %b, %c via %slot : !pto.ptr<f32, global>, f32, !pto.l1buf<256xf32>`
    """

    name = "npu.fma"
    T: ClassVar = VarConstraint("T", AnyAttr())
    dst = operand_def(ADDRESS)
    a = operand_def(T)
    b = operand_def(T)
    c = operand_def(T)
    slot = opt_operand_def(L1BufferType)
    assembly_format = ("$dst `,` $a `,` $b `,` $c (`via` $slot^)? attr-dict `:` type($dst) `,` "
                       "type($a) (`,` type($slot)^)?")
    traits = traits_def(VECTOR, AccessesMemory(write(0)), InstructionKind("FMA"))

    def __init__(self, dst: SSAValue, a: SSAValue, b: SSAValue, c: SSAValue,
                 slot: SSAValue | None):
        super().__init__(operands=[dst, a, b, c, [slot] if slot is not None else []])

    def verify_(self) -> None:
        _check_slot(self, self.dst, self.slot, self.a.type, "operand")


class _CopyOp(BulkCopyOp):
    """A bulk copy on an MTE pipe: the operands, checks and tile footprint of pto's copies,
    and a token its `npu.set_flag` / `npu.wait_flag` pair orders the consumer by."""

    token = result_def(TokenType)
    assembly_format = COPY_FORMAT
    traits = traits_def(StartsCopy())

    def __init__(self, dst: SSAValue, src: SSAValue, nbytes: SSAValue, rows: SSAValue,
                 src_stride: SSAValue, dst_stride: SSAValue):
        super().__init__(dst, src, nbytes, rows, src_stride, dst_stride, [TokenType()])


@op_definition
class CopyInOp(_CopyOp):
    """HBM -> L1 copy on MTE_IN; its token is signalled by a `npu.set_flag`.

    semantics: starts the copy; the destination holds the data after the `npu.wait_flag` (or
    `npu.wait_flag_all`) that consumes the token.
    syntax: `%t = npu.copy_in %dst, %src, %nbytes rows %r strides(%ss, %ds) : !pto.l1buf<4096xf32>, !pto.ptr<f32, global>`
    """

    name = "npu.copy_in"
    traits = traits_def(MTE_IN, AccessesMemory(write(0, "local"), read(1, "global")))


@op_definition
class CopyOutOp(_CopyOp):
    """L1 -> HBM copy on MTE_OUT (async store, and synchronous tile store with its flags).

    semantics: as `npu.copy_in` in the other direction.
    syntax: `%t = npu.copy_out %dst, %src, %nbytes rows %r strides(%ss, %ds) : !pto.ptr<f32, global>, !pto.l1buf<4096xf32>`
    """

    name = "npu.copy_out"
    traits = traits_def(MTE_OUT, AccessesMemory(write(0, "global"), read(1, "local")))
    DST_SPACE: ClassVar[str] = "global"
    SRC_SPACE: ClassVar[str] = "local"


def _check_pipe_pair(op: IRDLOperation) -> None:
    for key in ("src_pipe", "dst_pipe"):
        value = op.properties[key]
        assert isinstance(value, StringAttr)
        if value.data not in PIPES:
            raise VerifyException(f"unknown pipe '{value.data}' for {key.replace('_', ' ')}; "
                                  f"pipes: {', '.join(PIPES)}")
    if op.properties["src_pipe"] == op.properties["dst_pipe"]:
        raise VerifyException("a flag orders two different pipes (one pipe is already in order)")


class _FlagOp(NpuOp):
    token = operand_def(TokenType)
    src_pipe = prop_def(StringAttr)
    dst_pipe = prop_def(StringAttr)
    assembly_format = "$token $src_pipe `->` $dst_pipe attr-dict"

    def __init__(self, token: SSAValue, src_pipe: str, dst_pipe: str):
        super().__init__(operands=[token], properties={"src_pipe": StringAttr(src_pipe),
                                                       "dst_pipe": StringAttr(dst_pipe)})

    @property
    def pipes(self) -> tuple[str, str]:
        return (self.src_pipe.data, self.dst_pipe.data)

    def verify_(self) -> None:
        _check_pipe_pair(self)


@op_definition
class SetFlagOp(_FlagOp):
    """Signal, from the producer pipe, that the copy of `token` has completed.

    semantics: issued on `src_pipe` after the copy (in order on that pipe), it fires when the copy
    completes; the interpreter completes copies at their wait, so it has no effect there.
    syntax: `npu.set_flag %t "MTE_IN" -> "CUBE"`
    """

    name = "npu.set_flag"
    traits = traits_def(SCALAR, BlockCollective(), SignalsCompletion(), InstructionKind())

    @property
    def issue_pipe(self) -> str:
        return self.src_pipe.data


@op_definition
class WaitFlagOp(_FlagOp):
    """Block the consumer pipe until the flag of `token`'s copy has been set.

    semantics: as `pto.wait` on the token: afterwards the copy's destination holds its data and
    its source may be reused. `dst_pipe` is the pipe of the copy's first consumer.
    syntax: `npu.wait_flag %t "MTE_IN" -> "CUBE"`
    """

    name = "npu.wait_flag"
    traits = traits_def(SCALAR, Fence(), BlockCollective(), Waits("token"), InstructionKind())


@op_definition
class WaitFlagAllOp(NpuOp):
    """Wait for the flags of every outstanding copy of the block (`pto.wait_all`).

    syntax: `npu.wait_flag_all`
    """

    name = "npu.wait_flag_all"
    assembly_format = "attr-dict"
    traits = traits_def(SCALAR, Fence(), BlockCollective(), Waits("all"),
                        InstructionKind("WAIT_FLAG"))

    def __init__(self) -> None:
        super().__init__()


@op_definition
class PipeBarrierOp(NpuOp):
    """Drain every pipe and synchronise the block (`pto.barrier_block`, PipeBarrier<PIPE_ALL>).

    syntax: `npu.pipe_barrier`
    """

    name = "npu.pipe_barrier"
    assembly_format = "attr-dict"
    traits = traits_def(SCALAR, Fence(), BlockCollective(), Synchronizes("block"),
                        InstructionKind("BARRIER"))

    def __init__(self) -> None:
        super().__init__()


@op_definition
class WarpBarrierOp(NpuOp):
    """Synchronise the 32 lanes of the current warp (`pto.barrier`).

    syntax: `npu.warp_barrier`
    """

    name = "npu.warp_barrier"
    assembly_format = "attr-dict"
    traits = traits_def(SCALAR, Fence(), Synchronizes("warp"), InstructionKind("BARRIER"))

    def __init__(self) -> None:
        super().__init__()


def _check_mma_operands(op: IRDLOperation, m: int, n: int, k: int) -> None:
    if min(m, n, k) <= 0:
        raise VerifyException(f"shape (m, n, k) must be positive, got ({m}, {n}, {k})")
    for operand, what, need in ((op.operands[0], "C", m * n), (op.operands[1], "A", m * k),
                                (op.operands[2], "B", k * n)):
        if memory_space_of(operand.type) != "local":
            raise VerifyException(f"operand {what} must be in L1, got {operand.type}")
        if isinstance(operand.type, L1BufferType) and operand.type.size < need:
            raise VerifyException(f"operand {what} needs {need} elements but its buffer holds "
                                  f"{operand.type.size}")


class _MmaShape(NpuOp):
    m = prop_def(IntegerAttr[I64])
    n = prop_def(IntegerAttr[I64])
    k = prop_def(IntegerAttr[I64])

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m.value.data, self.n.value.data, self.k.value.data)

    @staticmethod
    def shape_props(m: int, n: int, k: int) -> dict[str, Attribute]:
        return {"m": IntegerAttr(m, i64), "n": IntegerAttr(n, i64), "k": IntegerAttr(k, i64)}


@op_definition
class MmaOp(_MmaShape):
    """Matrix multiply-accumulate on L1 tiles on the CUBE pipe (`pto.mma`).

    syntax: `npu.mma %c, %a, %b shape(64, 64, 64) : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>`
    """

    name = "npu.mma"
    c = operand_def(ADDRESS)
    a = operand_def(ADDRESS)
    b = operand_def(ADDRESS)
    assembly_format = ("$c `,` $a `,` $b `shape` `(` $m `,` $n `,` $k `)` attr-dict `:` "
                       "type($c) `,` type($a) `,` type($b)")
    traits = traits_def(CUBE, AccessesMemory(read(1, "local"), read(2, "local"),
                                             read(0, "local"), write(0, "local")),
                        BlockCollective(), MmaFootprint(), InstructionKind())

    def __init__(self, c: SSAValue, a: SSAValue, b: SSAValue, m: int, n: int, k: int):
        super().__init__(operands=[c, a, b], properties=self.shape_props(m, n, k))

    def verify_(self) -> None:
        _check_mma_operands(self, *self.shape)


FUSED_OPERANDS = ("a", "b")


@op_definition
class LoadMmaOp(_MmaShape):
    """The firmware's fused instruction: a tile load into an MMA operand, then the MMA.

    semantics: copies `nbytes` from `src` (HBM) into operand `operand` ("a" or "b") of the MMA
    (as `npu.copy_in` would, rows and strides included), then `C += A @ B`, as one CUBE
    instruction with no flag handshake between them. Made by `npu-fuse-load-mma`; results equal
    the unfused copy, wait and MMA.
    syntax: `npu.load_mma %c, %a, %b, %src, %nbytes rows %r strides(%ss, %ds) shape(64, 64, 64) into "b" : ...`
    """

    name = "npu.load_mma"
    c = operand_def(ADDRESS)
    a = operand_def(ADDRESS)
    b = operand_def(ADDRESS)
    src = operand_def(ADDRESS)
    nbytes = operand_def(i32)
    rows = operand_def(i32)
    src_stride = operand_def(i32)
    dst_stride = operand_def(i32)
    operand = prop_def(StringAttr)
    assembly_format = ("$c `,` $a `,` $b `,` $src `,` $nbytes `rows` $rows `strides` `(` "
                       "$src_stride `,` $dst_stride `)` `shape` `(` $m `,` $n `,` $k `)` `into` "
                       "$operand attr-dict `:` type($c) `,` type($a) `,` type($b) `,` type($src)")
    # the loaded operand is A or B (`operand`): both are declared written
    traits = traits_def(CUBE, AccessesMemory(read(3, "global"), write(1, "local"),
                                             write(2, "local"), read(0, "local"),
                                             write(0, "local")),
                        BlockCollective(), LoadMmaFootprint(), InstructionKind())

    def __init__(self, c: SSAValue, a: SSAValue, b: SSAValue, src: SSAValue, nbytes: SSAValue,
                 rows: SSAValue, src_stride: SSAValue, dst_stride: SSAValue, operand: str,
                 shape: Sequence[int]):
        m, n, k = shape
        props = self.shape_props(m, n, k)
        props["operand"] = StringAttr(operand)
        super().__init__(operands=[c, a, b, src, nbytes, rows, src_stride, dst_stride],
                         properties=props)

    @property
    def loaded(self) -> SSAValue:
        """The operand the fused load writes (A or B)."""
        return self.a if self.operand.data == "a" else self.b

    def verify_(self) -> None:
        _check_mma_operands(self, *self.shape)
        if self.operand.data not in FUSED_OPERANDS:
            raise VerifyException(f"the fused load writes operand \"a\" or \"b\", got "
                                  f"\"{self.operand.data}\"")
        if memory_space_of(self.src.type) != "global":
            raise VerifyException(f"the fused load reads HBM, got {self.src.type}")
        if element_type_of(self.src.type) != element_type_of(self.loaded.type):
            raise VerifyException("the fused load's source and operand element types differ")


NPU_OPS: tuple[type[IRDLOperation], ...] = (
    LoadOp, StoreOp, FmaOp, CopyInOp, CopyOutOp, SetFlagOp, WaitFlagOp, WaitFlagAllOp,
    PipeBarrierOp, WarpBarrierOp, MmaOp, LoadMmaOp,
)

NPU = Dialect("npu", list(NPU_OPS), [])
