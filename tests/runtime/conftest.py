"""Fixtures for the runtime tests: fake compiled kernels and isolation between tests.

The compiler and interpreter are built elsewhere; the runtime only relies on the compiled-kernel
protocol (`.name`, `.num_params`, `.execute(grid, block, args)`), so these tests drive it with
small fake kernels whose bodies compute with NumPy on the tensors' backing arrays.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from pypto.backend.targets import default_target
from pypto.errors import MemoryAccessError
from pypto.runtime import Device
from pypto.runtime.stream import LAUNCH_BLOCKING_ENV

Body = Callable[[tuple[int, int, int], tuple[int, int, int], tuple[Any, ...]], None]


class FakeCompiled:
    """A stand-in for a compiled kernel: records every execution in a shared log."""

    def __init__(self, name: str, num_params: int, body: Body | None, log: list[str],
                 params: list[str] | None = None) -> None:
        self.name = name
        self.num_params = num_params
        self.params = params
        self.body = body
        self.log = log
        self.calls: list[tuple[tuple[int, int, int], tuple[int, int, int], tuple[Any, ...]]] = []

    def execute(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                args: tuple[Any, ...]) -> None:
        self.calls.append((grid, block, args))
        self.log.append(self.name)
        if self.body is not None:
            self.body(grid, block, args)


class Fakes:
    """Factories of fake kernels sharing one execution log (`fakes.log`)."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def kernel(self, name: str, num_params: int, body: Body | None = None,
               params: list[str] | None = None) -> FakeCompiled:
        return FakeCompiled(name, num_params, body, self.log, params)

    def add(self, name: str = "add") -> FakeCompiled:
        """o = a + b."""
        def body(grid: Any, block: Any, args: tuple[Any, ...]) -> None:
            a, b, o = args
            o.data[:] = a.data + b.data
        return self.kernel(name, 3, body, ["a", "b", "o"])

    def copy(self, name: str = "copy") -> FakeCompiled:
        """dst = src."""
        def body(grid: Any, block: Any, args: tuple[Any, ...]) -> None:
            src, dst = args
            dst.data[:] = src.data
        return self.kernel(name, 2, body, ["src", "dst"])

    def scale(self, name: str = "scale") -> FakeCompiled:
        """x *= s, in place."""
        def body(grid: Any, block: Any, args: tuple[Any, ...]) -> None:
            x, s = args
            x.data[:] = x.data * x.data.dtype.type(s)
        return self.kernel(name, 2, body, ["x", "s"])

    def out_of_bounds(self, name: str = "oob", num_params: int = 1) -> FakeCompiled:
        """Raises the MemoryAccessError an interpreter would raise for an OOB store."""
        def body(grid: Any, block: Any, args: tuple[Any, ...]) -> None:
            raise MemoryAccessError("store out of bounds: address 4096 not in [0, 4096)",
                                    kernel=name, location="kern.py:7", block=(0, 0, 0),
                                    lane=(3, 0, 0), address=4096, bounds=(0, 4096))
        return self.kernel(name, num_params, body)

    def crashing(self, name: str = "crash", num_params: int = 1) -> FakeCompiled:
        """Raises a non-pypto exception, as an interpreter bug would."""
        def body(grid: Any, block: Any, args: tuple[Any, ...]) -> None:
            raise RuntimeError("interpreter bug")
        return self.kernel(name, num_params, body)


@pytest.fixture
def fakes() -> Fakes:
    return Fakes()


@pytest.fixture
def small_device() -> Device:
    """A device with 1 KiB of HBM and 64-lane blocks, for capacity tests with tiny numbers."""
    target = dataclasses.replace(default_target(), name="tiny", hbm_bytes=1024, max_block_lanes=64)
    return Device(target)


@pytest.fixture(autouse=True)
def _asynchronous_launches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see asynchronous launches. (Queued work is drained before and after every test
    by tests/conftest.py's `_drain_streams`, which fails the test whose unsynchronised launch
    failed instead of dropping the error.)"""
    monkeypatch.delenv(LAUNCH_BLOCKING_ENV, raising=False)
