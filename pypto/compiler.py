"""`pto.compile()`: specialise a kernel on its launch arguments, lower it, run the pass pipeline;
and `pto.launch()`, which compiles a `@pto.kernel` on first use and hands it to the runtime.

A specialisation is fixed by the argument *types* (tensor dtypes, int/float scalars), the block
shape, the pipeline text and the target; each one is compiled once and cached on the kernel.
The compiler sits above the runtime (`pypto.runtime` knows nothing of compilation: its `launch`
takes the compile function as a parameter).
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from operator import call
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import Attribute
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from pypto import dtypes
from pypto.backend.interpreter import Executable
from pypto.backend.interpreter.executor import parse_schedule
from pypto.backend.targets import Target, resolve_target
from pypto.dialects import pto
from pypto.errors import (
    CompileError,
    KernelError,
    LaunchError,
    PtoError,
    UsageError,
    VerificationError,
    hide_internal_frames,
    public_api,
    setting_error,
)
from pypto.frontend.kernel import Kernel
from pypto.analysis.uniformity import check_uniform_control
from pypto.frontend.builtins import constexpr
from pypto.frontend.common import NeedsConstexpr
from pypto.frontend.lowering import lower_kernel
from pypto.ir import print_ir
from pypto.runtime.host_arrays import has_host_arrays, stage_host_arrays
from pypto import settings
from pypto.runtime.env import flag as env_flag, registered as registered_setting
from pypto.runtime.env import setting as env_setting
from pypto.backend.launch_shape import _SHAPES as _KNOWN_SHAPES, LaunchShape
from pypto.runtime.tiering import native_after, native_code, tiered
from pypto.runtime import launcher
from pypto.runtime.launcher import check_scalar, enqueue_planned, plan_launch
from pypto.runtime.stream import Stream, caller_site

if TYPE_CHECKING:
    from pypto.analysis.l1_map import L1Map

VALIDATE_ENV = "PYPTO_VALIDATE"
"""Set to 1 to make `compile()` validate every pass by default (`validate=True`); set to a
pipeline (`canonicalize,cse`) to also run those passes before every compile's own pipeline
(how the test suite validates the passes on the whole kernel zoo)."""

RACE_CHECK_ENV = "PYPTO_RACE_CHECK"
"""Set to 0 to turn the interpreter's race detector off by default (it is on otherwise)."""

DEFAULT_PIPELINE = "pto-double-buffer,pto-allocate-l1,pto-verify-barriers"
"""Passes `compile()` runs when `pipeline=None` (documented in docs/compiler.md): double-buffer
pipelined loops, place L1 buffers, then check the kernel that will run for L1 hazards. Barrier
passes are given the launch's block shape unless the pipeline sets `block-size` / `block-dims`;
L1 passes the target's capacity and alignment unless the pipeline sets `l1-bytes` / `align`."""

LOGGER_NAME = "pypto"
"""Remarks of the passes (double buffering decisions, L1 peak) are logged on the `pypto` logger
at INFO level (`logging.getLogger("pypto")`; `pypto.compiler.logger` is that logger)."""


def __getattr__(name: str) -> Any:
    """PEP 562: `logger` is looked up on first use, so that `import pypto` does not import
    `logging` (~2 ms with `traceback`) for a program that never runs a pass with remarks."""
    if name == "logger":
        import logging

        return logging.getLogger(LOGGER_NAME)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Remark:
    """A pass's informational finding about a kernel, e.g. why a loop was not double-buffered."""

    message: str
    location: str | None = None
    """`file:line:col` of the Python source the remark is about, when known."""

    def __str__(self) -> str:
        return f"{self.location}: remark: {self.message}" if self.location else \
            f"remark: {self.message}"


def _is_device_tensor(value: Any) -> bool:
    return (not isinstance(value, np.ndarray | np.generic) and hasattr(value, "dtype")
            and hasattr(value, "nbytes") and hasattr(value, "freed"))


def arg_type(value: Any, position: int, kernel: Kernel) -> Attribute:
    """The IR type a launch argument gives its parameter."""
    pname = kernel.params[position] if position < len(kernel.params) else f"#{position}"
    if _is_device_tensor(value):
        return pto.PtrType(dtypes.as_dtype(value.dtype).mlir(), "global")
    if isinstance(value, np.ndarray):
        raise LaunchError(f"argument '{pname}' of kernel '{kernel.name}' is a 0-d NumPy "
                          f"array; pass a scalar (a.item()) or an array of at least one "
                          f"dimension (copied in as a tensor, docs/runtime.md#numpy-arrays)")
    if isinstance(value, bool | np.bool_):
        return IntegerType(1)
    if isinstance(value, np.integer | np.floating) or (  # (ml_dtypes' bfloat16 scalar is a
            isinstance(value, np.generic) and value.dtype == dtypes.bfloat16.np_dtype):  # generic)
        check_scalar(value, f"argument '{pname}' of kernel '{kernel.name}'")
        return dtypes.as_dtype(value.dtype).mlir()
    if isinstance(value, int):
        check_scalar(value, f"argument '{pname}' of kernel '{kernel.name}'")
        return IntegerType(32) if -(2**31) <= value < 2**31 else IntegerType(64)
    if isinstance(value, float):
        return dtypes.float32.mlir()
    raise LaunchError(f"argument '{pname}' of kernel '{kernel.name}' has unsupported type "
                      f"{type(value).__name__}; pass device tensors, ints or floats")


