"""Access strategies as units: each module of this package is one way the interpreter may run
an op faster than the general path, with the same bits (docs/interpreter.md, "Adding an access
kind").

A strategy module holds, in one place:
- `Decision`: a frozen dataclass, what the planner decided for an op (its parameters, if any);
- `match(op, facts) -> Decision | None`: the planner's question, asked of every op of the
  kernel (the kernel's `func.func` included, for strategies that hold kernel-wide) when the
  fast paths are on; it asks op traits (pypto/dialects/traits.py) and `facts` (the value
  analyses and the decisions of the kinds before it), never pto/npu op classes;
- its emission, for a kind that changes the generated code: methods of its Decisions that
  codegen calls (`emit`, `load`, `store`, `compare`, `copy_address`: strategies/base.py);
- its run-time part, which receives its `Decision` explicitly (as an argument, or from
  `ctx.decisions`, the variant's decisions by kind) and checks only what depends on data.

Compile-time kinds (window, ramp, rows, tail1d, planned_view, and the code motion of hoist)
change the generated code; run-time kinds leave the general path's code and are found at run
time. Either way the plan holds only decisions.

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

from pypto.backend.interpreter.strategies import (  # noqa: E402  (after base)
    alias,
    atomics,
    batch_copy,
    batched_mma,
    broadcast,
    cache_sized,
    hoist,
    lazy_l1,
    merge_sides,
    planned_view,
    ramp,
    rows,
    sparse_gather,
    tail1d,
    tail2d,
    uniform_fill,
    whole_blocks,
    window,
)

REGISTRY: tuple[Strategy, ...] = (  # type: ignore[assignment]
    # compile-time kinds: the generated code differs (each module's Decisions emit it)
    window, ramp, rows, tail1d, planned_view, hoist, alias,
    # run-time kinds: the general path's code, whose run-time part finds the Decision
    merge_sides, whole_blocks, sparse_gather, lazy_l1, batch_copy, uniform_fill, batched_mma,
    atomics, broadcast, tail2d,
    # counts the passes of the code decided above
    cache_sized)
"""Every strategy, in the order the planner asks them: each is asked about every op (the
kernel's `func.func` first) before the next, so it sees the decisions of those before it;
a module with a `finish(facts)` completes its decisions right after its own matches."""

__all__ = ["REGISTRY", "Decision", "Facts", "Strategy", "by_kind", "decide"]


def decide(ops: Iterable[Operation], facts: Facts) -> dict[Operation, tuple[Decision, ...]]:
    """The plan's mapping op -> the decisions the strategies made for it, in the order they
    were made (ops no strategy matched are absent); `facts.decisions` is filled in place."""
    ops = list(ops)
    for strategy in REGISTRY:
        for op in ops:
            d = strategy.match(op, facts)
            if d is not None:
                facts.add(op, d)
        finish = getattr(strategy, "finish", None)
        if finish is not None:
            finish(facts)
    return facts.decisions


def by_kind(decisions: Mapping[Operation, tuple[Decision, ...]]) -> dict[type, Decision]:
    """The variant's decisions by kind (Decision class -> one of them), what the run time
    receives as `ctx.decisions`: a run-time part knows its kind, not the op it serves (a
    copy instruction's code does not name its op)."""
    out: dict[type, Decision] = {}
    for found in decisions.values():
        for d in found:
            out.setdefault(type(d), d)
    return out
