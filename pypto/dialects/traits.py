"""Op facts as xDSL traits: the pipe an op issues on, the memory it touches, block collectives.

These are the one source of truth for what an instruction *is* (docs/isa.md, docs/adding-an-op.md), declared on each
op class of the `pto` dialect (and of any later dialect, such as `npu`) in its `traits_def(...)`.
Code generation, the analyses, the passes and the ISA reference read them through the three
accessors below instead of keeping their own lists of op classes:

    pipe_of(op) -> str                   "SCALAR" | "VECTOR" | "CUBE" | "MTE_IN" | "MTE_OUT"
    is_block_collective(op) -> bool      executed once per block, by every lane together
    memory_accesses(op) -> tuple[Access, ...]
                                         Access(operand, space, kind): operand index of the
                                         address, "global" | "local" | "any", "read" | "write"

`AccessesMemory` is also an xDSL `MemoryEffect`, so the effects xDSL's passes see (CSE, DCE,
canonicalisation) are derived from the same declaration: a read access is a READ effect on its
operand, a write access a WRITE effect. Ops that order memory without touching an address of
their own (barriers, waits) declare `Fence`, whole-memory read and write effects, so that nothing
is moved across them; `pto.printf` declares a write (its output).

Ops of other dialects (`arith`, `math`, `scf`, `func`) cannot carry pypto traits; their pipe is
given by `FOREIGN_PIPES` below: lane arithmetic runs on the vector pipe (as `pto.fmod` and
`pto.fma` do), control flow and everything else on the scalar pipe.

The other facts, each a trait with its accessor (analyses, the cost model, the debugger and the
interpreter's instruments ask these, never `isinstance(op, pto.X)`; tests/test_layering.py
checks it):

    InstructionKind(kind)   kind_of(op), is_instruction(op)
                            an instruction of the machine, named `kind` in profiles, traces and
                            the debugger (LOAD, MMA, COPY_IN, ...); ops without it (ids, address
                            arithmetic, declarations, pipeline structure) run in between
    Synchronizes(scope)     sync_scope(op) -> "warp" | "block" | None: a barrier
    WarpCollective(result)  warp_collective(op) -> "lane" | "warp" | None: a shuffle or a vote,
                            reached by every lane of the warp together (not a barrier)
    StartsCopy()            starts_copy(op): an asynchronous bulk copy; result 0 is its token,
                            it completes at a wait of it
    CopiesSynchronously()   copies_synchronously(op): a bulk copy complete when it retires
    Waits(on)               waits_on(op) -> "token" | "all" | None: `token`: the copy of
                            operand 0; `all`: every outstanding copy of the block
    SignalsCompletion()     signals_completion(op): a copy's completion flag (`npu.set_flag`)
    WritesOutput()          writes_output(op): prints (`pto.printf`)
    DeclaresBuffer()        declares_buffer(op): a static L1 buffer declaration (its result)
    OffsetsAddress()        offset_base(op): result = operand 0 offset by operand 1 elements
    ForwardsYield()         forwards_yield(op): a structure op whose results are the values its
                            region yields (a pipeline or a stage); `pto.yield` is one too
    LaunchId(name)          launch_id(op) -> "global_id" | "local_id" | "block_id" | ...;
                            varies_per(op) -> "lane" | "block" | None: an id differing between
                            the lanes of a block / only between blocks
    KernelFunction(name, signature)
                            kernel_function(op): the kernel language's `pto.<name>(...)` lowers
                            to this op (the frontend's builtins, `pypto`'s exports and the
                            stubs are derived from it)
    Elementwise(reference)  elementwise_reference(op): a pure lane-by-lane function whose exact
                            reference is `pypto.exact.MATH[reference]` (the interpreter runs it)
    TileFootprint           tile_footprint(op, value_of) -> {operand: Tile | None}: the tile of
                            elements each address operand of a tile instruction covers (fill,
                            mma, the bulk copies, the fused load + mma)
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import EffectInstance, MemoryEffect, MemoryEffectKind, OpTrait

Pipe = Literal["SCALAR", "VECTOR", "CUBE", "MTE_IN", "MTE_OUT"]
Space = Literal["global", "local", "any"]
Kind = Literal["read", "write"]

PIPES: tuple[str, ...] = ("SCALAR", "VECTOR", "CUBE", "MTE_IN", "MTE_OUT")
"""The pipes of the PTO machine (docs/cost-model.md#the-machine-the-engine-models): instructions of different pipes overlap."""

SPACES: tuple[str, ...] = ("global", "local", "any")
KINDS: tuple[str, ...] = ("read", "write")

FOREIGN_PIPES: dict[str, str] = {"arith": "VECTOR", "math": "VECTOR"}
"""Pipe of ops of dialects pypto does not define, by dialect name (default: SCALAR)."""


@dataclass(frozen=True)
class Access:
    """One memory access of an op: through operand `operand`, in `space`, reading or writing.

    `space` is "any" when the op accepts an address in either memory (`pto.load` of HBM or L1);
    `memory_accesses(op)` then resolves it from the operand's type.
    """

    operand: int
    space: str
    kind: str

    def __post_init__(self) -> None:
        if self.space not in SPACES:
            raise ValueError(f"unknown memory space {self.space!r}; expected one of {SPACES}")
        if self.kind not in KINDS:
            raise ValueError(f"unknown access kind {self.kind!r}; expected one of {KINDS}")


def read(operand: int, space: str = "any") -> Access:
    return Access(operand, space, "read")


def write(operand: int, space: str = "any") -> Access:
    return Access(operand, space, "write")


@dataclass(frozen=True)
class IssuesOn(OpTrait):
    """The pipe the instruction issues on (one of `PIPES`)."""

    pipe: str

    def __post_init__(self) -> None:
        if self.pipe not in PIPES:
            raise ValueError(f"unknown pipe {self.pipe!r}; expected one of {PIPES}")


SCALAR, VECTOR, CUBE = IssuesOn("SCALAR"), IssuesOn("VECTOR"), IssuesOn("CUBE")
MTE_IN, MTE_OUT = IssuesOn("MTE_IN"), IssuesOn("MTE_OUT")
"""The pipe traits, as the dialects declare them: `traits_def(VECTOR, ...)`."""


@dataclass(frozen=True)
class BlockCollective(OpTrait):
    """A block-level instruction: executed once per block by all its lanes together.

    Every lane of the block must reach it, so it must sit in control flow uniform across the
    block (`pto-verify-barriers` and the frontend check this); the interpreter runs kernels
    containing one a block (or several blocks in lockstep) at a time.
    """


WARP_RESULTS: tuple[str, ...] = ("lane", "warp")


@dataclass(frozen=True)
class WarpCollective(OpTrait):
    """A warp-level collective (`pto.shfl_down`, `pto.ballot`, ...; docs/language.md#warp-shuffles-and-votes):
    the lanes of a warp exchange register values, so every lane of the warp must reach it
    together, in control flow uniform across the warp (conditions on warp ids, block ids,
    parameters, constants, or a vote's result). The frontend's check and `pto-verify-barriers`
    reject one under a condition that differs between the lanes of a warp; the interpreter
    checks at run time that no lane of a warp that runs it is missing.

    `result`: "lane" when each lane gets its own value (the shuffles), "warp" when the whole
    warp gets one (the votes: a value uniform across the warp, so a branch on it is
    warp-uniform). It is not a barrier: as CUDA's `__shfl_sync` / `__ballot_sync`, it implies
    no memory ordering, so the barrier analysis and the race detector do not treat it as one.
    """

    result: str

    def __post_init__(self) -> None:
        if self.result not in WARP_RESULTS:
            raise ValueError(f"unknown warp collective result {self.result!r}; expected one "
                             f"of {WARP_RESULTS}")


def warp_collective(op: OpOrClass) -> str | None:
    """"lane" (a shuffle) or "warp" (a vote) for a warp collective, else None."""
    trait = _trait(op, WarpCollective)
    return trait.result if isinstance(trait, WarpCollective) else None


@dataclass(frozen=True)
class ChecksUniform(OpTrait):
    """The op returns its operand after checking, at run time, that it is the same on every
    active lane of a block (`pto.loop_step`, a SIMT loop's step): analyses take the result as
    uniform and equal to the operand."""


class Fence(MemoryEffect):
    """Orders memory without an address of its own (barriers, waits): reads and writes all.

    Declared as whole-memory effects, so no load or store is moved, merged or erased across it.
    """

    @classmethod
    def get_effects(cls, op: Operation) -> AbstractSet[EffectInstance]:
        return _FENCE_EFFECTS


_FENCE_EFFECTS = frozenset((EffectInstance(MemoryEffectKind.READ),
                            EffectInstance(MemoryEffectKind.WRITE)))

_KIND_EFFECT = {"read": MemoryEffectKind.READ, "write": MemoryEffectKind.WRITE}


@dataclass(frozen=True)
class AccessesMemory(MemoryEffect):
    """The op's memory accesses through its address operands (and the matching xDSL effects)."""

    accesses: tuple[Access, ...]

    def __init__(self, *accesses: Access):
        object.__setattr__(self, "accesses", tuple(accesses))

    def get_effects(self, op: Operation) -> AbstractSet[EffectInstance]:  # type: ignore[override]
        operands = op.operands
        return frozenset(
            EffectInstance(_KIND_EFFECT[a.kind],
                           operands[a.operand] if a.operand < len(operands) else None)
            for a in self.accesses)


OpOrClass = Operation | type[Operation]


_TRAITS: dict[tuple[type, type[OpTrait]], OpTrait | None] = {}
"""`_trait`'s answers by (op class, trait kind). An op class's traits are fixed when it is
defined (pypto never calls xDSL's `add_trait`), and xDSL's `get_trait` scans them with an
isinstance per trait on every query: the passes ask the same few questions of every op many
times over (a compile of the pipelined matmul asked ~18,000)."""


def _trait(op: OpOrClass, kind: type[OpTrait]) -> OpTrait | None:
    cls = op if isinstance(op, type) else type(op)
    key = (cls, kind)
    try:
        return _TRAITS[key]
    except KeyError:
        found = _TRAITS[key] = cls.get_trait(kind)
        return found


def pipe_of(op: OpOrClass) -> str:
    """The pipe `op` (an op or an op class) issues on, one of `PIPES`."""
    trait = _trait(op, IssuesOn)
    if isinstance(trait, IssuesOn):
        return trait.pipe
    dialect = op.name.split(".", 1)[0]
    return FOREIGN_PIPES.get(dialect, "SCALAR")


def is_block_collective(op: OpOrClass) -> bool:
    """Is `op` executed once per block, by all its lanes together (a tile instruction or
    `pto.barrier_block`)?"""
    return _trait(op, BlockCollective) is not None


def checks_uniform(op: OpOrClass) -> bool:
    """Is `op`'s result its operand, checked at run time to be uniform (`ChecksUniform`)?"""
    return _trait(op, ChecksUniform) is not None


def declared_accesses(op: OpOrClass) -> tuple[Access, ...]:
    """The accesses as declared on the op class (spaces may be "any")."""
    trait = _trait(op, AccessesMemory)
    return trait.accesses if isinstance(trait, AccessesMemory) else ()


def memory_accesses(op: OpOrClass) -> tuple[Access, ...]:
    """The memory `op` reads and writes through its address operands, in declaration order.

    On an op (not a class) a declared space "any" is resolved from the operand's type ("global"
    for a `!pto.ptr<T, global>`, "local" for an L1 pointer or buffer); it stays "any" only when
    the operand is not an address (IR that does not verify).
    """
    declared = declared_accesses(op)
    if not declared or isinstance(op, type):
        return declared
    resolved: list[Access] = []
    for access in declared:
        if access.space == "any" and access.operand < len(op.operands):
            space = _space_of(op.operands[access.operand].type)
            if space is not None:
                access = Access(access.operand, space, access.kind)
        resolved.append(access)
    return tuple(resolved)


@runtime_checkable
class AddressType(Protocol):
    """A type that names memory in one space (`!pto.ptr`, `!pto.l1buf`): it has a `space`."""

    @property
    def space(self) -> str: ...


def _space_of(t: Attribute) -> str | None:
    # the attribute, not `isinstance(t, AddressType)`: a runtime Protocol check walks the
    # protocol's members on every call, and the barrier analysis asks this per pair of accesses
    space = getattr(t, "space", None)
    return space if isinstance(space, str) else None


def writes_memory(op: OpOrClass) -> bool:
    """Does `op` (not counting nested ops) write memory or order it (an access or a fence)?"""
    if any(a.kind == "write" for a in declared_accesses(op)):
        return True
    return _trait(op, Fence) is not None


def lane_reads_memory(op: OpOrClass) -> bool:
    """Is `op` a lane instruction reading memory (so its result is per lane, from memory)?"""
    return not is_block_collective(op) and any(a.kind == "read" for a in declared_accesses(op))


def accesses_space(op: Operation, space: str) -> bool:
    """Does `op` access memory in `space` ("global" or "local") through an address operand?"""
    return any(a.space in (space, "any") for a in memory_accesses(op))


# --------------------------------------------------------------------------------------------
# What an instruction is: its kind, synchronisation, copies, waits
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InstructionKind(OpTrait):
    """The op is an instruction of the machine, named `kind` in profiles, traces and the
    debugger ("" = its op name without the dialect, upper case: `pto.load` -> LOAD).

    Ops without it are bookkeeping that runs in between: ids, address arithmetic, declarations,
    pipeline structure (the debugger's `step()` does not stop at them)."""

    kind: str = ""


def kind_of(op: OpOrClass) -> str:
    """LOAD, STORE, FMA, MMA, COPY_IN, ADDF, ...: the declared kind of an instruction, else the
    op name without its dialect, upper case."""
    trait = _trait(op, InstructionKind)
    if isinstance(trait, InstructionKind) and trait.kind:
        return trait.kind
    return op.name.split(".", 1)[-1].upper()


def is_instruction(op: OpOrClass) -> bool:
    """Is `op` an instruction of the PTO machine (what the debugger steps by)?"""
    return _trait(op, InstructionKind) is not None


SCOPES: tuple[str, ...] = ("warp", "block")


@dataclass(frozen=True)
class Synchronizes(OpTrait):
    """A barrier: every lane of its `scope` ("warp" or "block") reaches it before any goes on,
    and L1 writes before it are visible to those lanes after it. A block barrier also drains
    every pipe."""

    scope: str

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"unknown barrier scope {self.scope!r}; expected one of {SCOPES}")