class CompiledKernel:
    """One compiled specialisation: its IR (`.module`, `.mlir`) and its executable form."""

    def __init__(self, kernel: Kernel, module: ModuleOp, block: tuple[int, int, int],
                 target: Target, pipeline: str, *, check_uninitialized: bool = False,
                 schedule: str | None = None, race_check: bool = True,
                 remarks: Sequence[Remark] = ()):
        self.kernel = kernel
        self.remarks: list[Remark] = list(remarks)
        """What the passes reported about this kernel (see `Remark`)."""
        self.name = kernel.name
        self.module = module
        self.folded_globals: dict[str, Any] = {}  # module constants folded in (cache validity)
        self.block = block
        self.target = target
        self.pipeline = pipeline
        self.func = _kernel_func(module, kernel.name)
        self.executable = Executable(self.func, target=target,
                                     check_uninitialized=check_uninitialized, schedule=schedule,
                                     race_check=race_check)

    @property
    def num_params(self) -> int:
        return self.kernel.num_params

    @property
    def mlir(self) -> str:
        """Textual IR after the pipeline (custom form, without locations)."""
        return print_ir(self.module)

    def l1_map(self) -> L1Map:
        """The L1 layout of the compiled kernel: buffers, offsets, sizes, live ranges, peak
        (`str()` of it is a table; `.to_svg(path)` draws it)."""
        from pypto.analysis.l1_map import l1_map

        return l1_map(self.func, capacity=self.target.l1_bytes,
                      align=self.target.l1_align_bytes)

    def as_text(self, *, debuginfo: bool = False, generic: bool = False) -> str:
        """The IR with options: `debuginfo=True` prints each op's Python location."""
        return print_ir(self.module, debuginfo=debuginfo, generic=generic)

    def execute(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                args: Sequence[Any], backend: str | None = None) -> None:
        """Run synchronously (the runtime's stream calls this) on `backend`, by default the
        setting `pto.set_backend` / PYPTO_BACKEND chose (see `_run_on`)."""
        if backend is None:  # `_backend_setting()`, inline
            backend = _BACKEND_CHOICE[0] or _BACKEND_ENV_SETTING()
        if backend == "interpreter":  # (`_run_on`'s first case, without the call)
            self.executable.run(grid, block, args)
            return
        _run_on(self, backend, grid, block, args)

    @public_api
    def __call__(self, grid: Any, block: Any, args: Sequence[Any]) -> None:
        """Launch on the default stream: same as `pto.launch(self, grid, block, args)`."""
        launch(self, grid=grid, block=block, args=args)

    def __getitem__(self, config: Any) -> LaunchConfig:
        """`ck[grid, block](*args)`: launch, as `kernel[grid, block](*args)`."""
        return LaunchConfig(self, config)

    @property
    def params(self) -> list[str]:
        return self.kernel.params

    def __repr__(self) -> str:
        return f"<pto.CompiledKernel {self.name} block={self.block}>"


# --- choosing the backend (docs/native.md#choosing-a-backend) ---------------------------------

BACKEND_ENV = "PYPTO_BACKEND"
BACKENDS = settings.BACKENDS  # ("interpreter", "native", "auto", "tiered")


DEFAULT_BACKEND = "tiered"
"""The backend when neither `backend=`, `pto.set_backend` nor PYPTO_BACKEND chooses: decided from
`bench/backend_default.py` (docs/performance.md#which-backend-by-default)."""


_BACKEND_ENV_SETTING = registered_setting(BACKEND_ENV, DEFAULT_BACKEND)
"""PYPTO_BACKEND, read at every launch that neither passes `backend=` nor follows
`pto.set_backend` (`launch` reads it, so that a bad value raises at the launch line, and the
run reads it again: docs/settings.md)."""
_BACKEND_CHOICE: list[str | None] = [None]


def _backend_setting() -> str:
    chosen = _BACKEND_CHOICE[0]
    return chosen if chosen is not None else _BACKEND_ENV_SETTING()


def set_backend(backend: str | None) -> str | None:
    """`pto.set_backend("native" | "interpreter" | "auto" | "tiered")`: the backend of every
    following launch (`kernel[grid, block](...)`, `pto.launch` without `backend=`); None goes
    back to PYPTO_BACKEND (default "tiered"). Returns the previous choice."""
    if backend is not None and backend not in BACKENDS:
        raise LaunchError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    previous = _BACKEND_CHOICE[0]
    _BACKEND_CHOICE[0] = backend
    return previous


def _native(compiled: CompiledKernel, required: bool) -> Any:
    """The compiled kernel's native code (compiled at its first native launch, then kept on
    it: one per specialisation), or None when "auto" finds it unsupported."""
    return native_code(compiled, required)


def _run_on(compiled: CompiledKernel, backend: str, grid: tuple[int, int, int],
            block: tuple[int, int, int], args: Sequence[Any]) -> None:
    """Run on the interpreter, natively, or ("auto") natively when the kernel compiles and no
    instrument needs the interpreter (validation, uninitialised-memory checks, race checking);
    "tiered" as "auto" once the object code is paid for (pypto/runtime/tiering.py). `grid` /
    `block` are a checked `LaunchShape`'s triples (docs/runtime.md#launch-shape)."""
    executable = compiled.executable
    # the race detector (on by default for kernels whose lanes access L1) is an instrument of
    # the interpreter: "auto" keeps such kernels there (docs/native.md#choosing-a-backend)
    if backend == "interpreter" or backend != "native" and (
            executable.check_uninitialized or executable.race_check or _VALIDATE_SETTING()[0]):
        executable.run(grid, block, args)
        return
    if backend == "tiered":
        native = tiered(compiled, grid, block, args)
        if native is None:
            return  # (interpreted)
    else:
        native = _native(compiled, required=backend == "native")
    if native is None or backend != "native" and native.auto_prefers_interpreter:
        executable.run(grid, block, args)
        return
    bound = executable.bind(args)
    refused = native.unsupported_launch(grid, block, bound)
    if refused is not None:
        if backend == "native":
            raise refused
        executable.run(grid, block, args)
        return
    try:
        native.run(grid, block, bound)
    except KernelError as error:  # which lane and element: the interpreter's order of detection
        from pypto.backend.native.replay import replayed_error  # (docs/native.md#errors)
        raise replayed_error(compiled, executable, native, grid, block, args, bound,
                             error) from None


