"""The frontend: `@pto.kernel` Python functions -> `pto` IR (see lowering.py)."""

from pypto.frontend.kernel import Kernel, kernel
from pypto.frontend.lowering import lower_kernel

__all__ = ["Kernel", "kernel", "lower_kernel"]