def sync_scope(op: OpOrClass) -> str | None:
    """"warp" or "block" for a barrier, else None."""
    trait = _trait(op, Synchronizes)
    return trait.scope if isinstance(trait, Synchronizes) else None


class StartsCopy(OpTrait):
    """Starts an asynchronous bulk copy (operands: destination 0, source 1); result 0 is its
    token, and the copy completes at a wait of it (`Waits`) or when the kernel ends."""


def starts_copy(op: OpOrClass) -> bool:
    return _trait(op, StartsCopy) is not None


class CopiesSynchronously(OpTrait):
    """A bulk copy (destination 0, source 1) complete when the instruction retires: what
    follows it waits for it (`pto.tile_store`)."""


def copies_synchronously(op: OpOrClass) -> bool:
    return _trait(op, CopiesSynchronously) is not None


WAIT_TARGETS: tuple[str, ...] = ("token", "all")


@dataclass(frozen=True)
class Waits(OpTrait):
    """Waits for asynchronous copies: `on="token"`, the copy whose token is operand 0;
    `on="all"`, every copy of the block not yet waited for."""

    on: str

    def __post_init__(self) -> None:
        if self.on not in WAIT_TARGETS:
            raise ValueError(f"unknown wait target {self.on!r}; expected one of {WAIT_TARGETS}")


