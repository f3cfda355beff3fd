"""Host <-> device copies (`memcpy_h2d`, `memcpy_d2h`), argument order `dst, src` as cudaMemcpy.

- `memcpy_h2d` is stream-ordered: it snapshots the host array at the call and enqueues the copy.
  A kernel launched earlier therefore still sees the old device contents, and the caller may
  reuse or modify the host array as soon as the call returns (as with a pageable cudaMemcpy).
- `memcpy_d2h` is synchronising: it waits for queued work first, surfacing pending kernel errors,
  then fills the host array in place.

Mismatches are rejected before anything is queued, naming both sides, with a `pto.UsageError`
(also a `TypeError` and a `ValueError`): never a silent reinterpretation or truncation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto.dtypes import as_dtype
from pypto.errors import UsageError, public_api
from pypto.runtime import stream as _stream
from pypto.runtime.device import Device, format_bytes
from pypto.runtime.memory import Tensor
from pypto.runtime.stream import Stream, caller_site


@public_api
def tensor(array: Any, dtype: Any = None, *, device: Device | None = None) -> Tensor:
    """A device tensor holding a copy of `array` (a NumPy array or anything `np.asarray`
    accepts), with its shape and dtype (`dtype=` converts first, as `np.asarray(array, dtype)`).

    The copy is stream-ordered like `memcpy_h2d`: the array is snapshotted now and may be
    modified as soon as this returns.
    """
    if isinstance(array, Tensor):
        raise UsageError("pto.tensor: the argument is already a device tensor; use it directly "
                         "(or .numpy() to get a host copy)")
    host = np.asarray(array, dtype=None if dtype is None else as_dtype(dtype).np_dtype)
    dt = as_dtype(host.dtype)
    if host.size == 0:
        raise UsageError(f"pto.tensor: the array is empty (shape {host.shape}); a device tensor "
                         f"holds at least one element")
    result = Tensor(host.size * dt.itemsize, dt, device=device, shape=host.shape)
    memcpy_h2d(result, host)
    return result


@public_api
def memcpy_h2d(dst: Tensor, src: np.ndarray, *, stream: Stream | None = None) -> None:
    """Copy host array `src` (any shape, read in C order) into device tensor `dst`.

    Asynchronous: the copy runs in `stream` order (default: the device's default stream).
    """
    _check_device_tensor("memcpy_h2d", "dst", dst, other=src)
    _check_host_array("memcpy_h2d", "src", src, other=dst)
    _check_match("memcpy_h2d", dst, src, device_side="dst", host_side="src")
    target_stream = _resolve_stream("memcpy_h2d", dst, stream)
    snapshot = np.array(src, copy=True, order="C").reshape(-1)

    def run() -> None:
        dst.data[...] = snapshot

    target_stream.enqueue(f"memcpy_h2d of {format_bytes(dst.nbytes)} into a {dst.dtype!r} tensor",
                          run, (dst,), caller_site(2), api="pto.memcpy_h2d()")


@public_api
def memcpy_d2h(dst: np.ndarray, src: Tensor, *, stream: Stream | None = None) -> None:
    """Copy device tensor `src` into the writeable host array `dst` (any shape, C order), in place.

    Synchronising: with `stream=None` it waits for every stream, like cudaMemcpy on the legacy
    default stream; with a stream, for that stream and for any other work that uses `src`.
    Errors of the drained work are raised here, and then nothing is copied.
    """
    _check_device_tensor("memcpy_d2h", "src", src, other=dst)
    _check_host_array("memcpy_d2h", "dst", dst, other=src)
    if not dst.flags.writeable:
        raise UsageError("memcpy_d2h: dst host array is read-only; pass a writeable array "
                         "(e.g. np.empty(n, dtype=np.float32))")
    _check_match("memcpy_d2h", src, dst, device_side="src", host_side="dst")
    if stream is not None:
        _resolve_stream("memcpy_d2h", src, stream)
    # Drain and copy under the queue lock: otherwise another thread's sync() could run a kernel
    # that writes `src` while it is being copied (a torn snapshot).
    with _stream.queue_lock():
        if stream is None:
            _stream.drain_all(surfaced_at="pto.memcpy_d2h()")
        else:
            stream.synchronize()
            _stream.wait_for_tensor(src, surfaced_at="pto.memcpy_d2h()")
        dst[...] = src.data.reshape(dst.shape)


def _check_device_tensor(api: str, side: str, value: Any, *, other: Any) -> None:
    if not isinstance(value, Tensor):
        hint = ""
        if isinstance(value, np.ndarray) and isinstance(other, Tensor):
            hint = f"; the argument order is {api}(dst, src), like cudaMemcpy"
        raise UsageError(f"{api}: {side} must be a device tensor (pto.alloc_tensor), "
                        f"got {type(value).__name__}{hint}")
    value.check_alive(f"{api}: {side}")


def _check_host_array(api: str, side: str, value: Any, *, other: Any) -> None:
    if not isinstance(value, np.ndarray):
        hint = ""
        if isinstance(value, Tensor):
            hint = f"; the argument order is {api}(dst, src), like cudaMemcpy"
        elif isinstance(value, (list, tuple)):
            hint = "; convert it with np.asarray(..., dtype=...) first"
        raise UsageError(f"{api}: {side} must be a NumPy array on the host, "
                        f"got {type(value).__name__}{hint}")


def _check_match(api: str, tensor: Tensor, array: np.ndarray, *, device_side: str,
                 host_side: str) -> None:
    if array.dtype != tensor.dtype.np_dtype:
        name = tensor.dtype.np_dtype.name
        spelled = f"np.{name}" if hasattr(np, name) else f"ml_dtypes.{name}"
        fix = (f"convert the host array with .astype({spelled})" if host_side == "src" else
               f"allocate the host array with dtype={spelled}")
        raise UsageError(f"{api}: dtype mismatch: {device_side} is a {tensor.dtype!r} device tensor "
                        f"but {host_side} is a {array.dtype} host array; {fix}")
    if array.size != tensor.size:
        raise UsageError(f"{api}: size mismatch: {device_side} device tensor holds {tensor.size} "
                         f"{tensor.dtype!r} elements ({tensor.nbytes} bytes) but {host_side} host "
                         f"array has {array.size} elements (shape {array.shape}, "
                         f"{array.nbytes} bytes)")


def _resolve_stream(api: str, tensor: Tensor, stream: Stream | None) -> Stream:
    if stream is None:
        return tensor.device.default_stream
    if not isinstance(stream, Stream):
        raise UsageError(f"{api}: stream must be a pto.Stream or None, got {type(stream).__name__}")
    if stream.device is not tensor.device:
        raise UsageError(f"{api}: the tensor lives on device '{tensor.device.name}' but the "
                         f"stream belongs to device '{stream.device.name}'")
    return stream
