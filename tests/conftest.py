"""Shared fixtures: a helper that runs a kernel on host arrays and returns the outputs."""

from __future__ import annotations

import os
import shutil
import tempfile
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
    config.addinivalue_line("markers", "fresh_native_cache: the test compiles native code into "
                            "a disk cache of its own (it checks what the cache holds)")
    config.addinivalue_line("markers", "shared_native_cache: the test uses monkeypatch but only "
                            "patches what the native cache key includes (the switches of "
                            "jit.SWITCHES, mma_calls) or what runs after compiling: it "
                            "shares the run's cache")
    if not os.environ.get(SUITE_CACHE_ENV):  # the first process (xdist's controller): its
        path = tempfile.mkdtemp(prefix="pypto-native-tests-")  # workers inherit the variable
        os.environ[SUITE_CACHE_ENV] = path
        config.stash[_CREATED_CACHE] = path
    os.environ[CACHE_ENV] = os.environ[SUITE_CACHE_ENV]


def pytest_unconfigure(config: Any) -> None:
    path = config.stash.get(_CREATED_CACHE, None)
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
        del os.environ[SUITE_CACHE_ENV]


# The native backend's disk cache (docs/native.md#the-cache) during a test run: one directory
# for the whole run, shared by every xdist worker, so a kernel specialisation that several
# tests (or both workers) launch natively is compiled once and loaded from disk after; it is a
# temporary directory removed at the end (no test reads or writes the user's cache, and a run
# never depends on an earlier one). `PYPTO_TEST_NATIVE_CACHE=<dir>` keeps one across runs
# instead (object code is keyed by the kernel's IR and the backend's source: an edit recompiles).
# A test marked `fresh_native_cache`, or one that uses `monkeypatch` (it may patch how code is
# compiled without changing the cache key, e.g. jit._optimised), compiles into a
# directory of its own, as every native test did before the run-wide cache, unless marked
# `shared_native_cache` (its patches are part of the key: test_copy_loops.py recompiles each
# kernel per copy_loops.ENABLED setting, a disk load from the second time).
CACHE_ENV = "PYPTO_NATIVE_CACHE"
SUITE_CACHE_ENV = "PYPTO_TEST_NATIVE_CACHE"
_CREATED_CACHE = pytest.StashKey[str]()


@pytest.fixture(autouse=True)
def _native_cache(request: pytest.FixtureRequest) -> Iterator[None]:
    marked = request.node.get_closest_marker
    if marked("fresh_native_cache") is None and (
            "monkeypatch" not in request.fixturenames or marked("shared_native_cache")):
        yield
        return
    previous = os.environ.get(CACHE_ENV)
    fresh = tempfile.mkdtemp(prefix="pypto-native-test-")
    os.environ[CACHE_ENV] = fresh
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = previous
        shutil.rmtree(fresh, ignore_errors=True)


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