class _OnBackend:
    """A compiled kernel launched on a given backend (`pto.launch(..., backend=...)`)."""

    def __init__(self, compiled: Any, backend: str):
        self.compiled = compiled
        self.backend = backend
        self.name = compiled.name
        self.num_params = compiled.num_params

    def execute(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                args: Sequence[Any]) -> None:
        self.compiled.execute(grid, block, args, self.backend)


def _kernel_func(module: ModuleOp, name: str) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise VerificationError(f"compiled module has no kernel '{name}'")


def _constexpr_params(kernel: Kernel) -> set[str]:
    """Parameters annotated `pto.constexpr`, plus those the frontend found used as sizes."""
    annotated = {name for name, p in kernel.signature.parameters.items()
                 if p.annotation is constexpr or p.annotation == "pto.constexpr"
                 or getattr(p.annotation, "__name__", None) == "constexpr"}
    return annotated | kernel.auto_constexpr


def _constexpr_values(kernel: Kernel, names: set[str], args: Sequence[Any]) -> dict[str, Any]:
    values = {}
    for name, value in zip(kernel.params, args):
        if name not in names:
            continue
        if _is_device_tensor(value) or not isinstance(value, bool | int | float | np.number):
            raise LaunchError(f"parameter '{name}' of kernel '{kernel.name}' is a compile-time "
                              f"constant (pto.constexpr or used as a size) and must be an int or "
                              f"float, got {type(value).__name__}")
        values[name] = value.item() if isinstance(value, np.generic) else value
    return values


def launch(kernel: Any, grid: int | tuple[int, ...], block: int | tuple[int, ...],
           args: tuple[Any, ...] | list[Any], stream: Stream | None = None, *,
           pipeline: str | None = None, backend: str | None = None,
           timeout: float | None = None) -> None:
    """`pto.launch`: enqueue `kernel` (compiled here first if it is a `@pto.kernel`), async.

    `timeout`: seconds after which a `while` loop of this launch still running is stopped with
    a `KernelError` at its line (docs/runtime.md#the-watchdog); None: no time limit.

    The runtime's `launch` (`pypto.runtime.launch`) with this module's `compile`; see its
    docstring for the arguments. `pipeline` compiles a `@pto.kernel` with that pass pipeline
    instead of the default (as `pto.compile(pipeline=...)`; `pto.autotune`'s `launch_args`
    carry the winner's, e.g. `pto-double-buffer{stages=3},...`). `backend`: "interpreter",
    "native", "auto" or "tiered" for this launch (default: `pto.set_backend` / PYPTO_BACKEND,
    else "tiered": docs/native.md#choosing-a-backend).
    """
    try:
        # the launch's one shape check (a `LaunchShape` is what every layer below is given);
        # two ints seen before: `LaunchShape.of`'s memo, looked up inline
        shape = _KNOWN_SHAPES.get((grid, block)) if type(grid) is int and type(block) is int \
            else None
        if shape is None:
            shape = LaunchShape.of(grid, block, kernel=_launch_name(kernel))
        # the backend's settings, read here so that a bad value raises at the launch line (the
        # run reads them again, unchanged and cheaply: docs/settings.md)
        if (backend or _BACKEND_CHOICE[0] or _BACKEND_ENV_SETTING()) == "tiered":
            native_after()
        if backend is not None:
            if backend not in BACKENDS:
                raise LaunchError(f"unknown backend {backend!r}; choose one of "
                                  f"{', '.join(BACKENDS)}")

            def compile_on(k: Any, **options: Any) -> Any:
                compiled = compile(k, pipeline=pipeline, **options) if pipeline else \
                    _compile_for_launch(k, **options)
                return _OnBackend(compiled, backend)

            target = kernel if hasattr(kernel, "execute") and not isinstance(kernel, Kernel) \
                else None
            launcher.launch_shaped(_OnBackend(target, backend) if target is not None else kernel,
                                   shape, args, stream, compile=compile_on,
                                   origin=caller_site(2), timeout=timeout)
            return
        elif timeout is not None:  # the watchdog's time limit: the checked, unplanned path
            def compile_timed(k: Any, **options: Any) -> CompiledKernel:
                return compile(k, pipeline=pipeline, **options) if pipeline is not None else \
                    _compile_for_launch(k, **options)

            launcher.launch_shaped(kernel, shape, args, stream, compile=compile_timed,
                                   origin=caller_site(2), timeout=timeout)
        elif pipeline is None:
            if stream is None and type(kernel) is Kernel and type(args) is tuple:
                # the same argument objects as the last planned launch: the same key (see
                # `_LAST`), unless a tensor was freed since or a setting changed
                last = kernel.__dict__.get(_LAST)
                if last is not None and last[0] is shape and \
                        last[1] == tuple(map(id, args)) and last[4] is _VALIDATE_SETTING() and \
                        last[5] is _race_check_default() and \
                        last[6] == len(kernel.auto_constexpr):
                    tensors = tuple(map(call, last[2]))  # (the weak references, followed)
                    if None not in tensors:  # (a tensor is only ever equal to itself)
                        for tensor in tensors:
                            if tensor._data is None:
                                break  # freed: the key's path (then the general one) raises
                        else:
                            plan = last[7]
                            if not plan[0].folded_globals or \
                                    kernel.outer_values_unchanged(plan[0].folded_globals):
                                enqueue_planned(plan, args, tensors, tensors[0].device,
                                                caller_site(2))
                                return
                found = _plan_key(kernel, shape, args)
                if found is not None:
                    key, tensors = found
                    plan = kernel.__dict__.get("_launch_plans", _NO_PLANS).get(key)
                    if plan is not None and (not plan[0].folded_globals or
                                             kernel.outer_values_unchanged(
                                                 plan[0].folded_globals)):
                        kernel.__dict__[_LAST] = _last_launch(shape, args, key, tensors, plan,
                                                              len(kernel.auto_constexpr))
                        enqueue_planned(plan, args, tensors, key[1], caller_site(2))
                        return
                    _launch_and_plan(kernel, shape, args, key)
                    return
            launcher.launch_shaped(kernel, shape, args, stream, compile=_compile_for_launch,
                                   origin=caller_site(2))
        else:
            def compile_with(k: Any, **options: Any) -> CompiledKernel:
                return compile(k, pipeline=pipeline, **options)

            launcher.launch_shaped(kernel, shape, args, stream, compile=compile_with,
                                   origin=caller_site(2))
    except PtoError as exc:  # (inline rather than @public_api: a launch is a hot path)
        hide_internal_frames(exc)
        raise


