"""Per-lane arrays shared between lane vectors of the same shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_PATTERN_CACHE: dict[tuple[Any, ...], np.ndarray] = {}


def lane_pattern(key: tuple[Any, ...], make: Callable[[], np.ndarray]) -> np.ndarray:
    """A per-lane array that depends only on the vector's shape relative to its blocks (local
    ids, the position of each lane's block, warp numbers), not on which blocks it holds: made
    once, read-only, and shared by every lane vector and launch of that shape instead of being
    rebuilt (and its memory touched afresh) for every batch of blocks. `key` must name
    everything the array depends on."""
    r = _PATTERN_CACHE.get(key)
    if r is None:
        if len(_PATTERN_CACHE) > 32:
            _PATTERN_CACHE.clear()
        r = make()
        r.flags.writeable = False
        _PATTERN_CACHE[key] = r
    return r
