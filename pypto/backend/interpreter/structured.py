"""Helpers of the structured lane accesses (the ramp and rows kinds, strategies/): the
comparison table and a masked copy that stays fast under masks computed from data.

"""

from __future__ import annotations

from typing import Any

import numpy as np


Mask = Any  # None | False | np.ndarray[bool] (see lanes.py)

COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
           "==": np.equal, "!=": np.not_equal}


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def masked_copy(dst: np.ndarray, value: Any, where: np.ndarray) -> None:
    """`np.copyto(dst, value, casting="unsafe", where=where)`, bit for bit. NumPy's masked copy
    branches on every element, which a mask computed from data (`if b < a`, about half the
    lanes at random) makes several times slower than a predictable one; such a mask (many
    changes between neighbours) selects bit operations instead: `dst ^= (dst ^ value) & m`
    with m all ones where the mask holds."""
    u = _UINT.get(dst.dtype.itemsize)
    if u is None or where.size < 4096 or where.shape != dst.shape or \
            np.count_nonzero(where.reshape(-1)[1:] != where.reshape(-1)[:-1]) * 16 < where.size:
        np.copyto(dst, value, casting="unsafe", where=where)
        return
    new = np.asarray(value)
    if new.dtype != dst.dtype:
        new = new.astype(dst.dtype)  # the unsafe cast copyto makes
    ones = where.view(np.uint8).astype(u)
    np.negative(ones, out=ones)
    bits = dst.view(u)
    diff = np.bitwise_xor(bits, np.broadcast_to(new, dst.shape).view(u))
    diff &= ones
    bits ^= diff
