"""Shared fixtures: a helper that runs a kernel on host arrays and returns the outputs."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import pypto as pto

# The default backend is "tiered" (docs/native.md#choosing-a-backend): the interpreter until a
# specialisation's launches have taken as long as switching to native code costs, a wall-time
# rule. The suite pins its budget to `never` so that which backend a test ran on never depends on
# the machine's load (and no test writes the user's native cache); the tiered policy itself still
# runs every default launch, and tests/backend/native/test_tiering.py tests its switch with the
# budget and the clock pinned. (A pytest hook, not an import-time setting: benchmarks import
# the zoo's kernels from tests/ and must see the real default.)


def pytest_configure(config: Any) -> None:
    os.environ.setdefault("PYPTO_NATIVE_AFTER", "never")


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


def sync_or_fail(when: str) -> None:
    """`pto.sync()`; a failure of the work it ran fails the current test with its message.

    Asynchronous work that a test launched and never synchronised used to be drained here
    with every error thrown away: a launch that failed disappeared. The error (its kernel,
    source line and where it was enqueued: the exception's notes) is the test's now."""
    try:
        pto.sync()
    except Exception as exc:  # noqa: BLE001 - re-raised as the test's failure, never dropped
        message = "".join(traceback.format_exception_only(exc)).rstrip()
        pytest.fail(f"{when} failed:\n{message}", pytrace=False)


@pytest.fixture(autouse=True)
def _drain_streams() -> Iterator[None]:
    """No test inherits queued work from another, and work a test launched without
    synchronising it runs at its teardown: if it fails, the test errors with the message
    (pytest reports "ERROR at teardown of <test>")."""
    sync_or_fail("work queued before this test started (by a fixture or an earlier test)")
    yield
    sync_or_fail("work this test launched and never synchronised")
