"""What the parts of a planned access (views.py, views_forms.py, views_store.py) share: views
made straight over a buffer, race patterns' lane order and memoised summaries, and the marker
types of per-block offsets and of forms that are not addresses."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from pypto.backend.interpreter.caches import LIMITS, RunCache
from pypto.backend.interpreter.shadow import pattern_summary

Mask = Any  # None | False | np.ndarray[bool] (see lanes.py)


def _view(data: np.ndarray, base: int, shape: Any, strides: Any, writeable: bool) -> np.ndarray:
    """`as_strided(data[base:], shape, strides in elements, writeable)`, made directly as an
    ndarray over `data`'s buffer (a third of as_strided's cost; a view is made for every
    planned access); NumPy checks it lies inside the buffer, else (and for buffers it cannot
    take) as_strided."""
    isz = data.itemsize
    bstrides = [st * isz for st in strides]
    try:
        v = np.ndarray(shape, dtype=data.dtype, buffer=data, offset=base * isz, strides=bstrides)
    except (TypeError, ValueError, BufferError):
        return as_strided(data[base:], shape=shape, strides=bstrides, writeable=writeable)
    if not writeable:
        v.flags.writeable = False
    elif not v.flags.writeable:
        return as_strided(data[base:], shape=shape, strides=bstrides, writeable=writeable)
    return v


def _order(local: np.ndarray, elems: Any) -> Any:
    """For a pattern whose lanes touch distinct elements (`elems`, sorted: a slice or an
    array): the lane touching each element in turn (None: lane order is element order, as
    for any increasing pattern); False when two lanes touch one element."""
    if (elems.stop - elems.start if isinstance(elems, slice) else elems.size) != local.size:
        return False
    if local.size < 2 or bool((local[1:] > local[:-1]).all()):
        return None
    return np.argsort(local, kind="stable")


def _summary(cache: RunCache, local: np.ndarray, lanes: np.ndarray,
             ws: int) -> tuple[np.ndarray, ...]:
    """races.pattern_summary, memoised by content (a kernel has few distinct patterns; every
    vector and launch of the same shape reuses them)."""
    key = (local.tobytes(), lanes.tobytes(), ws)
    value = cache.summaries.get(key)
    if value is None:
        value = cache.remember_value(cache.summaries, key, pattern_summary(local, lanes, ws),
                                     LIMITS["summaries"])
    return value


class PerBlock(np.ndarray):
    """One value per block of a batch-mode vector (a block-level operand's offset,
    `views_forms.BoxForms.block_offset`), where a lane vector would hold it once per lane."""


class _NoBuffer:
    """Stands for the buffer of a form that is not an address (form_cmp): no block copies."""
    stride = 0


_NO_BUFFER: Any = _NoBuffer()
