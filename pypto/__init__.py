"""pypto: write PTO (NPU virtual ISA) kernels as Python functions.

`import pypto as pto`, decorate a function with `@pto.kernel`, then `pto.launch()` it on device
tensors (executed exactly on the CPU by the interpreter) or `pto.compile()` it to inspect the IR.
This module's exports are the public API; everything else may change.
"""

import importlib as _importlib
from typing import Any as _Any

from pypto.compiler import CompiledKernel, compile, launch, set_backend
from pypto.dialects.pto import WARP_SIZE
from pypto.dtypes import DType, bfloat16, bool_, float16, float32, int32, int64
from pypto.errors import (
    BarrierError,
    CompileError,
    DeadlockError,
    KernelInterruptedError,
    DeviceOutOfMemoryError,
    DeviceUnavailableError,
    KernelError,
    L1CapacityError,
    LaunchError,
    MemoryAccessError,
    PtoError,
    RaceError,
    TargetError,
    TensorFreedError,
    UsageError,
    VerificationError,
)
from pypto.frontend import builtins as _builtins
from pypto.frontend.builtins import *  # noqa: F403 - the kernel language, derived from the dialect
from pypto.frontend.helpers import DeviceFunction, func
from pypto.frontend.kernel import Kernel, kernel
from pypto.profiling import profile
from pypto.runtime import (
    Stream,
    Tensor,
    alloc_tensor,
    default_stream,
    empty,
    memcpy_d2h,
    memcpy_h2d,
    profile_on_npu,
    sync,
    tensor,
    zeros,
)

__version__ = "0.1.0"

_LAZY = {"Profile": ("pypto.backend.cost_model", "Profile"),
         "autotune": ("pypto.tuning", "autotune"),
         "TuneResult": ("pypto.tuning", "TuneResult")}
"""Public names imported at their first use rather than by `import pypto` (the cost model is
~8 ms of import that a program which never profiles does not need; tuning likewise)."""


def __getattr__(name: str) -> _Any:
    """PEP 562: `pto.Profile` / `pto.autotune` (and `from pypto import ...`) import the cost
    model / the tuner then."""
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(_importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pypto' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    # kernels and compilation
    "kernel", "Kernel", "compile", "CompiledKernel", "set_backend",
    # host API
    "tensor", "empty", "zeros", "alloc_tensor", "Tensor", "memcpy_h2d", "memcpy_d2h", "launch", "sync", "Stream",
    "default_stream", "profile", "Profile", "profile_on_npu", "autotune", "TuneResult",
    # kernel language: every builtin of pypto.frontend.builtins (derived from the dialect)
    *_builtins.__all__,
    "WARP_SIZE", "func", "DeviceFunction",
    # dtypes
    "DType", "float32", "float16", "bfloat16", "int32", "int64", "bool_",
    # errors
    "PtoError", "CompileError", "BarrierError", "L1CapacityError", "VerificationError",
    "KernelError", "MemoryAccessError", "RaceError", "DeadlockError", "KernelInterruptedError", "TensorFreedError", "TargetError", "UsageError",
    "DeviceOutOfMemoryError", "DeviceUnavailableError", "LaunchError",
]
