"""Environment settings read at every use, for the cost of a dictionary lookup.

`PYPTO_LAUNCH_BLOCKING`, `PYPTO_RACE_CHECK` and `PYPTO_VALIDATE` are documented as read at every
launch / compile, so that a program (or a test, with `monkeypatch.setenv`) can change them at
any time. `os.environ.get` costs ~0.65 us (key encoding, a `Mapping.get` in Python, value
decoding); three of them were ~5 % of a cached launch. `EnvSetting` reads the raw value from the
mapping `os.environ` itself updates (CPython's `os.environ._data`, ~0.03 us) and parses it again
only when that raw value object changes, so a change made through `os.environ` (setenv, delenv,
`os.environ[...] = ...`) is seen at the very next read, exactly as before. Where the private
mapping is missing (another Python implementation) it falls back to `os.environ.get`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_DATA: Any = getattr(os.environ, "_data", None)
_ENCODE: Any = getattr(os.environ, "encodekey", None)
_UNSET = object()


class EnvSetting(Generic[T]):
    """One environment variable and how to read it: `setting()` is `parse(os.environ.get(name))`,
    re-parsed only when the variable's raw value changed since the last call."""

    def __init__(self, name: str, parse: Callable[[str | None], T]) -> None:
        self.name = name
        self._parse = parse
        self._key = _ENCODE(name) if _DATA is not None and _ENCODE is not None else None
        self._raw: Any = _UNSET
        self._value: T | None = None

    def __call__(self) -> T:
        if self._key is None:  # no private mapping: the plain (slower) read every time
            return self._parse(os.environ.get(self.name))
        raw = _DATA.get(self._key)
        if raw is not self._raw:
            self._value = self._parse(os.environ.get(self.name))
            self._raw = raw
        return self._value  # type: ignore[return-value]


FALSE_WORDS = frozenset({"0", "false", "no", "off"})
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


def flag(name: str, default: bool) -> EnvSetting[bool]:
    """A boolean setting: `1/true/yes/on` turn it on and `0/false/no/off` off (any case, spaces
    ignored); unset, empty or another word gives `default` in the direction the callers had
    (a default-on flag is off only for an off word, a default-off flag on only for an on word)."""
    if default:
        return EnvSetting(name, lambda v: v is None or v.strip().lower() not in FALSE_WORDS)
    return EnvSetting(name, lambda v: v is not None and v.strip().lower() in TRUE_WORDS)