def waits_on(op: OpOrClass) -> str | None:
    """"token" or "all" for a wait, else None."""
    trait = _trait(op, Waits)
    return trait.on if isinstance(trait, Waits) else None


class WritesOutput(OpTrait):
    """Writes the program's output (`pto.printf`): an effect outside memory, which a second
    execution (a traced side run, a replay) would repeat."""


def writes_output(op: OpOrClass) -> bool:
    return _trait(op, WritesOutput) is not None


class SignalsCompletion(OpTrait):
    """Signals, from the producer pipe, that the copy of its token (operand 0) has completed
    (`npu.set_flag`). The signal is part of the copy: it takes no time of its own."""


def signals_completion(op: OpOrClass) -> bool:
    return _trait(op, SignalsCompletion) is not None


# --------------------------------------------------------------------------------------------
# Addresses and values: where an address comes from, which ids vary
# --------------------------------------------------------------------------------------------


class DeclaresBuffer(OpTrait):
    """Declares a block-shared L1 buffer (its result): a static declaration, as CUDA's
    `__shared__`, so not a synchronisation point and not an instruction. Every L1 address is
    derived from one."""


def declares_buffer(op: OpOrClass) -> bool:
    return _trait(op, DeclaresBuffer) is not None


class OffsetsAddress(OpTrait):
    """The result is the address operand 0 offset by operand 1 elements (pointer arithmetic):
    it points into the same buffer as operand 0."""


