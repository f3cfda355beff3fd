"""Shared fixtures: a helper that runs a kernel on host arrays and returns the outputs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import pypto as pto


Uploaded = list[tuple[pto.Tensor, np.ndarray]]


def to_device(args: Sequence[Any]) -> tuple[tuple[Any, ...], Uploaded]:
    """Kernel arguments with every host array copied to a new device tensor."""
    device_args: list[Any] = []
    tensors: Uploaded = []
    for a in args:
        if isinstance(a, np.ndarray):
            t = pto.alloc_tensor(a.nbytes, dtype=a.dtype)
            pto.memcpy_h2d(t, a)
            device_args.append(t)
            tensors.append((t, a))
        else:
            device_args.append(a)
    return tuple(device_args), tensors


def from_device(tensors: Uploaded) -> list[np.ndarray]:
    """Copy the tensors back (waiting for the kernels), shaped like their host arrays; free."""
    outs = []
    try:
        for t, a in tensors:
            out = np.empty_like(a)
            pto.memcpy_d2h(out, t)
            outs.append(out)
    finally:
        for t, _ in tensors:
            t.free()
    return outs


def run_kernel(kernel: Any, grid: Any, block: Any, args: Sequence[Any],
               **options: Any) -> list[np.ndarray]:
    """Launch `kernel` with host arrays copied to device; return every array argument after.
    `options` (schedule=, pipeline=, ...) compile it with `pto.compile` first."""
    device_args, tensors = to_device(args)
    if options:
        kernel = pto.compile(kernel, args=device_args, block=block, **options)
    pto.launch(kernel, grid=grid, block=block, args=device_args)
    return from_device(tensors)


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