_NO_PLANS: dict[Any, Any] = {}

_LAST = "_last_launch"
"""The kernel's attribute that holds its last planned launch (`_last_launch`). A launch with
the same shape object and the very same argument objects has the same `_plan_key` as long as
every tensor among them is alive, the PYPTO_VALIDATE and PYPTO_RACE_CHECK reads return the
values the key read (each read returns the object it parsed until the variable changes) and no
parameter became a compile-time constant since: a tensor's dtype, device, shape and storage
never change, and identical objects are identical ints / floats and alias alike. So `launch`
reuses the plan after those checks without building the key again."""


def _last_launch(shape: LaunchShape, args: tuple[Any, ...], key: Any, tensors: Sequence[Any],
                 plan: Any, constexprs: int) -> tuple[Any, ...]:
    """The `_LAST` entry of a planned launch: (its shape, the ids of its arguments, weak
    references to its tensors, its ints and floats, the two settings its key read, the count
    of auto-constexpr parameters, its plan). The tensors are held weakly: the memo must not
    keep a tensor the program dropped (and its device memory) alive; a tensor's weak reference
    alive means no other object has its id. The ints and floats are held, so that no other
    object takes their ids either: equal ids are then the same objects."""
    tensor = _TENSOR or _tensor_class()
    return (shape, tuple(map(id, args)), tuple(weakref.ref(t) for t in tensors),
            tuple(a for a in args if type(a) is not tensor), key[4], key[5], constexprs, plan)

MAX_LAUNCH_PLANS = 64
"""Launch plans kept per kernel (then the memo starts over)."""


def _launch_name(kernel: Any) -> str:
    """The kernel's name for the shape's message (`launch_shaped` rejects a non-kernel)."""
    name = getattr(kernel, "name", None)
    return name if type(name) is str else "?"


def _plan_key(kernel: Kernel, shape: LaunchShape, args: tuple[Any, ...]) -> Any:
    """The key of a cached launch's plan and the tensors among `args`, or None when the
    launch needs the general path.

    The plan (`_launch_and_plan`) holds what the runtime's checks and the compile cache found
    for a launch: the compiled kernel, the normalised grid and block, the label of its errors.
    This key determines all of it: the launch's checked `shape` (normalised, so `4` and
    `(4, 1, 1)` share a plan). Every argument is a live tensor
    (its dtype name and device count, the device fixes the stream and the target), an int in
    int32 range (its value if a compile-time constant) or a float (likewise); a tensor
    passed twice makes its parameters alias (`_shared_tensors`). The environment's
    PYPTO_VALIDATE and PYPTO_RACE_CHECK are read at every launch and are part of the key."""
    memo = kernel.__dict__.get("_constexpr_memo")  # _constexpr_positions, the hit inline
    const = memo[1] if memo is not None and memo[0] == len(kernel.auto_constexpr) else \
        _constexpr_positions(kernel)
    tensor = _TENSOR or _tensor_class()
    parts: list[Any] = [shape.grid, None, shape.block, const, _VALIDATE_SETTING(), _race_check_default()]
    device = None
    tensors: list[Any] = []
    shapes = kernel.__dict__.get("_uses_shapes")  # kernel.uses_shapes, the hit inline
    if shapes is None:
        shapes = kernel.uses_shapes
    views = False  # a `reshape` view among the tensors (its storage is another tensor)
    for position, value in enumerate(args):
        kind = type(value)
        if kind is tensor:
            if value._data is None:
                return None  # freed: the general path raises
            if device is not value.device:
                if device is not None:
                    return None  # tensors on several devices: the general path raises
                device = value.device
            parts.append(value.dtype.name)
            views = views or value._base is not None
            if shapes:
                parts.append(value.shape)  # t[r, c]: row-major strides are specialised
            tensors.append(value)
        elif kind is int:
            if not -(2**31) <= value < 2**31:
                return None
            parts.append(value if position in const else True)
        elif kind is float:
            parts.append(("f", value) if position in const else 0.0)
        else:
            return None
    if device is None or len(tensors) > 1 and \
            len({id(t.storage) if views else id(t) for t in tensors}) < len(tensors):
        return None  # no tensor (the default device decides), or a tensor passed twice
    parts[1] = device
    return tuple(parts), tensors