def offset_base(op: Operation) -> SSAValue | None:
    """The address `op` offsets (operand 0) when it is pointer arithmetic, else None."""
    return op.operands[0] if _trait(op, OffsetsAddress) is not None else None


class ForwardsYield(OpTrait):
    """Structure, not an instruction: the op's results are the values its (single-block)
    region yields, or (on a terminator) it yields them. Nothing of it is executed itself."""


def forwards_yield(op: OpOrClass) -> bool:
    return _trait(op, ForwardsYield) is not None


LAUNCH_IDS: dict[str, str | None] = {
    "global_id": "lane", "local_id": "lane", "warp_id": "lane", "lane_id": "lane",
    "block_id": "block", "block_dim": None, "grid_dim": None,
}
"""The ids of a launch (docs/isa.md#ids), and what they differ between: the lanes of a block, the
blocks of the grid, or nothing (the same for the whole launch)."""


@dataclass(frozen=True)
class LaunchId(OpTrait):
    """The op reads id `name` of the launch (one of `LAUNCH_IDS`), along the op's grid
    dimension (`dim_index`) when it takes one."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in LAUNCH_IDS:
            raise ValueError(f"unknown launch id {self.name!r}; expected one of "
                             f"{tuple(LAUNCH_IDS)}")


def launch_id(op: OpOrClass) -> str | None:
    """"global_id", "local_id", "block_id", ... for an id op, else None."""
    trait = _trait(op, LaunchId)
    return trait.name if isinstance(trait, LaunchId) else None


def varies_per(op: OpOrClass) -> str | None:
    """"lane" for an id differing between the lanes of a block, "block" for the block id (the
    same for a block's lanes), else None."""
    name = launch_id(op)
    return None if name is None else LAUNCH_IDS[name]


# --------------------------------------------------------------------------------------------
# The kernel language: which Python function an op is, elementwise semantics
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelFunction(OpTrait):
    """`pto.<name><signature>` in a kernel lowers to this op. `signature` is the Python
    parameter list, defaults written as Python (`"(count, dtype=float32)"`). Several ops may
    share a function (the two forms of `pto.store`); they declare one signature."""

    name: str
    signature: str


def kernel_function(op: OpOrClass) -> KernelFunction | None:
    trait = _trait(op, KernelFunction)
    return trait if isinstance(trait, KernelFunction) else None


@dataclass(frozen=True)
class AtomicUpdate(OpTrait):
    """A lane instruction that updates one element per lane indivisibly and returns the value
    it held before: `kind` is how it combines the old value with the lane's operand(s) ("add",
    "max", "min", "and", "or", "xor", "exch", "cas"); `update` is how the debugger shows it
    ("+= v"). Lanes on one address serialise in the interpreter's documented order
    (docs/language.md#atomics); the memory facts are its `AccessesMemory(read, write)`."""

    kind: str
    update: str


def atomic_update(op: OpOrClass) -> AtomicUpdate | None:
    trait = _trait(op, AtomicUpdate)
    return trait if isinstance(trait, AtomicUpdate) else None


@dataclass(frozen=True)
class Elementwise(OpTrait):
    """A pure function of its operands, lane by lane, with the operand's type; its exact
    reference is `pypto.exact.MATH[reference]`, which the interpreter runs (table-driven: an
    elementwise op needs no emitter of its own)."""

    reference: str


def elementwise_reference(op: OpOrClass) -> str | None:
    trait = _trait(op, Elementwise)
    return trait.reference if isinstance(trait, Elementwise) else None


# --------------------------------------------------------------------------------------------
# Tile footprints
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tile:
    """The elements one address operand of a tile instruction covers, counted from the
    address: `rows` rows of `row_len` elements, the starts of two rows `stride` apart."""

    rows: int
    row_len: int
    stride: int

    @staticmethod
    def flat(count: int) -> Tile:
        """`count` consecutive elements."""
        return Tile(1, count, count)

    @property
    def elements(self) -> int:
        """Elements covered."""
        return max(0, self.rows) * max(0, self.row_len)

    @property
    def extent(self) -> int:
        """From the first element to one past the last: (rows - 1) * stride + row_len."""
        if self.rows <= 0 or self.row_len <= 0:
            return 0
        return (self.rows - 1) * self.stride + self.row_len


ValueOf = Callable[[SSAValue], "int | None"]
"""How a caller knows an i32 operand: a constant, a value under an analysis' assumptions, or a
run-time value; None when it does not."""


class TileFootprint(OpTrait, abc.ABC):
    """Interface of the tile instructions: the `Tile` each address operand covers.

    `tiles(op, value_of)` maps operand indices to their tile (None when a size it depends on is
    not known through `value_of`). One definition of each instruction's geometry for the cost
    model (L1 extents, bytes moved), the barrier analysis (elements) and the alias query.
    """

    @abc.abstractmethod
    def tiles(self, op: Operation, value_of: ValueOf) -> Mapping[int, Tile | None]:
        """Operand index -> the tile it covers (None: depends on a value not known)."""


class FillFootprint(TileFootprint):
    """`pto.fill dst, value, count`: `count` consecutive elements of operand 0."""

    def tiles(self, op: Operation, value_of: ValueOf) -> Mapping[int, Tile | None]:
        count = value_of(op.operands[2])
        return {0: None if count is None else Tile.flat(count)}


def _itemsize(t: Attribute) -> int:
    width = getattr(t, "width", None)  # IntegerType: an IntAttr; floats have `bitwidth`
    bits = width.data if width is not None else getattr(t, "bitwidth", 32)
    return max(1, int(bits) // 8)


def element_bytes(address: SSAValue) -> int:
    """Bytes of one element of an address operand (4 when it is not an address)."""
    return _itemsize(getattr(address.type, "element_type", address.type))


def copy_tiles(dst: SSAValue, src: SSAValue, nbytes: SSAValue, rows: SSAValue,
               src_stride: SSAValue, dst_stride: SSAValue, value_of: ValueOf
               ) -> tuple[Tile | None, Tile | None]:
    """(destination, source) tiles of a bulk copy of `nbytes` in `rows` rows with element
    strides (row r reads at `r * src_stride`, writes at `r * dst_stride`)."""
    total, n_rows = value_of(nbytes), value_of(rows)
    if total is None or n_rows is None or n_rows <= 0:
        return None, None
    row_bytes, rest = divmod(total, n_rows)
    if rest or row_bytes % element_bytes(dst):
        return None, None  # not whole rows of whole elements: an invalid copy
    row_len = row_bytes // element_bytes(dst)
    s_src, s_dst = value_of(src_stride), value_of(dst_stride)
    return (None if s_dst is None else Tile(n_rows, row_len, s_dst),
            None if s_src is None else Tile(n_rows, row_len, s_src))


class CopyFootprint(TileFootprint):
    """A bulk copy `dst, src, nbytes, rows, src_stride, dst_stride` (operands 0..5)."""

    def tiles(self, op: Operation, value_of: ValueOf) -> Mapping[int, Tile | None]:
        dst, src = copy_tiles(*op.operands[:6], value_of=value_of)
        return {0: dst, 1: src}


def mma_tiles(op: Operation) -> dict[int, Tile]:
    """C (m x n), A (m x k), B (k x n): operands 0, 1, 2 of an op with a `shape` (m, n, k)."""
    m, n, k = op.shape  # type: ignore[attr-defined]
    return {0: Tile(m, n, n), 1: Tile(m, k, k), 2: Tile(k, n, n)}


class MmaFootprint(TileFootprint):
    """`C += A @ B` on row-major tiles: operands 0 (C, m x n), 1 (A, m x k), 2 (B, k x n)."""

    def tiles(self, op: Operation, value_of: ValueOf) -> Mapping[int, Tile | None]:
        return mma_tiles(op)


class LoadMmaFootprint(TileFootprint):
    """The fused load + MMA: the MMA's tiles, and the HBM source (operand 3) of the copy into
    the loaded operand, `nbytes, rows, src_stride, dst_stride` being operands 4..7."""

    def tiles(self, op: Operation, value_of: ValueOf) -> Mapping[int, Tile | None]:
        tiles: dict[int, Tile | None] = dict(mma_tiles(op))
        tiles[3] = self.copy(op, value_of)[1]
        return tiles

    @staticmethod
    def copy(op: Operation, value_of: ValueOf) -> tuple[int, Tile | None, Tile | None]:
        """The fused copy: (the operand it writes, its tile there, its HBM source tile)."""
        src, nbytes, rows, src_stride, dst_stride = op.operands[3:8]
        loaded = op.loaded  # type: ignore[attr-defined]
        dst, source = copy_tiles(loaded, src, nbytes, rows, src_stride, dst_stride, value_of)
        return list(op.operands).index(loaded), dst, source


def tile_footprint(op: Operation, value_of: ValueOf) -> Mapping[int, Tile | None] | None:
    """The tile each address operand of a tile instruction covers (None: not a tile op)."""
    trait = _trait(op, TileFootprint)
    return trait.tiles(op, value_of) if isinstance(trait, TileFootprint) else None


def has_tile_footprint(op: OpOrClass) -> bool:
    return _trait(op, TileFootprint) is not None


def fused_copy(op: Operation, value_of: ValueOf) -> tuple[int, Tile | None] | None:
    """For an instruction with a fused load (`npu.load_mma`): the operand the load writes and
    the tile it writes there (besides the operand's own tile); None for any other op."""
    trait = _trait(op, LoadMmaFootprint)
    if not isinstance(trait, LoadMmaFootprint):
        return None
    index, tile, _ = trait.copy(op, value_of)
    return index, tile


# --------------------------------------------------------------------------------------------
# Tile vector instructions
# --------------------------------------------------------------------------------------------

VECTOR_CLASSES: tuple[str, ...] = ("simple", "transcendental", "reduction", "conversion")
"""Cost classes of the tile vector instructions (docs/cost-model.md#tile-vector-instructions):
each has its own head and cycles per 256-byte repeat in the target file."""

TILE_ROLES: tuple[str, ...] = ("full", "row", "col", "trans", "value")
"""What an operand of a tile vector instruction is, relative to the op's `rows x cols`: the
whole tile, a `rows x 1` column vector, a `1 x cols` row vector, the `cols x rows` transpose,
or a uniform value (not memory)."""


@dataclass(frozen=True)
class TileVector(TileFootprint):
    """A tile vector instruction (`pto.tadd`, `pto.trowsum`, ...): executed once per block on a
    row-major `rows x cols` tile (the op's `rows` / `cols` properties), its operand `i` being
    `roles[i]` of `TILE_ROLES`, costed in `cost_class` of `VECTOR_CLASSES`. Its footprint is
    the elements each address operand covers, from the static shape alone."""

    cost_class: str
    roles: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.cost_class not in VECTOR_CLASSES:
            raise ValueError(f"cost class {self.cost_class!r} is not one of {VECTOR_CLASSES}")
        for role in self.roles:
            if role not in TILE_ROLES:
                raise ValueError(f"tile role {role!r} is not one of {TILE_ROLES}")

    def tiles(self, op: Operation, value_of: ValueOf) -> Mapping[int, Tile | None]:
        rows, cols = tile_shape(op)
        shapes = {"full": Tile(rows, cols, cols), "row": Tile(rows, 1, 1),
                  "col": Tile(1, cols, cols), "trans": Tile(cols, rows, rows)}
        return {i: shapes[role] for i, role in enumerate(self.roles) if role != "value"}


def tile_shape(op: Operation) -> tuple[int, int]:
    """(rows, cols) of a tile vector instruction: its `rows` and `cols` properties."""
    return (op.properties["rows"].value.data,  # type: ignore[attr-defined]
            op.properties["cols"].value.data)  # type: ignore[attr-defined]


def tile_vector(op: OpOrClass) -> TileVector | None:
    """The `TileVector` trait of a tile vector instruction, else None."""
    trait = _trait(op, TileVector)
    return trait if isinstance(trait, TileVector) else None


def vector_work_bytes(op: Operation) -> int:
    """Bytes a tile vector instruction streams through the vector unit: its largest tile
    operand (the source of a reduction, the destination of a broadcast)."""
    trait = tile_vector(op)
    if trait is None:
        return 0
    best = 0
    for index, tile in trait.tiles(op, lambda v: None).items():
        if tile is not None:
            best = max(best, tile.elements * element_bytes(op.operands[index]))
    return best
