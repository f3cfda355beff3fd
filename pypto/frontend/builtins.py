"""Kernel-side functions of the PTO language (`pto.load`, `pto.get_global_id`, ...).

These Python functions exist so that `pto.load` is a real name a user can import, document and
look up; they are never executed. Inside a `@pto.kernel` the frontend recognises them *by identity*
(so `from pypto import load` works as well as `pto.load`) and emits the corresponding `pto` op.
Called from ordinary Python they raise a `PtoError` that says so.

`BUILTINS` maps each function to the name of the frontend method that lowers it; it is the
frontend's single table of the language's builtins.
"""

from __future__ import annotations

from typing import Any

from pypto.errors import PtoError


def _kernel_only(name: str):
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise PtoError(
            f"pto.{name}() is a kernel-side instruction: it can only be used inside a "
            f"@pto.kernel function, which pto.launch() / pto.compile() lower and run")

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"Kernel-side `pto.{name}` (see docs/isa.md). Only valid inside @pto.kernel."
    return fn


get_global_id = _kernel_only("get_global_id")
get_local_id = _kernel_only("get_local_id")
get_block_id = _kernel_only("get_block_id")
get_block_dim = _kernel_only("get_block_dim")
get_grid_dim = _kernel_only("get_grid_dim")
get_warp_id = _kernel_only("get_warp_id")
get_lane_id = _kernel_only("get_lane_id")
load = _kernel_only("load")
store = _kernel_only("store")
fma = _kernel_only("fma")
barrier = _kernel_only("barrier")
barrier_block = _kernel_only("barrier_block")

BUILTINS: dict[Any, str] = {
    get_global_id: "get_global_id",
    get_local_id: "get_local_id",
    get_block_id: "get_block_id",
    get_block_dim: "get_block_dim",
    get_grid_dim: "get_grid_dim",
    get_warp_id: "get_warp_id",
    get_lane_id: "get_lane_id",
    load: "load",
    store: "store",
    fma: "fma",
    barrier: "barrier",
    barrier_block: "barrier_block",
}

__all__ = [fn.__name__ for fn in BUILTINS]
