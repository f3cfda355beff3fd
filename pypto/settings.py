"""Every `PYPTO_*` environment setting of the package: the values it takes, its default, when it
is read, and its check (the table in docs/settings.md is `table()`).

A setting given a value it does not take raises a `UsageError` where it is read (`Setting.read_at`)
naming the variable, the value and the values it takes — never a silent fall-back to the
default: a misspelt `PYPTO_BACKEND=nativ` or `PYPTO_RACE_CHECK=of` would otherwise run with
another backend or checker than the user asked for, unseen. Unset, empty or blank means the
default. Nothing is read while `import pypto` runs (an error there would be a traceback before
any command line tool could report it); the tools (`pypto-opt`, `python -m pypto.debug`) run
`check_all()` first and print a bad setting as one error line.

`read(name)` parses the variable as it is now. Hot paths read through
`pypto.runtime.env.setting`, which parses again only when the raw value changed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.errors import FLAG_WORDS, FULL_TRACEBACK_ENV, parse_flag, setting_error


@dataclass(frozen=True)
class Setting:
    """One environment setting."""

    name: str
    takes: str
    """The values it takes, as the error and the docs say them."""
    default: str
    """What unset (or empty) means."""
    read_at: str
    """When it is read (and so where a bad value raises)."""
    see: str
    """The doc section that says what it does."""
    parse: Callable[[str], Any]
    """The value of a set (non-blank) variable; raises `ValueError` for one it does not take."""

    def value(self, raw: str | None, default: Any = None) -> Any:
        """`raw`'s value (`default` when unset or blank), or this setting's `UsageError`."""
        if raw is None or not raw.strip():
            return default
        try:
            return self.parse(raw)
        except ValueError:
            raise setting_error(self.name, raw, self.takes, self.default, self.see) from None


def _flag(raw: str) -> bool:
    try:
        return parse_flag("", raw, False, "")
    except ValueError:
        raise ValueError(raw) from None


def _choice(*words: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        word = raw.strip().lower()
        if word not in words:
            raise ValueError(raw)
        return word
    return parse


def _seconds_or_never(raw: str) -> float:
    word = raw.strip().lower()
    value = math.inf if word == "never" else float(word)  # (ValueError: not a number)
    if not value >= 0:  # negative, or nan
        raise ValueError(raw)
    return value


def _positive_int(raw: str) -> int:
    value = int(raw.strip().replace("_", ""))
    if value <= 0:
        raise ValueError(raw)
    return value


def _validate(raw: str) -> tuple[bool, str]:
    """(validate?, the pipeline to run and validate before each compile's own)."""
    word = raw.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True, ""
    if word in ("0", "false", "no", "off"):
        return False, ""
    return True, raw.strip()  # a pipeline (the compiler parses it: a bad one is its error)


def _directory(raw: str) -> Path:
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(raw)
    return path


def _file(raw: str) -> Path:
    path = Path(raw).expanduser()
    if path.is_dir() or not path.parent.is_dir():
        raise ValueError(raw)
    return path


BACKENDS = ("interpreter", "native", "auto", "tiered")
"""`PYPTO_BACKEND`'s values (pypto.compiler's `BACKENDS`)."""

SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("PYPTO_BACKEND", "interpreter, native, auto or tiered (any case)", "tiered",
            "at every launch that neither passes backend= nor follows pto.set_backend",
            "docs/native.md#choosing-a-backend", _choice(*BACKENDS)),
    Setting("PYPTO_NATIVE_AFTER", "a number of seconds >= 0, inf or never", "the cost of "
            "switching, estimated", "at every launch on the tiered backend",
            "docs/native.md#choosing-a-backend", _seconds_or_never),
    Setting("PYPTO_LAUNCH_BLOCKING", FLAG_WORDS, "off",
            "at every launch and memcpy_h2d", "docs/runtime.md#execution-model", _flag),
    Setting("PYPTO_RACE_CHECK", FLAG_WORDS, "on", "at every launch and compile",
            "docs/interpreter.md#the-race-detector", _flag),
    Setting("PYPTO_VALIDATE", f"{FLAG_WORDS}, or a pass pipeline to run and validate before "
            "each compile's own", "off", "at every launch and compile",
            "docs/compiler.md", _validate),
    Setting("PYPTO_MAX_TRIPS", "a positive whole number of loop trips (_ allowed)",
            "1,000,000", "at the start of every while loop the interpreter runs",
            "docs/runtime.md#the-watchdog", _positive_int),
    Setting("PYPTO_FAST_PATHS", FLAG_WORDS, "on",
            "once, at import (a bad value raises at every compile after it)",
            "docs/interpreter.md#the-access-planner", _flag),
    Setting("PYPTO_NATIVE_CACHE", "a directory (made if missing), not a file",
            "$XDG_CACHE_HOME/pypto/native, else ~/.cache/pypto/native",
            "at every native compile and disk cache look-up", "docs/native.md#the-cache",
            _directory),
    Setting("PYPTO_CACHE_DIR", "a directory (made if missing), not a file",
            "the platform's user cache directory's pypto", "when pto.autotune opens its cache",
            "docs/autotune.md", _directory),
    Setting("PYPTO_VALIDATE_LOG", "a file in an existing directory (appended to)", "no log",
            "at the end of every translation validation",
            "docs/reliability.md#translation-validation",
            _file),
    Setting("PYPTO_DEBUG_HISTORY", "a file in an existing directory",
            "~/.pypto_debug_history (set but empty: no history)", "when the debugger's prompt starts",
            "docs/debugging.md", _file),
    Setting("PYPTO_PERF_MAP", FLAG_WORDS, "off",
            "when the native backend loads a kernel (compiled or from the disk cache)",
            "docs/native.md#profiling-native-code", _flag),
    Setting(FULL_TRACEBACK_ENV, FLAG_WORDS, "off", "at every error pypto raises",
            "docs/runtime.md#errors", _flag),
)}
"""Every setting, by name."""


def read(name: str, default: Any = None) -> Any:
    """Setting `name`'s value now (`default` when unset or blank), or its `UsageError`."""
    return SETTINGS[name].value(os.environ.get(name), default)


def check_all() -> None:
    """Read every setting now: the first one set to a value it does not take raises (the
    command line tools call this first)."""
    for setting in SETTINGS.values():
        setting.value(os.environ.get(setting.name))


def table() -> str:
    """The Markdown table of every setting (docs/settings.md)."""
    rows = ["| setting | takes | unset or empty | read | see |", "|---|---|---|---|---|"]
    rows += [f"| `{s.name}` | {s.takes} | {s.default} | {s.read_at} | {s.see} |"
             for s in SETTINGS.values()]
    return "\n".join(rows) + "\n"


__all__ = ["BACKENDS", "SETTINGS", "Setting", "check_all", "read", "table"]
