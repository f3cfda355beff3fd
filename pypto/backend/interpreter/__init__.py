"""The interpreter: executes pto IR exactly on NumPy, vectorised over lanes.

`Executable(func_op).run(grid, block, args)` runs one kernel launch. Code is generated once per
kernel and execution mode (see codegen.py), then reused for every launch.
"""

from pypto.backend.interpreter.executor import Executable

__all__ = ["Executable"]
