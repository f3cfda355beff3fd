"""The exception hierarchy of pypto (docs/runtime.md#errors, docs/language.md#errors).

Every error a user can see is a subclass of `PtoError`, so `except pto.PtoError` catches anything
pypto raises on purpose. Messages always say *where* (Python `file:line:col`, or `.mlir line:col`)
and, where there is one, *what to do*.
"""

from __future__ import annotations

import functools
import linecache
import os
import re
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar


class PtoError(Exception):
    """Base class of every error pypto raises on purpose."""


class CompileError(PtoError):
    """The Python kernel is outside the language, or ill-typed.

    The message starts with `file:line:col:` of the offending source, then shows the source line
    with a caret under the column.
    """

    def __init__(self, message: str, *, filename: str | None = None, line: int | None = None,
                 col: int | None = None, source_line: str | None = None):
        self.filename = filename
        self.line = line
        self.col = col
        self.bare_message = message
        text = message
        if filename is not None and line is not None:
            text = f"{filename}:{line}:{(col or 0) + 1}: error: {message}"
            if source_line is not None:
                stripped = source_line.rstrip("\n")
                text += f"\n    {stripped}\n    {' ' * (col or 0)}^"
        super().__init__(text)


class BarrierError(CompileError):
    """`pto-verify-barriers` found a hazard, or a barrier / tile op under divergent control."""


class L1CapacityError(CompileError):
    """The kernel's L1 buffers (after double buffering) exceed the target's L1."""


class VerificationError(PtoError):
    """IR that does not verify (a pass bug or hand-written bad IR)."""


class KernelError(PtoError):
    """A kernel failed while running; names the kernel and the Python source line, and shows
    that line with a caret under the column, as a `CompileError` does."""

    def __init__(self, message: str, *, kernel: str | None = None, location: str | None = None,
                 called_from: Sequence[str] = ()):
        self.kernel = kernel
        self.location = location
        self.bare_message = message
        self.called_from = tuple(called_from)  # an inlined helper's calls, innermost first
        prefix = ""
        if location:
            prefix += f"{location}: "
        if kernel:
            prefix += f"in kernel '{kernel}': "
        notes = "".join(f"\n{call}: note: called from here{source_caret(call)}"
                        for call in self.called_from)
        super().__init__(prefix + message + source_caret(location) + notes)


_LOCATION = re.compile(r"^(.*):(\d+):(\d+)$")


def source_caret(location: str | None) -> str:
    """`\\n    <source line>\\n    ^` for a `file:line:col` location whose file can be read
    (empty otherwise)."""
    match = _LOCATION.match(location or "")
    if match is None:
        return ""
    filename, line, col = match.group(1), int(match.group(2)), int(match.group(3))
    text = linecache.getline(filename, line).rstrip("\n")
    if not text.strip():
        return ""
    return f"\n    {text}\n    {' ' * max(col - 1, 0)}^"


class MemoryAccessError(KernelError):
    """An out-of-bounds HBM or L1 access (kernel, line, block, lane, address, bounds)."""

    def __init__(self, message: str, *, kernel: str | None = None, location: str | None = None,
                 block: tuple[int, int, int] | None = None, lane: tuple[int, int, int] | None = None,
                 address: int | None = None, bounds: tuple[int, int] | None = None,
                 buffer: str | None = None, called_from: Sequence[str] = ()):
        self.block = block
        self.lane = lane
        self.address = address
        self.bounds = bounds
        self.buffer = buffer
        super().__init__(message, kernel=kernel, location=location, called_from=called_from)


class RaceError(KernelError):
    """A cross-warp L1 hazard not ordered by `barrier_block` (both accesses named)."""


class DeadlockError(KernelError):
    """A block barrier not reached by all lanes, a wait on nothing, an endless wait."""


class KernelInterruptedError(KernelError):
    """A launch stopped part-way: a `KeyboardInterrupt` (Ctrl-C) or another `BaseException`
    arrived while it ran inside a synchronising call, or the process forked while another thread
    ran it (in the child). Its output tensors may hold partial results; reported at the next
    synchronising call, like any kernel error (docs/reliability.md, "Fork and signals")."""


class TensorFreedError(PtoError):
    """A freed device tensor was used."""


