"""Access strategies as units: each module of this package is one way the interpreter may run
an op faster than the general path, with the same bits (docs/interpreter.md, "Adding an access
kind").

A strategy module holds, in one place:
- `Decision`: a frozen dataclass, what the planner decided for an op (its parameters, if any);
- `match(op, facts) -> Decision | None`: the planner's question, asked of every op of the
  kernel (the kernel's `func.func` included, for strategies that hold kernel-wide) when the
  fast paths are on; it asks op traits (pypto/dialects/traits.py), never op classes;
- its run-time part, which receives its `Decision` explicitly (as an argument, or from
  `ctx.decisions`, the variant's decisions by kind) and checks only what depends on data.

`decide` builds the plan's mapping op -> decisions (`KernelPlan.decisions`); an empty mapping
(`PYPTO_FAST_PATHS=0`: the planner asks no strategy) is, structurally, the general path: every
run-time part finds no Decision of its kind and does what the general path does.

Registering a module is adding it to `REGISTRY` below; tests/backend/interpreter/fast_paths/
test_strategies.py checks that every module here is registered and well-formed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from xdsl.ir import Operation

from pypto.backend.interpreter.strategies.base import Decision, Facts, Strategy

from pypto.backend.interpreter.strategies import (
    atomics,
    batch_copy,
    batched_mma,
    broadcast,
    lazy_l1,
    merge_sides,
    sparse_gather,
    tail2d,
    uniform_fill,
    whole_blocks,
)

REGISTRY: tuple[Strategy, ...] = (merge_sides, whole_blocks, sparse_gather, lazy_l1,  # type: ignore
                                  batch_copy, uniform_fill, batched_mma, atomics, broadcast,
                                  tail2d)
"""Every strategy, in the order the planner asks them."""

__all__ = ["REGISTRY", "Decision", "Facts", "Strategy", "by_kind", "decide"]


def decide(ops: Iterable[Operation], facts: Facts) -> dict[Operation, tuple[Decision, ...]]:
    """The plan's mapping op -> the decisions the strategies made for it (ops no strategy
    matched are absent)."""
    out: dict[Operation, tuple[Decision, ...]] = {}
    for op in ops:
        found = tuple(d for s in REGISTRY if (d := s.match(op, facts)) is not None)
        if found:
            out[op] = found
    return out


def by_kind(decisions: Mapping[Operation, tuple[Decision, ...]]) -> dict[type, Decision]:
    """The variant's decisions by kind (Decision class -> one of them), what the run time
    receives as `ctx.decisions`: a run-time part knows its kind, not the op it serves (a
    copy instruction's code does not name its op)."""
    out: dict[type, Decision] = {}
    for found in decisions.values():
        for d in found:
            out.setdefault(type(d), d)
    return out
