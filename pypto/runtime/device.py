"""The modelled device: a target description plus HBM accounting.

pypto has no physical NPU; device memory lives in host NumPy arrays. What makes it *device*
memory is the accounting here: every allocation is charged against the target's `hbm_bytes`, so
a program that would not fit on the modelled chip fails with `DeviceOutOfMemoryError` on the CPU
too, instead of silently using host RAM. The capacity is a target parameter (machine facts come from target
files, docs/compiler.md#targets).
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import TYPE_CHECKING

from pypto.backend.targets import Target, resolve_target
from pypto.errors import DeviceOutOfMemoryError

if TYPE_CHECKING:
    from pypto.runtime.stream import Stream


def format_bytes(nbytes: int) -> str:
    """`1536` -> `'1.5 KiB (1536 bytes)'`: human scale first, exact count for grepping."""
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    if unit == "bytes":
        return f"{nbytes} bytes"
    return f"{value:.1f} {unit} ({nbytes} bytes)"


class Device:
    """One modelled NPU: its `Target`, its HBM usage and its default stream.

    Most programs only use `default_device()`. Creating a `Device` from another target (for
    instance one with a small `hbm_bytes`) gives an independent memory budget; tensors and streams
    remember the device they belong to.
    """

    def __init__(self, target: Target | str | None = None) -> None:
        self.target: Target = resolve_target(target)
        self._used = 0
        # Re-entrant: a tensor finalizer (release) can run from a GC pass on this very thread.
        self._lock = threading.RLock()
        self._default_stream: Stream | None = None
        _DEVICES.add(self)

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def capacity_bytes(self) -> int:
        return self.target.hbm_bytes

    @property
    def used_bytes(self) -> int:
        """Bytes held by live (not freed, not garbage-collected) tensors of this device."""
        return self._used

    @property
    def free_bytes(self) -> int:
        return self.capacity_bytes - self._used

    @property
    def default_stream(self) -> Stream:
        """The stream used when `launch` / `memcpy_h2d` get `stream=None` (created on first use)."""
        if self._default_stream is None:
            from pypto.runtime.stream import Stream

            self._default_stream = Stream(device=self, name="default")
        return self._default_stream

    def reserve(self, nbytes: int) -> None:
        """Charge `nbytes` against HBM or raise `DeviceOutOfMemoryError`.

        Before failing, run the garbage collector once: tensors that are only unreachable through
        a reference cycle still hold their bytes until the cycle collector runs, and an OOM caused
        by that would be spurious.
        """
        if self._try_reserve(nbytes):
            return
        gc.collect()
        if self._try_reserve(nbytes):
            return
        raise DeviceOutOfMemoryError(
            f"out of device memory on '{self.name}': requested {format_bytes(nbytes)}, "
            f"{format_bytes(self._used)} in use, capacity {format_bytes(self.capacity_bytes)} "
            f"(target parameter hbm_bytes). Free tensors you no longer need (t.free() or "
            f"`with pto.Tensor(...)`); tensors dropped with `del` while launches still use "
            f"them are released once those launches run (pto.sync())."
        )

    def _try_reserve(self, nbytes: int) -> bool:
        with self._lock:
            if self._used + nbytes > self.capacity_bytes:
                return False
            self._used += nbytes
            return True

    def release(self, nbytes: int) -> None:
        with self._lock:
            self._used -= nbytes

    def __repr__(self) -> str:
        return (f"<pto.Device '{self.name}': {format_bytes(self._used)} used of "
                f"{format_bytes(self.capacity_bytes)}>")


_DEFAULT_DEVICE: Device | None = None
_DEFAULT_LOCK = threading.Lock()
_DEVICES: weakref.WeakSet[Device] = weakref.WeakSet()


def after_fork_in_child() -> None:
    """Fresh locks in a forked child: a lock another thread of the parent held stays held."""
    global _DEFAULT_LOCK
    _DEFAULT_LOCK = threading.Lock()
    for device in list(_DEVICES):
        device._lock = threading.RLock()


def default_device() -> Device:
    """The device of the default target (`pypto.backend.targets.default_target()`)."""
    global _DEFAULT_DEVICE
    with _DEFAULT_LOCK:
        if _DEFAULT_DEVICE is None:
            _DEFAULT_DEVICE = Device()
        return _DEFAULT_DEVICE
