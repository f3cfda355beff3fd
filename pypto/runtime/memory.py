"""Device tensors: HBM allocations backed by NumPy, with poison, accounting and safe lifetime.

A `Tensor` is the host's handle on a block of device memory (a typed pointer once passed to a
kernel). Three rules make it safe to use from Python:

- Fresh memory is *poisoned* (NaN for floats, a recognisable bit pattern for ints), as NKI's
  simulator does, so a kernel that reads memory nobody wrote produces obviously-wrong output
  instead of plausible zeros.
- Every byte is charged to the device's HBM budget (`Device.reserve`), so capacity errors show up
  on the CPU exactly as they would on the chip.
- Lifetime: `free()` first waits for queued work that uses the tensor; a freed tensor raises
  `TensorFreedError` on every use; queued launches hold strong references, so garbage collection
  can only reclaim a tensor that no pending work needs.
"""

from __future__ import annotations

import math
import operator
import weakref
from typing import Any

import numpy as np

from pypto.dtypes import DType, as_dtype, float32
from pypto.errors import DeviceOutOfMemoryError, TensorFreedError, UsageError, public_api
from pypto.runtime.device import Device, default_device, format_bytes
from pypto.runtime import stream as _stream

# Poison of uninitialised device memory. The int patterns are the 0x7FBADBAD "bad bad" marker
# (positive, so it also stands out when printed as a decimal), repeated to fill wider types.
POISON_INT32 = 0x7FBADBAD
POISON_INT64 = 0x7FBADBAD7FBADBAD


def poison_value(dtype: Any) -> Any:
    """The value fresh device memory of `dtype` holds: NaN, the 0x7FBADBAD pattern, or True.

    Shared with the interpreter so that HBM and L1 are poisoned the same way.
    """
    dt = as_dtype(dtype)
    if dt.is_float:
        return dt.np_dtype.type(np.nan)
    if dt.is_int:
        return dt.np_dtype.type(POISON_INT64 if dt.bits == 64 else POISON_INT32)
    return np.bool_(True)  # a bool has no spare bit pattern; True is the less likely default


def poisoned(count: int, dtype: Any) -> np.ndarray:
    """A new 1-D array of `count` elements of `dtype`, every element poisoned."""
    dt = as_dtype(dtype)
    return np.full(count, poison_value(dt), dtype=dt.np_dtype)