def _launch_and_plan(kernel: Kernel, shape: LaunchShape, args: tuple[Any, ...],
                     key: Any) -> None:
    """The general launch (every check, the compile cache), then the plan of the next
    launches with the same key: what that launch found, reused as long as the compiled
    kernel's folded module constants keep their values."""
    found: list[Any] = []

    def compile_noted(k: Any, **options: Any) -> Any:
        compiled = _compile_for_launch(k, **options)
        found.append(compiled)
        return compiled

    launcher.launch_shaped(kernel, shape, args, None, compile=compile_noted,
                           origin=caller_site(3))
    if len(found) == 1:
        plans = kernel.__dict__.setdefault("_launch_plans", {})
        if len(plans) >= MAX_LAUNCH_PLANS:
            plans.clear()
        plans[key] = plan_launch(found[0], kernel.name, shape.grid, shape.block)


def _compile_for_launch(kernel: Any, *, args: tuple[Any, ...], block: tuple[int, int, int],
                        target: Target) -> CompiledKernel:
    """`compile(kernel, args=args, block=block, target=target)` for `pto.launch`: the cached
    specialisation found by the same fast key `compile` looks up first (the environment's
    PYPTO_VALIDATE and PYPTO_RACE_CHECK read as there), without the public wrapper around it;
    anything else goes through `compile`."""
    if type(kernel) is Kernel:
        validate, extra_passes = _VALIDATE_SETTING()
        if not extra_passes:
            key = _fast_key(kernel, args, (block, DEFAULT_PIPELINE, target, False, None,
                                           _race_check_default(), validate))
            hit = None if key is None else kernel.fast_cache.get(key)
            if hit is not None and (not hit.folded_globals or
                                    kernel.outer_values_unchanged(hit.folded_globals)):
                return hit
    return compile(kernel, args=args, block=block, target=target)


class LaunchConfig:
    """`kernel[grid, block]` (or `kernel[grid, block, stream]`): call it with the kernel's
    arguments to launch, as `pto.launch(kernel, grid, block, args, stream)` does."""

    __slots__ = ("kernel", "grid", "block", "stream")

    def __init__(self, kernel: Any, config: Any):
        name = getattr(kernel, "name", "?")
        if not isinstance(config, tuple) or len(config) not in (2, 3):
            raise LaunchError(f"kernel '{name}'[...] takes [grid, block] or [grid, block, "
                              f"stream], got [{config!r}]")
        self.kernel = kernel
        self.grid = config[0]
        self.block = config[1]
        self.stream = config[2] if len(config) == 3 else None

    @public_api
    def __call__(self, *args: Any, timeout: float | None = None) -> None:
        """Launch with `args`; `timeout=` seconds as `pto.launch`'s (docs/runtime.md#the-watchdog)."""
        grid = self.grid
        if callable(grid):
            params = getattr(self.kernel, "params", None) or \
                getattr(getattr(self.kernel, "kernel", None), "params", [])
            grid = grid(dict(zip(params, args)))
        if timeout is None:
            launch(self.kernel, grid, self.block, args, self.stream)  # (the debugger patches it)
        else:
            launch(self.kernel, grid, self.block, args, self.stream, timeout=timeout)

    def __repr__(self) -> str:
        return f"<launch of {getattr(self.kernel, 'name', '?')} grid={self.grid!r} " \
               f"block={self.block!r}>"


Kernel.configure = LaunchConfig


