"""Zoo helpers: run a kernel compiled with interpreter options (warp schedule, uninitialised-L1
checks), so that the L1 kernels can be re-run under other warp orders than lockstep; and the
`run` fixture of the zoo, which runs every kernel at both IR levels (pto, and npu after
`convert-pto-to-npu`) and requires bit-identical outputs and printed text (docs/cost-model.md#the-firmware-level-npu-dialect: both levels
are interpreted with identical results)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import pypto as pto
from pypto.compiler import DEFAULT_PIPELINE
from tests.conftest import run_kernel

NPU_PIPELINE = f"{DEFAULT_PIPELINE},convert-pto-to-npu"
"""The default pipeline, then the lowering to the firmware level."""


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-for-bit equality (NaN payloads and signed zeros included)."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def run_both_levels(kernel: Any, grid: Any, block: Any, args: Sequence[Any]) -> list[np.ndarray]:
    """Run at the npu level (printing into a buffer), then at the pto level (printing as usual);
    the outputs and the printed lines must be identical. Returns the pto level's outputs."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        npu_outs = run_kernel(kernel, grid, block, args, pipeline=NPU_PIPELINE)
    pto_outs = run_kernel(kernel, grid, block, args)
    for index, (p, n) in enumerate(zip(pto_outs, npu_outs)):
        assert same_bits(p, n), f"argument {index} differs between the pto and npu levels"
    return pto_outs, printed.getvalue()


@pytest.fixture
def run(capfd) -> Callable[..., list[np.ndarray]]:
    """The zoo's runner: pto and npu levels, bit-identical (see the module docstring)."""
    def runner(kernel: Any, grid: Any, block: Any, args: Sequence[Any]) -> list[np.ndarray]:
        before = capfd.readouterr()
        outs, npu_text = run_both_levels(kernel, grid, block, args)
        after = capfd.readouterr()
        assert after.out == npu_text, "pto.printf output differs between the pto and npu levels"
        # hand the captured text back to the test, as if only one level had run
        print(before.out + after.out, end="")
        return outs
    return runner


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
