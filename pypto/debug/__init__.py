"""`import pypto.debug as dbg`: the instruction-level debugger (docs/debugging.md).

    ctx = dbg.debug_kernel(vector_add, args=(d_a, d_b, d_o, n))
    ctx.step()                       # [Lanes 0-255] LOAD d_a[0..255] -> L1[0..255] (4 bytes each)
    ctx.inspect_l1(0, 16)            # the first 16 loaded values
    for entry in ctx.get_instruction_timeline():
        print(f"Cycle {entry.cycle}: Lane {entry.lane}: {entry.inst}")

A session compiles the kernel, launches the chosen block on the one executor with the step
instrument attached, and stops before PTO instructions on demand (session.py). The REPL is
`python -m pypto.debug script.py:kernel` (repl.py). See docs/debugging.md.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from pypto.debug.session import DEFAULT_BLOCK, MODELS, Breakpoint, DebugError, Pointer, Session
from pypto.debug.timeline import TimelineEntry
from pypto.debug.view import Lanes


def default_pipeline(model: str = "fused", target: Any = None,
                     block: tuple[int, int, int] | None = None) -> str:
    """The pipeline a session compiles with when `pipeline=None`: the IR level the cost model
    `model` costs (`pypto.profiling.model_pipeline`: the npu level with load/mma fusion for
    "fused", the pto level for "table"), for a launch of `block` lanes, so that the
    instructions you step are the ones `pto.profile` times."""
    from pypto.backend.targets import resolve_target
    from pypto.profiling import model_pipeline

    return model_pipeline(model, resolve_target(target))


def debug_kernel(kernel: Any, args: Sequence[Any], grid: Any = None, block: Any = None,
                 pipeline: str | None = None, model: str | None = None, *, block_id: int = 0,
                 warp: int | None = None, schedule: str | None = None, target: Any = None,
                 check_uninitialized: bool = False, fold: bool = True,
                 names: dict[int, str] | None = None, out: TextIO | None = None) -> Session:
    """Load `kernel` into the debugger, launched on `args` over `grid` blocks of `block` lanes
    (default: one block of 256 lanes, as in the article), paused before its first PTO
    instruction in block `block_id` (a linear id).

    `pipeline`: the passes to run first (default: `default_pipeline()`); `model`: the cost
    model of the timeline, which agrees cycle for cycle with `pto.profile(model=model,
    pipeline=pipeline)` because the session compiles the IR that profile costs: under
    `model="fused"` a pipeline that stays at the pto level is followed by the lowering to the
    npu level. `model=None` (default): "fused", except for a `pipeline` that stays at the pto
    level, which is stepped as given and timed with "table" (`pipeline="pto-verify-barriers"`
    debugs the pto level). `warp`: focus one warp (with `schedule="in_order"` etc. each warp runs
    as its own lane vector; without a schedule the block's warps run in lockstep and the warp
    narrows what is shown). `names`: argument position -> name in trace lines (default: the
    caller's variable names for the tensor arguments, else the kernel's parameter names).
    `fold=False` prints one trace line per lane. Output goes to `out` (default: sys.stdout).

    Only the chosen block runs: the output tensors hold that block's results when the session
    finishes.
    """
    from pypto.backend.launch_shape import LaunchShape
    from pypto.backend.targets import resolve_target
    from pypto.compiler import compile as pto_compile
    from pypto.runtime import sync

    name = getattr(kernel, "name", "?")
    shape = LaunchShape.of((1, 1, 1) if grid is None else grid,
                           DEFAULT_BLOCK if block is None else block, kernel=name,
                           target=resolve_target(target),
                           what=f"dbg.debug_kernel of kernel '{name}'")
    grid3, block3 = shape.grid, shape.block
    from pypto.profiling import lowers_to_npu, model_pipeline

    if model is None:
        model = "fused" if pipeline is None or lowers_to_npu(pipeline) else "table"
    if model not in MODELS:
        raise DebugError(f"unknown cost model {model!r}; use one of: {', '.join(MODELS)}")

    # the IR pto.profile(model=model, pipeline=pipeline) costs, so the timeline agrees with it
    text = model_pipeline(model, resolve_target(target), pipeline)
    args = tuple(args)
    from pypto.runtime.host_arrays import has_host_arrays, stage_host_arrays

    staged = None
    if has_host_arrays(args):  # NumPy arrays: device copies, copied back when the block ends
        if names is None:
            names = caller_names(args, sys._getframe(1))
        staged = stage_host_arrays(args, entry=f"dbg.debug_kernel of kernel '{name}'",
                                   kernel=kernel)
        args = staged.args
    compiled = pto_compile(kernel, args=args, block=block3, pipeline=text, target=target,
                           schedule=schedule, check_uninitialized=check_uninitialized)
    sync()  # the tensors' pending copies (memcpy_h2d is queued, like a launch)
    if names is None:
        names = caller_names(args, sys._getframe(1))
    return Session(compiled, args, grid3, block3, block_id=block_id, warp=warp, model=model,
                   names=names, fold=fold, out=out, host_arrays=staged)


def caller_names(args: Sequence[Any], frame: Any) -> dict[int, str]:
    """Position -> the caller's variable name of each tensor argument (`d_a`), when the caller
    holds it in a variable."""
    from pypto.runtime import Tensor

    out: dict[int, str] = {}
    scopes = [frame.f_locals, frame.f_globals] if frame is not None else []
    for i, arg in enumerate(args):
        if not isinstance(arg, Tensor | np.ndarray):
            continue
        for scope in scopes:
            name = next((k for k, v in scope.items() if v is arg and not k.startswith("_")),
                        None)
            if name is not None:
                out[i] = name
                break
    return out


__all__ = ["Breakpoint", "DebugError", "Lanes", "Pointer", "Session", "TimelineEntry",
           "caller_names", "debug_kernel", "default_pipeline"]