@public_api
def compile(kernel: Kernel | CompiledKernel, *, args: Sequence[Any], block: Any = 256,
            pipeline: str | None = None, target: Target | str | None = None,
            check_uninitialized: bool = False, schedule: str | None = None,
            race_check: bool | None = None, validate: bool | None = None) -> CompiledKernel:
    """Specialise `kernel` on `args`, lower it to pto IR, run `pipeline`; cached.

    `validate=True` (default: the environment's `PYPTO_VALIDATE=1`) runs the interpreter on
    generated inputs before the pipeline and after each pass, and raises
    `TranslationValidationError` naming the first pass that changes a result (its op and the
    first differing element); see docs/reliability.md.

    Interpreter options: `check_uninitialized=True` raises on reads of L1 never written;
    `schedule="in_order" | "reverse" | "random:SEED"` runs the warps of each block one after
    another between block-level sync points in that order (default `None`: all warps in
    lockstep), so that a `pto.barrier()` orders only its own warp, as on the device;
    `race_check` (default: on, unless the environment sets `PYPTO_RACE_CHECK=0`) runs the
    dynamic race detector on kernels that use L1.
    """
    if pipeline is not None and not isinstance(pipeline, str):
        raise UsageError(f"pto.compile: pipeline must be a string such as "
                         f"'canonicalize,cse' (or None for the default), got "
                         f"{type(pipeline).__name__} {pipeline!r}")
    if isinstance(kernel, Kernel) and isinstance(args, tuple | list) and \
            has_host_arrays(args):  # NumPy arrays stand for tensors of their dtype and shape
        with stage_host_arrays(args, entry=f"pto.compile of kernel '{kernel.name}'",
                               kernel=kernel, write_back=False) as staged:
            return compile(kernel, args=staged.args, block=block, pipeline=pipeline,
                           target=target, check_uninitialized=check_uninitialized,
                           schedule=schedule, race_check=race_check, validate=validate)
    if validate is None:  # PYPTO_VALIDATE's default, and the passes it prepends
        validate, extra_passes = _VALIDATE_SETTING()
    else:
        extra_passes = ""
    if race_check is None:
        race_check = _race_check_default()
    if type(kernel) is Kernel and type(args) is tuple and type(block) is tuple and \
            isinstance(target, Target):  # a cached launch: one tuple and one dict lookup
        text = DEFAULT_PIPELINE if pipeline is None and not extra_passes else \
            _pipeline_text(pipeline, extra_passes)
        key = _fast_key(kernel, args, (block, text, target, check_uninitialized, schedule,
                                       race_check, validate))
        hit = None if key is None else kernel.fast_cache.get(key)
        if hit is not None and (not hit.folded_globals or
                                kernel.outer_values_unchanged(hit.folded_globals)):
            _record_launch(hit.module, kernel, args, hit.block)
            return hit
    parse_schedule(schedule)
    if isinstance(kernel, CompiledKernel):
        return kernel
    if not isinstance(kernel, Kernel):
        raise UsageError(f"pto.compile expects a @pto.kernel function, got {kernel!r}")
    if not isinstance(args, tuple | list):
        raise LaunchError(f"pto.compile of kernel '{kernel.name}': args must be a tuple of the "
                          f"launch arguments, got {type(args).__name__} (write args=(x,) for "
                          f"a single argument)")
    args = tuple(args)
    if len(args) != kernel.num_params:
        raise LaunchError(f"kernel '{kernel.name}' takes {kernel.num_params} arguments "
                          f"({', '.join(kernel.params)}), got {len(args)}")
    resolved = resolve_target(target)
    block_dims = LaunchShape.of(1, block, kernel=kernel.name, target=resolved,
                                what=f"pto.compile of kernel '{kernel.name}'").block
    pipeline_text = _pipeline_text(pipeline, extra_passes)
    options = (block_dims, pipeline_text, resolved, check_uninitialized, schedule, race_check,
               validate)
    fast_key = _fast_key(kernel, args, options)
    if fast_key is not None:
        hit = kernel.fast_cache.get(fast_key)
        if hit is not None and (not hit.folded_globals or
                                kernel.outer_values_unchanged(hit.folded_globals)):
            _record_launch(hit.module, kernel, args, hit.block)
            return hit
    compiled = _compile_slow(kernel, args, block_dims, resolved, pipeline_text,
                             check_uninitialized, schedule, race_check, validate)
    fast_key = _fast_key(kernel, args, options)  # the constexpr set may have grown
    if fast_key is not None:
        kernel.fast_cache[fast_key] = compiled
    _record_launch(compiled.module, kernel, args, compiled.block)  # a cached one: this launch's
    return compiled


def _fast_key(kernel: Kernel, args: tuple[Any, ...], options: tuple[Any, ...]) -> Any:
    """A cache key made of plain Python values, or None when an argument needs the full key.

    The full key (`_compile_slow`) holds xDSL type attributes; building them costs more than
    the rest of a cached launch. This key determines the full one: a tensor contributes its
    pypto dtype name (which fixes its pointer type), an int whether it fits in 32 bits, a float
    nothing, a tensor passed twice where (its parameters are not `pto.noalias`), and every compile-time constant (annotated or found by the frontend) its value.
    The constexpr set is part of the key: it only grows, so an entry made before it grew is
    never hit again."""
    const = _constexpr_positions(kernel)
    tensor = _TENSOR or _tensor_class()
    parts: list[Any] = [const, options]
    ids: list[int] = []
    for position, value in enumerate(args):
        kind = type(value)
        if kind is tensor:
            parts.append(value.dtype.name)  # the name fixes the pointer type (and hashes fast)
            ids.append(id(value.storage))  # a reshape view is its base's memory
        elif kind is int:
            parts.append(value if position in const else -(2**31) <= value < 2**31)
        elif kind is float:
            parts.append(("f", value) if position in const else 0.0)
        else:
            return None
    if len(ids) > 1 and len(set(ids)) < len(ids):  # a tensor passed twice: parameters alias
        parts.append(_shared_tensors(args))
    return tuple(parts)


def _constexpr_positions(kernel: Kernel) -> frozenset[int]:
    memo = kernel.__dict__.get("_constexpr_memo")
    size = len(kernel.auto_constexpr)
    if memo is None or memo[0] != size:
        names = _constexpr_params(kernel)
        memo = (size, frozenset(i for i, n in enumerate(kernel.params) if n in names))
        kernel.__dict__["_constexpr_memo"] = memo
    return memo[1]


_TENSOR: type | None = None


def _tensor_class() -> type:
    global _TENSOR
    if _TENSOR is None:
        from pypto.runtime.memory import Tensor  # lazy: the runtime imports the compiler

        _TENSOR = Tensor
    return _TENSOR


def _parse_validate(setting: str | None) -> tuple[bool, str]:
    """`validate`'s default from PYPTO_VALIDATE, and the passes it asks to prepend: a flag, or
    a pipeline to run (and validate) before every compile's own, parsed here so that a bad one
    is the setting's `UsageError` (naming PYPTO_VALIDATE) at the launch or compile that reads
    it, not a compile error of the kernel's pipeline (pypto/settings.py)."""
    validate, text = settings.SETTINGS[VALIDATE_ENV].value(setting, (False, ""))
    if text:
        from pypto.passes import parse_pipeline

        try:
            parse_pipeline(text)
        except PtoError as exc:
            known = settings.SETTINGS[VALIDATE_ENV]
            bad = setting_error(VALIDATE_ENV, setting or "", known.takes, known.default,
                                known.see)
            bad.args = (f"{bad}; as a pipeline: {exc}",)
            raise bad from None
    return validate, text


