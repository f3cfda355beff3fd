"""`launch`: validate a kernel launch, compile if needed, and enqueue it (asynchronous).

Everything that can be checked without running the kernel is checked *here*, so that mistakes in
the launch itself (bad grid, wrong arity, a freed tensor, an uncompilable kernel) raise at the
`launch` line — like Triton — while failures *inside* the kernel surface at the next
synchronising call, like CUDA.

Kernel protocol accepted by `launch`:

- a compiled kernel: any object with `.name`, `.num_params` and
  `.execute(grid: tuple[int, int, int], block: tuple[int, int, int], args: tuple) -> None`
  (synchronous execution, raising `KernelError` subclasses); detected by `hasattr(k, "execute")`;
- a `@pto.kernel` function (`.name`, `.num_params`, optionally `.params`, the parameter names),
  compiled at launch time by the `compile` function the caller passes: the runtime sits below
  the compiler and does not import it. `pto.launch` (`pypto.compiler.launch`) is this function
  with `compile=pypto.compiler.compile`, which caches the specialisations.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from pypto import dtypes

from pypto.backend.launch_shape import Dim3, LaunchShape
from pypto.backend.targets import Target
from pypto.errors import LaunchError
from pypto.runtime.device import Device, default_device
from pypto.runtime.memory import Tensor
from pypto.runtime.stream import _FIND_SITE, Stream, caller_site

Compiler = Callable[..., Any]
"""`compile(kernel, *, args, block, target) -> compiled kernel` (`pypto.compiler.compile`)."""


def launch(kernel: Any, grid: int | tuple[int, ...], block: int | tuple[int, ...],
           args: tuple[Any, ...] | list[Any], stream: Stream | None = None, *,
           compile: Compiler | None = None, origin: str | None = _FIND_SITE,
           timeout: float | None = None) -> None:
    """Enqueue `kernel` on `stream` over `grid` blocks of `block` lanes, and return at once.

    `grid` / `block`: an int `n` means `(n, 1, 1)`; tuples of 1 to 3 ints are padded with 1.
    `args`: device tensors (passed as typed pointers), Python / NumPy ints and floats.
    `stream=None`: the default stream of the device the tensor arguments live on.
    `compile`: compiles a kernel that is not compiled yet (for the stream's device's target).
    `origin`: the user's `file:line` that errors of this launch name (found on the stack when
    not given; `pto.launch` passes it, having found it cheaply, see `caller_site`).
    `timeout`: seconds of the watchdog's time limit for this launch (None: none).
    The launch keeps every tensor argument alive until the kernel has run.
    """
    name = _kernel_name(kernel)
    launch_shaped(kernel, LaunchShape.of(grid, block, kernel=name), args, stream,
                  compile=compile, origin=caller_site(2) if origin is _FIND_SITE else origin,
                  timeout=timeout)


def launch_shaped(kernel: Any, shape: LaunchShape, args: tuple[Any, ...] | list[Any],
                  stream: Stream | None = None, *, compile: Compiler | None = None,
                  origin: str | None = None, timeout: float | None = None) -> None:
    """`launch` of a checked `shape`: the one function every launch goes through (`launch`,
    `pto.launch`, `kernel[grid, block](...)` and a compiled kernel's call, except the repeats
    `enqueue_planned` takes), so the debugger wraps this one function to take a script's
    launch (pypto/debug/script.py). Callers look it up on this module at each call."""
    name = _kernel_name(kernel)
    arguments, tensors, plain = _check_args(kernel, name, args)
    queue = _launch_stream(name, tensors, stream)
    if not plain and any(isinstance(a, np.ndarray) for a in arguments):
        _launch_with_host_arrays(kernel, name, shape, arguments, queue, compile, origin,
                                 timeout)
        return
    if timeout is not None:
        from pypto.backend.interpreter.watchdog import time_limit

        with time_limit(timeout):  # checks the value at the launch line
            pass
    target = queue.device.target
    if shape.block_lanes > target.max_block_lanes:
        shape.fits(target, kernel=name)
    grid3, block3 = shape.grid, shape.block
    if hasattr(kernel, "execute"):
        compiled = kernel
    elif compile is None:
        raise LaunchError(f"launch of kernel '{name}': it is not compiled; launch it with "
                          f"pto.launch (which compiles it) or pto.compile it first")
    else:
        compiled = compile(kernel, args=arguments, block=block3, target=target)

    job = [compiled, arguments]

    def run() -> None:
        # take the arguments out of the closure: the traceback of a failed launch keeps this
        # function alive, and must not keep the launch's tensors charged (see stream._run_head)
        kernel_, args_ = job
        job.clear()
        if timeout is None:
            kernel_.execute(grid3, block3, args_)
        else:
            from pypto.backend.interpreter.watchdog import time_limit

            with time_limit(timeout):
                kernel_.execute(grid3, block3, args_)

    queue.enqueue(_label(name, grid3, block3), run, tensors, origin, api="pto.launch()")


Plan = tuple[Any, Dim3, Dim3, str]
"""What a checked launch found, for the next identical ones (`plan_launch`)."""


def plan_launch(compiled: Any, name: str, grid: Dim3, block: Dim3) -> Plan:
    """The plan of launches like one `launch` has just checked and enqueued: its compiled
    kernel, grid and block, and how its errors name it. `pypto.compiler.launch` keeps it
    under a key that determines every check `launch` made (shape, argument types, live
    tensors on one device, the target, the compile settings) and hands it to
    `enqueue_planned` for the next launches with that key."""
    return (compiled, grid, block, _label(name, grid, block))


def enqueue_planned(plan: Plan, args: tuple[Any, ...], tensors: tuple[Tensor, ...],
                    device: Device, site: str | None) -> None:
    """Enqueue a launch of `plan` with `args` (checked by the plan's key; `tensors` the
    tensors among them) on `device`'s default stream: `launch` without the checks the key
    already proves."""
    compiled, grid3, block3, label = plan
    job = [compiled, args]

    def run() -> None:
        kernel_, args_ = job  # (out of the closure, as in `launch`)
        job.clear()
        kernel_.execute(grid3, block3, args_)

    device.default_stream.enqueue(label, run, tensors, site, api="pto.launch()")


def _launch_with_host_arrays(kernel: Any, name: str, shape: LaunchShape,
                             arguments: tuple[Any, ...], queue: Stream,
                             compile: Compiler | None, origin: str | None,
                             timeout: float | None = None) -> None:
    """A launch with NumPy arrays among its arguments (Numba CUDA's automatic transfer): each
    array is copied into a temporary device tensor of its dtype, the kernel runs, and every
    writeable array gets the tensor's contents back. Synchronous: returns after the copy back,
    and a kernel error is raised here."""
    from pypto.runtime.host_arrays import stage_host_arrays

    staged = stage_host_arrays(arguments, entry=f"launch of kernel '{name}'", kernel=kernel,
                               device=queue.device, stream=queue)
    with staged:
        launch_shaped(kernel, shape, staged.args, queue, compile=compile, origin=origin,
                      timeout=timeout)
        queue.synchronize()


def _describe_position(kernel: Any, position: int) -> str:
    """`argument 1 (parameter 'b')`, or `argument 1` when the parameter names are unknown."""
    params = getattr(kernel, "params", None)
    if isinstance(params, list | tuple) and position < len(params):
        return f"argument {position} (parameter '{params[position]}')"
    return f"argument {position}"


_LABELS: dict[tuple[str, Dim3, Dim3], str] = {}


def _label(name: str, grid: Dim3, block: Dim3) -> str:
    """How errors name a launch; memoised (formatting two tuples costs ~0.7 us per launch)."""
    key = (name, grid, block)
    label = _LABELS.get(key)
    if label is None:
        if len(_LABELS) >= 256:
            _LABELS.clear()
        label = _LABELS[key] = f"launch of kernel '{name}' grid={grid} block={block}"
    return label


def _kernel_name(kernel: Any) -> str:
    if hasattr(kernel, "num_params") and hasattr(kernel, "name"):
        return str(kernel.name)
    if inspect.isfunction(kernel):
        raise LaunchError(f"launch: '{kernel.__name__}' is a plain Python function; decorate it "
                          f"with @pto.kernel to launch it")
    raise LaunchError(f"launch: expected a @pto.kernel function or a compiled kernel "
                      f"(pto.compile(...)), got {type(kernel).__name__} {kernel!r}")


def _check_args(kernel: Any, name: str, args: Any
                ) -> tuple[tuple[Any, ...], tuple[Tensor, ...], bool]:
    """The arguments as a tuple, checked (count, types, alive tensors, scalar ranges), the
    tensors among them (in order), and whether every argument is a live tensor, a float or an
    int32 (then none is a NumPy array to stage)."""
    if type(args) is tuple:
        arguments = args
    elif isinstance(args, tuple | list):
        arguments = tuple(args)
    else:
        raise LaunchError(f"launch of kernel '{name}': args must be a tuple of arguments, got "
                          f"{type(args).__name__} (write args=(x,) for a single argument)")
    expected = int(kernel.num_params)
    if len(arguments) != expected:
        params = getattr(kernel, "params", None)
        names = f" ({', '.join(map(str, params))})" if isinstance(params, list | tuple) else ""
        raise LaunchError(f"launch of kernel '{name}': it takes {expected} parameter(s){names} "
                          f"but got {len(arguments)} argument(s)")
    tensors: list[Tensor] = []
    for arg in arguments:  # the common arguments, checked in one quick pass
        kind = type(arg)
        if kind is Tensor and arg._data is not None:
            tensors.append(arg)
        elif not (kind is float or (kind is int and -(2**31) <= arg < 2**31)):
            break
    else:
        return arguments, tuple(tensors), True
    tensors = []  # something else: every argument through the full checks
    for position, arg in enumerate(arguments):
        kind = type(arg)
        if kind is float or (kind is int and -(2**31) <= arg < 2**31):
            continue
        if kind is Tensor or isinstance(arg, Tensor):
            if arg.freed:
                arg.check_alive(f"launch of kernel '{name}': "
                                f"{_describe_position(kernel, position)}")
            tensors.append(arg)
        elif isinstance(arg, np.ndarray) and arg.ndim > 0:
            continue  # copied in and back by _launch_with_host_arrays
        elif not _is_scalar(arg):
            raise LaunchError(f"launch of kernel '{name}': {_describe_position(kernel, position)} "
                              f"has unsupported type {type(arg).__name__}; kernel arguments are "
                              f"device tensors (pto.tensor, pto.alloc_tensor), NumPy arrays, "
                              f"ints and floats{_arg_hint(arg)}")
        else:
            check_scalar(arg, f"launch of kernel '{name}': "
                              f"{_describe_position(kernel, position)}")
    return arguments, tuple(tensors), False


def _is_scalar(arg: Any) -> bool:
    return isinstance(arg, int | float | np.integer | np.floating | np.bool_) or (
        isinstance(arg, np.generic) and arg.dtype == dtypes.bfloat16.np_dtype)  # (ml_dtypes)


def check_scalar(arg: Any, what: str) -> None:
    """`LaunchError` for a scalar argument no kernel parameter type can hold (an int beyond
    int64, a NumPy int8 / uint32 / longdouble ...), naming `what` and the fix."""
    if isinstance(arg, bool | np.bool_):
        return
    if isinstance(arg, int) and not -(2**63) <= arg < 2**63:
        raise LaunchError(f"{what} is the int {arg}, which does not fit in int64 (the widest "
                          f"kernel integer)")
    if isinstance(arg, np.generic) and arg.dtype not in _SCALAR_DTYPES:
        raise LaunchError(f"{what} is a NumPy {arg.dtype} scalar; kernel scalars are "
                          f"{', '.join(sorted(d.name for d in _SCALAR_DTYPES))}: convert it, "
                          f"e.g. np.int32(x), np.float32(x) or int(x)")


_SCALAR_DTYPES = frozenset(d.np_dtype for d in (dtypes.int32, dtypes.int64, dtypes.float16,
                                                  dtypes.bfloat16, dtypes.float32,
                                                  dtypes.float64, dtypes.bool_))


def _arg_hint(arg: Any) -> str:
    if isinstance(arg, np.ndarray) and arg.ndim == 0:
        return "; pass a 0-d array as a scalar with .item()"
    return ""


def _launch_stream(name: str, tensors: tuple[Tensor, ...], stream: Stream | None) -> Stream:
    if stream is None and tensors:  # the common case: every tensor on one device
        device = tensors[0].device
        for arg in tensors:
            if arg.device is not device:
                break
        else:
            return device.default_stream
    devices: list[Device] = []
    for arg in tensors:
        if not devices or all(arg.device is not d for d in devices):
            devices.append(arg.device)
    if stream is not None:
        if not isinstance(stream, Stream):
            raise LaunchError(f"launch of kernel '{name}': stream must be a pto.Stream or None, "
                              f"got {type(stream).__name__}")
        devices = [d for d in devices if d is not stream.device]
        if devices:
            raise LaunchError(f"launch of kernel '{name}': a tensor argument lives on device "
                              f"'{devices[0].name}' but the stream belongs to device "
                              f"'{stream.device.name}'")
        return stream
    if len(devices) > 1:
        raise LaunchError(f"launch of kernel '{name}': tensor arguments live on different "
                          f"devices ({', '.join(repr(d.name) for d in devices)})")
    return (devices[0] if devices else default_device()).default_stream

