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
atomic_add = _kernel_only("atomic_add")
alloc_local = _kernel_only("alloc_local")
async_load = _kernel_only("async_load")
async_store = _kernel_only("async_store")
wait = _kernel_only("wait")
wait_all = _kernel_only("wait_all")
fill = _kernel_only("fill")
mma = _kernel_only("mma")
pipeline = _kernel_only("pipeline")
printf = _kernel_only("printf")
exp = _kernel_only("exp")
log = _kernel_only("log")
sqrt = _kernel_only("sqrt")
rsqrt = _kernel_only("rsqrt")
tanh = _kernel_only("tanh")
select = _kernel_only("select")
cast = _kernel_only("cast")
reduce = _kernel_only("reduce")


class constexpr:  # noqa: N801 - a marker used as an annotation, named like Triton's
    """Annotation forcing a kernel parameter to be a compile-time constant.

    `def k(a, n: pto.constexpr)`: every distinct launch value of `n` compiles (and caches) its
    own variant, in which `n` is a Python constant (usable as a size, folded into the IR).
    """

    def __init__(self) -> None:
        raise TypeError("pto.constexpr is an annotation: write `n: pto.constexpr` on a kernel "
                        "parameter")

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
    atomic_add: "atomic_add",
    alloc_local: "alloc_local",
    async_load: "async_load",
    async_store: "async_store",
    wait: "wait",
    wait_all: "wait_all",
    fill: "fill",
    mma: "mma",
    pipeline: "pipeline",
    printf: "printf",
    exp: "exp",
    log: "log",
    sqrt: "sqrt",
    rsqrt: "rsqrt",
    tanh: "tanh",
    select: "select",
    cast: "cast",
    reduce: "reduce",
}

__all__ = [fn.__name__ for fn in BUILTINS] + ["constexpr"]