def _pipeline_text(pipeline: str | None, extra_passes: str) -> str:
    text = DEFAULT_PIPELINE if pipeline is None else pipeline
    if extra_passes:
        return f"{extra_passes},{text}" if text.strip() else extra_passes
    return text


_VALIDATE_SETTING = env_setting(VALIDATE_ENV, _parse_validate)
_race_check_default = env_flag(RACE_CHECK_ENV, True)
"""Both read the environment at every compile (see pypto.runtime.env: cheap when unchanged)."""


def check_settings() -> None:
    """Every PYPTO_* setting read now (`pypto.settings.check_all`), PYPTO_VALIDATE's pipeline
    parsed too: the command line tools' first step, so that a bad one is their error line."""
    settings.check_all()
    _VALIDATE_SETTING()


def _arg_shapes(kernel: Kernel, args: tuple[Any, ...]) -> tuple[tuple[int, ...] | None, ...]:
    """The shapes of the tensor arguments, when the kernel indexes with `t[r, c]` (then they
    are part of the specialisation); () otherwise (a shape never recompiles such a kernel)."""
    if not kernel.uses_shapes:
        return ()
    return tuple(tuple(a.shape) if _is_device_tensor(a) and hasattr(a, "shape") else None
                 for a in args)


def _compile_slow(kernel: Kernel, args: tuple[Any, ...], block_dims: tuple[int, int, int],
                  resolved: Target, pipeline_text: str, check_uninitialized: bool,
                  schedule: str | None, race_check: bool,
                  validate: bool = False) -> CompiledKernel:
    """The full cache lookup, then lowering and the pipeline on a miss."""
    types = tuple(arg_type(a, i, kernel) for i, a in enumerate(args))
    while True:
        names = _constexpr_params(kernel)
        consts = _constexpr_values(kernel, names, args)
        shapes = _arg_shapes(kernel, args)
        key = (types, shapes, _shared_tensors(args), tuple(sorted(consts.items())), block_dims,
               pipeline_text, resolved,
               check_uninitialized, schedule, race_check, validate)
        cached = kernel.cache.get(key)
        if cached is not None and kernel.outer_values_unchanged(cached.folded_globals):
            return cached  # (a changed module-level constant compiles anew, as Triton does)
        folded: dict[str, Any] = {}
        try:
            module = lower_kernel(kernel, types, consts, folded, block_dims, launch_args=args,
                                  shapes=shapes)
            break
        except NeedsConstexpr as need:
            if need.params <= kernel.auto_constexpr:
                raise  # pragma: no cover - cannot make progress (a frontend bug)
            kernel.auto_constexpr.update(need.params)
    _mark_noalias(_kernel_func(module, kernel.name), args)
    _record_launch(module, kernel, args, block_dims)
    _verify(module, f"the frontend's output for kernel '{kernel.name}'")
    check_uniform_control(_kernel_func(module, kernel.name))
    remarks: list[Remark] = []
    if pipeline_text.strip() and not (pipeline_text == DEFAULT_PIPELINE and
                                      not _uses_block_features(module)):
        remarks = _run_pipeline(module, pipeline_text, block_dims, resolved, validate,
                                args)
    compiled = CompiledKernel(kernel, module, block_dims, resolved, pipeline_text,
                              check_uninitialized=check_uninitialized, schedule=schedule,
                              race_check=race_check, remarks=remarks)
    compiled.folded_globals = folded
    kernel.cache[key] = compiled
    return compiled


def _record_launch(module: ModuleOp, kernel: Kernel, args: Sequence[Any],
                   block: tuple[int, int, int]) -> None:
    """Record the launch in the IR (`pypto.ir.LAUNCH_ATTR`): the block and, per parameter the
    kernel function still has, its tensor's element count or its scalar value, so that
    `pypto-opt --emit=cost` on `ck.mlir` costs the same launch without `--arg`. A cached
    specialisation serves other sizes too: `compile` rewrites the record of the one it returns
    with the launch it was asked for (only when it differs)."""
    from pypto.ir import record_launch, recorded_launch

    tensor = _TENSOR or _tensor_class()
    kept = {a.name_hint for a in _kernel_func(module, kernel.name).body.block.args}
    values: dict[str, int | float] = {}
    for name, value in zip(kernel.params, args):
        if name not in kept:
            continue  # a constexpr parameter, folded into the IR
        if isinstance(value, tensor):
            values[name] = int(value.data.size)
        elif isinstance(value, (bool, int, np.integer)):
            values[name] = int(value)
        elif isinstance(value, np.ndarray):  # a host array standing for a tensor
            values[name] = int(value.size)
        elif isinstance(value, (float, np.floating)):
            values[name] = float(value)
    before = recorded_launch(module)
    if before is None or before[0] != tuple(block) or \
            before[1] != {k: (repr(v) if isinstance(v, float) else str(v))
                          for k, v in values.items()}:
        record_launch(module, block, values)


def _shared_tensors(args: Sequence[Any]) -> tuple[int, ...]:
    """Positions of device tensors passed more than once in one launch (usually none; a tensor
    and a `reshape` view of it count as one): their parameters may alias, the others are
    `pto.noalias` (pypto.analysis.alias)."""
    tensor = _TENSOR or _tensor_class()
    seen: dict[int, int] = {}
    shared: list[int] = []
    for position, value in enumerate(args):
        if type(value) is tensor or isinstance(value, tensor):
            first = seen.setdefault(id(value.storage), position)  # a view aliases its base
            if first != position:
                shared.extend((first, position))
    return tuple(sorted(set(shared)))


