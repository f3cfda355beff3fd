"""NumPy arrays where a kernel takes device tensors: one helper for every entry point.

A launch (`kernel[grid, block](a, b, o, n)`), `pto.compile`, `pto.profile`, the debugger and
`pto.autotune` all accept NumPy arrays as Numba CUDA does: each array is copied into a temporary
device tensor of its dtype and shape (the same array passed twice becomes the same tensor, so
the kernel sees the aliasing the caller wrote), and, where the entry point runs the kernel,
every writeable array gets the tensor's contents back afterwards (docs/runtime.md#numpy-arrays).
Keeping this in one place means every entry point names a bad array the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pypto import dtypes
from pypto.errors import LaunchError
from pypto.runtime.device import Device, default_device
from pypto.runtime.memory import Tensor


_ARRAY_DTYPES = frozenset(d.np_dtype for d in (dtypes.int32, dtypes.int64, dtypes.float16,
                                                 dtypes.bfloat16, dtypes.float32,
                                                 dtypes.float64, dtypes.bool_))
"""The NumPy dtypes a temporary tensor can hold (as the launch's scalar arguments)."""


def has_host_arrays(args: Sequence[Any]) -> bool:
    """Is any argument a NumPy array of at least one dimension (a 0-d array is a scalar)?"""
    return any(isinstance(a, np.ndarray) and a.ndim > 0 for a in args)


@dataclass
class StagedArgs:
    """Arguments with their NumPy arrays replaced by device tensors (`args`); `finish()` copies
    the tensors back into the writeable arrays (when `write_back`) and frees them. Use it as a
    context manager: the tensors are freed even when the kernel fails (nothing is then copied
    back, so a failed run leaves the caller's arrays as they were)."""

    args: tuple[Any, ...]
    staged: list[tuple[np.ndarray, Tensor]] = field(default_factory=list)
    write_back: bool = True
    stream: Any = None
    """The stream the copies run on (None: the device's default stream)."""

    def copy_back(self) -> None:
        """Copy each temporary tensor into its array, when it is writeable (the debugger does
        this each time its session finishes, and keeps the tensors for a restart)."""
        from pypto.runtime.copy import memcpy_d2h

        if self.write_back:
            for array, temp in self.staged:
                if array.flags.writeable:
                    memcpy_d2h(array, temp, stream=self.stream)

    def finish(self, *, copy_back: bool = True) -> None:
        """Copy back (if asked and allowed) and free the temporary tensors; idempotent."""
        try:
            if copy_back:
                self.copy_back()
        finally:
            staged, self.staged = self.staged, []
            for _, temp in staged:
                if not temp.freed:
                    temp.free()

    def __enter__(self) -> StagedArgs:
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        self.finish(copy_back=kind is None)


def stage_host_arrays(args: Sequence[Any], *, entry: str, kernel: Any = None,
                      device: Device | None = None, write_back: bool = True,
                      stream: Any = None) -> StagedArgs:
    """`args` with each NumPy array (ndim >= 1) copied into a temporary device tensor on
    `device` (default: the default device), in `stream` order (default: the device's default
    stream). `entry` names the API in errors (`pto.profile`, `launch of kernel 'k'`);
    `kernel` gives the parameter names. Arrays of a dtype no tensor holds, and empty arrays,
    are errors that say how to fix them."""
    from pypto.runtime.copy import memcpy_h2d

    target = device if device is not None else default_device()
    out = list(args)
    result = StagedArgs(tuple(out), write_back=write_back, stream=stream)
    by_id: dict[int, Tensor] = {}
    try:
        for position, arg in enumerate(args):
            if not (isinstance(arg, np.ndarray) and arg.ndim > 0):
                continue
            known = by_id.get(id(arg))
            if known is not None:
                out[position] = known
                continue
            dt = array_dtype(arg, entry=entry, kernel=kernel, position=position)
            temp = Tensor(arg.size * dt.itemsize, dt, device=target, shape=arg.shape)
            memcpy_h2d(temp, arg, stream=stream)
            result.staged.append((arg, temp))
            by_id[id(arg)] = temp
            out[position] = temp
    except BaseException:
        result.finish(copy_back=False)
        raise
    result.args = tuple(out)
    return result


def array_dtype(arg: np.ndarray, *, entry: str, kernel: Any, position: int) -> dtypes.DType:
    """The pypto dtype of NumPy array `arg` passed as argument `position`, or a `LaunchError`
    (an unsupported dtype or an empty array) saying how to fix it."""
    what = describe_position(kernel, position)
    if arg.dtype not in _ARRAY_DTYPES:
        raise LaunchError(f"{entry}: {what} is a NumPy {arg.dtype} array; device tensors hold "
                          f"{', '.join(sorted(d.name for d in _ARRAY_DTYPES))}: convert it, "
                          f"e.g. a.astype(np.float32)")
    if arg.size == 0:
        raise LaunchError(f"{entry}: {what} is an empty NumPy array (shape {arg.shape}); a "
                          f"kernel needs at least one element")
    return dtypes.as_dtype(arg.dtype)


def describe_position(kernel: Any, position: int) -> str:
    """`argument 1 (parameter 'b')`, or `argument 1` when the parameter names are unknown."""
    params = getattr(kernel, "params", None)
    if isinstance(params, list | tuple) and position < len(params):
        return f"argument {position} (parameter '{params[position]}')"
    return f"argument {position}"
