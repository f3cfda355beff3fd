"""Per-lane arrays that depend only on the shape of a lane vector, shared across vectors.

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
