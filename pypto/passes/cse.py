"""Common subexpression elimination: merge identical side-effect-free ops and repeated loads.

The same rewrite as xDSL's `cse` pass (same decisions, same output), in time linear in the op
count. xDSL's driver is quadratic on pto IR in two places, both removed here:

- A read-only op (`pto.load`) may replace an identical earlier one only if no op in between
  writes memory. xDSL rescans every op in between for each candidate, back to the first of a run
  of identical loads; here each block keeps a running count of the writing ops seen so far, and
  a load remembers the count it was seen at: "no write in between" is an equality of counts.
  (Which ops write is read off their memory effects, i.e. the traits of `pypto.dialects.traits`.)
- Known ops are keyed by a hash of the op's name, attributes, operands and result types; xDSL
  leaves regions out of it, so all the `scf.if`s on one condition collide and every lookup
  compares regions with each earlier one. The key here also hashes the regions' structure (op
  names and the values they use, inner values by position), which `is_structurally_equivalent`
  implies. And scopes are an undo log on one table rather than a copy of it per region.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnregisteredOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import (
    EffectInstance,
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffectKind,
    SymbolOpInterface,
    get_effects,
)
from xdsl.transforms.common_subexpression_elimination import (
    has_other_side_effecting_op_in_between,
)


def _region_hash(op: Operation) -> int:
    """A hash of the structure of `op`'s regions, equal for structurally equivalent regions:
    nested op names, result types and operands (values defined inside `op` by position)."""
    inner: dict[SSAValue, int] = {}
    parts: list[object] = []
    for region in op.regions:
        parts.append(len(region.blocks))
        for block in region.blocks:
            for arg in block.args:
                inner[arg] = len(inner)
            parts.append(block.arg_types)
            for nested in block.walk():
                parts.append(nested.name)
                parts.append(nested.result_types)
                parts.append(tuple(("in", inner[v]) if v in inner else v
                                   for v in nested.operands))
                for result in nested.results:
                    inner[result] = len(inner)
                for nested_region in nested.regions:
                    for nested_block in nested_region.blocks:
                        for arg in nested_block.args:
                            inner[arg] = len(inner)
    return hash(tuple(parts))


class _Key:
    """An op as a key of the known-ops table: equal when xDSL's CSE considers them equal."""

    __slots__ = ("op", "name", "_hash")

    def __init__(self, op: Operation):
        self.op = op
        self.name = op.op_name.data if isinstance(op, UnregisteredOp) else op.name
        self._hash = hash((
            self.name,
            sum(hash(i) for i in op.attributes.items()),
            sum(hash(i) for i in op.properties.items()),
            op.result_types,
            op.operands,
            _region_hash(op) if op.regions else 0,
        ))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Key):
            return False
        a, b = self.op, other.op
        return (self._hash == other._hash
                and self.name == other.name
                and a.attributes == b.attributes
                and a.properties == b.properties
                and a.operands == b.operands
                and a.result_types == b.result_types
                and len(a.regions) == len(b.regions)
                and all(r.is_structurally_equivalent(s) for r, s in zip(a.regions, b.regions)))


def _writes(effects: AbstractSet[EffectInstance] | None) -> bool:
    """Would xDSL's scan stop at an op with these effects (unknown effects, or a write)?"""
    return effects is None or any(e.kind is MemoryEffectKind.WRITE for e in effects)


def _trivially_dead(op: Operation, effects: AbstractSet[EffectInstance] | None) -> bool:
    """xDSL's `is_trivially_dead(op)`, given `get_effects(op)` (computed once per op here)."""
    return (all(result.first_use is None for result in op.results)
            and not op.has_trait(IsTerminator, value_if_unregistered=False)
            and not op.has_trait(SymbolOpInterface, value_if_unregistered=False)
            and effects is not None
            and all(e.kind is MemoryEffectKind.READ
                    or (e.kind is MemoryEffectKind.ALLOC and isinstance(v := e.value, SSAValue)
                        and op.is_ancestor(v.owner))
                    for e in effects))