def _mark_noalias(kernel_op: Any, args: Sequence[Any]) -> None:
    """Mark the pointer parameters whose tensor is passed only once `pto.noalias`, so the
    passes may move their loads across stores through other parameters."""
    from pypto.analysis.alias import mark_noalias

    tensor = _TENSOR or _tensor_class()
    shared = set(_shared_tensors(args))
    mark_noalias(kernel_op, {i for i, a in enumerate(args)
                             if isinstance(a, tensor) and i not in shared})


def _uses_block_features(module: ModuleOp) -> bool:
    """Does the kernel use L1, a barrier, a tile instruction or a pipeline? The default
    pipeline (pto-verify-barriers: L1 races, in-flight copies, divergent barriers) has nothing
    to check in a kernel that does not; skipping it then saves the first compile() of an
    element-wise kernel the import of the barrier analyses (~80 ms)."""
    from pypto.dialects.traits import (
        declares_buffer,
        forwards_yield,
        is_block_collective,
        sync_scope,
    )

    return any(is_block_collective(op) or declares_buffer(op) or sync_scope(op) is not None
               or forwards_yield(op) for op in module.walk())


def _verify(module: ModuleOp, what: str) -> None:
    try:
        module.verify()
    except (VerifyException, DiagnosticException) as exc:
        raise VerificationError(f"{what} does not verify (a pypto bug, please report it):\n"
                                f"{exc}") from exc


_SCHEDULE_COSTER: Any = None
"""`pto-double-buffer`'s coster (pypto.backend.cost_model.schedule), made at the first compile
whose pipeline double-buffers; its cache serves every later compile of the process."""


def _costing(passes: Sequence[Any]) -> Any:
    """Let `pto-double-buffer` choose its schedules by the cost model
    (docs/passes.md#choosing-by-the-cost-model); nothing to install for other pipelines."""
    global _SCHEDULE_COSTER
    if not any(p.name == "pto-double-buffer" for p in passes):
        return contextlib.nullcontext()
    from pypto.backend.cost_model.schedule import ScheduleCoster
    from pypto.passes.double_buffer import costing_schedules

    if _SCHEDULE_COSTER is None:
        _SCHEDULE_COSTER = ScheduleCoster()
    return costing_schedules(_SCHEDULE_COSTER)


def _run_pipeline(module: ModuleOp, text: str, block: tuple[int, int, int],
                  target: Target, validate: bool = False,
                  like: Sequence[Any] | None = None) -> list[Remark]:
    import dataclasses

    from pypto.analysis.barriers import DEFAULT_BLOCK_SIZE
    from pypto.ir import make_context
    from pypto.passes import parse_pipeline, run_pipeline
    from pypto.diagnostics import OpDiagnostic, capture_diagnostics, op_location

    from pypto.passes import LOWERING_PASSES

    try:
        passes = parse_pipeline(text)
    except Exception as exc:
        raise CompileError(f"bad pipeline {text!r}: {exc}") from exc
    lowering = [p.name for p in passes if p.name in LOWERING_PASSES]
    if lowering:
        raise CompileError(f"bad pipeline {text!r}: '{lowering[0]}' lowers the kernel out of "
                           f"pto (the native backend's pipeline, docs/native.md); compile() "
                           f"takes pto-level passes; run a kernel natively with "
                           f"pto.launch(..., backend='native')")
    for index, p in enumerate(passes):
        # the barrier passes reason about the lanes of one block: give them the real one, and
        # the target's machine facts
        if getattr(p, "block_dims", None) == () and \
                getattr(p, "block_size", None) == DEFAULT_BLOCK_SIZE:
            p = passes[index] = dataclasses.replace(p, block_dims=block)
        elif getattr(p, "block_dims", None) == () and not hasattr(p, "block_size"):
            p = passes[index] = dataclasses.replace(p, block_dims=block)
        if getattr(p, "warp_size", None) == 0:
            p = passes[index] = dataclasses.replace(p, warp_size=target.warp_size,
                                                    max_block_lanes=target.max_block_lanes)
        # passes that read target data (npu-fuse-load-mma's [fusion]) read this target's
        if getattr(p, "target", None) == "" and target.path and \
                not target.path.endswith("default.toml"):
            p = passes[index] = dataclasses.replace(p, target=target.path)
        # the L1 passes reason about this target's L1
        if getattr(p, "l1_bytes", None) == 0:
            p = passes[index] = dataclasses.replace(p, l1_bytes=target.l1_bytes)
        if getattr(p, "align", None) == 0:
            passes[index] = dataclasses.replace(p, align=target.l1_align_bytes)
    remarks: list[Remark] = []

    def collect(diag: OpDiagnostic) -> None:
        location = None if diag.op is None else op_location(diag.op, unknown="") or None
        if diag.severity == "warning":
            warnings.warn(diag.message, stacklevel=2)
            return
        remark = Remark(diag.message, location)
        remarks.append(remark)
        import logging

        logging.getLogger(LOGGER_NAME).info("%s", remark)

    with capture_diagnostics(collect), _costing(passes):
        if not validate:
            run_pipeline(module, passes, make_context())
            return remarks
        from pypto.backend.validation import validate_pipeline

        ctx = make_context()
        validate_pipeline(module, passes, ctx, lambda m, p: run_pipeline(m, [p], ctx),
                          block=block, grid=(2, 1, 1), target=target, like=like)
    return remarks
