"""`LaunchShape`: a launch's grid and block, validated and normalised once, where it enters.

Every entry point that runs a kernel makes one with `LaunchShape.of` where the user's grid /
block come in — `pto.launch` and `kernel[grid, block](...)` (`pypto.compiler.launch`),
`pto.profile`, `dbg.debug_kernel`, `pto.autotune` (per config), `pypto-opt --emit=...
--grid/--block`, `pypto-opt --validate` / `compile(validate=True)` — and hands the value on;
nothing below re-checks it. `pto.compile`, which takes only a block, makes the block's shape
the same way (`LaunchShape.of(1, block, ...)`). `LaunchShape.of` turns a grid / block into
CUDA's dim3 triples and raises `LaunchError` (at once, before any lane is built), in one
wording — "<where>: grid=<value>: the <axis> dimension must be ..." — when

- a dimension is not a positive int, or there are not 1 to 3 of them;
- the block has more lanes than the target allows (`max_block_lanes`; `fits` checks it when the
  target is only known later, as in the runtime, which learns it from the tensors' device);
- the lane ids do not fit in int32 (`get_global_id`, `get_grid_dim`, the linear lane number):
  a dimension, the global ids along an axis, or all lanes together reach 2^31.

docs/runtime.md#launch-shape documents it.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from pypto.errors import LaunchError

Dim3 = tuple[int, int, int]

MAX_LANES = 2**31
"""Lane ids (`get_global_id`, the linear lane number) are int32 in the language: a launch whose
global ids along one axis, or whose lanes in all, exceed 2^31 cannot be numbered."""


@dataclass(frozen=True, slots=True)
class LaunchShape:
    """A checked launch shape: `grid` blocks of `block` lanes, both dim3 triples."""

    grid: Dim3
    block: Dim3
    block_lanes: int
    """Lanes per block (`block`'s product)."""
    blocks: int
    """Blocks in the grid (`grid`'s product)."""
    lanes: int
    """Lanes in the whole launch (below 2^31)."""

    @staticmethod
    def of(grid: Any, block: Any, *, kernel: str = "?", target: Any = None,
           what: str | None = None) -> LaunchShape:
        """The shape of a launch of `kernel` (its name, for the message), or `LaunchError`.

        `target`: a `Target` whose `max_block_lanes` bounds the block (None: not checked
        here; `fits` checks it later). `what`: how the message names the launch (default
        "launch of kernel 'NAME'").
        """
        memo = target is None and (type(grid) is int or _exact(grid)) and \
            (type(block) is int or _exact(block))
        if memo:
            found = _SHAPES.get((grid, block))  # a shape given as exact ints: memoised
            if found is not None:
                return found
        where = what if what is not None else f"launch of kernel '{kernel}'"
        grid3 = _dims(grid, "grid", where)
        block3 = _dims(block, "block", where)
        _check_lane_count(grid3, block3, where)
        block_lanes = block3[0] * block3[1] * block3[2]
        blocks = grid3[0] * grid3[1] * grid3[2]
        shape = LaunchShape(grid3, block3, block_lanes, blocks, blocks * block_lanes)
        if target is not None:
            shape.fits(target, kernel=kernel, what=what)
        elif memo:
            if len(_SHAPES) >= 256:
                _SHAPES.clear()
            _SHAPES[(grid, block)] = shape
        return shape

    def fits(self, target: Any, *, kernel: str = "?", what: str | None = None) -> LaunchShape:
        """This shape, or `LaunchError` when its block has more lanes than
        `target.max_block_lanes`."""
        if self.block_lanes > target.max_block_lanes:
            place = what if what is not None else f"launch of kernel '{kernel}'"
            raise LaunchError(f"{place}: block={self.block} has {self.block_lanes} lanes, more "
                              f"than the {target.max_block_lanes} lanes per block that target "
                              f"'{target.name}' allows (max_block_lanes); use more blocks "
                              f"instead")
        return self


_SHAPES: dict[tuple[Any, Any], LaunchShape] = {}
"""Shapes given as plain ints or tuples of them (`_exact`: `4.0` hashes like `4` but must
still be rejected, so only exact ints are looked up)."""


def _exact(value: Any) -> bool:
    """Is `value` an int or a tuple of ints, by exact type?"""
    return type(value) is int or type(value) is tuple and all(type(i) is int for i in value)


def _dims(value: Any, what: str, where: str) -> Dim3:
    """`n` -> `(n, 1, 1)`; a tuple/list of 1-3 positive ints -> padded 3-tuple; else `LaunchError`."""
    if type(value) is int and value > 0:
        return (value, 1, 1)  # the fastest common case
    items = value if isinstance(value, tuple | list) else (value,)
    if 1 <= len(items) <= 3 and all(type(i) is int and i > 0 for i in items):
        return (*items, 1, 1)[:3]  # the fast common case
    place = f"{where}: {what}"
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


def _check_lane_count(grid: Dim3, block: Dim3, where: str) -> None:
    """`LaunchError` when the launch has more lanes than int32 ids can number."""
    if grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2] < MAX_LANES:
        return  # every dimension and every per-axis product is below 2^31 too
    place = where
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


__all__ = ["MAX_LANES", "Dim3", "LaunchShape"]
