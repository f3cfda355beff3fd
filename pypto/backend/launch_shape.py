"""`check_launch_shape`: the one lane/size validation of every entry point that runs a kernel.

`pto.launch`, `pto.profile`, `dbg.debug_kernel`, `pypto-opt --emit=cost|timeline|trace`,
`pypto-opt --validate` / `compile(validate=True)` and the autotuner all call it before running
anything, and `Executable.run` (the one executor they all end in) calls it for every launch shape
it has not run before: an entry point added later cannot skip it. It turns a grid / block into
CUDA's dim3 triples and raises `LaunchError` (at once, before any lane is built) when

- a dimension is not a positive int, or there are not 1 to 3 of them;
- the block has more lanes than the target allows (`max_block_lanes`);
- the lane ids do not fit in int32 (`get_global_id`, `get_grid_dim`, the linear lane number):
  a dimension, the global ids along an axis, or all lanes together reach 2^31.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from pypto.errors import LaunchError

Dim3 = tuple[int, int, int]

MAX_LANES = 2**31
"""Lane ids (`get_global_id`, the linear lane number) are int32 in the language: a launch whose
global ids along one axis, or whose lanes in all, exceed 2^31 cannot be numbered."""


def check_launch_shape(grid: Any, block: Any, *, kernel: str = "?", target: Any = None,
                       what: str | None = None) -> tuple[Dim3, Dim3]:
    """`(grid3, block3)` of a launch of `kernel` (its name, for the message), or `LaunchError`.

    `target`: a `Target` whose `max_block_lanes` bounds the block (None: not checked here).
    `what`: how the message names the launch (default "launch of kernel 'NAME'").
    """
    where = what if what is not None else f"launch of kernel '{kernel}'"
    grid3 = normalize_dims(grid, "grid", kernel, where=where)
    block3 = normalize_dims(block, "block", kernel, where=where)
    check_lane_count(grid3, block3, kernel, where=where)
    if target is not None:
        check_block_size(block3, target, kernel, where=where)
    return grid3, block3


def normalize_dims(value: Any, what: str, kernel_name: str = "?", *,
                   where: str | None = None) -> Dim3:
    """`n` -> `(n, 1, 1)`; a tuple/list of 1-3 positive ints -> padded 3-tuple; else `LaunchError`."""
    if type(value) is int and value > 0:
        return (value, 1, 1)  # the fastest common case
    items = value if isinstance(value, tuple | list) else (value,)
    if 1 <= len(items) <= 3 and all(type(i) is int and i > 0 for i in items):
        return (*items, 1, 1)[:3]  # the fast common case
    place = f"{where if where is not None else f'launch of kernel {kernel_name!r}'}: {what}"
    if not 1 <= len(items) <= 3:
        raise LaunchError(f"{place}={value!r} must have 1 to 3 dimensions, got {len(items)}")
    dims: list[int] = []
    for axis, item in zip("xyz", items):
        if isinstance(item, bool) or type(item).__name__ == "bool_" or \
                not isinstance(item, numbers.Integral):
            raise LaunchError(f"{place}={value!r}: the {axis} dimension must be an int, "
                              f"got {type(item).__name__} {item!r}")
        if int(item) <= 0:
            raise LaunchError(f"{place}={value!r}: the {axis} dimension must be positive, "
                              f"got {int(item)}")
        dims.append(int(item))
    dims += [1] * (3 - len(dims))
    return (dims[0], dims[1], dims[2])


def check_lane_count(grid: Dim3, block: Dim3, name: str = "?", *,
                     where: str | None = None) -> None:
    """`LaunchError` when the launch has more lanes than int32 ids can number."""
    if grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2] < MAX_LANES:
        return  # every dimension and every per-axis product is below 2^31 too
    place = where if where is not None else f"launch of kernel '{name}'"
    for axis, g, b in zip("xyz", grid, block):
        if g >= MAX_LANES or b >= MAX_LANES:
            raise LaunchError(f"{place}: grid={grid} block={block}: the {axis} "
                              f"dimension must be below 2^31 (get_grid_dim / get_block_dim are "
                              f"int32)")
        if g * b > MAX_LANES:
            raise LaunchError(f"{place}: grid={grid} block={block} gives "
                              f"{g * b} global ids along {axis}, more than the 2^31 an int32 "
                              f"get_global_id can number; launch fewer blocks")
    total = math.prod(grid) * math.prod(block)
    if total > MAX_LANES:
        raise LaunchError(f"{place}: grid={grid} block={block} has {total} "
                          f"lanes in all, more than 2^31 (lane ids are int32); launch fewer "
                          f"blocks, in several launches if need be")


def check_block_size(block: Dim3, target: Any, name: str = "?", *,
                     where: str | None = None) -> None:
    """`LaunchError` when `block` has more lanes than `target.max_block_lanes`."""
    lanes = block[0] * block[1] * block[2]
    if lanes > target.max_block_lanes:
        place = where if where is not None else f"launch of kernel '{name}'"
        raise LaunchError(f"{place}: block={block} has {lanes} lanes, more than "
                          f"the {target.max_block_lanes} lanes per block that target "
                          f"'{target.name}' allows (max_block_lanes); use more blocks instead")


__all__ = ["MAX_LANES", "Dim3", "check_block_size", "check_lane_count", "check_launch_shape",
           "normalize_dims"]
