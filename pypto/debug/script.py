"""Take a kernel's launch from a user script: run the script until it launches that kernel.

`python -m pypto.debug examples/vector_add.py:vector_add` needs the tensors and launch
configuration the script builds. Rather than asking the user to restate them, the script runs
as `__main__` with the runtime's one launch function (`pypto.runtime.launcher.launch_shaped`,
which `pto.launch`, `kernel[grid, block](...)` and a compiled kernel's call all end in) wrapped: launches of other kernels go through unchanged, and
the first launch of the named kernel is captured (after its inputs' queued copies complete)
and stops the script there, so nothing after it runs against an output the debugger has not
produced yet.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from pypto.debug.session import DebugError


@dataclass
class CapturedLaunch:
    kernel: Any                        # the @pto.kernel (or compiled kernel) launched
    grid: tuple[int, int, int]         # the launch's checked shape
    block: tuple[int, int, int]
    args: tuple[Any, ...]
    names: dict[int, str]              # argument position -> the script's variable name
    site: str                          # "script.py:42", where the launch was


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _Captured(BaseException):
    """Unwinds the script at the captured launch (not an Exception: scripts' handlers pass)."""


def parse_target(text: str) -> tuple[str, str]:
    """`path/to/script.py:kernel_name` -> (path, kernel name)."""
    path, sep, name = text.rpartition(":")
    if not sep or not path or not name.isidentifier():
        raise DebugError(f"expected SCRIPT.py:KERNEL (e.g. examples/vector_add.py:vector_add), "
                         f"got {text!r}")
    return path, name


def capture_launch(path: str, kernel_name: str, argv: list[str] | None = None) -> CapturedLaunch:
    """Run `path` as `__main__` until its first launch of kernel `kernel_name`."""
    import pypto.runtime as runtime
    from pypto.debug import caller_names
    from pypto.runtime import launcher

    if not os.path.isfile(path):
        raise DebugError(f"no such script: {path}")
    real_launch = launcher.launch_shaped
    captured: list[CapturedLaunch] = []
    launched: list[str] = []

    def launch(kernel: Any, shape: Any, args: Any, stream: Any = None, **options: Any) -> None:
        name = getattr(kernel, "name", None)
        if name != kernel_name:
            launched.append(str(name))
            return real_launch(kernel, shape, args, stream, **options)
        runtime.sync()
        frame = sys._getframe(1)
        while frame.f_back is not None and \
                os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
            frame = frame.f_back  # out of pypto (CompiledKernel.__call__): the script's line
        args = tuple(args)
        site = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        captured.append(CapturedLaunch(getattr(kernel, "kernel", kernel), shape.grid,
                                       shape.block, args,
                                       caller_names(args, frame), site))
        raise _Captured()

    # the one way in (a kernel's first launch never takes a cached plan: nothing launched it)
    saved = (launcher.launch_shaped, sys.argv[:], sys.path[:])
    launcher.launch_shaped = launch  # type: ignore[assignment]
    sys.argv = [path, *(argv or [])]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    namespace: dict[str, Any] = {}
    try:
        namespace = runpy.run_path(path, run_name="__main__")
    except _Captured:
        return captured[0]
    except SystemExit as exc:
        raise DebugError(f"{path} exited ({exc.code}) without launching kernel "
                         f"'{kernel_name}' (it launched: {', '.join(launched) or 'nothing'})"
                         ) from None
    except Exception as exc:  # the user's script failed: say where, no debugger traceback
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if os.path.abspath(f.filename) == os.path.abspath(path)]
        at = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        raise DebugError(f"{path} raised {type(exc).__name__}{at} before launching "
                         f"'{kernel_name}': {exc}") from None
    finally:
        launcher.launch_shaped = saved[0]
        sys.argv[:] = saved[1]
        sys.path[:] = saved[2]
    from pypto.frontend.kernel import Kernel

    defined = sorted(k for k, v in namespace.items() if isinstance(v, Kernel))
    raise DebugError(f"{path} ran to its end without launching kernel '{kernel_name}' "
                     f"(it launched: {', '.join(launched) or 'nothing'}; it defines kernels: "
                     f"{', '.join(defined) or 'none'})")


__all__ = ["CapturedLaunch", "capture_launch", "parse_target"]
