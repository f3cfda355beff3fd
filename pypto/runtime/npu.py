"""`profile_on_npu`: measurement on real hardware, which this product cannot do.

The article's first pitfall is trusting simulated latencies as if they were measured. pypto has no
NPU device backend, so `profile_on_npu` always raises `DeviceUnavailableError` — it never returns
modelled numbers dressed up as measurements. The message says how to get the modelled numbers
instead, with the call spelled out for the user's kernel.
"""

from __future__ import annotations

from typing import Any, NoReturn

from pypto.errors import DeviceUnavailableError


def profile_on_npu(kernel: Any, *, args: Any, grid: Any = None, block: Any = None) -> NoReturn:
    """Profile `kernel` on a real NPU. Always raises: no NPU backend is available.

    Raises `DeviceUnavailableError` naming the modelled alternative,
    `pto.profile(kernel, grid=..., block=..., args=..., model="fused")`.
    """
    name = getattr(kernel, "name", None) or getattr(kernel, "__name__", None) or "kernel"
    grid_text = repr(grid) if grid is not None else "..."
    block_text = repr(block) if block is not None else "..."
    raise DeviceUnavailableError(
        f"profile_on_npu({name}): no NPU backend is available — pypto runs kernels on the CPU "
        f"interpreter and times them with a cost model, and it never reports modelled cycles as "
        f"measurements. For modelled numbers (the firmware view, with load/mma fusion) use "
        f"pto.profile({name}, grid={grid_text}, block={block_text}, args=..., model=\"fused\")."
    )
