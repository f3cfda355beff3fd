"""The host runtime (docs/runtime.md): device memory, copies, streams, asynchronous launch, lifetime.

Execution model in one sentence: asynchronous like CUDA; the CPU executes the queued work when
you synchronise (`sync`, `memcpy_d2h`, `Tensor.free` / end of `with`, `Stream.synchronize`).
See docs/runtime.md.
"""

from pypto.runtime.copy import memcpy_d2h, memcpy_h2d, tensor
from pypto.runtime.device import Device, default_device
from pypto.backend.launch_shape import LaunchShape
from pypto.runtime.launcher import launch
from pypto.runtime.memory import Tensor, alloc_tensor, empty, poison_value, zeros
from pypto.runtime.npu import profile_on_npu
from pypto.runtime.stream import LAUNCH_BLOCKING_ENV, Stream, default_stream, sync

__all__ = [
    "Tensor", "alloc_tensor", "tensor", "empty", "zeros", "memcpy_h2d", "memcpy_d2h", "launch", "sync", "Stream",
    "default_stream", "Device", "default_device", "profile_on_npu", "poison_value",
    "LAUNCH_BLOCKING_ENV", "LaunchShape",
]
