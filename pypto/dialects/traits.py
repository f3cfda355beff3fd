"""Op facts as xDSL traits: the pipe an op issues on, the memory it touches, block collectives.

These are the one source of truth for what an instruction *is* (SPEC §1, §2), declared on each
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
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from xdsl.ir import Attribute, Operation
from xdsl.traits import EffectInstance, MemoryEffect, MemoryEffectKind, OpTrait

Pipe = Literal["SCALAR", "VECTOR", "CUBE", "MTE_IN", "MTE_OUT"]
Space = Literal["global", "local", "any"]
Kind = Literal["read", "write"]

PIPES: tuple[str, ...] = ("SCALAR", "VECTOR", "CUBE", "MTE_IN", "MTE_OUT")
"""The pipes of the PTO machine (SPEC §1): instructions of different pipes overlap."""

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


@dataclass(frozen=True)
class BlockCollective(OpTrait):
    """A block-level instruction: executed once per block by all its lanes together.

    Every lane of the block must reach it, so it must sit in control flow uniform across the
    block (`pto-verify-barriers` and the frontend check this); the interpreter runs kernels
    containing one a block (or several blocks in lockstep) at a time.
    """


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


def _trait(op: OpOrClass, kind: type[OpTrait]) -> OpTrait | None:
    return op.get_trait(kind)  # works on classes and instances alike (a classmethod)


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
    return t.space if isinstance(t, AddressType) else None


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
