"""What crosses the process boundary of a tuning sweep, by value.

A sweep's tasks may run in this process (`executor=None`, a thread pool), in forked or spawned
processes (a process pool) or on Dask workers. None of them receives a live device tensor or a
compiled kernel: a task carries

- a `KernelRef`: where the kernel is defined (module, qualified name, file) and its source text.
  A worker finds the same `@pto.kernel` object in its own process (the live one when it is this
  process or a fork of it, else by importing the module, or loading the file of a script) and
  refuses to run when the source it finds differs from the source shipped (a file edited
  during the sweep, or a worker with other code);
- `HostArgs`: the launch arguments, device tensors replaced by NumPy copies of their contents
  taken once when the sweep starts (after `pto.sync()`). A worker makes fresh device tensors
  from them for every run, so no run sees another's outputs and the user's tensors are never
  written by tuning.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
import textwrap
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from pypto.dtypes import DType, as_dtype
from pypto.errors import PtoError, UsageError
from pypto.frontend.kernel import Kernel
from pypto.frontend.python_ast import parse_python

_LIVE: weakref.WeakValueDictionary[str, Kernel] = weakref.WeakValueDictionary()
"""Kernels being tuned in this process, by token: a task running here (or in a fork of this
process) uses the live object, whose compiled variants are cached."""

_LOADED: dict[str, Any] = {}
"""Scripts loaded by file in this (worker) process, by path."""

_LOAD_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    """A lock another thread held at a fork stays held in the child: a new one
    (docs/reliability.md#threads)."""
    global _LOAD_LOCK
    _LOAD_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


@dataclass(frozen=True)
class KernelRef:
    """A `@pto.kernel` named by value: where it is defined and its source text."""

    token: str
    module: str
    qualname: str
    filename: str
    source: str
    name: str

    @classmethod
    def of(cls, kernel: Kernel) -> KernelRef:
        fn = kernel.fn
        token = f"{os.getpid()}:{id(kernel)}"
        _LIVE[token] = kernel
        return cls(token, fn.__module__, fn.__qualname__, kernel.source.filename,
                   _source_text(fn), kernel.name)

    def resolve(self) -> Kernel:
        """The kernel in this process (see the module docstring); `PtoError` when it cannot be
        found or its source differs from the one shipped."""
        live = _LIVE.get(self.token)
        if live is not None and _source_text(live.fn) == self.source:
            return live
        if "<locals>" in self.qualname:
            raise PtoError(f"kernel '{self.name}' is defined inside a function "
                           f"({self.qualname}), so another process cannot import it; define it "
                           f"at module level to tune it on a process pool or a cluster "
                           f"(executor=None or a thread pool run it in this process)")
        found = _lookup(_module_of(self), self.qualname)
        if not isinstance(found, Kernel):
            raise PtoError(f"{self.module}.{self.qualname} is {type(found).__name__} in this "
                           f"worker, not the @pto.kernel '{self.name}' being tuned")
        if _source_text(found.fn) != self.source:
            raise PtoError(f"kernel '{self.name}' in this worker ({found.source.filename}) has "
                           f"another source than the one being tuned ({self.filename}): the "
                           f"file changed during the sweep, or the worker runs other code; "
                           f"give the workers the same files")
        _LIVE[self.token] = found
        return found


def _source_text(fn: Any) -> str:
    return textwrap.dedent(inspect.getsource(fn))


def _module_of(ref: KernelRef) -> Any:
    main = sys.modules.get("__main__")
    if ref.module != "__main__":
        module = sys.modules.get(ref.module)
        if module is not None:
            return module
        try:
            return importlib.import_module(ref.module)
        except ImportError:
            pass  # not on this worker's path: load the file it was defined in
    elif main is not None and _same_file(getattr(main, "__file__", None), ref.filename):
        return main  # a forked or spawned child of the tuning script
    return _load_file(ref)


def _same_file(a: str | None, b: str) -> bool:
    try:
        return a is not None and os.path.samefile(a, b)
    except OSError:
        return False


def _load_file(ref: KernelRef) -> Any:
    """Import the file a kernel is defined in under a private name, once per process (as
    multiprocessing's spawn runs the main script as `__mp_main__`: code under
    `if __name__ == "__main__":` does not run)."""
    path = os.path.abspath(ref.filename)
    with _LOAD_LOCK:
        if path in _LOADED:
            return _LOADED[path]
        if not os.path.exists(path):
            raise PtoError(f"kernel '{ref.name}': this worker cannot import module "
                           f"'{ref.module}' nor read {ref.filename}; install the kernel's "
                           f"package on the workers or give them the same files")
        name = "__pypto_tune_" + hashlib.sha1(path.encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        folder = os.path.dirname(path)
        if folder not in sys.path:  # a script imports its neighbours as `python script.py` does
            sys.path.insert(0, folder)
        spec.loader.exec_module(module)
        _LOADED[path] = module
        return module


def _lookup(module: Any, qualname: str) -> Any:
    value = module
    for part in qualname.split("."):
        value = getattr(value, part, None)
        if value is None:
            raise PtoError(f"module {getattr(module, '__name__', module)} has no {qualname} in "
                           f"this worker")
        if isinstance(value, Kernel):
            return value
    return value


# --- the kernel's fingerprint, for the disk cache ---------------------------------------------

def kernel_fingerprint(kernel: Kernel) -> str:
    """A digest of everything the kernel's code depends on in Python: its source, the source of
    the Python functions it calls (helpers, other kernels), and the values of the module
    constants and closed-over numbers it names. Modules (`pto`, `np`) count by name only."""
    parts: list[str] = []
    seen: set[int] = set()

    def visit(fn: Any) -> None:
        if id(fn) in seen:
            return
        seen.add(id(fn))
        source = _source_text(fn)
        parts.append(source)
        outer = dict(fn.__globals__)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                outer[name] = cell.cell_contents
            except ValueError:  # pragma: no cover - an empty cell
                pass
        names = sorted({n.id for n in ast.walk(parse_python(source)) if isinstance(n, ast.Name)})
        for name in names:
            if name not in outer:
                continue
            value = outer[name]
            function = value.fn if isinstance(value, Kernel) else \
                getattr(value, "__wrapped__", value)
            if isinstance(value, bool | int | float | complex | str | bytes | np.generic) or \
                    value is None or (isinstance(value, tuple) and len(repr(value)) < 10_000):
                parts.append(f"{name}={value!r}")
            elif inspect.isfunction(function) and not _is_pypto(function):
                visit(function)

    visit(kernel.fn)
    return hashlib.sha256("\n\0".join(parts).encode()).hexdigest()


def _is_pypto(fn: Any) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return module == "pypto" or module.startswith("pypto.")


# --- launch arguments by value ------------------------------------------------------------------

@dataclass(frozen=True)
class TensorArg:
    """A device tensor argument, by value: a host copy of its contents."""

    data: np.ndarray
    dtype_name: str

    @property
    def dtype(self) -> DType:
        return as_dtype(self.data.dtype)

    def digest(self) -> str:
        """Its dtype, size and contents (a cache key part)."""
        h = hashlib.sha256(f"{self.dtype_name}:{self.data.size}:".encode())
        h.update(np.ascontiguousarray(self.data).view(np.uint8).data)
        return h.hexdigest()


@dataclass(frozen=True)
class HostArgs:
    """The launch arguments of one config: scalars as they are, tensors as `TensorArg`s."""

    values: tuple[Any, ...]

    @contextmanager
    def on_device(self) -> Iterator[tuple[Any, ...]]:
        """Fresh device tensors filled from the host copies (freed on exit), with the scalars."""
        from pypto.runtime import alloc_tensor, memcpy_h2d

        made: dict[int, Any] = {}  # by host copy: arguments that were one tensor still are
        try:
            out = []
            for value in self.values:
                if isinstance(value, TensorArg):
                    if id(value) not in made:
                        made[id(value)] = t = alloc_tensor(value.data.nbytes, dtype=value.dtype)
                        memcpy_h2d(t, value.data)
                    out.append(made[id(value)])
                else:
                    out.append(value)
            from pypto.runtime import sync

            sync()  # the copies are queued: run them before a task executes the kernel directly
            yield tuple(out)
        finally:
            for t in made.values():
                try:
                    t.free()
                except PtoError:
                    pass  # the run's own error was reported; the memory is released anyway


def read_back(args: Sequence[Any]) -> dict[int, np.ndarray]:
    """Host copies of the device tensors among `args` after a run, by position."""
    from pypto.runtime import memcpy_d2h

    out = {}
    for i, value in enumerate(args):
        if _is_tensor(value):
            host = np.empty(value.size, dtype=value.dtype.np_dtype)
            memcpy_d2h(host, value)
            out[i] = host
    return out


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "freed") and hasattr(value, "nbytes") and hasattr(value, "dtype")


def snapshot(kernel: Kernel, args: Sequence[Any], skip: Any = None) -> list[Any]:
    """Host copies of the tensor arguments (waiting for queued work on them first), NumPy
    arrays copied as they are, scalars checked (`skip` kept as it is); `UsageError` naming the
    argument otherwise."""
    from pypto.runtime import memcpy_d2h
    from pypto.runtime.host_arrays import array_dtype

    out: list[Any] = []
    copies: dict[int, TensorArg] = {}  # one copy per tensor: aliased arguments stay aliased
    for i, value in enumerate(args):
        if value is skip:
            out.append(value)
        elif _is_tensor(value):
            if id(value) not in copies:
                value.check_alive(f"the argument for parameter '{kernel.params[i]}'")
                host = np.empty(value.size, dtype=value.dtype.np_dtype)
                memcpy_d2h(host, value)
                copies[id(value)] = TensorArg(host, value.dtype.name)
            out.append(copies[id(value)])
        elif isinstance(value, np.ndarray) and value.ndim > 0:  # read only: never written back
            if id(value) not in copies:
                dt = array_dtype(value, entry=f"pto.autotune of kernel '{kernel.name}'",
                                 kernel=kernel, position=i)
                host = np.array(value, dtype=dt.np_dtype, copy=True, order="C").reshape(-1)
                copies[id(value)] = TensorArg(host, dt.name)
            out.append(copies[id(value)])
        elif isinstance(value, np.generic):
            out.append(value.item())
        elif isinstance(value, bool | int | float):
            out.append(value)
        else:
            raise UsageError(f"pto.autotune of kernel '{kernel.name}': the argument for "
                             f"parameter '{kernel.params[i]}' is {type(value).__name__}; pass "
                             f"device tensors, NumPy arrays, ints or floats")
    return out
