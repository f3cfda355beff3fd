"""`profile_on_npu`: measurement on real hardware, through a device backend.

The article's first pitfall is trusting simulated latencies as if they were measured. Measuring
needs a device backend — something that can run a kernel on an NPU and read its counters — and
pypto registers none (it runs everything on the CPU). Backends register here, by name, as
factories returning an object with `available() -> bool` and `profile(kernel, *, grid, block,
args) -> profile`. With none available, `profile_on_npu` raises `DeviceUnavailableError` naming
the modelled alternative, `pto.profile(..., model="fused")`: it never returns modelled numbers
dressed up as measurements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, Protocol

from pypto.errors import DeviceUnavailableError, public_api


class DeviceBackend(Protocol):
    """What a device backend provides (see the module docstring)."""

    def available(self) -> bool: ...

    def profile(self, kernel: Any, *, grid: Any, block: Any, args: Any) -> Any: ...


BACKENDS: dict[str, Callable[[], DeviceBackend]] = {}
"""Registered device backends by name (none ships with pypto)."""


def register_backend(name: str, factory: Callable[[], DeviceBackend]) -> None:
    """Make a device backend available to `profile_on_npu`."""
    BACKENDS[name] = factory


def available_backend() -> tuple[str, DeviceBackend] | None:
    # a copy (dict.copy is atomic): a factory runs Python code, during which another thread
    # may register a backend; iterating BACKENDS itself would then raise RuntimeError
    for name, factory in BACKENDS.copy().items():
        backend = factory()
        if backend.available():
            return name, backend
    return None


@public_api
def profile_on_npu(kernel: Any, *, args: Any, grid: Any = None, block: Any = None) -> Any:
    """Profile `kernel` on a real NPU through a registered device backend.

    Raises `DeviceUnavailableError` when none is available, naming the modelled alternative
    `pto.profile(kernel, grid=..., block=..., args=..., model="fused")`.
    """
    found = available_backend()
    if found is None:
        _unavailable(kernel, grid, block)
    _, backend = found
    return backend.profile(kernel, grid=grid, block=block, args=args)


def _unavailable(kernel: Any, grid: Any, block: Any) -> NoReturn:
    name = getattr(kernel, "name", None) or getattr(kernel, "__name__", None) or "kernel"
    grid_text = repr(grid) if grid is not None else "..."
    block_text = repr(block) if block is not None else "..."
    registered = ", ".join(BACKENDS) or "none is registered"
    raise DeviceUnavailableError(
        f"profile_on_npu({name}): no NPU backend is available ({registered}) — pypto "
        f"runs kernels on the CPU interpreter and times them with a cost model, and it never "
        f"reports modelled cycles as measurements. For modelled numbers (the firmware view, "
        f"with load/mma fusion) use pto.profile({name}, grid={grid_text}, block={block_text}, "
        f"args=..., model=\"fused\").")