class DeviceOutOfMemoryError(PtoError):
    """`alloc_tensor` beyond the target's HBM capacity."""


class DeviceUnavailableError(PtoError):
    """`profile_on_npu` without an NPU backend."""


class LaunchError(PtoError):
    """Bad grid / block (zero, negative, larger than the target allows) or wrong argument arity."""


class UsageError(PtoError, TypeError, ValueError):
    """A host API called with an argument of the wrong type or value (`memcpy_h2d(dst, src)` with
    mismatched dtypes, `alloc_tensor(nbytes=-4)`, `compile(pipeline=123)`).

    Also a `TypeError` and a `ValueError`, as Python's own argument errors are, so both
    `except pto.PtoError` and the usual `except TypeError` / `except ValueError` catch it."""


class TargetError(UsageError):
    """A target description that cannot be used: missing file, bad TOML, missing or bad keys."""


FULL_TRACEBACK_ENV = "PYPTO_FULL_TRACEBACK"
"""Set to 1 to keep pypto's own frames in the tracebacks of the errors it raises."""

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})
"""The words of an on/off environment setting (any case, spaces around ignored)."""
FLAG_WORDS = "1, true, yes or on / 0, false, no or off (any case)"


def setting_error(name: str, value: str, takes: str, default: str, see: str) -> UsageError:
    """The `UsageError` of environment setting `name` given `value`, which it does not take:
    it names the variable, the value, the values it takes, what unset means, and the doc
    (pypto/settings.py has every setting's `takes`, `default` and `see`). Its `setting`
    attribute is `name` (the command line tools print it as the environment's error)."""
    error = UsageError(f"environment setting {name}={value!r} is not a value it takes: it "
                       f"takes {takes}; unset or empty means {default}; set one of those or "
                       f"unset it ({see})")
    error.setting = name  # type: ignore[attr-defined]
    return error


def parse_flag(name: str, value: str | None, default: bool, see: str) -> bool:
    """An on/off setting's value: `default` when unset or blank, else one of the flag words
    (`setting_error` for another word: a misspelt `of` must not silently mean the default)."""
    if value is None or not value.strip():
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise setting_error(name, value, FLAG_WORDS, "on" if default else "off", see)

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _is_internal(tb: TracebackType) -> bool:
    filename = tb.tb_frame.f_code.co_filename
    return filename.startswith(_PACKAGE_DIR) or filename.startswith("<pto ")


def hide_internal_frames(exc: BaseException) -> None:
    """Drop pypto's own frames (and the interpreter's generated kernel code) from
    `exc.__traceback__`, so that the traceback ends at the user's line (docs/runtime.md#errors). Frames of the
    user's code called back by pypto (a `grid` callable) are kept. Nothing is dropped when
    `PYPTO_FULL_TRACEBACK=1` (read here, at every error; another word than a flag's raises
    its `UsageError` in place of `exc`, which stays attached as its context)."""
    if parse_flag(FULL_TRACEBACK_ENV, os.environ.get(FULL_TRACEBACK_ENV), False,
                  "docs/settings.md"):
        return
    kept: list[TracebackType] = []
    tb = exc.__traceback__
    while tb is not None:
        if not _is_internal(tb):
            kept.append(tb)
        tb = tb.tb_next
    for outer, inner in zip(kept, kept[1:]):
        outer.tb_next = inner
    if kept:
        kept[-1].tb_next = None
    exc.__traceback__ = kept[0] if kept else None


F = TypeVar("F", bound=Callable[..., Any])


def public_api(fn: F) -> F:
    """Mark `fn` as an entry point of the public API: a `PtoError` leaving it carries no pypto
    frames (see `hide_internal_frames`). The bare `raise` keeps this wrapper's frame out too."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PtoError as exc:
            hide_internal_frames(exc)
            raise

    return wrapper  # type: ignore[return-value]


__all__ = [
    "PtoError", "CompileError", "BarrierError", "L1CapacityError", "VerificationError",
    "KernelError", "MemoryAccessError", "RaceError", "DeadlockError", "KernelInterruptedError",
    "TensorFreedError",
    "DeviceOutOfMemoryError", "DeviceUnavailableError", "LaunchError", "UsageError", "TargetError",
]