@dataclass
class _Driver:
    rewriter: Rewriter = field(default_factory=Rewriter)
    to_erase: list[Operation] = field(default_factory=list[Operation])
    erasing: set[Operation] = field(default_factory=set[Operation])
    table: dict[_Key, Operation] = field(default_factory=dict[_Key, Operation])
    undo: list[list[tuple[_Key, Operation | None]]] = field(default_factory=list)
    writes_in_block: dict[Block, int] = field(default_factory=dict[Block, int])
    seen_at: dict[Operation, int] = field(default_factory=dict[Operation, int])
    visited: set[Operation] = field(default_factory=set[Operation])

    # --- the scoped table ---------------------------------------------------------------

    def remember(self, key: _Key, op: Operation) -> None:
        if self.undo:
            self.undo[-1].append((key, self.table.get(key)))
        self.table[key] = op

    def push(self) -> None:
        self.undo.append([])

    def pop(self) -> None:
        for key, old in reversed(self.undo.pop()):
            if old is None:
                del self.table[key]
            else:
                self.table[key] = old

    # --- the rewrite (xDSL's CSEDriver, step for step) ------------------------------------

    def mark_erasure(self, op: Operation) -> None:
        if op not in self.erasing:
            self.erasing.add(op)
            self.to_erase.append(op)

    def replace_and_delete(self, op: Operation, existing: Operation) -> None:
        for old, new in zip(op.results, existing.results, strict=True):
            # xDSL replaces only if no user is equal to a known op. A known op equal to a user
            # uses `old` too, so it is a visited user: without one, the answer is yes.
            if (not any(use.operation in self.visited for use in old.uses)
                    or all(_Key(use.operation) not in self.table for use in old.uses)):
                old.replace_all_uses_with(new)
        if all(not r.uses for r in op.results):
            self.mark_erasure(op)

    def no_write_between(self, existing: Operation, op: Operation, block: Block) -> bool:
        seen = self.seen_at.get(existing)
        if seen is None:  # not recorded by this driver: ask xDSL's scan
            return not has_other_side_effecting_op_in_between(existing, op)
        return seen == self.writes_in_block.get(block, 0)

    def simplify_operation(self, op: Operation, effects: AbstractSet[EffectInstance] | None,
                           ) -> None:
        if op.has_trait(IsTerminator):
            return
        if _trivially_dead(op, effects):
            self.mark_erasure(op)
            return
        if any(len(region.blocks) > 1 for region in op.regions):
            return
        if effects is None or effects:  # not side-effect free
            if effects is None or any(e.kind is not MemoryEffectKind.READ for e in effects):
                return
            key = _Key(op)
            block = op.parent_block()
            self.seen_at[op] = self.writes_in_block.get(block, 0) if block else -1
            existing = self.table.get(key)
            if (existing is not None and block is not None
                    and existing.parent_block() is block
                    and self.no_write_between(existing, op, block)):
                self.replace_and_delete(op, existing)
                return
            self.remember(key, op)
            return
        key = _Key(op)
        existing = self.table.get(key)
        if existing is not None:
            self.replace_and_delete(op, existing)
            return
        self.remember(key, op)

    def simplify_block(self, block: Block) -> None:
        for op in block.ops:
            if op.regions:
                if op.has_trait(IsolatedFromAbove, value_if_unregistered=True):
                    outer_table, outer_undo = self.table, self.undo
                    self.table, self.undo = {}, []
                    for region in op.regions:
                        self.simplify_region(region)
                    self.table, self.undo = outer_table, outer_undo
                else:
                    for region in op.regions:
                        self.simplify_region(region)
            effects = get_effects(op)
            self.simplify_operation(op, effects)
            self.visited.add(op)
            if _writes(effects):
                self.writes_in_block[block] = self.writes_in_block.get(block, 0) + 1

    def simplify_region(self, region: Region) -> None:
        if len(region.blocks) == 1:
            self.push()
            self.simplify_block(region.block)
            self.pop()

    def run(self, root: Operation) -> None:
        for region in root.regions:
            self.simplify_region(region)
        for op in self.to_erase:
            if op.parent is not None:
                self.rewriter.erase_op(op)


@dataclass(frozen=True)
class CSEPass(ModulePass):
    """Common subexpression elimination: merge identical side-effect-free ops (ids, pointer arithmetic, arith) and repeated loads with no write in between."""

    name = "cse"
    rerun_safe = True  # a cleanup: re-running it is harmless (docs/pypto-opt.md#passes-already-run)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _Driver().run(op)
