"""Zoo helper: run a kernel compiled with interpreter options (warp schedule, uninitialised-L1
checks), so that the L1 kernels can be re-run under other warp orders than lockstep."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import pypto as pto
from tests.conftest import run_kernel


def run_compiled(kernel: Any, grid: Any, block: Any, args: Sequence[Any],
                 **options: Any) -> list[np.ndarray]:
    """Like the `run` fixture, but through `pto.compile(kernel, ..., **options)`."""
    return run_kernel(kernel, grid, block, args, **options)


SCHEDULES = ["reverse", "random:7"]


@pytest.fixture(params=SCHEDULES)
def run_scheduled(request) -> Callable[..., list[np.ndarray]]:
    """Run with warps interleaved in another order, and uninitialised L1 reads as errors."""
    def runner(kernel: Any, grid: Any, block: Any, args: Sequence[Any]) -> list[np.ndarray]:
        return run_compiled(kernel, grid, block, args, schedule=request.param,
                            check_uninitialized=True)
    return runner


@pytest.fixture
def run_racy() -> Callable[..., list[np.ndarray]]:
    """For kernels with a barrier bug: the static check (`pto.compile`'s default pipeline,
    pto-verify-barriers) must reject it with a BarrierError; then it runs with the static check
    skipped (`pipeline=""`) so the interpreter's dynamic detector can report it too."""
    def runner(kernel: Any, grid: Any, block: Any, args: Sequence[Any]) -> list[np.ndarray]:
        device = tuple(pto.alloc_tensor(a.nbytes, dtype=a.dtype) if isinstance(a, np.ndarray)
                       else a for a in args)
        with pytest.raises(pto.BarrierError):
            pto.compile(kernel, args=device, block=block)
        return run_compiled(kernel, grid, block, args, pipeline="")
    return runner