class Tensor:
    """A block of device memory (HBM) of `nbytes` bytes holding elements of `dtype`.

    `Tensor(nbytes, dtype)` and `alloc_tensor(nbytes, dtype)` are the same. Used as a context
    manager, the end of the `with` block waits for the kernels that use the tensor, then frees it.

    Attributes: `dtype` (a pypto `DType`), `nbytes`, `size` (elements), `device`, `freed`, and
    `data` — the backing 1-D NumPy array, for the interpreter (host code must go through
    `memcpy_h2d` / `memcpy_d2h`, which respect stream order).
    """

    def __init__(self, nbytes: int, dtype: Any = float32, *, device: Device | None = None,
                 shape: tuple[int, ...] | None = None) -> None:
        dt = as_dtype(dtype)
        count = _check_nbytes(nbytes, dt)
        self._shape: tuple[int, ...] = (count,) if shape is None else _check_shape(shape, count)
        self.dtype: DType = dt
        self.nbytes: int = count * dt.itemsize
        self.size: int = count
        self.device: Device = device if device is not None else default_device()
        self.device.reserve(self.nbytes)
        try:
            self._data: np.ndarray | None = poisoned(count, dt)
        except MemoryError as exc:
            self.device.release(self.nbytes)
            raise DeviceOutOfMemoryError(
                f"the host could not back a device allocation of {format_bytes(self.nbytes)} "
                f"(pypto keeps device memory in host RAM)") from exc
        # Releases the accounting when the tensor is freed explicitly *or* garbage-collected.
        # The callback must not reference `self`, or the tensor could never be collected.
        self._release = weakref.finalize(self, self.device.release, self.nbytes)
        # what the interpreter derived from `data` (its global Buffer per kernel parameter
        # name), kept for the next launches; emptied when the tensor is freed
        self.views: dict[str, Any] = {}
        self._base: Tensor | None = None  # a reshaped view: the tensor that owns the memory
        self._reshaped: weakref.WeakSet[Tensor] = weakref.WeakSet()  # views of this memory

    # -- state ---------------------------------------------------------------------------------

    @property
    def freed(self) -> bool:
        return self._data is None

    @property
    def data(self) -> np.ndarray:
        """The backing 1-D array (runtime-internal: the interpreter reads and writes it)."""
        if self._data is None:
            raise TensorFreedError(f"{self!r} was used after it was freed; a freed device tensor "
                                   f"cannot be read, written or launched with")
        return self._data

    @property
    def shape(self) -> tuple[int, ...]:
        """The host shape: the array's for `pto.tensor(array)`, `pto.empty(shape)`,
        `pto.zeros(shape)`; `(size,)` for a tensor allocated in bytes. Device memory itself is
        flat (a kernel sees a pointer); the shape is what `numpy()` returns."""
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def storage(self) -> Tensor:
        """The tensor that owns this memory: `self`, or for a view made by `reshape` the
        tensor it was made from. Streams order work and launches detect aliasing by it."""
        return self._base if self._base is not None else self

    @property
    def base(self) -> Tensor | None:
        """As NumPy's `.base`: the tensor a `reshape` view shares its memory with, else None."""
        return self._base

    @public_api
    def reshape(self, *shape: Any) -> Tensor:
        """A view of the same device memory with another shape, as NumPy's `reshape` of a
        contiguous array: no copy, writes through either (by a kernel, `memcpy_h2d`) are seen
        by both, and work using either is ordered as work on one tensor. `shape` is ints or
        one tuple; one dimension may be -1 (inferred). A size that differs is a `UsageError`.

        The view owns no memory: freeing it releases nothing (it only becomes unusable); the
        memory goes when the tensor it was made from is freed, which frees its views too. A
        view keeps that tensor alive, as NumPy's `.base` does (docs/runtime.md#tensors)."""
        self.check_alive("the tensor of .reshape()")
        dims = _reshape_dims(shape, self.size, self._shape)
        view = Tensor.__new__(Tensor)
        owner = self.storage
        view._shape = dims
        view.dtype = self.dtype
        view.nbytes = self.nbytes
        view.size = self.size
        view.device = self.device
        view._data = owner.data
        view._release = _owns_nothing
        view.views = {}
        view._base = owner
        view._reshaped = weakref.WeakSet()
        owner._reshaped.add(view)
        return view

    @public_api
    def numpy(self) -> np.ndarray:
        """Wait for the queued work that uses this tensor (on every stream), then return its
        contents as a new host array of `self.shape` and `self.dtype`. A kernel error of that
        work is raised here, as by `memcpy_d2h`."""
        self.check_alive("the tensor of .numpy()")
        with _stream.queue_lock():  # no other thread can queue a write between wait and copy
            _stream.wait_for_tensor(self, surfaced_at="Tensor.numpy()")
            return self.data.reshape(self._shape).copy()

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def check_alive(self, what: str) -> None:
        """Raise `TensorFreedError` naming `what` (e.g. "launch argument 2") if freed."""
        if self._data is None:
            raise TensorFreedError(f"{what} is {self!r}, which was already freed; allocate a new "
                                   f"tensor or free this one later")

    # -- lifetime ------------------------------------------------------------------------------

    @public_api
    def free(self) -> None:
        """Wait for queued work that uses this tensor, then release its memory. Idempotent.

        A synchronising call: a kernel error from that work is raised here, after the memory
        has been released (the failed work no longer needs it).
        """
        # Hold the queue lock throughout, so no other thread can enqueue a use of this tensor
        # between the wait and the release.
        with _stream.queue_lock():
            if self._data is None:
                return
            try:
                _stream.wait_for_tensor(self, surfaced_at="Tensor.free()")
            except Exception:
                self._drop()
                raise
            self._drop()

    def _drop(self) -> None:
        self._data = None
        self.views.clear()
        self._release()
        for view in list(self._reshaped):  # the memory is gone: its views are freed too
            view._data = None
            view.views.clear()

    @public_api
    def __enter__(self) -> Tensor:
        self.check_alive("the tensor of this `with` block")
        return self

    @public_api
    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.free()

    def __repr__(self) -> str:
        # the host shape, as NumPy shows it: pto.tensor of a (64, 50) array is float32[64, 50]
        what = f"{self.dtype!r}[{', '.join(map(str, self._shape))}] ({self.nbytes} bytes)"
        if self._base is not None:
            what += f", a view of {self._base.dtype!r}[{', '.join(map(str, self._base.shape))}]"
        where = f"on '{self.device.name}'"
        if self._data is None:
            return f"<pto.Tensor {what} {where}, freed>"
        pending = _stream.pending_uses(self)
        busy = f", used by {pending} pending operation(s)" if pending else ""
        return f"<pto.Tensor {what} {where}{busy}>"


