"""The cost of a candidate schedule, for `pto-double-buffer` (docs/passes.md#choosing-by-the-cost-model).

The double-buffer pass builds its candidate schedules (which loads to prefetch, how many slots)
as trial copies of the module; `cost_schedule` says how many cycles one costs. It asks the cost
model the way `pto.profile` and `pypto-opt --emit=cost` do — the passes that follow
`pto-double-buffer` in the default pipeline (`pto-allocate-l1`) and, under `model="fused"`, the
lowering the model costs (`model_lowering`), then one traced run costed by `run_and_cost` — so
whatever the model learns (its facts, latencies, HBM rules) decides the schedule too.

What it runs: **one block** (grid 1 x 1 x 1, block ids 0) of the launch `pto.compile` recorded
in the module (`pypto.ir.LAUNCH_ATTR`: the block, each scalar argument's value and each tensor's
element count, bound to zero-filled tensors), so the trip counts are the launch's own. One
block is the steady state of one core: the blocks of a launch run the same schedule, and what
they share (the cores of a wave, HBM) does not depend on which loads a block prefetches first.
A module without a recorded launch, or a kernel that fails on it, cannot be costed
(`ScheduleCostError`): the pass then keeps its fusion-aware default and says why.

Costs are kept per loop shape (the pass's `shape`: the module's text before the loop's
rewrite, which holds the recorded launch, the loop's position and the schedule), kernel, model,
target and block (`CostCache`, one per coster): a second compile of the same kernel costs
nothing again, and builds no trial either. The module is printed once per loop, not once per
candidate.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import AnyFloat, IntegerType, ModuleOp
from xdsl.passes import ModulePass

from pypto import dtypes
from pypto.backend.cost_model.params import ModelParams
from pypto.backend.cost_model.run import is_npu_level, model_lowering, run_and_cost
from pypto.backend.cost_model.static_trace import static_profile
from pypto.backend.interpreter import Executable
from pypto.backend.targets import resolve_target
from pypto.diagnostics import capture_diagnostics
from pypto.dialects import pto
from pypto.errors import PtoError
from pypto.ir import make_context, recorded_launch
from pypto.passes import parse_pipeline
from pypto.passes.double_buffer import ScheduleCostError


class _ZeroTensor:
    """A zero-filled stand-in for a device tensor (what the executor binds to a pointer)."""

    def __init__(self, data: np.ndarray):
        self.data = data
        self.freed = False


def launch_arguments(kernel: func.FuncOp, values: dict[str, str]) -> list[Any]:
    """The recorded launch's arguments for `kernel`: zero tensors of the recorded element
    counts, the recorded scalars."""
    args: list[Any] = []
    for i, arg in enumerate(kernel.body.block.args):
        name = arg.name_hint or f"arg{i}"
        given = values.get(name)
        if given is None:
            raise ScheduleCostError(f"the recorded launch has no value for '{name}'")
        t = arg.type
        if isinstance(t, pto.PtrType):
            args.append(_ZeroTensor(np.zeros(int(given), dtypes.np_dtype_of(t.element_type))))
        elif isinstance(t, IntegerType):
            args.append(int(given))
        elif isinstance(t, AnyFloat):
            args.append(float(given))
        else:
            raise ScheduleCostError(f"parameter '{name}' has type {t}")
    return args


class CostCache:
    """Cycles by (loop shape, kernel, model, target, block): the last `size` costed."""

    def __init__(self, size: int = 64):
        self.size = size
        self._cycles: OrderedDict[tuple[Any, ...], int] = OrderedDict()

    def get(self, key: tuple[Any, ...]) -> int | None:
        if key in self._cycles:
            self._cycles.move_to_end(key)
            return self._cycles[key]
        return None

    def put(self, key: tuple[Any, ...], cycles: int) -> None:
        self._cycles[key] = cycles
        while len(self._cycles) > self.size:
            self._cycles.popitem(last=False)


@functools.lru_cache(maxsize=32)
def _trial_passes(text: str, block: tuple[int, ...]) -> tuple[ModulePass, ...]:
    """The passes a trial runs, parsed once per target, model and block (parsing a pipeline
    costs about as much as running these passes on the matmul; passes are frozen)."""
    return tuple(dataclasses.replace(p, block_dims=block)
                 if getattr(p, "block_dims", None) == () else p for p in parse_pipeline(text))


class ScheduleCoster:
    """`pto-double-buffer`'s coster (`pypto.passes.double_buffer.ScheduleCoster`), with its
    cache. `pto.compile` and `pypto-opt` install one per compilation."""

    def __init__(self, cache: CostCache | None = None):
        self.cache = cache if cache is not None else CostCache()
        self.costed = 0
        """How many candidates were run (not found in the cache): what tests count."""
        self.static = True
        """Cost a candidate from its IR when `static_profile` can (no traced executable);
        False: always the traced run (what the tests compare the static walk with)."""
        self.walked = 0
        """How many of the `costed` candidates the static walk costed."""

    def __call__(self, trial: Callable[[], ModuleOp], shape: Hashable, kernel: str, model: str,
                 target: str, block: Sequence[int]) -> int:
        key = (shape, kernel, model, target, tuple(block))
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        module = trial()
        try:
            recorded = recorded_launch(module)
            if recorded is None:
                raise ScheduleCostError("the module records no launch (pto.compile records one)")
            dims = tuple(block) or recorded[0]
            block3 = tuple(dims) + (1,) * (3 - len(dims))
            if not any(isinstance(op, func.FuncOp) and op.sym_name.data == kernel
                       for op in module.ops):
                raise ScheduleCostError(f"no kernel named '{kernel}'")
            cycles = self._cost(module, kernel, model, target, block3, recorded[1])
        finally:
            module.erase()
        self.cache.put(key, cycles)
        return cycles

    def _cost(self, module: ModuleOp, kernel: str, model: str, target_path: str,
              block: tuple[int, ...], values: dict[str, str]) -> int:
        self.costed += 1
        target = resolve_target(target_path or None)
        params = ModelParams.of(target, model)
        text = f"pto-allocate-l1{{l1-bytes={target.l1_bytes} align={target.l1_align_bytes}}}"
        if model == "fused" and not is_npu_level(module.walk()):
            text += "," + model_lowering(target)
        passes = _trial_passes(text, block)
        try:
            # the trial's own remarks (its L1 peak, its fusions) are not the user's
            with capture_diagnostics(lambda diag: None), \
                    contextlib.redirect_stdout(io.StringIO()):
                ctx = make_context()
                for trial_pass in passes:  # a trial: the pipeline's own verification is not needed
                    trial_pass.apply(ctx, module)
                func_op = next(op for op in module.ops if isinstance(op, func.FuncOp)
                               and op.sym_name.data == kernel)
                if self.static:
                    walked = _walk(func_op, block, values, params)
                    if walked is not None:
                        self.walked += 1
                        return walked
                args = launch_arguments(func_op, values)
                # (without fast paths: the same trace, and planning them costs more than
                # they save in one traced block)
                executable = Executable(func_op, target=target, race_check=False,
                                        fast_paths=False)
                prof = run_and_cost(executable, (1, 1, 1), (block[0], block[1], block[2]),
                                    args, params, by_class=False)
        except PtoError as error:
            raise ScheduleCostError(f"one block of the recorded launch fails: "
                                    f"{str(error).splitlines()[0]}") from None
        return int(prof.total_cycles)


def _walk(kernel: func.FuncOp, block: tuple[int, ...], values: dict[str, str],
          params: ModelParams) -> int | None:
    """The cycles of one block by the static walk (static_trace.py), None when it declines:
    the recorded scalars as integers (a float declines), each tensor's recorded element count."""
    args: list[Any] = []
    sizes: list[int | None] = []
    for i, arg in enumerate(kernel.body.block.args):
        given = values.get(arg.name_hint or f"arg{i}")
        if given is None:
            return None
        if isinstance(arg.type, pto.PtrType):
            args.append(None)
            sizes.append(int(given))
        elif isinstance(arg.type, IntegerType):
            args.append(int(given))
            sizes.append(None)
        else:
            return None
    prof = static_profile(kernel, (block[0], block[1], block[2]), args, sizes, params)
    return None if prof is None else int(prof.total_cycles)


__all__ = ["CostCache", "ScheduleCoster", "launch_arguments"]
