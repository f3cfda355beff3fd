"""Per-lane arrays that depend only on the shape of a lane vector, shared across vectors, and
the two facts about a box of lanes (a shape and its strides) that views.py and edges.py ask.

Batch and grid mode split a launch into lane vectors of whole blocks; every vector of one shape
needs the same lane -> block-local id, lane -> block index and lane -> warp arrays. Computing them
once per shape (instead of once per vector) removes several passes over every lane per vector.
"""

from __future__ import annotations

from typing import Any

_GEOMETRY: dict[tuple[Any, ...], Any] = {}


def geometry(key: tuple[Any, ...], make: Any) -> Any:
    """A per-lane array that depends only on the shape of a lane vector (its length, block
    shape, position within a block, warp size), not on which blocks it holds: computed once
    and shared, read-only, by every lane vector (and launch) of that shape."""
    value = _GEOMETRY.get(key)
    if value is None:
        if len(_GEOMETRY) > 64:
            _GEOMETRY.clear()
        value = make()
        for array in value if isinstance(value, tuple) else (value,):
            array.flags.writeable = False
        _GEOMETRY[key] = value
    return value


def box_size(shape: Any) -> int:
    """How many lanes a box of this shape holds."""
    n = 1
    for d in shape:
        n *= d
    return n


def box_injective(shape: Any, strides: Any) -> bool:
    """Does the box touch every element at most once? (Sorted by stride, each axis must step
    past everything the smaller ones span: a sufficient mixed-radix test.)"""
    axes = sorted((abs(s), n) for n, s in zip(shape, strides) if n > 1)
    span = 0
    for s, n in axes:
        if s <= span:
            return False
        span += s * (n - 1)
    return True
