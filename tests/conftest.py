"""Shared fixtures: a helper that runs a kernel on host arrays and returns the outputs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import pypto as pto


def run_kernel(kernel: Any, grid: Any, block: Any, args: Sequence[Any]) -> list[np.ndarray]:
    """Launch `kernel` with host arrays copied to device; return every array argument after."""
    device_args: list[Any] = []
    tensors: list[tuple[pto.Tensor, np.ndarray]] = []
    for a in args:
        if isinstance(a, np.ndarray):
            t = pto.alloc_tensor(a.nbytes, dtype=a.dtype)
            pto.memcpy_h2d(t, a)
            device_args.append(t)
            tensors.append((t, a))
        else:
            device_args.append(a)
    pto.launch(kernel, grid=grid, block=block, args=tuple(device_args))
    outs = []
    for t, a in tensors:
        out = np.empty_like(a)
        pto.memcpy_d2h(out, t)
        outs.append(out)
        t.free()
    return outs


@pytest.fixture
def run() -> Callable[..., list[np.ndarray]]:
    return run_kernel


@pytest.fixture(autouse=True)
def _drain_streams() -> Iterator[None]:
    """No test inherits queued work (or a pending error) from another."""
    try:
        pto.sync()
    except pto.PtoError:
        pass
    yield
    try:
        pto.sync()
    except pto.PtoError:
        pass
