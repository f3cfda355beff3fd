"""The `pto` dialect: one op per instruction of the PTO virtual instruction set (SPEC §2, §4).

Values are per lane (SPMD, as in CUDA): every scalar SSA value of a kernel holds one value for each
lane that executes it. Kernels are `func.func` ops carrying the unit attribute `pto.kernel`;
scalar arithmetic uses `arith`/`math`, control flow `scf`.

Types:
  !pto.ptr<f32, global>   a pointer to HBM (device tensor) elements
  !pto.ptr<f32, local>    a pointer into a block's L1
  !pto.token              completion token of an asynchronous copy

Every op carries the Python source location it was generated from (`loc("k.py":12:8)`).
Each op class's docstring is its ISA reference entry: first line = summary, then the semantics;
`PIPE` is the pipe the instruction issues on (SPEC §1), `example` is a round-trippable snippet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    AnyFloat,
    IntegerAttr,
    IntegerType,
    StringAttr,
    i32,
    i64,
    I64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException

KERNEL_ATTR = "pto.kernel"
"""Unit attribute marking a `func.func` as a pto kernel (an entry point that can be launched)."""

MEMORY_SPACES = ("global", "local")

WARP_SIZE = 32
"""Lanes per warp. The architectural constant of the PTO machine model (`pto.WARP_SIZE`)."""


def _is_scalar_type(t: Attribute) -> bool:
    if isinstance(t, IntegerType):
        return t.width.data in (1, 32, 64)
    return isinstance(t, AnyFloat)


# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------


@irdl_attr_definition
class PtrType(ParametrizedAttribute, TypeAttribute):
    """A typed pointer: element type + memory space (`global` = HBM, `local` = the block's L1)."""

    name = "pto.ptr"

    element_type: Attribute
    memory_space: StringAttr

    def __init__(self, element_type: Attribute, memory_space: str | StringAttr = "global"):
        if isinstance(memory_space, str):
            memory_space = StringAttr(memory_space)
        super().__init__(element_type, memory_space)

    @property
    def space(self) -> str:
        return self.memory_space.data

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.element_type)
            printer.print_string(", ")
            printer.print_string(self.memory_space.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            elem = parser.parse_type()
            parser.parse_punctuation(",")
            pos = parser.pos
            space = parser.parse_identifier(" memory space (global or local)")
            if space not in MEMORY_SPACES:
                parser.raise_error(
                    f"unknown memory space '{space}'; expected one of: {', '.join(MEMORY_SPACES)}",
                    pos, parser.pos)
        return (elem, StringAttr(space))

    def verify(self) -> None:
        if not _is_scalar_type(self.element_type):
            raise VerifyException(
                f"!pto.ptr element type must be a scalar (f32, f16, bf16, i32, i64, i1), "
                f"got {self.element_type}")
        if self.memory_space.data not in MEMORY_SPACES:
            raise VerifyException(f"unknown memory space '{self.memory_space.data}'")


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """Completion token of an asynchronous copy (`pto.async_load` / `pto.async_store`)."""

    name = "pto.token"


# --------------------------------------------------------------------------------------------
# Id ops
# --------------------------------------------------------------------------------------------


class _DimIdOp(IRDLOperation):
    """Shared shape of the id ops that take a grid dimension (0 = x, 1 = y, 2 = z)."""

    dim = prop_def(IntegerAttr[I64])
    result = result_def(i32)

    assembly_format = "$dim attr-dict `:` type($result)"

    PIPE: ClassVar[str] = "SCALAR"

    def __init__(self, dim: int = 0):
        super().__init__(properties={"dim": IntegerAttr(dim, i64)}, result_types=[i32])

    @property
    def dim_index(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        if self.dim_index not in (0, 1, 2):
            raise VerifyException(f"dimension must be 0, 1 or 2, got {self.dim_index}")


@irdl_op_definition
class GetGlobalIdOp(_DimIdOp):
    """Global lane index along a dimension: `block_id * block_dim + local_id`.

    syntax: `%i = pto.get_global_id 0 : i32`
    """

    name = "pto.get_global_id"
    traits = traits_def(Pure())


@irdl_op_definition
class GetLocalIdOp(_DimIdOp):
    """Index of the lane within its block along a dimension.

    syntax: `%i = pto.get_local_id 0 : i32`
    """

    name = "pto.get_local_id"
    traits = traits_def(Pure())


@irdl_op_definition
class GetBlockIdOp(_DimIdOp):
    """Index of the block within the grid along a dimension.

    syntax: `%i = pto.get_block_id 0 : i32`
    """

    name = "pto.get_block_id"
    traits = traits_def(Pure())


@irdl_op_definition
class GetBlockDimOp(_DimIdOp):
    """Number of lanes of a block along a dimension.

    syntax: `%n = pto.get_block_dim 0 : i32`
    """

    name = "pto.get_block_dim"
    traits = traits_def(Pure())


@irdl_op_definition
class GetGridDimOp(_DimIdOp):
    """Number of blocks of the grid along a dimension.

    syntax: `%n = pto.get_grid_dim 0 : i32`
    """

    name = "pto.get_grid_dim"
    traits = traits_def(Pure())


class _PlainIdOp(IRDLOperation):
    result = result_def(i32)
    assembly_format = "attr-dict `:` type($result)"
    PIPE: ClassVar[str] = "SCALAR"

    def __init__(self):
        super().__init__(result_types=[i32])


@irdl_op_definition
class GetWarpIdOp(_PlainIdOp):
    """Index of the lane's warp within its block: `linear_local_id // 32`.

    syntax: `%w = pto.get_warp_id : i32`
    """

    name = "pto.get_warp_id"
    traits = traits_def(Pure())


@irdl_op_definition
class GetLaneIdOp(_PlainIdOp):
    """Index of the lane within its warp: `linear_local_id % 32`.

    syntax: `%l = pto.get_lane_id : i32`
    """

    name = "pto.get_lane_id"
    traits = traits_def(Pure())


# --------------------------------------------------------------------------------------------
# Pointer arithmetic and lane memory
# --------------------------------------------------------------------------------------------


def _check_ptr_elem(op: IRDLOperation, ptr: SSAValue, value_type: Attribute, what: str) -> None:
    ptr_type = ptr.type
    assert isinstance(ptr_type, PtrType)
    if ptr_type.element_type != value_type:
        raise VerifyException(
            f"{what} type {value_type} does not match the pointer's element type "
            f"{ptr_type.element_type}")


@irdl_op_definition
class AddPtrOp(IRDLOperation):
    """Offset a pointer by a number of elements (`p + i` in a kernel).

    The offset is a signed integer counted in elements of the pointee type, as C pointer
    arithmetic; the result stays in the same memory space.
    syntax: `%q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32`
    """

    name = "pto.addptr"
    T: ClassVar = VarConstraint("T", AnyAttr())

    ptr = operand_def(T)
    offset = operand_def(IntegerType)
    result = result_def(T)

    assembly_format = "$ptr `,` $offset attr-dict `:` type($ptr) `,` type($offset)"
    traits = traits_def(Pure())
    PIPE: ClassVar[str] = "SCALAR"

    def __init__(self, ptr: SSAValue, offset: SSAValue):
        super().__init__(operands=[ptr, offset], result_types=[ptr.type])

    def verify_(self) -> None:
        if not isinstance(self.ptr.type, PtrType):
            raise VerifyException(f"expected a !pto.ptr operand, got {self.ptr.type}")
        t = self.offset.type
        assert isinstance(t, IntegerType)
        if t.width.data not in (32, 64):
            raise VerifyException(f"pointer offset must be i32 or i64, got {t}")


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Load one element per lane from HBM or L1.

    semantics: `v = *ptr` for every active lane; an address outside the pointed-to buffer is a
    `MemoryAccessError`.
    syntax: `%v = pto.load %p : !pto.ptr<f32, global> -> f32`
    """

    name = "pto.load"

    ptr = operand_def(PtrType)
    result = result_def(AnyAttr())

    assembly_format = "$ptr attr-dict `:` type($ptr) `->` type($result)"
    traits = traits_def(MemoryReadEffect())
    PIPE: ClassVar[str] = "VECTOR"

    def __init__(self, ptr: SSAValue):
        ptr_type = ptr.type
        assert isinstance(ptr_type, PtrType)
        super().__init__(operands=[ptr], result_types=[ptr_type.element_type])

    def verify_(self) -> None:
        _check_ptr_elem(self, self.ptr, self.result.type, "result")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Store one element per lane to HBM or L1.

    semantics: `*ptr = value` for every active lane.
    syntax: `pto.store %v, %p : f32, !pto.ptr<f32, global>`
    """

    name = "pto.store"

    value = operand_def(AnyAttr())
    ptr = operand_def(PtrType)

    assembly_format = "$value `,` $ptr attr-dict `:` type($value) `,` type($ptr)"
    traits = traits_def(MemoryWriteEffect())
    PIPE: ClassVar[str] = "VECTOR"

    def __init__(self, value: SSAValue, ptr: SSAValue):
        super().__init__(operands=[value, ptr])

    def verify_(self) -> None:
        _check_ptr_elem(self, self.ptr, self.value.type, "stored value")


@irdl_op_definition
class FmaOp(IRDLOperation):
    """Fused multiply-add with fused store: `*dst = a * b + c`.

    semantics: a true multiply-add. The product and sum are evaluated in float64 and rounded once
    to the destination's float type (exact for float16 and bfloat16; for float32 the product is
    exact and the sum is rounded to float64 then float32). For integers the arithmetic wraps.
    To add two values write `pto.fma(dst, a, 1.0, b)`.
    syntax: `pto.fma %dst, %a, %b, %c : !pto.ptr<f32, global>, f32`
    """

    name = "pto.fma"
    T: ClassVar = VarConstraint("T", AnyAttr())

    dst = operand_def(PtrType)
    a = operand_def(T)
    b = operand_def(T)
    c = operand_def(T)

    assembly_format = "$dst `,` $a `,` $b `,` $c attr-dict `:` type($dst) `,` type($a)"
    traits = traits_def(MemoryWriteEffect())
    PIPE: ClassVar[str] = "VECTOR"

    def __init__(self, dst: SSAValue, a: SSAValue, b: SSAValue, c: SSAValue):
        super().__init__(operands=[dst, a, b, c])

    def verify_(self) -> None:
        _check_ptr_elem(self, self.dst, self.a.type, "operand")
        if isinstance(self.a.type, IntegerType) and self.a.type.width.data == 1:
            raise VerifyException("pto.fma is not defined on i1")


# --------------------------------------------------------------------------------------------
# Synchronisation
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """Synchronise the 32 lanes of the current warp (only the warp, not the block).

    semantics: every lane of the warp reaches the barrier before any continues; L1 writes of the
    warp before it are visible to the warp after it. Lanes of other warps are *not* ordered: to
    exchange data between warps use `pto.barrier_block`.
    syntax: `pto.barrier`
    """

    name = "pto.barrier"
    assembly_format = "attr-dict"
    traits = traits_def(MemoryWriteEffect(), MemoryReadEffect())
    PIPE: ClassVar[str] = "SCALAR"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class BarrierBlockOp(IRDLOperation):
    """Synchronise every lane of the block and make prior L1 writes visible to all lanes.

    semantics: as CUDA's `__syncthreads()`; every lane of the block must reach it (a
    `barrier_block` under lane-dependent control flow is a deadlock).
    syntax: `pto.barrier_block`
    """

    name = "pto.barrier_block"
    assembly_format = "attr-dict"
    traits = traits_def(MemoryWriteEffect(), MemoryReadEffect())
    PIPE: ClassVar[str] = "SCALAR"

    def __init__(self):
        super().__init__()


PTO_OPS: tuple[type[IRDLOperation], ...] = (
    GetGlobalIdOp,
    GetLocalIdOp,
    GetBlockIdOp,
    GetBlockDimOp,
    GetGridDimOp,
    GetWarpIdOp,
    GetLaneIdOp,
    AddPtrOp,
    LoadOp,
    StoreOp,
    FmaOp,
    BarrierOp,
    BarrierBlockOp,
)

PTO = Dialect("pto", list(PTO_OPS), [PtrType, TokenType])
