"""One way from a launch to its `Profile`: run the kernel with the executor's `Trace`, cost it.

`pto.profile()`, `pypto-opt --emit=cost|timeline|trace` and the debugger's timeline all call
`run_and_cost`, so they cost the same events of the same IR with the same engine and agree
cycle for cycle. The IR a model costs is made the same way everywhere too: `model_lowering`
gives the passes that take pto-level IR to the npu level (`model="fused"`), and both the
Python API and the CLI append them when the IR is still at the pto level.

Block classes (`classes.py`): when the uniformity analysis proves that no block's control flow
or L1 addresses depend on loaded data, the blocks are grouped into classes from the launch's ids
and integer arguments alone; one block per class runs traced (on scratch copies of the tensors)
and the whole launch runs untraced, with the interpreter's fast paths. Otherwise every block
runs traced and the trace groups them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from pypto.backend.cost_model.access import AccessGeometry
from pypto.backend.cost_model.footprint import (
    CopyRecorder,
    Footprints,
    has_global_copies,
    lane_footprints,
    lane_runs,
)
from pypto.analysis.cache import cached
from pypto.backend.cost_model.params import ModelParams
from pypto.backend.cost_model.profile import Profile, build_profile
from pypto.backend.cost_model.trace import CostTrace
from pypto.backend.interpreter.instruments import Chain, Instrument
from pypto.backend.targets import Target, default_target
from pypto.errors import KernelError


def model_lowering(target: Target) -> str:
    """The passes after which pto-level IR is at the level `model="fused"` costs: the npu
    level, with the target's warp and load/mma fusion rules. No block: `pto.compile` gives
    every block-shaped pass the launch's block (`pto.profile` hands it its `LaunchShape`),
    and `pypto-opt --emit` sets its `--block` on the parsed passes (tools/emit_cost.py)."""
    lower = (f"convert-pto-to-npu{{warp-size={target.warp_size} "
             f"max-block-lanes={target.max_block_lanes}}}")
    fuse = "npu-fuse-load-mma"
    if target.path and target.path != default_target().path:
        fuse += "{target=" + _quoted(target.path) + "}"
    return f"{lower},{fuse}"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def is_npu_level(ops: Iterable[Any]) -> bool:
    """Has the IR been lowered to the npu level (any `npu.*` op)?"""
    return any(op.name.startswith("npu.") for op in ops)


class _Scratch:
    """A copy of a tensor argument for a side run (same dtype and contents)."""

    freed = False

    def __init__(self, data: np.ndarray):
        self.data = data.copy()


def _tensor_data(arg: Any) -> np.ndarray | None:
    """The backing array of a live tensor argument (device tensor or stand-in), else None."""
    if getattr(arg, "freed", None) is not False:
        return None
    data = getattr(arg, "data", None)
    return data if isinstance(data, np.ndarray) else None


def scratch_args(args: Sequence[Any], only: set[int] | None = None) -> list[Any]:
    """The launch arguments with every tensor (or the tensors of the parameters in `only`)
    replaced by a copy: a run on them leaves the user's tensors alone."""
    out = []
    for i, a in enumerate(args):
        data = _tensor_data(a) if only is None or i in only else None
        out.append(a if data is None else _Scratch(data))
    return out


def tensor_sizes(args: Sequence[Any]) -> dict[int, int]:
    """Bytes of each tensor argument, by parameter index (the L2 rule needs them)."""
    out = {}
    for i, a in enumerate(args):
        data = _tensor_data(a)
        if data is not None:
            out[i] = int(data.nbytes)
    return out


def run_and_cost(executable: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
                 args: Sequence[Any], params: ModelParams, *,
                 instruments: Sequence[Instrument] = (), blocks: Sequence[int] | None = None,
                 tensor_bytes: dict[int, int] | None = None,
                 by_class: bool = True, partial: bool = False,
                 launch: Callable[[], Any] | None = None) -> Profile:
    """Run `executable` on `grid` x `block` with `args` and cost what ran.

    `blocks`: run only these linear block ids (the debugger's focus; the profile then holds
    those blocks). `instruments`: more instruments to chain after the trace (the debugger's
    lane log); they see every traced op. `by_class=False` traces every block even when block
    classes could be proven (the reference the block-class profile is tested against).
    Raises what the kernel raises (`KernelError`), unless `partial`: then what ran before the
    failure is costed (the debugger's timeline of a failing kernel). `launch`: gives an
    executable with the same results to run the untraced launch with when block classes are
    proven (the kernel before its lowering to the npu level, whose plain run is faster)."""
    geometry = AccessGeometry.of(params.target)
    trace = CostTrace(geometry)  # sectors, banks: the target's
    sizes = tensor_sizes(args) if tensor_bytes is None else tensor_bytes
    footprints = Footprints()    # the bytes each tensor's accesses touch (the L2 rule)
    copies = CopyRecorder(args, footprints)
    plan = None
    if blocks is None and by_class and not instruments:
        from pypto.backend.cost_model.classes import plan_block_classes

        plan = plan_block_classes(executable, grid, block, args, geometry.global_period)
    if plan is not None:
        # the launch itself, untraced (outputs written, fast paths on), then one block per
        # class traced; the representatives write again only what the launch wrote (tensors
        # they would read back or update atomically are copies)
        from pypto.backend.cost_model.classes import lane_shifts, tensors_to_copy

        data = [id(d) for d in map(_tensor_data, args) if d is not None]
        copy = tensors_to_copy(executable.func) if len(set(data)) == len(data) else None
        side = scratch_args(args, copy)  # (a tensor passed twice: copies of all)
        runner = executable if launch is None else launch()
        # a kernel that copies to or from HBM runs its launch with the copy recorder: every
        # block's copies are in the footprints (the lanes' come from the representatives)
        watch = copies if has_global_copies(executable.op_table) else None
        runner.run(grid, block, args, instrument=watch)
        executable.run(grid, block, side, instrument=trace, blocks=[rep for rep, _ in plan])
        # the lanes' footprint follows from the plan (addresses depend on the ids and the
        # integer arguments only) and the representatives' intervals: kept with the plan
        spans = trace.lane_spans()
        key = ("cost.lane-footprints", grid, block, geometry.global_period,
               tuple(int(a) if isinstance(a, bool | int | np.integer) else None for a in args),
               tuple((op, *(a.tobytes() for a in parts)) for op, parts in sorted(spans.items())))
        runs = cached(executable.func, key, lambda: lane_runs(
            spans, trace.table, plan,
            lane_shifts(executable, grid, block, args, geometry.global_period)))
        for tensor, (lo, hi) in runs.items():
            footprints.add(tensor, lo, hi)
        # classes the plan kept apart (e.g. by an access's alignment) that ran alike: one
        merged: dict[tuple[Any, ...], list[int]] = {}
        for rep, members in plan:
            merged.setdefault(tuple(trace.block_events(rep)), []).extend(members)
        classes = sorted(((sorted(members), list(events)) for events, members in merged.items()),
                         key=lambda c: c[0][0])
    else:
        instrument: Instrument = Chain(trace, copies, *instruments)
        try:
            executable.run(grid, block, args, instrument=instrument, blocks=blocks)
        except KernelError:
            if not partial:
                raise
        classes = trace.block_classes()
        lane_footprints(trace.lane_spans(), trace.table, None, None, footprints)
    return build_profile(executable.name, grid, block, params, trace.table, classes, sizes,
                         footprints.bytes(geometry.sector_bytes) if blocks is None else None)