@public_api
def alloc_tensor(nbytes: int, dtype: Any = float32, *, device: Device | None = None) -> Tensor:
    """Allocate `nbytes` of device memory for elements of `dtype` (poisoned, see `Tensor`)."""
    return Tensor(nbytes, dtype, device=device)


@public_api
def empty(shape: int | tuple[int, ...], dtype: Any = float32, *,
          device: Device | None = None) -> Tensor:
    """A device tensor of `shape` and `dtype`, uninitialised: its contents are poisoned (NaN for
    floats, 0x7FBADBAD for ints) until a kernel or a copy writes them."""
    dt = as_dtype(dtype)
    dims = _shape_tuple(shape, "pto.empty")
    return Tensor(_count(dims, "pto.empty") * dt.itemsize, dt, device=device, shape=dims)


@public_api
def zeros(shape: int | tuple[int, ...], dtype: Any = float32, *,
          device: Device | None = None) -> Tensor:
    """A device tensor of `shape` and `dtype` filled with zeros (False for `bool_`)."""
    result = empty(shape, dtype, device=device)
    result.data[...] = 0  # fresh: no queued work can use it yet, so no stream order to keep
    return result


def _owns_nothing() -> None:
    """The release of a view: its memory belongs to the tensor it was made from."""


def _reshape_dims(shape: tuple[Any, ...], size: int, current: tuple[int, ...]
                  ) -> tuple[int, ...]:
    """`Tensor.reshape`'s arguments as a shape of `size` elements (NumPy's rules: ints or one
    tuple, at most one -1, the same element count)."""
    items = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape
    shown = tuple(items)
    if not items or any(isinstance(d, bool) or not isinstance(d, int | np.integer)
                        for d in items):
        raise UsageError(f"Tensor.reshape: the shape {shown!r} must be ints or one tuple of "
                         f"ints, as NumPy's (e.g. t.reshape(64, 50) or t.reshape((64, -1)))")
    dims = [int(d) for d in items]
    unknown = [k for k, d in enumerate(dims) if d == -1]
    if len(unknown) > 1 or any(d < -1 or d == 0 for d in dims):
        raise UsageError(f"Tensor.reshape: the shape {shown!r} may have one -1 (inferred) and "
                         f"positive dimensions otherwise")
    known = 1
    for d in dims:
        if d != -1:
            known *= d
    if unknown:
        if size % known:
            raise UsageError(f"Tensor.reshape: cannot reshape a tensor of {size} elements "
                             f"(shape {current}) into shape {shown}: {size} is not a multiple "
                             f"of {known}")
        dims[unknown[0]] = size // known
    elif known != size:
        raise UsageError(f"Tensor.reshape: cannot reshape a tensor of {size} elements (shape "
                         f"{current}) into shape {shown} ({known} elements)")
    return tuple(dims)


def _shape_tuple(shape: Any, api: str) -> tuple[int, ...]:
    items = shape if isinstance(shape, tuple | list) else (shape,)
    dims = []
    for item in items:
        if isinstance(item, bool | np.bool_):
            raise UsageError(f"{api}: shape {shape!r} must be an int or a tuple of ints")
        try:
            dims.append(operator.index(item))
        except TypeError:
            raise UsageError(f"{api}: shape {shape!r} must be an int or a tuple of ints, got "
                             f"{type(item).__name__} {item!r}") from None
    return tuple(dims)


def _count(dims: tuple[int, ...], api: str) -> int:
    if any(d <= 0 for d in dims):
        raise UsageError(f"{api}: every dimension of shape {dims} must be positive (a device "
                         f"tensor holds at least one element)")
    return math.prod(dims)


def _check_shape(shape: Any, count: int) -> tuple[int, ...]:
    dims = _shape_tuple(shape, "Tensor")
    if any(d < 0 for d in dims) or math.prod(dims) != count:
        raise UsageError(f"Tensor: shape {dims} does not hold {count} elements")
    return dims


def _check_nbytes(nbytes: Any, dt: DType) -> int:
    if isinstance(nbytes, bool):
        raise UsageError(f"nbytes must be an int, got {nbytes!r}")
    try:
        value = operator.index(nbytes)
    except TypeError:
        raise UsageError(f"nbytes must be an int (a byte count, e.g. n * 4 for n float32 "
                        f"elements), got {type(nbytes).__name__} {nbytes!r}") from None
    if value <= 0:
        raise UsageError(f"nbytes must be positive, got {value}")
    if value % dt.itemsize:
        raise UsageError(f"nbytes={value} is not a multiple of the {dt!r} element size "
                         f"({dt.itemsize} bytes): a device tensor holds whole elements")
    return value // dt.itemsize
