"""The `pto` dialect: one op per instruction of the PTO virtual instruction set (docs/isa.md, docs/language.md#instructions).

Values are per lane (SPMD, as in CUDA): every scalar SSA value of a kernel holds one value for each
lane that executes it. Kernels are `func.func` ops carrying the unit attribute `pto.kernel`;
scalar arithmetic uses `arith`/`math`, control flow `scf`.

Types:
  !pto.ptr<f32, global>   a pointer to HBM (device tensor) elements
  !pto.ptr<f32, local>    a pointer into a block's L1
  !pto.l1buf<256xf32>     a block-shared L1 buffer of 256 elements
  !pto.token              completion token of an asynchronous copy

Every op carries the Python source location it was generated from (`loc("k.py":12:8)`).

Each op and type docstring is its entry in the ISA reference `docs/isa.md`, which
`python -m pypto.tools.isa_doc` generates from this file: the first line is the summary, then
prose and these fields, each starting a line and running until the next one:
  semantics:  what it does (joined to any prose before the fields)
  syntax:     the custom IR form
  python:     the kernel-language form
  example:    an indented IR snippet, a whole `func.func`; tests parse and round-trip it
Op facts (the pipe an op issues on, the memory it reads and writes, whether it is a block
collective, whether it is an instruction and of which kind, barriers, copies, waits, tile
footprints) are traits declared in each op's `traits_def`; see `pypto.dialects.traits`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    VectorType,
    i32,
    i64,
    I64,
)
from xdsl.ir import (
    Attribute,
    Operation,
    Block,
    Dialect,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl.constraints import VerificationContext
from xdsl.irdl import (
    AnyAttr,
    AttrConstraint,
    IntConstraint,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_attr_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    EffectInstance,
    HasParent,
    IsTerminator,
    MemoryAllocEffect,
    MemoryWriteEffect,
    NoMemoryEffect,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from pypto.dialects.lazy_format import op_definition
from pypto.dialects.traits import (
    CUBE,
    MTE_IN,
    MTE_OUT,
    SCALAR,
    VECTOR,
    AccessesMemory,
    AtomicUpdate,
    BlockCollective,
    CopiesSynchronously,
    CopyFootprint,
    DeclaresBuffer,
    ChecksUniform,
    Fence,
    FillFootprint,
    ForwardsYield,
    Elementwise,
    InstructionKind,
    KernelFunction,
    LaunchId,
    MmaFootprint,
    OffsetsAddress,
    StartsCopy,
    Synchronizes,
    TileVector,
    WarpCollective,
    tile_vector,
    Waits,
    WritesOutput,
    read,
    write,
)

_STORE_SIGNATURE = "(ptr, value, nbytes=None, rows=1, src_stride=None, dst_stride=None)"
"""`pto.store`: a lane store `(ptr, value)`, or with `nbytes` a synchronous tile store
`(dst, src, nbytes, ...)` (`pto.tile_store`)."""

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
    """A typed pointer: element type + memory space (`global` = HBM, `local` = the block's L1).

    semantics: the element type is a scalar (f32, f16, bf16, i32, i64, i1). `pto.addptr` offsets it
    by elements; loads, stores and the bulk copies read and write through it. A device-tensor kernel
    parameter is a `global` pointer; a pointer into an L1 buffer is `local`.
    syntax: `!pto.ptr<f32, global>`, `!pto.ptr<f16, local>`
    python: a kernel parameter bound to `pto.alloc_tensor(nbytes, dtype=np.float32)`; `p + i`
    """

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
    """Completion token of an asynchronous copy (`pto.async_load` / `pto.async_store`).

    semantics: an opaque value with no parameters; `pto.wait` on it blocks until its copy completes.
    syntax: `!pto.token`
    python: `tok = pto.async_load(...)`
    """

    name = "pto.token"


@irdl_attr_definition
class L1BufferType(ParametrizedAttribute, TypeAttribute):
    """A block-shared L1 buffer of `count` elements (`pto.alloc_local`): `!pto.l1buf<256xf32>`.

    semantics: one-dimensional, with a static, positive element count and a scalar element type.
    Used where an address is expected it means its first element; `buf + i` is a
    `!pto.ptr<T, local>`.
    syntax: `!pto.l1buf<256xf32>`
    python: `buf = pto.alloc_local(256, dtype=pto.float32)`
    """

    name = "pto.l1buf"

    count: IntAttr
    element_type: Attribute

    def __init__(self, count: int | IntAttr, element_type: Attribute):
        if isinstance(count, int):
            count = IntAttr(count)
        super().__init__(count, element_type)

    @property
    def size(self) -> int:
        return self.count.data

    @property
    def space(self) -> str:
        """An L1 buffer is always in the block's L1."""
        return "local"

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_int(self.count.data)
            printer.print_string("x")
            printer.print_attribute(self.element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            if parser.parse_optional_punctuation("?") is not None:
                parser.raise_error("!pto.l1buf needs a static element count (L1 sizes are "
                                   "compile-time values), got '?'", pos, parser.pos)
            negative = parser.parse_optional_punctuation("-") is not None
            count = parser.parse_shape_dimension(allow_dynamic=False)
            parser.parse_shape_delimiter()
            if parser.parse_optional_integer(allow_boolean=False) is not None:
                parser.raise_error("!pto.l1buf is one-dimensional: write its total element "
                                   "count, as in !pto.l1buf<4096xf32>", pos, parser.pos)
            elem = parser.parse_type()
        # A negative count parses so that the verifier can say what is wrong with it.
        return (IntAttr(-count if negative else count), elem)

    def verify(self) -> None:
        if self.count.data <= 0:
            raise VerifyException(f"!pto.l1buf needs a positive element count, got "
                                  f"{self.count.data}")
        if not _is_scalar_type(self.element_type):
            raise VerifyException(f"!pto.l1buf element type must be a scalar (f32, f16, bf16, "
                                  f"i32, i64, i1), got {self.element_type}")


def element_type_of(t: Attribute) -> Attribute:
    """Element type of an address type (pointer or L1 buffer)."""
    if isinstance(t, PtrType | L1BufferType):
        return t.element_type
    raise VerifyException(f"expected a !pto.ptr or !pto.l1buf, got {t}")


def memory_space_of(t: Attribute) -> str:
    if isinstance(t, L1BufferType):
        return "local"
    if isinstance(t, PtrType):
        return t.space
    raise VerifyException(f"expected a !pto.ptr or !pto.l1buf, got {t}")


@dataclass(frozen=True)
class _AddressConstraint(AttrConstraint):
    """`!pto.ptr<T, space>` or `!pto.l1buf<NxT>`, rejected with a message naming both.

    (xDSL's union constraint would only say "Unexpected attribute i32".)
    """

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        if not isinstance(attr, PtrType | L1BufferType):
            raise VerifyException(f"expected an address (a !pto.ptr or a !pto.l1buf), got {attr}")

    def get_bases(self) -> set[type[Attribute]] | None:
        return {PtrType, L1BufferType}

    def mapping_type_vars(
        self, type_var_mapping: Mapping[TypeVar, AttrConstraint | IntConstraint]
    ) -> _AddressConstraint:
        return self


AddressType = PtrType | L1BufferType
"""Types that name memory: a pointer, or an L1 buffer (meaning its first element)."""

ADDRESS = _AddressConstraint()
"""The operand constraint for `AddressType` (ops declare `operand_def(ADDRESS)`)."""


# --------------------------------------------------------------------------------------------
# Id ops
# --------------------------------------------------------------------------------------------


class _DimIdOp(IRDLOperation):
    """Shared shape of the id ops that take a grid dimension (0 = x, 1 = y, 2 = z)."""

    dim = prop_def(IntegerAttr[I64])
    result = result_def(i32)

    assembly_format = "$dim attr-dict `:` type($result)"
    traits = traits_def(SCALAR)

    def __init__(self, dim: int = 0):
        super().__init__(properties={"dim": IntegerAttr(dim, i64)}, result_types=[i32])

    @property
    def dim_index(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        if self.dim_index not in (0, 1, 2):
            raise VerifyException(f"dimension must be 0, 1 or 2, got {self.dim_index}")


@op_definition
class GetGlobalIdOp(_DimIdOp):
    """Global lane index along a dimension: `block_id * block_dim + local_id`.

    semantics: the dimension is 0 (x), 1 (y) or 2 (z); the result is int32.
    syntax: `%i = pto.get_global_id 0 : i32`
    python: `i = pto.get_global_id(0)`
    example:
        // Every lane writes its own global index: out[i] = i.
        func.func @iota(%out: !pto.ptr<i32, global>) attributes {pto.kernel} {
          %i = pto.get_global_id 0 : i32
          %p = pto.addptr %out, %i : !pto.ptr<i32, global>, i32 -> !pto.ptr<i32, global>
          pto.store %i, %p : i32, !pto.ptr<i32, global>
          func.return
        }
    """

    name = "pto.get_global_id"
    traits = traits_def(Pure(), LaunchId("global_id"), KernelFunction("get_global_id", "(dim=0)"))


@op_definition
class GetLocalIdOp(_DimIdOp):
    """Index of the lane within its block along a dimension.

    semantics: `0 <= local_id < block_dim` along the same dimension.
    syntax: `%i = pto.get_local_id 0 : i32`
    python: `t = pto.get_local_id(0)`
    example:
        // The global id spelled out: block_id * block_dim + local_id.
        func.func @global_id_by_hand() -> i32 {
          %b = pto.get_block_id 0 : i32
          %n = pto.get_block_dim 0 : i32
          %t = pto.get_local_id 0 : i32
          %base = arith.muli %b, %n : i32
          %g = arith.addi %base, %t : i32
          func.return %g : i32
        }
    """

    name = "pto.get_local_id"
    traits = traits_def(Pure(), LaunchId("local_id"), KernelFunction("get_local_id", "(dim=0)"))


@op_definition
class GetBlockIdOp(_DimIdOp):
    """Index of the block within the grid along a dimension.

    semantics: the same for every lane of a block; `0 <= block_id < grid_dim`.
    syntax: `%i = pto.get_block_id 0 : i32`
    python: `b = pto.get_block_id(0)`
    example:
        // The first row of the block's tile of a row-major matrix with 64-row tiles.
        func.func @tile_row(%a: !pto.ptr<f32, global>, %ncols: i32) -> !pto.ptr<f32, global> {
          %b = pto.get_block_id 1 : i32
          %rows = arith.constant 64 : i32
          %r = arith.muli %b, %rows : i32
          %off = arith.muli %r, %ncols : i32
          %p = pto.addptr %a, %off : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
          func.return %p : !pto.ptr<f32, global>
        }
    """

    name = "pto.get_block_id"
    traits = traits_def(Pure(), LaunchId("block_id"), KernelFunction("get_block_id", "(dim=0)"))


@op_definition
class GetBlockDimOp(_DimIdOp):
    """Number of lanes of a block along a dimension.

    semantics: the launch's `block=(bx, by, bz)` entry of that dimension, for every lane.
    syntax: `%n = pto.get_block_dim 0 : i32`
    python: `n = pto.get_block_dim(0)`
    example:
        // Lanes of the block, all three dimensions multiplied.
        func.func @block_size() -> i32 {
          %x = pto.get_block_dim 0 : i32
          %y = pto.get_block_dim 1 : i32
          %z = pto.get_block_dim 2 : i32
          %xy = arith.muli %x, %y : i32
          %n = arith.muli %xy, %z : i32
          func.return %n : i32
        }
    """

    name = "pto.get_block_dim"
    traits = traits_def(Pure(), LaunchId("block_dim"), KernelFunction("get_block_dim", "(dim=0)"))


@op_definition
class GetGridDimOp(_DimIdOp):
    """Number of blocks of the grid along a dimension.

    semantics: the launch's `grid=(gx, gy, gz)` entry of that dimension, for every lane.
    syntax: `%n = pto.get_grid_dim 0 : i32`
    python: `g = pto.get_grid_dim(0)`
    example:
        // The stride of a grid-stride loop: every lane of the grid, once.
        func.func @grid_stride() -> i32 {
          %g = pto.get_grid_dim 0 : i32
          %b = pto.get_block_dim 0 : i32
          %stride = arith.muli %g, %b : i32
          func.return %stride : i32
        }
    """

    name = "pto.get_grid_dim"
    traits = traits_def(Pure(), LaunchId("grid_dim"), KernelFunction("get_grid_dim", "(dim=0)"))


class _PlainIdOp(IRDLOperation):
    result = result_def(i32)
    assembly_format = "attr-dict `:` type($result)"
    traits = traits_def(SCALAR)

    def __init__(self):
        super().__init__(result_types=[i32])


@op_definition
class GetWarpIdOp(_PlainIdOp):
    """Index of the lane's warp within its block: `linear_local_id // 32`.

    semantics: `linear_local_id = x + bx * (y + by * z)` over the local ids; a warp is 32
    consecutive lanes (`pto.WARP_SIZE`).
    syntax: `%w = pto.get_warp_id : i32`
    python: `w = pto.get_warp_id()`
    example:
        // One L1 slot per warp (for per-warp partial sums): the lane's warp picks it.
        func.func @warp_slot() -> !pto.ptr<f32, local> {
          %sums = pto.alloc_local : !pto.l1buf<32xf32>
          %w = pto.get_warp_id : i32
          %p = pto.addptr %sums, %w : !pto.l1buf<32xf32>, i32 -> !pto.ptr<f32, local>
          func.return %p : !pto.ptr<f32, local>
        }
    """

    name = "pto.get_warp_id"
    traits = traits_def(Pure(), LaunchId("warp_id"), KernelFunction("get_warp_id", "()"))


@op_definition
class GetLaneIdOp(_PlainIdOp):
    """Index of the lane within its warp: `linear_local_id % 32`.

    syntax: `%l = pto.get_lane_id : i32`
    python: `l = pto.get_lane_id()`
    example:
        // Is this lane the first of its warp?
        func.func @warp_leader() -> i1 {
          %l = pto.get_lane_id : i32
          %zero = arith.constant 0 : i32
          %first = arith.cmpi eq, %l, %zero : i32
          func.return %first : i1
        }
    """

    name = "pto.get_lane_id"
    traits = traits_def(Pure(), LaunchId("lane_id"), KernelFunction("get_lane_id", "()"))


# --------------------------------------------------------------------------------------------
# Pointer arithmetic and lane memory
# --------------------------------------------------------------------------------------------


UNCHECKED_VECTOR_ATTR = "pto.vector"
"""On a `pto.load` / `pto.store` of a vector of the pointer's element type: consecutive elements
in one access, made by the native backend only (pypto/backend/native/pair_registers.py, always
in range: not checked)."""


def _check_ptr_elem(op: IRDLOperation, ptr: SSAValue, value_type: Attribute, what: str) -> None:
    elem = element_type_of(ptr.type)
    if isinstance(value_type, VectorType) and UNCHECKED_VECTOR_ATTR in op.attributes:
        value_type = value_type.element_type  # (consecutive elements: pair_registers.py)
    if elem != value_type:
        owner = "buffer" if isinstance(ptr.type, L1BufferType) else "pointer"
        raise VerifyException(
            f"{what} type {value_type} does not match the {owner}'s element type {elem}")


_SPACE_NAMES = {
    "local": "L1 (a !pto.l1buf or a !pto.ptr<T, local>)",
    "global": "HBM (a !pto.ptr<T, global>)",
}


def _check_space(value: SSAValue, space: str, what: str) -> None:
    """`what` (e.g. "destination") must be an address in memory `space`."""
    if memory_space_of(value.type) != space:
        raise VerifyException(f"{what} must be in {_SPACE_NAMES[space]}, got {value.type}")


@op_definition
class AddPtrOp(IRDLOperation):
    """Offset a pointer by a number of elements (`p + i` in a kernel).

    semantics: the offset is a signed i32 or i64 counted in elements of the pointee type, as C
    pointer arithmetic; the result stays in the same memory space. An L1 buffer offsets like a
    pointer to its first element and gives a `local` pointer.
    syntax: `%q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>`
    python: `q = p + i`
    example:
        // a + i in HBM, and element j of an L1 buffer.
        func.func @offsets(%a: !pto.ptr<f32, global>, %i: i32, %j: i64)
            -> (!pto.ptr<f32, global>, !pto.ptr<f16, local>) {
          %q = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
          %buf = pto.alloc_local : !pto.l1buf<128xf16>
          %l = pto.addptr %buf, %j : !pto.l1buf<128xf16>, i64 -> !pto.ptr<f16, local>
          func.return %q, %l : !pto.ptr<f32, global>, !pto.ptr<f16, local>
        }
    """

    name = "pto.addptr"

    ptr = operand_def(ADDRESS)
    offset = operand_def(IntegerType)
    result = result_def(PtrType)

    assembly_format = ("$ptr `,` $offset attr-dict `:` type($ptr) `,` type($offset) `->` "
                       "type($result)")
    traits = traits_def(Pure(), SCALAR, OffsetsAddress())

    def __init__(self, ptr: SSAValue, offset: SSAValue):
        t = ptr.type
        result = PtrType(t.element_type, "local") if isinstance(t, L1BufferType) else t
        super().__init__(operands=[ptr, offset], result_types=[result])

    def verify_(self) -> None:
        t = self.ptr.type
        expected = PtrType(element_type_of(t), memory_space_of(t))
        if self.result.type != expected:
            raise VerifyException(f"result type must be {expected} (same element type and memory "
                                  f"space as the address), got {self.result.type}")
        t = self.offset.type
        assert isinstance(t, IntegerType)
        if t.width.data not in (32, 64):
            raise VerifyException(f"pointer offset must be i32 or i64, got {t}")


@op_definition
class LoadOp(IRDLOperation):
    """Load one element per lane from HBM or L1.

    semantics: `v = *ptr` for every active lane; the result type is the address's element type.
    An address outside the pointed-to buffer is a `MemoryAccessError`; reading L1 that an async
    copy is still writing (before its `pto.wait`) is a hazard.
    syntax: `%v = pto.load %p : !pto.ptr<f32, global> -> f32`
    python: `v = pto.load(a + i)`
    example:
        // a[i]
        func.func @read(%a: !pto.ptr<f32, global>, %i: i32) -> f32 {
          %p = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
          %v = pto.load %p : !pto.ptr<f32, global> -> f32
          func.return %v : f32
        }
    """

    name = "pto.load"

    ptr = operand_def(ADDRESS)
    result = result_def(AnyAttr())

    assembly_format = "$ptr attr-dict `:` type($ptr) `->` type($result)"
    traits = traits_def(VECTOR, AccessesMemory(read(0)), InstructionKind(), KernelFunction("load", "(ptr)"))

    def __init__(self, ptr: SSAValue):
        super().__init__(operands=[ptr], result_types=[element_type_of(ptr.type)])

    def verify_(self) -> None:
        _check_ptr_elem(self, self.ptr, self.result.type, "result")


@op_definition
class StoreOp(IRDLOperation):
    """Store one element per lane to HBM or L1.

    semantics: `*ptr = value` for every active lane; the value's type is the address's element
    type (no implicit conversion: write a `pto.cast`).
    syntax: `pto.store %v, %p : f32, !pto.ptr<f32, global>`
    python: `pto.store(o + i, v)`
    example:
        // Stage a lane's value in L1 at its local id.
        func.func @stage_in_l1(%v: f32) {
          %buf = pto.alloc_local : !pto.l1buf<256xf32>
          %t = pto.get_local_id 0 : i32
          %p = pto.addptr %buf, %t : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
          pto.store %v, %p : f32, !pto.ptr<f32, local>
          func.return
        }
    """

    name = "pto.store"

    value = operand_def(AnyAttr())
    ptr = operand_def(ADDRESS)

    assembly_format = "$value `,` $ptr attr-dict `:` type($value) `,` type($ptr)"
    traits = traits_def(VECTOR, AccessesMemory(write(1)), InstructionKind(), KernelFunction("store", _STORE_SIGNATURE))

    def __init__(self, value: SSAValue, ptr: SSAValue):
        super().__init__(operands=[value, ptr])

    def verify_(self) -> None:
        _check_ptr_elem(self, self.ptr, self.value.type, "stored value")


@op_definition
class FmaOp(IRDLOperation):
    """Fused multiply-add with fused store: `*dst = a * b + c`.

    semantics: a true fused multiply-add: the exact `a * b + c` is rounded once to the
    destination's float type (nearest, ties to even). For integers the arithmetic wraps; i1 is
    rejected. To add two values write `pto.fma(dst, a, 1.0, b)`.
    syntax: `pto.fma %dst, %a, %b, %c : !pto.ptr<f32, global>, f32`
    python: `pto.fma(o + i, a, 1.0, b)`
    example:
        // o[i] = a + b, the addition spelled as a * 1.0 + b.
        func.func @vector_add(%a: f32, %b: f32, %o: !pto.ptr<f32, global>, %i: i32) {
          %one = arith.constant 1.0 : f32
          %p = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
          pto.fma %p, %a, %one, %b : !pto.ptr<f32, global>, f32
          func.return
        }
    """

    name = "pto.fma"
    T: ClassVar = VarConstraint("T", AnyAttr())

    dst = operand_def(ADDRESS)
    a = operand_def(T)
    b = operand_def(T)
    c = operand_def(T)

    assembly_format = "$dst `,` $a `,` $b `,` $c attr-dict `:` type($dst) `,` type($a)"
    traits = traits_def(VECTOR, AccessesMemory(write(0)), InstructionKind(), KernelFunction("fma", "(dst, a, b, c)"))

    def __init__(self, dst: SSAValue, a: SSAValue, b: SSAValue, c: SSAValue):
        super().__init__(operands=[dst, a, b, c])

    def verify_(self) -> None:
        _check_ptr_elem(self, self.dst, self.a.type, "operand")
        if isinstance(self.a.type, IntegerType) and self.a.type.width.data == 1:
            raise VerifyException("is not defined on i1 (booleans)")


# --------------------------------------------------------------------------------------------
# Synchronisation
# --------------------------------------------------------------------------------------------


@op_definition
class BarrierOp(IRDLOperation):
    """Synchronise the 32 lanes of the current warp (only the warp, not the block).

    semantics: every lane of the warp reaches the barrier before any continues; L1 writes of the
    warp before it are visible to the warp after it. Lanes of other warps are *not* ordered: to
    exchange data between warps use `pto.barrier_block`.
    syntax: `pto.barrier`
    python: `pto.barrier()`
    example:
        // A value exchanged within a warp: write, warp barrier, read the neighbour's slot.
        func.func @warp_exchange(%slot: !pto.ptr<f32, local>, %next: !pto.ptr<f32, local>,
                                 %v: f32) -> f32 {
          pto.store %v, %slot : f32, !pto.ptr<f32, local>
          pto.barrier
          %w = pto.load %next : !pto.ptr<f32, local> -> f32
          func.return %w : f32
        }
    """

    name = "pto.barrier"
    assembly_format = "attr-dict"
    traits = traits_def(SCALAR, Fence(), Synchronizes("warp"), InstructionKind(), KernelFunction("barrier", "()"))

    def __init__(self):
        super().__init__()


@op_definition
class BarrierBlockOp(IRDLOperation):
    """Synchronise every lane of the block and make prior L1 writes visible to all lanes.

    semantics: as CUDA's `__syncthreads()`; every lane of the block must reach it (a
    `barrier_block` under lane-dependent control flow is a deadlock).
    syntax: `pto.barrier_block`
    python: `pto.barrier_block()`
    example:
        // A value exchanged between warps needs the block barrier.
        func.func @block_exchange(%mine: !pto.ptr<f32, local>, %other: !pto.ptr<f32, local>,
                                  %v: f32) -> f32 {
          pto.store %v, %mine : f32, !pto.ptr<f32, local>
          pto.barrier_block
          %w = pto.load %other : !pto.ptr<f32, local> -> f32
          func.return %w : f32
        }
    """

    name = "pto.barrier_block"
    assembly_format = "attr-dict"
    traits = traits_def(SCALAR, Fence(), BlockCollective(), Synchronizes("block"),
                        InstructionKind(), KernelFunction("barrier_block", "()"))

    def __init__(self):
        super().__init__()


@op_definition
class AtomicAddOp(IRDLOperation):
    """Atomically add to one element per lane and return the value it held before.

    semantics: `old = *ptr; *ptr = old + value` as one indivisible step per lane. Lanes that
    hit the same address are serialised in lane order (lowest lane first), so each sees the sum
    of the lower lanes' contributions in `old`. Integer addition wraps; float addition rounds
    once per lane, in lane order. Not defined on i1.
    syntax: `%old = pto.atomic_add %p, %v : !pto.ptr<i32, global>, i32`
    python: `old = pto.atomic_add(hist + bucket, 1)`
    example:
        // Histogram: count one hit in bucket b.
        func.func @histogram(%hist: !pto.ptr<i32, global>, %b: i32) -> i32 {
          %one = arith.constant 1 : i32
          %p = pto.addptr %hist, %b : !pto.ptr<i32, global>, i32 -> !pto.ptr<i32, global>
          %old = pto.atomic_add %p, %one : !pto.ptr<i32, global>, i32
          func.return %old : i32
        }
    """

    name = "pto.atomic_add"
    T: ClassVar = VarConstraint("T", AnyAttr())

    ptr = operand_def(ADDRESS)
    value = operand_def(T)
    result = result_def(T)

    assembly_format = "$ptr `,` $value attr-dict `:` type($ptr) `,` type($value)"
    traits = traits_def(VECTOR, AccessesMemory(read(0), write(0)), InstructionKind(),
                        AtomicUpdate("add", "+="), KernelFunction("atomic_add", "(ptr, value)"))

    def __init__(self, ptr: SSAValue, value: SSAValue):
        super().__init__(operands=[ptr, value], result_types=[value.type])

    def verify_(self) -> None:
        _check_ptr_elem(self, self.ptr, self.value.type, "added value")
        if isinstance(self.value.type, IntegerType) and self.value.type.width.data == 1:
            raise VerifyException("is not defined on i1 (booleans)")


_ATOMIC_ORDER = ("Lanes that hit the same address are serialised in lane order (lowest lane "
                 "first), so each lane's `old` is the value after the lower lanes' updates "
                 "(docs/language.md#atomics).")


@dataclass(frozen=True)
class _AtomicSpec:
    """One atomic read-modify-write besides `atomic_add`: its kind, the value it stores
    (`new`, code) with a note on the types, which element types it takes, and its
    docstring's example."""

    kind: str
    summary: str
    new: str
    note: str
    update: str
    types: str  # "numbers" (ints and floats), "ints", "any"
    example_comment: str
    elem: str = "i32"


_ATOMIC_SPECS = (
    _AtomicSpec("max", "Atomically keep the larger of an element and a value per lane; return "
                "the old element.", "*ptr = max(old, value)",
                "on floats IEEE 754 `maximum` (NaN if either is NaN, +0 > -0), as `max()` in "
                "kernels; on ints signed", "max=", "numbers", "Keep the best score of slot s."),
    _AtomicSpec("min", "Atomically keep the smaller of an element and a value per lane; return "
                "the old element.", "*ptr = min(old, value)",
                "on floats IEEE 754 `minimum` (NaN if either is NaN, -0 < +0), as `min()` in "
                "kernels; on ints signed", "min=", "numbers",
                "Keep the earliest time of slot s."),
    _AtomicSpec("and", "Atomically AND a value into an element per lane; return the old "
                "element.", "*ptr = old & value", "bitwise", "&=", "ints",
                "Clear flag bits of word s."),
    _AtomicSpec("or", "Atomically OR a value into an element per lane; return the old element.",
                "*ptr = old | value", "bitwise", "|=", "ints", "Set flag bits of word s."),
    _AtomicSpec("xor", "Atomically XOR a value into an element per lane; return the old "
                "element.", "*ptr = old ^ value", "bitwise", "^=", "ints",
                "Toggle flag bits of word s."),
    _AtomicSpec("exch", "Atomically replace an element per lane; return the old element.",
                "*ptr = value", "bit for bit, NaN payloads and -0 included", "=", "any",
                "Swap a new value into slot s.", "f32"),
)


def _atomic_doc(spec: _AtomicSpec) -> str:
    name = f"atomic_{spec.kind}"
    ptr = f"!pto.ptr<{spec.elem}, global>"
    types = {"numbers": "float16, bfloat16, float32, int32, int64",
             "ints": "int32, int64 (a float is rejected)",
             "any": "every element type but i1"}[spec.types]
    return (f"""{spec.summary}

    semantics: `old = *ptr; {spec.new}` as one indivisible step per lane ({spec.note}).
    {_ATOMIC_ORDER} Element types: {types}.
    syntax: `%old = pto.{name} %p, %v : {ptr}, {spec.elem}`
    python: `old = pto.{name}(p + s, v)`
    example:
        // {spec.example_comment}
        func.func @{name}_example(%base: {ptr}, %s: i32, %v: {spec.elem}) -> {spec.elem} {{
          %p = pto.addptr %base, %s : {ptr}, i32 -> {ptr}
          %old = pto.{name} %p, %v : {ptr}, {spec.elem}
          func.return %old : {spec.elem}
        }}
    """)


def _verify_atomic_types(op: IRDLOperation, value_type: Attribute, types: str,
                         name: str) -> None:
    if isinstance(value_type, IntegerType) and value_type.width.data == 1:
        raise VerifyException("is not defined on i1 (booleans)")
    if types == "ints" and not isinstance(value_type, IntegerType):
        raise VerifyException(f"is bitwise: its element type must be an integer (i32 or i64), "
                              f"got {value_type}")
    if types == "numbers" and not isinstance(value_type, IntegerType | AnyFloat):
        raise VerifyException(f"takes a number, got {value_type}")


def _atomic_op(spec: _AtomicSpec) -> type[IRDLOperation]:
    """The op class of one atomic read-modify-write (operands `ptr`, `value`; result `old`)."""
    name = f"atomic_{spec.kind}"

    def __init__(self: IRDLOperation, ptr: SSAValue, value: SSAValue) -> None:
        IRDLOperation.__init__(self, operands=[ptr, value], result_types=[value.type])

    def verify_(self: IRDLOperation) -> None:
        _check_ptr_elem(self, self.operands[0], self.operands[1].type, "value")
        _verify_atomic_types(self, self.operands[1].type, spec.types, name)

    fields: dict[str, object] = {
        "name": f"pto.{name}", "__doc__": _atomic_doc(spec),
        "__qualname__": f"Atomic{spec.kind.capitalize()}Op", "__module__": __name__,
        "T": VarConstraint("T", AnyAttr()), "__annotations__": {"T": ClassVar},
        "ptr": operand_def(ADDRESS), "value": operand_def(VarConstraint("T", AnyAttr())),
        "result": result_def(VarConstraint("T", AnyAttr())),
        "assembly_format": "$ptr `,` $value attr-dict `:` type($ptr) `,` type($value)",
        "traits": traits_def(VECTOR, AccessesMemory(read(0), write(0)), InstructionKind(),
                             AtomicUpdate(spec.kind, spec.update),
                             KernelFunction(name, "(ptr, value)")),
        "__init__": __init__, "verify_": verify_,
    }
    cls = type(f"Atomic{spec.kind.capitalize()}Op", (IRDLOperation,), fields)
    return op_definition(cls)


AtomicMaxOp, AtomicMinOp, AtomicAndOp, AtomicOrOp, AtomicXorOp, AtomicExchOp = (
    _atomic_op(spec) for spec in _ATOMIC_SPECS)


@op_definition
class AtomicCasOp(IRDLOperation):
    """Atomically compare an element with a value and, if equal, replace it; return the old element.

    semantics: `old = *ptr; if old == compare: *ptr = value` as one indivisible step per lane
    (CUDA's `atomicCAS`): the lane swapped iff the returned `old` equals `compare`. On integers
    only (int32, int64), compared exactly. Lanes that hit the same address are serialised in
    lane order (lowest lane first), so each lane compares against the value the lower lanes
    left (docs/language.md#atomics). A spin lock (`while atomic_cas(lock, 0, 1) != 0`) never
    ends: the lanes of a warp run in lockstep, so the winner cannot release the lock while the
    others spin (as on pre-Volta GPUs).
    syntax: `%old = pto.atomic_cas %p, %cmp, %v : !pto.ptr<i32, global>, i32`
    python: `old = pto.atomic_cas(p + s, compare, value)`
    example:
        // Claim slot s for lane id me if it is still free (-1).
        func.func @claim(%owner: !pto.ptr<i32, global>, %s: i32, %me: i32) -> i32 {
          %free = arith.constant -1 : i32
          %p = pto.addptr %owner, %s : !pto.ptr<i32, global>, i32 -> !pto.ptr<i32, global>
          %old = pto.atomic_cas %p, %free, %me : !pto.ptr<i32, global>, i32
          func.return %old : i32
        }
    """

    name = "pto.atomic_cas"
    T: ClassVar = VarConstraint("T", AnyAttr())

    ptr = operand_def(ADDRESS)
    compare = operand_def(T)
    value = operand_def(T)
    result = result_def(T)

    assembly_format = "$ptr `,` $compare `,` $value attr-dict `:` type($ptr) `,` type($value)"
    traits = traits_def(VECTOR, AccessesMemory(read(0), write(0)), InstructionKind(),
                        AtomicUpdate("cas", "cas"),
                        KernelFunction("atomic_cas", "(ptr, compare, value)"))

    def __init__(self, ptr: SSAValue, compare: SSAValue, value: SSAValue):
        super().__init__(operands=[ptr, compare, value], result_types=[value.type])

    def verify_(self) -> None:
        _check_ptr_elem(self, self.ptr, self.value.type, "value")
        _verify_atomic_types(self, self.value.type, "ints", "atomic_cas")


ATOMIC_OPS: tuple[type[IRDLOperation], ...] = (
    AtomicMaxOp, AtomicMinOp, AtomicAndOp, AtomicOrOp, AtomicXorOp, AtomicExchOp, AtomicCasOp)
"""The atomics besides `atomic_add` (docs/language.md#atomics)."""


# --------------------------------------------------------------------------------------------
# Warp shuffles and votes (warp collectives; docs/language.md#warp-shuffles-and-votes)
# --------------------------------------------------------------------------------------------

SHUFFLE_TYPES = "i1, i32, i64, f16, bf16, f32, f64"
"""The value types a shuffle moves (any scalar of the language)."""


class _ShuffleOp(IRDLOperation):
    """A shuffle: each lane of a warp reads `value` of another lane of its warp, named by
    `lane` (a source lane, a delta or a mask, i32, taken modulo 32 as PTX's `shfl` takes its
    low 5 bits); a lane whose source is past the warp's edge keeps its own value."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    value = operand_def(T)
    lane = operand_def(i32)
    result = result_def(T)
    assembly_format = "$value `,` $lane attr-dict `:` type($result)"

    def __init__(self, value: SSAValue, lane: SSAValue):
        super().__init__(operands=[value, lane], result_types=[value.type])

    def verify_(self) -> None:
        if not _is_scalar_type(self.value.type) or (
                isinstance(self.value.type, IntegerType) and
                self.value.type.width.data not in (1, 32, 64)):
            raise VerifyException(f"{self.name} moves a scalar ({SHUFFLE_TYPES}), got "
                                  f"{self.value.type}")


def _shuffle_traits(python: str, signature: str) -> tuple:
    # NoMemoryEffect, not Pure: a warp collective must not be speculated into (or hoisted
    # out of) control flow, which would change the lanes that reach it together
    return (NoMemoryEffect(), VECTOR, InstructionKind(), WarpCollective("lane"),
            KernelFunction(python, signature))


@op_definition
class ShflOp(_ShuffleOp):
    """Read a value from a given lane of the warp (CUDA's `__shfl_sync`).

    semantics: lane `l` of a warp gets `value` of lane `j = src_lane mod 32` of the same warp
    (a source lane outside 0..31 wraps, as CUDA's `srcLane % width`); when lane `j` does not
    exist (past the end of a partial warp) lane `l` keeps its own value. Every lane of the warp
    must execute it together (control flow uniform across the warp; a warp collective, not a
    barrier: it orders no memory).
    syntax: `%r = pto.shfl %v, %src : f32`
    python: `r = pto.shfl(v, src_lane)`
    example:
        // Broadcast lane 0's value to its warp.
        func.func @broadcast(%v: f32) -> f32 {
          %zero = arith.constant 0 : i32
          %r = pto.shfl %v, %zero : f32
          func.return %r : f32
        }
    """

    name = "pto.shfl"
    traits = traits_def(*_shuffle_traits("shfl", "(v, src_lane)"))


@op_definition
class ShflUpOp(_ShuffleOp):
    """Read a value from the lane `delta` below in the warp (CUDA's `__shfl_up_sync`).

    semantics: lane `l` gets `value` of lane `l - d`, `d = delta mod 32`; lanes `l < d` keep
    their own value (the source is past the warp's lower edge). A warp collective: every lane
    of the warp executes it together.
    syntax: `%r = pto.shfl_up %v, %delta : f32`
    python: `r = pto.shfl_up(v, delta)`
    example:
        // One step of an inclusive warp scan (Hillis-Steele): add the value 1 lane below.
        func.func @scan_step(%v: i32) -> i32 {
          %one = arith.constant 1 : i32
          %lane = pto.get_lane_id : i32
          %up = pto.shfl_up %v, %one : i32
          %has = arith.cmpi sge, %lane, %one : i32
          %sum = arith.addi %v, %up : i32
          %r = arith.select %has, %sum, %v : i32
          func.return %r : i32
        }
    """

    name = "pto.shfl_up"
    traits = traits_def(*_shuffle_traits("shfl_up", "(v, delta)"))


@op_definition
class ShflDownOp(_ShuffleOp):
    """Read a value from the lane `delta` above in the warp (CUDA's `__shfl_down_sync`).

    semantics: lane `l` gets `value` of lane `l + d`, `d = delta mod 32`; a lane whose source
    `l + d` is past the warp's edge (31, or the last lane of a partial warp) keeps its own
    value. A warp collective: every lane of the warp executes it together.
    syntax: `%r = pto.shfl_down %v, %delta : f32`
    python: `r = pto.shfl_down(v, delta)`
    example:
        // One step of a warp reduction: add the value 16 lanes above.
        func.func @reduce_step(%v: f32) -> f32 {
          %sixteen = arith.constant 16 : i32
          %down = pto.shfl_down %v, %sixteen : f32
          %r = arith.addf %v, %down : f32
          func.return %r : f32
        }
    """

    name = "pto.shfl_down"
    traits = traits_def(*_shuffle_traits("shfl_down", "(v, delta)"))


@op_definition
class ShflXorOp(_ShuffleOp):
    """Exchange values between lanes whose ids differ by a mask (CUDA's `__shfl_xor_sync`).

    semantics: lane `l` gets `value` of lane `l ^ m`, `m = mask mod 32` (a butterfly); when
    that lane does not exist (past the end of a partial warp) lane `l` keeps its own value. A
    warp collective: every lane of the warp executes it together.
    syntax: `%r = pto.shfl_xor %v, %mask : f32`
    python: `r = pto.shfl_xor(v, mask)`
    example:
        // One butterfly step of an all-reduce: every lane ends with the pair's maximum.
        func.func @butterfly(%v: f32) -> f32 {
          %one = arith.constant 1 : i32
          %other = pto.shfl_xor %v, %one : f32
          %r = arith.maximumf %v, %other : f32
          func.return %r : f32
        }
    """

    name = "pto.shfl_xor"
    traits = traits_def(*_shuffle_traits("shfl_xor", "(v, mask)"))


class _VoteOp(IRDLOperation):
    """A vote: one value for the whole warp from every lane's predicate (i1)."""

    pred = operand_def(IntegerType(1))

    def __init__(self, pred: SSAValue):
        super().__init__(operands=[pred], result_types=[self.RESULT])

    RESULT: ClassVar[Attribute] = IntegerType(1)


@op_definition
class BallotOp(_VoteOp):
    """The warp's predicates as a bitmask (CUDA's `__ballot_sync`).

    semantics: every lane of the warp gets the same int32 whose bit `k` is set when lane `k`
    of the warp exists and its `pred` is true (bit 31 is the sign bit: a full warp of `true`
    is `-1`). A warp collective: every lane of the warp executes it together.
    syntax: `%m = pto.ballot %p : i32`
    python: `m = pto.ballot(pred)`
    example:
        // How many lanes of the warp hold a positive value.
        func.func @count_positive(%v: f32) -> i32 {
          %zero = arith.constant 0.0 : f32
          %p = arith.cmpf ogt, %v, %zero : f32
          %m = pto.ballot %p : i32
          %n = math.ctpop %m : i32
          func.return %n : i32
        }
    """

    name = "pto.ballot"
    RESULT: ClassVar[Attribute] = i32
    result = result_def(i32)
    assembly_format = "$pred attr-dict `:` type($result)"
    traits = traits_def(NoMemoryEffect(), VECTOR, InstructionKind(),
                        WarpCollective("warp"), KernelFunction("ballot", "(pred)"))


@op_definition
class VoteAnyOp(_VoteOp):
    """Whether `pred` holds on some lane of the warp (CUDA's `__any_sync`).

    semantics: every lane of the warp gets `true` when `pred` is true on at least one lane of
    the warp. Named `vote_any` (PTX's `vote.any`) so that Python's `any` keeps its meaning in
    `from pypto import *`. A warp collective: every lane of the warp executes it together.
    syntax: `%r = pto.vote_any %p : i1`
    python: `r = pto.vote_any(pred)`
    example:
        // Does any lane of the warp see a NaN?
        func.func @any_nan(%v: f32) -> i1 {
          %p = arith.cmpf uno, %v, %v : f32
          %r = pto.vote_any %p : i1
          func.return %r : i1
        }
    """

    name = "pto.vote_any"
    result = result_def(IntegerType(1))
    assembly_format = "$pred attr-dict `:` type($result)"
    traits = traits_def(NoMemoryEffect(), VECTOR, InstructionKind(),
                        WarpCollective("warp"), KernelFunction("vote_any", "(pred)"))


@op_definition
class VoteAllOp(_VoteOp):
    """Whether `pred` holds on every lane of the warp (CUDA's `__all_sync`).

    semantics: every lane of the warp gets `true` when `pred` is true on all lanes of the warp
    (the lanes that exist, in a partial warp). Named `vote_all` (PTX's `vote.all`) so that
    Python's `all` keeps its meaning. A warp collective: every lane of the warp executes it
    together.
    syntax: `%r = pto.vote_all %p : i1`
    python: `r = pto.vote_all(pred)`
    example:
        // Are all the warp's values finite? (v - v is NaN exactly for inf and NaN)
        func.func @all_finite(%v: f32) -> i1 {
          %d = arith.subf %v, %v : f32
          %p = arith.cmpf ord, %d, %d : f32
          %r = pto.vote_all %p : i1
          func.return %r : i1
        }
    """

    name = "pto.vote_all"
    result = result_def(IntegerType(1))
    assembly_format = "$pred attr-dict `:` type($result)"
    traits = traits_def(NoMemoryEffect(), VECTOR, InstructionKind(),
                        WarpCollective("warp"), KernelFunction("vote_all", "(pred)"))


WARP_OPS: tuple[type[IRDLOperation], ...] = (ShflOp, ShflUpOp, ShflDownOp, ShflXorOp,
                                              BallotOp, VoteAnyOp, VoteAllOp)
"""The warp shuffles and votes, in reference order."""


# --------------------------------------------------------------------------------------------
# L1 and tile instructions (executed once per block; must sit in uniform control flow)
# --------------------------------------------------------------------------------------------


@op_definition
class AllocLocalOp(IRDLOperation):
    """Allocate a block-shared L1 buffer.

    semantics: `count` elements of L1, shared by every lane of the block, alive until the
    kernel ends. A declaration, like CUDA's `__shared__`: the allocation is static (one buffer
    per `alloc_local` per block), so it is not a synchronisation point and may sit anywhere,
    even after a lane-dependent `return`. Its contents are undefined until written: the
    interpreter fills it with NaN (floats) or a poison pattern (ints), and
    `check_uninitialized=True` makes reading them an error. The element count is a
    compile-time value, part of the result type.
    syntax: `%buf = pto.alloc_local : !pto.l1buf<256xf32>`
    A tile (`pto.alloc_tile(rows, cols, dtype)`) is an `alloc_local` of `rows * cols`
    elements with its static shape, `shape(rows, cols)`: the tile vector instructions
    (`pto.tadd`, `pto.trowsum`, ...) take their shape from it; copies, `mma`, `fill` and lane
    code use it as any L1 buffer (`t + r * cols + c`).
    syntax: `%buf = pto.alloc_local : !pto.l1buf<256xf32>`, `%t = pto.alloc_local shape(64, 64) : !pto.l1buf<4096xf32>`
    python: `buf = pto.alloc_local(256, dtype=pto.float32)`, `t = pto.alloc_tile(64, 64, dtype=pto.float32)`
    example:
        // Two tiles: a 64 x 64 float accumulator and a half-precision operand; a 64 x 64
        // tile with its shape, for the tile vector instructions.
        func.func @tiles() {
          %c = pto.alloc_local : !pto.l1buf<4096xf32>
          %a = pto.alloc_local : !pto.l1buf<4096xf16>
          %t = pto.alloc_local shape(64, 64) : !pto.l1buf<4096xf32>
          func.return
        }
    """

    name = "pto.alloc_local"

    result = result_def(L1BufferType)
    offset = opt_prop_def(IntegerAttr[I64])
    irdl_options = (ParsePropInAttrDict(),)
    """The buffer's byte offset in the block's L1 address space, set by `pto-allocate-l1`.
    Without it the interpreter places buffers one after another in allocation order."""
    rows = opt_prop_def(IntegerAttr[I64])
    cols = opt_prop_def(IntegerAttr[I64])
    """A tile's static shape (`pto.alloc_tile(rows, cols)`): row-major, rows x cols = count.
    The tile vector instructions carry their own shape; this one is for the frontend, which
    takes a tile's shape from it, and for displays (the debugger shows the tile as a matrix)."""

    assembly_format = ("(`shape` `(` $rows^ `,` $cols `)`)? attr-dict `:` type($result)")
    traits = traits_def(SCALAR, MemoryAllocEffect(), DeclaresBuffer(), KernelFunction("alloc_local", "(count, dtype=float32)"))

    def __init__(self, count: int, element_type: Attribute, offset: int | None = None,
                 shape: tuple[int, int] | None = None):
        props = {} if offset is None else {"offset": IntegerAttr(offset, i64)}
        if shape is not None:
            props["rows"] = IntegerAttr(shape[0], i64)
            props["cols"] = IntegerAttr(shape[1], i64)
        super().__init__(result_types=[L1BufferType(count, element_type)], properties=props)

    @property
    def tile_shape(self) -> tuple[int, int] | None:
        """(rows, cols) of a tile (`pto.alloc_tile`), None for a flat buffer."""
        if self.rows is None or self.cols is None:
            return None
        return (self.rows.value.data, self.cols.value.data)

    def verify_(self) -> None:
        if (self.rows is None) != (self.cols is None):
            raise VerifyException("a tile's shape needs both rows and cols")
        shape = self.tile_shape
        if shape is None:
            return
        rows, cols = shape
        if rows <= 0 or cols <= 0:
            raise VerifyException(f"a tile needs a positive shape, got {rows} x {cols}")
        if self.result.type.size != rows * cols:
            raise VerifyException(f"a {rows} x {cols} tile holds {rows * cols} elements, but "
                                  f"its type {self.result.type} holds {self.result.type.size}")

    @property
    def l1_offset(self) -> int | None:
        return None if self.offset is None else self.offset.value.data


class BulkCopyOp(IRDLOperation):
    """Shared shape of the bulk copies (here and the npu dialect's): `nbytes` in `rows` rows
    with element strides, from `src` in `SRC_SPACE` to `dst` in `DST_SPACE`."""

    dst = operand_def(ADDRESS)
    src = operand_def(ADDRESS)
    nbytes = operand_def(i32)
    rows = operand_def(i32)
    src_stride = operand_def(i32)
    dst_stride = operand_def(i32)

    DST_SPACE: ClassVar[str] = "local"
    SRC_SPACE: ClassVar[str] = "global"
    # The subclasses declare their pipe, accesses (destination operand 0, source 1) and
    # whether they complete at a wait (StartsCopy) or when they retire (CopiesSynchronously).
    traits = traits_def(BlockCollective(), CopyFootprint(), InstructionKind())

    def __init__(self, dst: SSAValue, src: SSAValue, nbytes: SSAValue, rows: SSAValue,
                 src_stride: SSAValue, dst_stride: SSAValue,
                 result_types: Sequence[Attribute] = ()):
        super().__init__(operands=[dst, src, nbytes, rows, src_stride, dst_stride],
                         result_types=list(result_types))

    def verify_(self) -> None:
        _check_space(self.dst, self.DST_SPACE, "destination")
        _check_space(self.src, self.SRC_SPACE, "source")
        src_t, dst_t = element_type_of(self.src.type), element_type_of(self.dst.type)
        if src_t != dst_t:
            raise VerifyException(f"source element type {src_t} differs from destination element "
                                  f"type {dst_t}; a copy moves bytes, it does not convert")


COPY_FORMAT = ("$dst `,` $src `,` $nbytes `rows` $rows `strides` `(` $src_stride `,` "
                "$dst_stride `)` attr-dict `:` type($dst) `,` type($src)")


@op_definition
class AsyncLoadOp(BulkCopyOp):
    """Start an asynchronous HBM -> L1 copy; returns a token to wait on.

    semantics: copies `nbytes` from `src` (HBM) to `dst` (L1) as `rows` rows of
    `nbytes / rows` bytes; row r reads at element `r * src_stride` and writes at element
    `r * dst_stride` (strides in elements, defaulting to the row length), as Ascend C's
    DataCopyParams. Source and destination have one element type. The copy completes at the
    `pto.wait` of its token (or `pto.wait_all`); reading the destination before that is a hazard.
    syntax: `%t = pto.async_load %dst, %src, %nbytes rows %r strides(%ss, %ds) : !pto.l1buf<4096xf32>, !pto.ptr<f32, global>`
    python: `tok = pto.async_load(A_tile, A + row0 * K + k0, 64 * 64 * 4, rows=64, src_stride=K)`
    example:
        // A 64 x 64 tile of a row-major matrix with K columns, into L1.
        func.func @load_tile(%a: !pto.ptr<f32, global>, %K: i32) -> !pto.l1buf<4096xf32> {
          %nbytes = arith.constant 16384 : i32
          %c64 = arith.constant 64 : i32
          %tile = pto.alloc_local : !pto.l1buf<4096xf32>
          %t = pto.async_load %tile, %a, %nbytes rows %c64 strides(%K, %c64)
              : !pto.l1buf<4096xf32>, !pto.ptr<f32, global>
          pto.wait %t
          func.return %tile : !pto.l1buf<4096xf32>
        }
    """

    name = "pto.async_load"
    token = result_def(TokenType)
    assembly_format = COPY_FORMAT
    traits = traits_def(MTE_IN, AccessesMemory(write(0, "local"), read(1, "global")),
                        StartsCopy(), KernelFunction("async_load", "(dst, src, nbytes, rows=1, src_stride=None, dst_stride=None)"))

    def __init__(self, dst: SSAValue, src: SSAValue, nbytes: SSAValue, rows: SSAValue,
                 src_stride: SSAValue, dst_stride: SSAValue):
        super().__init__(dst, src, nbytes, rows, src_stride, dst_stride, [TokenType()])


@op_definition
class AsyncStoreOp(BulkCopyOp):
    """Start an asynchronous L1 -> HBM copy; returns a token to wait on.

    semantics: as `pto.async_load` in the other direction. Until its `wait`, writing the L1
    source or reading the HBM destination is a hazard. Copies not waited for complete when the
    kernel ends.
    syntax: `%t = pto.async_store %dst, %src, %nbytes rows %r strides(%ss, %ds) : !pto.ptr<f32, global>, !pto.l1buf<4096xf32>`
    python: `tok = pto.async_store(C + row0 * N + n0, C_tile, 64 * 64 * 4, rows=64, dst_stride=N)`
    example:
        // Write a 64 x 64 tile back into a row-major matrix with N columns.
        func.func @store_tile(%c: !pto.ptr<f32, global>, %tile: !pto.l1buf<4096xf32>, %N: i32) {
          %nbytes = arith.constant 16384 : i32
          %c64 = arith.constant 64 : i32
          %t = pto.async_store %c, %tile, %nbytes rows %c64 strides(%c64, %N)
              : !pto.ptr<f32, global>, !pto.l1buf<4096xf32>
          pto.wait %t
          func.return
        }
    """

    name = "pto.async_store"
    token = result_def(TokenType)
    assembly_format = COPY_FORMAT
    DST_SPACE: ClassVar[str] = "global"
    SRC_SPACE: ClassVar[str] = "local"
    traits = traits_def(MTE_OUT, AccessesMemory(write(0, "global"), read(1, "local")),
                        StartsCopy(), KernelFunction("async_store", "(dst, src, nbytes, rows=1, src_stride=None, dst_stride=None)"))

    def __init__(self, dst: SSAValue, src: SSAValue, nbytes: SSAValue, rows: SSAValue,
                 src_stride: SSAValue, dst_stride: SSAValue):
        super().__init__(dst, src, nbytes, rows, src_stride, dst_stride, [TokenType()])


@op_definition
class TileStoreOp(BulkCopyOp):
    """Synchronous L1 -> HBM tile copy (the three-argument `pto.store`).

    semantics: as `pto.async_store`, but complete when the instruction retires.
    syntax: `pto.tile_store %dst, %src, %nbytes rows %r strides(%ss, %ds) : !pto.ptr<f32, global>, !pto.l1buf<4096xf32>`
    python: `pto.store(C + offset_c, C_tile, 64 * 64 * 4, rows=64, dst_stride=N)`
    example:
        // A contiguous 256-element tile, as one row.
        func.func @store_contiguous(%o: !pto.ptr<f32, global>, %tile: !pto.l1buf<256xf32>) {
          %nbytes = arith.constant 1024 : i32
          %one = arith.constant 1 : i32
          %len = arith.constant 256 : i32
          pto.tile_store %o, %tile, %nbytes rows %one strides(%len, %len)
              : !pto.ptr<f32, global>, !pto.l1buf<256xf32>
          func.return
        }
    """

    name = "pto.tile_store"
    assembly_format = COPY_FORMAT
    DST_SPACE: ClassVar[str] = "global"
    SRC_SPACE: ClassVar[str] = "local"
    traits = traits_def(MTE_OUT, AccessesMemory(write(0, "global"), read(1, "local")),
                        CopiesSynchronously(), KernelFunction("store", _STORE_SIGNATURE))


@op_definition
class WaitOp(IRDLOperation):
    """Wait until the asynchronous copy of a token has completed.

    semantics: after it, the copy's destination holds the data and its source may be reused.
    Waiting on a token whose copy was never issued is a `DeadlockError`.
    syntax: `pto.wait %tok`
    python: `pto.wait(tok)`
    example:
        // Issue a load, then read the tile only after its wait.
        func.func @load_then_read(%a: !pto.ptr<f32, global>) -> f32 {
          %nbytes = arith.constant 1024 : i32
          %one = arith.constant 1 : i32
          %len = arith.constant 256 : i32
          %tile = pto.alloc_local : !pto.l1buf<256xf32>
          %t = pto.async_load %tile, %a, %nbytes rows %one strides(%len, %len)
              : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
          pto.wait %t
          %v = pto.load %tile : !pto.l1buf<256xf32> -> f32
          func.return %v : f32
        }
    """

    name = "pto.wait"
    token = operand_def(TokenType)
    assembly_format = "$token attr-dict"
    traits = traits_def(SCALAR, Fence(), BlockCollective(), Waits("token"), InstructionKind(), KernelFunction("wait", "(token)"))

    def __init__(self, token: SSAValue):
        super().__init__(operands=[token])


@op_definition
class WaitAllOp(IRDLOperation):
    """Wait for every outstanding asynchronous copy of the block.

    semantics: as a `pto.wait` on every token the block has issued and not yet waited for.
    syntax: `pto.wait_all`
    python: `pto.wait_all()`
    example:
        // Two loads in flight at once, one wait for both.
        func.func @load_two(%a: !pto.ptr<f16, global>, %b: !pto.ptr<f16, global>,
                            %ta: !pto.l1buf<4096xf16>, %tb: !pto.l1buf<4096xf16>) {
          %nbytes = arith.constant 8192 : i32
          %one = arith.constant 1 : i32
          %len = arith.constant 4096 : i32
          %t1 = pto.async_load %ta, %a, %nbytes rows %one strides(%len, %len)
              : !pto.l1buf<4096xf16>, !pto.ptr<f16, global>
          %t2 = pto.async_load %tb, %b, %nbytes rows %one strides(%len, %len)
              : !pto.l1buf<4096xf16>, !pto.ptr<f16, global>
          pto.wait_all
          func.return
        }
    """

    name = "pto.wait_all"
    assembly_format = "attr-dict"
    traits = traits_def(SCALAR, Fence(), BlockCollective(), Waits("all"), InstructionKind(), KernelFunction("wait_all", "()"))

    def __init__(self):
        super().__init__()


@op_definition
class FillOp(IRDLOperation):
    """Fill `count` elements of L1 with one value.

    semantics: `dst[0:count] = value`; `dst` is in L1, `value` has its element type and must be
    uniform across the block.
    syntax: `pto.fill %dst, %value, %count : !pto.l1buf<256xf32>, f32`
    python: `pto.fill(C_tile, 0.0, 64 * 64)`
    example:
        // Zero an accumulator tile before the first mma.
        func.func @zero_accumulator() -> !pto.l1buf<4096xf32> {
          %c = pto.alloc_local : !pto.l1buf<4096xf32>
          %zero = arith.constant 0.0 : f32
          %n = arith.constant 4096 : i32
          pto.fill %c, %zero, %n : !pto.l1buf<4096xf32>, f32
          func.return %c : !pto.l1buf<4096xf32>
        }
    """

    name = "pto.fill"
    dst = operand_def(ADDRESS)
    value = operand_def(AnyAttr())
    count = operand_def(i32)
    assembly_format = "$dst `,` $value `,` $count attr-dict `:` type($dst) `,` type($value)"
    traits = traits_def(VECTOR, AccessesMemory(write(0, "local")), BlockCollective(),
                        FillFootprint(), InstructionKind(), KernelFunction("fill", "(dst, value, count)"))

    def __init__(self, dst: SSAValue, value: SSAValue, count: SSAValue):
        super().__init__(operands=[dst, value, count])

    def verify_(self) -> None:
        _check_space(self.dst, "local", "destination")
        _check_ptr_elem(self, self.dst, self.value.type, "fill value")


_MMA_TYPES = {("f32", "f32"), ("f32", "f16"), ("f32", "bf16"), ("f16", "f16"), ("i32", "i32")}


@op_definition
class MmaOp(IRDLOperation):
    """Matrix multiply-accumulate on L1 tiles: `C[m x n] += A[m x k] @ B[k x n]`.

    semantics: row-major tiles in L1; a `!pto.l1buf` operand must hold at least its tile's
    elements. A and B share one element type; supported accumulations are f32 += f32/f16/bf16,
    f16 += f16 and i32 += i32. Products of the inputs are exact in the accumulator type
    and summed in it (f16/bf16 inputs accumulate in f32); the summation order is NumPy's
    matmul's, so results can differ from another order in the last bits. `m, n, k` are
    positive compile-time values.
    syntax: `pto.mma %c, %a, %b shape(64, 64, 64) : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf16>, !pto.l1buf<4096xf16>`
    python: `pto.mma(C_tile, A_tile, B_tile, 64, 64, 64)`
    example:
        // One k-step of a tiled GEMM: half-precision inputs, float accumulator.
        func.func @gemm_step(%c: !pto.l1buf<4096xf32>, %a: !pto.l1buf<2048xf16>,
                             %b: !pto.l1buf<2048xf16>) {
          pto.mma %c, %a, %b shape(64, 64, 32)
              : !pto.l1buf<4096xf32>, !pto.l1buf<2048xf16>, !pto.l1buf<2048xf16>
          func.return
        }
    """

    name = "pto.mma"
    c = operand_def(ADDRESS)
    a = operand_def(ADDRESS)
    b = operand_def(ADDRESS)
    m = prop_def(IntegerAttr[I64])
    n = prop_def(IntegerAttr[I64])
    k = prop_def(IntegerAttr[I64])
    assembly_format = ("$c `,` $a `,` $b `shape` `(` $m `,` $n `,` $k `)` attr-dict `:` "
                       "type($c) `,` type($a) `,` type($b)")
    traits = traits_def(CUBE, AccessesMemory(read(1, "local"), read(2, "local"),
                                             read(0, "local"), write(0, "local")),
                        BlockCollective(), MmaFootprint(), InstructionKind(), KernelFunction("mma", "(C, A, B, m, n, k)"))

    def __init__(self, c: SSAValue, a: SSAValue, b: SSAValue, m: int, n: int, k: int):
        super().__init__(operands=[c, a, b], properties={
            "m": IntegerAttr(m, i64), "n": IntegerAttr(n, i64), "k": IntegerAttr(k, i64)})

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m.value.data, self.n.value.data, self.k.value.data)

    def verify_(self) -> None:
        m, n, k = self.shape
        if min(m, n, k) <= 0:
            raise VerifyException(f"shape (m, n, k) must be positive, got ({m}, {n}, {k})")
        for operand, what, need in ((self.c, "C", m * n), (self.a, "A", m * k),
                                    (self.b, "B", k * n)):
            _check_space(operand, "local", f"operand {what}")
            if isinstance(operand.type, L1BufferType) and operand.type.size < need:
                raise VerifyException(f"operand {what} needs {need} elements but its buffer "
                                      f"holds {operand.type.size}")
        acc, a_t, b_t = (element_type_of(x.type) for x in (self.c, self.a, self.b))
        if a_t != b_t:
            raise VerifyException(f"inputs A and B must have one element type, got {a_t} "
                                  f"and {b_t}")
        if (str(acc), str(a_t)) not in _MMA_TYPES:
            raise VerifyException(f"cannot accumulate {a_t} inputs into {acc}; supported: "
                                  f"f32 += f32/f16/bf16, f16 += f16, i32 += i32")


# --------------------------------------------------------------------------------------------
# Pipelines
# --------------------------------------------------------------------------------------------


@op_definition
class YieldOp(IRDLOperation):
    """Terminator of `pto.pipeline` and `pto.stage` regions: the values they pass on.

    semantics: the operands become the results of the enclosing stage (visible to the later
    stages) or pipeline (visible after it); their types must be the region op's result types.
    Valid only as the last op of those regions.
    syntax: `pto.yield %a, %b : !pto.l1buf<4096xf32>, !pto.token`
    python: implicit: the end of a `with` block, yielding the names it assigns that later code uses
    example:
        // A stage hands a buffer to the pipeline, which hands it on.
        func.func @hand_on() -> !pto.l1buf<64xf32> {
          %r = pto.pipeline -> (!pto.l1buf<64xf32>) {
            %b = pto.stage "alloc" -> (!pto.l1buf<64xf32>) {
              %buf = pto.alloc_local : !pto.l1buf<64xf32>
              pto.yield %buf : !pto.l1buf<64xf32>
            }
            pto.yield %b : !pto.l1buf<64xf32>
          }
          func.return %r : !pto.l1buf<64xf32>
        }
    """

    name = "pto.yield"
    values = var_operand_def()
    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = traits_def(IsTerminator(), Pure(), SCALAR, ForwardsYield())

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])

    def verify_(self) -> None:
        # Not HasParent: the parent ops are defined below this one.
        if not isinstance(self.parent_op(), PipelineOp | StageOp):
            raise VerifyException("must be the terminator of a pto.pipeline or pto.stage region "
                                  "(a function ends with func.return)")


def _parse_region_op(parser: Parser) -> tuple[list[Attribute], Region, dict[str, Attribute]]:
    extra = parser.parse_optional_attr_dict_with_keyword()
    types: list[Attribute] = []
    if parser.parse_optional_punctuation("->") is not None:
        types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    region = parser.parse_region()
    if not region.blocks:
        # `{}`: give it its block so that the verifier reports the missing `pto.yield`.
        region.add_block(Block())
    return types, region, (extra.data if extra is not None else {})


def _verify_region_yield(op: IRDLOperation, subject: str = "") -> None:
    """The region of a pipeline or stage ends with a `pto.yield` of the op's result types.

    `subject` prefixes the messages (`"stage 'load_a' "`), after xDSL's `'pto.stage' op `.
    """
    last = op.regions[0].block.last_op
    if not isinstance(last, YieldOp):
        found = f"'{last.name}'" if last is not None else "nothing"
        raise VerifyException(f"{subject}must end with pto.yield, but its region ends with "
                              f"{found}")
    yielded = ", ".join(str(v.type) for v in last.operands)
    declared = ", ".join(str(r.type) for r in op.results)
    if yielded != declared:
        raise VerifyException(f"{subject}yields ({yielded}) but its result types are "
                              f"({declared})")


def _print_region_op(op: IRDLOperation, printer: Printer) -> None:
    if op.attributes:
        printer.print_op_attributes(op.attributes, print_keyword=True)
    if op.results:
        printer.print_string(" -> (")
        printer.print_list((r.type for r in op.results), printer.print_attribute)
        printer.print_string(")")
    printer.print_string(" ")
    printer.print_region(op.regions[0])


def _find_cycle(graph: dict[str, Sequence[str]]) -> list[str] | None:
    """A dependency cycle of `graph` (name -> names it runs after), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in graph.get(node, ()):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep in graph and state.get(dep) is None:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if state.get(node) is None:
            found = visit(node)
            if found:
                return found
    return None


def check_stage_graph(stages: Sequence[tuple[str, Sequence[str]]]) -> str | None:
    """Why a pipeline's stage list (name, after-names) in program order is invalid, or None.

    Shared by the verifier and the frontend (which reports it at the Python line).
    """
    position: dict[str, int] = {}
    for index, (name, _) in enumerate(stages):
        if name in position:
            return f"duplicate stage name '{name}'"
        position[name] = index
    for name, after in stages:
        for dep in after:
            if dep not in position:
                return (f"stage '{name}' runs after unknown stage '{dep}'; known stages: "
                        f"{', '.join(position)}")
    cycle = _find_cycle({name: list(after) for name, after in stages})
    if cycle:
        return f"stage dependencies form a cycle: {' -> '.join(cycle)}"
    for index, (name, after) in enumerate(stages):
        for dep in after:
            if position[dep] > index:
                return (f"stage '{name}' runs after '{dep}', which comes later in the pipeline; "
                        f"stages run in program order, so write '{dep}' first")
    return None


@op_definition
class PipelineOp(IRDLOperation):
    """A software pipeline: a sequence of named `pto.stage`s with a dependency DAG.

    semantics: without optimisation the stages run in program order, so the kernel means the
    same with or without `pto-double-buffer`, which overlaps the stages of successive loop
    iterations. Stage names are unique; `after` names earlier stages only (no unknown names, no
    cycles). Values a stage yields are visible to the later stages; values the pipeline
    yields (its region ends with `pto.yield`) are visible after it.
    syntax: `%r = pto.pipeline -> (!pto.l1buf<4096xf32>) { pto.stage "load_a" { ... } ... pto.yield %x : !pto.l1buf<4096xf32> }`
    python: `with pto.pipeline() as pl:` then `with pl.stage("load_a"): ...`
    example:
        // Load a tile in one stage, scale it in the next; the pipeline hands the tile on.
        func.func @two_stages(%a: !pto.ptr<f32, global>) -> !pto.l1buf<256xf32> {
          %nbytes = arith.constant 1024 : i32
          %one = arith.constant 1 : i32
          %len = arith.constant 256 : i32
          %tile = pto.pipeline -> (!pto.l1buf<256xf32>) {
            %buf, %tok = pto.stage "load" -> (!pto.l1buf<256xf32>, !pto.token) {
              %b = pto.alloc_local : !pto.l1buf<256xf32>
              %t = pto.async_load %b, %a, %nbytes rows %one strides(%len, %len)
                  : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
              pto.yield %b, %t : !pto.l1buf<256xf32>, !pto.token
            }
            pto.stage "compute" after ["load"] {
              pto.wait %tok
              %two = arith.constant 2.0 : f32
              %zero = arith.constant 0.0 : f32
              %i = pto.get_local_id 0 : i32
              %p = pto.addptr %buf, %i : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
              %v = pto.load %p : !pto.ptr<f32, local> -> f32
              pto.fma %p, %v, %two, %zero : !pto.ptr<f32, local>, f32
              pto.yield
            }
            pto.yield %buf : !pto.l1buf<256xf32>
          }
          func.return %tile : !pto.l1buf<256xf32>
        }
    """

    name = "pto.pipeline"
    outputs = var_result_def()
    body = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect(), SCALAR, ForwardsYield(), KernelFunction("pipeline", "()"))

    def __init__(self, result_types: Sequence[Attribute], body: Region):
        super().__init__(result_types=[list(result_types)], regions=[body])

    @classmethod
    def parse(cls, parser: Parser) -> PipelineOp:
        types, region, attrs = _parse_region_op(parser)
        op = cls(types, region)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        _print_region_op(self, printer)

    def stages(self) -> list[StageOp]:
        return [op for op in self.body.block.ops if isinstance(op, StageOp)]

    def verify_(self) -> None:
        _verify_region_yield(self)
        graph: list[tuple[str, list[str]]] = []
        for stage in self.stages():
            name, after = stage.properties.get("stage"), stage.properties.get("after")
            well_formed = isinstance(name, StringAttr) and (after is None or (
                isinstance(after, ArrayAttr)
                and all(isinstance(a, StringAttr) for a in after.data)))
            if not well_formed:
                return  # a malformed (generic-form) stage: its own verifier says what is wrong
            graph.append((stage.stage_name, stage.after_names))
        problem = check_stage_graph(graph)
        if problem:
            raise VerifyException(problem)


class StageEffect(RecursiveMemoryEffect):
    """A stage has the effects of its body, and orders the stages that run `after` it.

    A stage another stage names in `after` is a fence (whole-memory read and write) besides, even
    when its body is empty: without that, an empty stage would be side-effect free, hence
    "trivially dead" to DCE and CSE, and erasing it would leave a dangling `after` name.
    """

    @classmethod
    def get_effects(cls, op: Operation) -> AbstractSet[EffectInstance] | None:
        effects = super().get_effects(op)
        if effects is None or not isinstance(op, StageOp) or not _is_awaited(op):
            return effects
        return set(effects) | set(Fence.get_effects(op))


def _is_awaited(stage: StageOp) -> bool:
    """Does a later stage of the same pipeline name `stage` in its `after` list?"""
    name = stage.properties.get("stage")
    later = stage.next_op
    while later is not None:
        after = later.properties.get("after")
        if isinstance(after, ArrayAttr) and name in after.data:
            return True
        later = later.next_op
    return False


@op_definition
class StageOp(IRDLOperation):
    """One named stage of a `pto.pipeline`, optionally after other stages.

    semantics: runs its region, which ends with a `pto.yield` of the stage's result types; the
    values it yields are visible to the later stages. Only valid directly inside a `pto.pipeline`.
    syntax: `%buf = pto.stage "load_a" after ["init"] -> (!pto.l1buf<4096xf32>) { ... pto.yield %b : !pto.l1buf<4096xf32> }`
    python: `with pl.stage("load_b", after="load_a"): ...`
    example:
        // Two independent stages, then one after both: the stages form a DAG, not a chain.
        func.func @dag() {
          pto.pipeline {
            pto.stage "load_a" {
              pto.yield
            }
            pto.stage "load_b" {
              pto.yield
            }
            pto.stage "compute" after ["load_a", "load_b"] {
              pto.wait_all
              pto.yield
            }
            pto.yield
          }
          func.return
        }
    """

    name = "pto.stage"
    stage = prop_def(StringAttr)
    after = opt_prop_def(ArrayAttr[StringAttr])
    outputs = var_result_def()
    body = region_def("single_block")
    traits = traits_def(StageEffect(), HasParent(PipelineOp), SCALAR, ForwardsYield())

    def __init__(self, name: str, after: Sequence[str], result_types: Sequence[Attribute],
                 body: Region):
        props: dict[str, Attribute] = {"stage": StringAttr(name)}
        if after:
            props["after"] = ArrayAttr([StringAttr(a) for a in after])
        super().__init__(result_types=[list(result_types)], regions=[body], properties=props)

    @property
    def stage_name(self) -> str:
        return self.stage.data

    @property
    def after_names(self) -> list[str]:
        return [a.data for a in self.after.data] if self.after is not None else []

    @classmethod
    def parse(cls, parser: Parser) -> StageOp:
        name = parser.parse_str_literal(" (the stage name)")
        after: list[str] = []
        if parser.parse_optional_keyword("after") is not None:
            after = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                      parser.parse_str_literal)
        types, region, attrs = _parse_region_op(parser)
        op = cls(name, after, types, region)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.stage_name)
        if self.after_names:
            printer.print_string(" after [")
            printer.print_list(self.after_names, printer.print_string_literal)
            printer.print_string("]")
        _print_region_op(self, printer)

    def verify_(self) -> None:
        _verify_region_yield(self, f"stage '{self.stage_name}' ")


# --------------------------------------------------------------------------------------------
# Debug output
# --------------------------------------------------------------------------------------------


@op_definition
class LoopStepOp(IRDLOperation):
    """The run-time step of a SIMT loop, checked: the same non-zero value on every active lane.

    semantics: returns its operand. A SIMT `for x in range(start, stop, step)` whose step is a
    run-time value (CUDA's grid-stride `get_grid_dim() * get_block_dim()`) passes it through
    this op, so a step that is zero on an active lane, or that differs between the active
    lanes, is a `KernelError` naming the loop's line. Its result is uniform (the uniformity
    analysis trusts the check).
    syntax: `%s = pto.loop_step %step : i32`
    python: `for i in range(start, stop, step)` (`step` not a compile-time constant)
    example:
        // A grid-stride step, checked once before the loop.
        func.func @stride() -> i32 {
          %g = pto.get_grid_dim 0 : i32
          %b = pto.get_block_dim 0 : i32
          %n = arith.muli %g, %b : i32
          %s = pto.loop_step %n : i32
          func.return %s : i32
        }
    """

    name = "pto.loop_step"
    T: ClassVar = VarConstraint("T", AnyAttr())
    step = operand_def(T)
    result = result_def(T)
    assembly_format = "$step attr-dict `:` type($result)"
    traits = traits_def(NoMemoryEffect(), ChecksUniform(), SCALAR, InstructionKind())

    def __init__(self, step: SSAValue):
        super().__init__(operands=[step], result_types=[step.type])

    def verify_(self) -> None:
        t = self.step.type
        if not (isinstance(t, IntegerType) and t.width.data in (32, 64)):
            raise VerifyException(f"pto.loop_step takes an i32 or i64 step, got {t}")


@op_definition
class FmodOp(IRDLOperation):
    """Floating-point remainder with the sign of the dividend (C's `fmod`).

    semantics: `a - n * b` where `n` is `a / b` truncated toward zero, computed exactly (the
    result is always representable). The frontend builds Python's float `%` and `//` on it
    (NumPy's `divmod` algorithm), because `a - floor(a / b) * b` rounds three times.
    syntax: `%r = pto.fmod %a, %b : f32`
    python: `r = a % b` (with the sign fix-up of Python's `%`)
    example:
        func.func @rem(%a: f32, %b: f32) -> f32 {
          %r = pto.fmod %a, %b : f32
          func.return %r : f32
        }
    """

    name = "pto.fmod"
    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"
    traits = traits_def(Pure(), VECTOR, InstructionKind())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        if not isinstance(self.lhs.type, AnyFloat):
            raise VerifyException(f"pto.fmod works on floats, got {self.lhs.type}")


@op_definition
class SigmoidOp(IRDLOperation):
    """Logistic sigmoid per lane: `1 / (1 + exp(-x))`.

    semantics: on floats (f16, bf16, f32), with the operand's type: evaluated in float64 and
    rounded once to it, as `pto.exp` (within 1 ulp, the same on every machine);
    `sigmoid(-inf) = 0`, `sigmoid(inf) = 1`, NaN stays NaN. Integers are rejected: `pto.cast`
    them first.
    syntax: `%y = pto.sigmoid %x : f32`
    python: `y = pto.sigmoid(x)`
    example:
        // A gate: out = x * sigmoid(x) (SiLU).
        func.func @silu(%x: f32) -> f32 {
          %s = pto.sigmoid %x : f32
          %y = arith.mulf %x, %s : f32
          func.return %y : f32
        }
    """

    name = "pto.sigmoid"
    T: ClassVar = VarConstraint("T", AnyAttr())
    x = operand_def(T)
    result = result_def(T)
    assembly_format = "$x attr-dict `:` type($result)"
    traits = traits_def(Pure(), VECTOR, InstructionKind(), Elementwise("sigmoid"),
                        KernelFunction("sigmoid", "(x)"))

    def __init__(self, x: SSAValue):
        super().__init__(operands=[x], result_types=[x.type])

    def verify_(self) -> None:
        if not isinstance(self.x.type, AnyFloat):
            raise VerifyException(f"pto.sigmoid works on floats, got {self.x.type}")


@op_definition
class PrintfOp(IRDLOperation):
    """Print a formatted line per active lane, prefixed with its block and lane.

    semantics: Python `%`-style formatting (`%d`, `%f`, `%.3f`, `%x`, ...) of the lane's scalar
    values; the format must take exactly one value per conversion (`%%` prints a `%`). Each line
    starts with `[block (x, y, z) lane (x, y, z)] `. Lines are printed in block order, then lane
    order, to standard output.
    syntax: `pto.printf "i=%d v=%f" (%i, %v : i32, f32)`
    python: `pto.printf("i=%d v=%f", i, v)`
    example:
        // Trace each lane's index and value.
        func.func @trace(%v: f32) {
          %i = pto.get_global_id 0 : i32
          pto.printf "i=%d v=%.3f" (%i, %v : i32, f32)
          pto.printf "done"
          func.return
        }
    """

    name = "pto.printf"
    format = prop_def(StringAttr)
    values = var_operand_def()
    assembly_format = "$format (` ` `(` $values^ `:` type($values) `)`)? attr-dict"
    # its output is a write: never merged or erased
    traits = traits_def(SCALAR, MemoryWriteEffect(), InstructionKind(), WritesOutput(),
                        KernelFunction("printf", "(fmt, *values)"))

    def __init__(self, fmt: str, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)], properties={"format": StringAttr(fmt)})

    def verify_(self) -> None:
        for value in self.values:
            if not _is_scalar_type(value.type):
                raise VerifyException(f"can only print scalar values (integers and floats), "
                                      f"got a value of type {value.type}")
        # Format with stand-in zeros: Python's own `%` decides whether the conversions and the
        # values match, exactly as it will when the line is printed.
        samples = tuple(0.0 if isinstance(v.type, AnyFloat) else 0 for v in self.values)
        try:
            self.format.data % samples
        except (TypeError, ValueError) as err:
            raise VerifyException(f"format string {self.format.data!r} does not fit its "
                                  f"{len(samples)} value(s): {err}") from None


# --------------------------------------------------------------------------------------------
# Tile vector instructions (docs/language.md#tile-vector-instructions)
# --------------------------------------------------------------------------------------------


TILE_FLOATS = ("f32", "f16", "bf16")
TILE_INTS = ("i32", "i64")
TILE_NUMBERS = TILE_FLOATS + TILE_INTS
TILE_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
TILE_ROUNDINGS = ("rne", "rz", "rp", "rm")
"""`tcvt` rounding modes: to nearest even, toward zero, toward +inf, toward -inf."""


def tile_shape_of(value: SSAValue) -> tuple[int, int] | None:
    """The static shape of a tile: the `pto.alloc_tile` that made `value`, else None."""
    owner = value.owner
    if isinstance(owner, AllocLocalOp):
        return owner.tile_shape
    return None


class TileVectorOp(IRDLOperation):
    """Shared shape of the tile vector instructions: a static `rows x cols`, L1 operands.

    Subclasses declare their operands in the order of their `TileVector` roles, `DTYPES` (the
    element types of the `full` source tile), and an optional `RESULT_DTYPES` override for the
    destination (`None`: the source's)."""

    rows = prop_def(IntegerAttr[I64])
    cols = prop_def(IntegerAttr[I64])
    DTYPES: ClassVar[tuple[str, ...]] = TILE_NUMBERS
    DST_DTYPES: ClassVar[tuple[str, ...] | None] = None
    SOURCE: ClassVar[int] = 1
    """Operand whose element type the op is typed by (the `full` source)."""

    @property
    def tile_shape(self) -> tuple[int, int]:
        return (self.rows.value.data, self.cols.value.data)

    def verify_(self) -> None:
        rows, cols = self.tile_shape
        if rows <= 0 or cols <= 0:
            raise VerifyException(f"tile shape must be positive, got {rows} x {cols}")
        trait = tile_vector(self)
        assert trait is not None
        tiles = trait.tiles(self, lambda v: None)
        names = [n for n, _ in self.get_irdl_definition().operands]
        for index, tile in tiles.items():
            operand = self.operands[index]
            _check_space(operand, "local", f"tile operand '{names[index]}'")
            if tile is not None and isinstance(operand.type, L1BufferType) and \
                    operand.type.size < tile.elements:
                raise VerifyException(
                    f"tile operand '{names[index]}' needs {tile.rows} x {tile.row_len} = "
                    f"{tile.elements} elements but its buffer holds {operand.type.size}")
        src_t = element_type_of(self.operands[self.SOURCE].type) \
            if self.SOURCE in tiles else self.operands[self.SOURCE].type
        if str(src_t) not in self.DTYPES:
            raise VerifyException(f"{self.name} works on {', '.join(self.DTYPES)} tiles, "
                                  f"got {src_t}")
        for index in tiles:
            if index == self.SOURCE or (index == 0 and self.DST_DTYPES is not None):
                continue
            if names[index] == "mask":
                continue
            t = element_type_of(self.operands[index].type)
            if t != src_t:
                raise VerifyException(f"tile operand '{names[index]}' holds {t} but "
                                      f"'{names[self.SOURCE]}' holds {src_t}: a tile "
                                      f"instruction does not convert (use pto.tcvt)")
        if self.DST_DTYPES is not None:
            t = element_type_of(self.operands[0].type)
            if str(t) not in self.DST_DTYPES:
                raise VerifyException(f"{self.name} writes {', '.join(self.DST_DTYPES)} "
                                      f"tiles, got {t}")
        for index, role in enumerate(trait.roles):
            if role == "value" and self.operands[index].type != src_t:
                raise VerifyException(f"the scalar '{names[index]}' is "
                                      f"{self.operands[index].type} but the tile holds "
                                      f"{src_t}")
        mask = dict(zip(names, self.operands)).get("mask")
        if mask is not None and not isinstance(element_type_of(mask.type), IntegerType):
            raise VerifyException(f"a mask tile holds integers (1 = true), got "
                                  f"{element_type_of(mask.type)}")
        cmp = self.properties.get("cmp")
        if isinstance(cmp, StringAttr) and cmp.data not in TILE_COMPARISONS:
            raise VerifyException(f"comparison must be one of {', '.join(TILE_COMPARISONS)}, "
                                  f"got {cmp.data!r}")
        rounding = self.properties.get("rounding")
        if isinstance(rounding, StringAttr) and rounding.data not in TILE_ROUNDINGS:
            raise VerifyException(f"rounding must be one of {', '.join(TILE_ROUNDINGS)}, got "
                                  f"{rounding.data!r}")


_SHAPE_FMT = "`shape` `(` $rows `,` $cols `)`"


@dataclass(frozen=True)
class _TileFamily:
    """Operands (name, role), extra string property, format, builtin signature, example
    types for one family of tile vector instructions."""

    operands: tuple[tuple[str, str], ...]
    signature: str
    prop: str | None = None
    source: int = 1


_FAMILIES = {
    "binary": _TileFamily((("dst", "full"), ("a", "full"), ("b", "full")), "(dst, a, b)"),
    "unary": _TileFamily((("dst", "full"), ("a", "full")), "(dst, a)"),
    "scalar": _TileFamily((("dst", "full"), ("a", "full"), ("s", "value")), "(dst, a, s)"),
    "fill": _TileFamily((("dst", "full"), ("s", "value")), "(dst, s)", source=0),
    "cmp": _TileFamily((("mask", "full"), ("a", "full"), ("b", "full")), "(mask, a, b, op)",
                       prop="cmp"),
    "cmps": _TileFamily((("mask", "full"), ("a", "full"), ("s", "value")), "(mask, a, s, op)",
                        prop="cmp"),
    "sel": _TileFamily((("dst", "full"), ("mask", "full"), ("a", "full"), ("b", "full")),
                       "(dst, mask, a, b)", source=2),
    "cvt": _TileFamily((("dst", "full"), ("a", "full")), "(dst, a, rounding='rne')",
                       prop="rounding"),
    "rowred": _TileFamily((("dst", "row"), ("a", "full")), "(dst, a)"),
    "colred": _TileFamily((("dst", "col"), ("a", "full")), "(dst, a)"),
    "rowexpand": _TileFamily((("dst", "full"), ("v", "row")), "(dst, v)", source=0),
    "colexpand": _TileFamily((("dst", "full"), ("v", "col")), "(dst, v)", source=0),
    "rowexpandop": _TileFamily((("dst", "full"), ("a", "full"), ("v", "row")), "(dst, a, v)"),
    "colexpandop": _TileFamily((("dst", "full"), ("a", "full"), ("v", "col")), "(dst, a, v)"),
    "ci": _TileFamily((("dst", "full"), ("start", "value")), "(dst, start)", source=0),
    "trans": _TileFamily((("dst", "trans"), ("a", "full")), "(dst, a)"),
}

_EXAMPLE_TYPES = {"f32": "f32", "i32": "i32"}


def _tile_example(mnemonic: str, family: _TileFamily, dtype: str, dst_dtype: str,
                  note: str) -> tuple[str, str, str]:
    """(syntax, python, example) of a tile instruction on a 16 x 64 tile."""
    rows, cols = 16, 64
    sizes = {"full": rows * cols, "row": rows, "col": cols, "trans": rows * cols}
    args, types, decls, py = [], [], [], []
    for index, (name, role) in enumerate(family.operands):
        elem = dst_dtype if index == 0 else dtype
        if name == "mask":
            elem = "i32"
        if role == "value":
            t = dtype
            decls.append(f"%{name}: {t}")
        else:
            t = f"!pto.l1buf<{sizes[role]}x{elem}>"
            decls.append(f"%{name}: {t}")
        args.append(f"%{name}")
        types.append(t)
        py.append(name)
    prop = ""
    if family.prop == "cmp":
        prop = ' "lt"'
        py.append('"lt"')
    elif family.prop == "rounding":
        prop = ' "rz"'
        py.append('rounding="rz"')
    op = f"pto.{mnemonic} {', '.join(args)}{prop} shape({rows}, {cols}) : {', '.join(types)}"
    syntax = f"`{op}`"
    example = (f"        // {note}\n"
               f"        func.func @{mnemonic}_example({', '.join(decls)}) {{\n"
               f"          {op}\n"
               f"          func.return\n"
               f"        }}\n")
    return syntax, f"`pto.{mnemonic}({', '.join(py)})`", example


def _tile_op(mnemonic: str, family_name: str, semantics: str, cost_class: str,
             dtypes: tuple[str, ...] = TILE_NUMBERS,
             dst_dtypes: tuple[str, ...] | None = None) -> type[IRDLOperation]:
    """Define the op class of one tile vector instruction (docstring, operands, traits)."""
    family = _FAMILIES[family_name]
    dtype = "f32" if "f32" in dtypes else dtypes[0]
    dst_dtype = dst_dtypes[0] if dst_dtypes else dtype
    if mnemonic == "tcvt":
        dst_dtype = "i32"
    summary = semantics.split(";")[0].split(". ")[0].rstrip(".")
    syntax, python, example = _tile_example(mnemonic, family, dtype, dst_dtype,
                                            f"{summary} on a 16 x 64 tile.")
    types_text = ", ".join(dtypes)
    doc = (f"{summary}.\n\n    semantics: {semantics} Element types: {types_text}. Executed "
           f"once per block on the vector pipe, in uniform control flow; operands are L1 "
           f"tiles of the op's static shape (docs/language.md#tile-vector-instructions).\n"
           f"    syntax: {syntax}\n    python: {python}\n    example:\n{example}")
    fields: dict[str, object] = {"name": f"pto.{mnemonic}", "__doc__": doc,
                                 "__qualname__": f"T{mnemonic[1:].capitalize()}Op",
                                 "__module__": __name__,
                                 "DTYPES": dtypes, "DST_DTYPES": dst_dtypes,
                                 "SOURCE": family.source,
                                 "__annotations__": {"DTYPES": ClassVar, "DST_DTYPES": ClassVar,
                                                     "SOURCE": ClassVar}}
    accesses = []
    for index, (name, role) in enumerate(family.operands):
        fields[name] = operand_def(AnyAttr() if role == "value" else ADDRESS)
        if role != "value" and index > 0:
            accesses.append(read(index, "local"))
    accesses.append(write(0, "local"))
    prop = ""
    if family.prop is not None:
        fields[family.prop] = prop_def(StringAttr)
        prop = f" ${family.prop}"
    operands = " `,` ".join(f"${name}" for name, _ in family.operands)
    types = " `,` ".join(f"type(${name})" for name, _ in family.operands)
    fields["assembly_format"] = f"{operands}{prop} {_SHAPE_FMT} attr-dict `:` {types}"
    roles = tuple(role for _, role in family.operands)
    fields["traits"] = traits_def(VECTOR, AccessesMemory(*accesses), BlockCollective(),
                                  TileVector(cost_class, roles), InstructionKind(),
                                  KernelFunction(mnemonic, family.signature))
    cls = type(f"T{mnemonic[1:].capitalize()}Op", (TileVectorOp,), fields)
    return op_definition(cls)


def _build_tile_ops() -> tuple[type[IRDLOperation], ...]:
    ops: list[type[IRDLOperation]] = []
    binary = {
        "tadd": ("`dst = a + b` per element, rounded once.", TILE_NUMBERS, "simple"),
        "tsub": ("`dst = a - b` per element, rounded once.", TILE_NUMBERS, "simple"),
        "tmul": ("`dst = a * b` per element, rounded once.", TILE_NUMBERS, "simple"),
        "tdiv": ("`dst = a / b` per element, correctly rounded (IEEE division).", TILE_FLOATS,
                 "transcendental"),
        "tmin": ("`dst = min(a, b)` per element; floats as `arith.minimumf` (NaN if either is "
                 "NaN, -0 < +0).", TILE_NUMBERS, "simple"),
        "tmax": ("`dst = max(a, b)` per element; floats as `arith.maximumf` (NaN if either is "
                 "NaN, +0 > -0).", TILE_NUMBERS, "simple"),
        "tand": ("`dst = a & b` per element (bitwise).", TILE_INTS, "simple"),
        "tor": ("`dst = a | b` per element (bitwise).", TILE_INTS, "simple"),
        "txor": ("`dst = a ^ b` per element (bitwise).", TILE_INTS, "simple"),
        "tshl": ("`dst = a << b` per element (`arith.shli`).", TILE_INTS, "simple"),
        "tshr": ("`dst = a >> b` per element, arithmetic (`arith.shrsi`).", TILE_INTS,
                 "simple"),
    }
    for name, (sem, dts, cls) in binary.items():
        ops.append(_tile_op(name, "binary", sem, cls, dts))
    unary = {
        "tabs": ("`dst = |a|` per element.", TILE_NUMBERS, "simple"),
        "tneg": ("`dst = -a` per element.", TILE_NUMBERS, "simple"),
        "tnot": ("`dst = ~a` per element (bitwise).", TILE_INTS, "simple"),
        "texp": ("`dst = exp(a)` per element, evaluated in float64 and rounded once (as "
                 "`pto.exp`).", TILE_FLOATS, "transcendental"),
        "tlog": ("`dst = log(a)` per element, evaluated in float64 and rounded once (as "
                 "`pto.log`).", TILE_FLOATS, "transcendental"),
        "tsqrt": ("`dst = sqrt(a)` per element, correctly rounded.", TILE_FLOATS,
                  "transcendental"),
        "trsqrt": ("`dst = 1 / sqrt(a)` per element, evaluated in float64 and rounded once "
                   "(as `pto.rsqrt`).", TILE_FLOATS, "transcendental"),
        "trecip": ("`dst = 1 / a` per element, correctly rounded.", TILE_FLOATS,
                   "transcendental"),
        "trelu": ("`dst = max(a, 0)` per element (NaN stays NaN, -0 gives +0 for floats).",
                  TILE_NUMBERS, "simple"),
    }
    for name, (sem, dts, cls) in unary.items():
        ops.append(_tile_op(name, "unary", sem, cls, dts))
    scalar = {
        "tadds": ("`dst = a + s` per element, `s` a uniform value of the tile's type.",
                  TILE_NUMBERS, "simple"),
        "tsubs": ("`dst = a - s` per element, `s` a uniform value.", TILE_NUMBERS, "simple"),
        "tmuls": ("`dst = a * s` per element, `s` a uniform value.", TILE_NUMBERS, "simple"),
        "tdivs": ("`dst = a / s` per element, correctly rounded, `s` a uniform value.",
                  TILE_FLOATS, "transcendental"),
        "tmins": ("`dst = min(a, s)` per element, as `tmin`.", TILE_NUMBERS, "simple"),
        "tmaxs": ("`dst = max(a, s)` per element, as `tmax`.", TILE_NUMBERS, "simple"),
        "taxpy": ("`dst = s * a + dst` per element; floats as `pto.fma` (rounded once).",
                  TILE_NUMBERS, "simple"),
    }
    for name, (sem, dts, cls) in scalar.items():
        ops.append(_tile_op(name, "scalar", sem, cls, dts))
    ops.append(_tile_op("texpands", "fill", "`dst = s` for every element (a fill with a "
                        "uniform value).", "simple"))
    ops.append(_tile_op("tcmp", "cmp", "`mask = a op b` per element, 1 where it holds, else 0; "
                        "`op` is one of eq ne lt le gt ge (floats: ordered, so NaN compares "
                        "false except with ne).", "simple", TILE_NUMBERS,
                        ("i32", "i64", "i1")))
    ops.append(_tile_op("tcmps", "cmps", "`mask = a op s` per element against a uniform value, "
                        "as `tcmp`.", "simple", TILE_NUMBERS, ("i32", "i64", "i1")))
    ops.append(_tile_op("tsel", "sel", "`dst = mask != 0 ? a : b` per element.", "simple"))
    ops.append(_tile_op("tcvt", "cvt", "`dst = convert(a)` per element to the destination's "
                        "element type, rounded once with `rounding`: rne (nearest even), rz "
                        "(toward zero), rp (toward +inf), rm (toward -inf); float to int "
                        "saturates to the int's range (NaN gives 0).", "conversion",
                        TILE_NUMBERS, TILE_NUMBERS))
    reductions = {
        "sum": "the sum, accumulated in the tile's type in a fixed order (pairwise: "
               "docs/language.md#tile-vector-instructions)",
        "max": "the maximum (as `tmax`: NaN if any is NaN)",
        "min": "the minimum (as `tmin`: NaN if any is NaN)",
        "argmax": "the index (int32) of the first maximum (NaN counts as the maximum)",
        "argmin": "the index (int32) of the first minimum (NaN counts as the minimum)",
    }
    for what, sem in reductions.items():
        dst = ("i32",) if what.startswith("arg") else None
        ops.append(_tile_op(f"trow{what}", "rowred", f"`dst[r] = ` {sem} of row r of `a`; "
                            f"`dst` is a rows x 1 tile.", "reduction", TILE_NUMBERS, dst))
        ops.append(_tile_op(f"tcol{what}", "colred", f"`dst[c] = ` {sem} of column c of `a`; "
                            f"`dst` is a 1 x cols tile.", "reduction", TILE_NUMBERS, dst))
    ops.append(_tile_op("trowexpand", "rowexpand", "`dst[r, c] = v[r]`: a rows x 1 tile "
                        "broadcast along each row.", "simple"))
    ops.append(_tile_op("tcolexpand", "colexpand", "`dst[r, c] = v[c]`: a 1 x cols tile "
                        "broadcast down each column.", "simple"))
    fused = {
        "add": ("a + v", TILE_NUMBERS, "simple"), "sub": ("a - v", TILE_NUMBERS, "simple"),
        "mul": ("a * v", TILE_NUMBERS, "simple"),
        "div": ("a / v", TILE_FLOATS, "transcendental"),
        "max": ("max(a, v)", TILE_NUMBERS, "simple"), "min": ("min(a, v)", TILE_NUMBERS,
                                                             "simple"),
        "expdif": ("exp(a - v)", TILE_FLOATS, "transcendental"),
    }
    for what, (expr, dts, cls) in fused.items():
        rounding = (" (`a - v` rounded to the tile's type, then exp evaluated in float64 and "
                    "rounded once)" if what == "expdif" else ", rounded once")
        ops.append(_tile_op(f"trowexpand{what}", "rowexpandop",
                            f"`dst[r, c] = {expr.replace('v', 'v[r]')}`{rounding}: `v` a "
                            f"rows x 1 tile broadcast along each row.", cls, dts))
        ops.append(_tile_op(f"tcolexpand{what}", "colexpandop",
                            f"`dst[r, c] = {expr.replace('v', 'v[c]')}`{rounding}: `v` a "
                            f"1 x cols tile broadcast down each column.", cls, dts))
    ops.append(_tile_op("tci", "ci", "`dst[i] = start + i` over the row-major flattened "
                        "tile (integers wrap).", "simple", TILE_INTS))
    ops.append(_tile_op("ttrans", "trans", "`dst[c, r] = a[r, c]`: `dst` is the cols x rows "
                        "transpose (it must not overlap `a`).", "simple"))
    return tuple(ops)


TILE_VECTOR_OPS: tuple[type[IRDLOperation], ...] = _build_tile_ops()
"""The tile vector instructions, in reference order."""


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
    AtomicAddOp,
    *ATOMIC_OPS,
    FmodOp,
    SigmoidOp,
    LoopStepOp,
    AllocLocalOp,
    AsyncLoadOp,
    AsyncStoreOp,
    TileStoreOp,
    WaitOp,
    WaitAllOp,
    FillOp,
    MmaOp,
    BarrierOp,
    BarrierBlockOp,
    *WARP_OPS,
    PipelineOp,
    StageOp,
    YieldOp,
    PrintfOp,
    *TILE_VECTOR_OPS,
)

PTO = Dialect("pto", list(PTO_OPS), [PtrType, L1BufferType, TokenType])
