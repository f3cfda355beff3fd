"""Environment settings read at every use, for the cost of a dictionary lookup.

`PYPTO_LAUNCH_BLOCKING`, `PYPTO_RACE_CHECK` and `PYPTO_VALIDATE` are documented as read at every
launch / compile, so that a program (or a test, with `monkeypatch.setenv`) can change them at
any time. `os.environ.get` costs ~0.65 us (key encoding, a `Mapping.get` in Python, value
decoding); three of them were ~5 % of a cached launch. A `setting` reads the raw value from the
mapping `os.environ` itself updates (CPython's `os.environ._data`, ~0.03 us) and parses it again
only when that raw value object changes, so a change made through `os.environ` (setenv, delenv,
`os.environ[...] = ...`) is seen at the very next read, exactly as before. Where the private
mapping is missing (another Python implementation) it falls back to `os.environ.get`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from pypto.errors import FALSE_WORDS, TRUE_WORDS, parse_flag  # noqa: F401 (FALSE/TRUE_WORDS: re-exported)
from pypto.settings import SETTINGS

T = TypeVar("T")

_DATA: Any = getattr(os.environ, "_data", None)
_ENCODE: Any = getattr(os.environ, "encodekey", None)
_UNSET = object()


def setting(name: str, parse: Callable[[str | None], T]) -> Callable[[], T]:
    """A reader of one environment variable: `read()` is `parse(os.environ.get(name))`,
    re-parsed only when the variable's raw value changed since the last call (a closure, not
    an object with `__call__`: calling it is what every launch pays)."""
    if _DATA is None or _ENCODE is None:  # no private mapping: the plain (slower) read
        return lambda: parse(os.environ.get(name))
    key = _ENCODE(name)
    get = _DATA.get
    seen: list[Any] = [_UNSET, None]  # [raw value last parsed, its parse]

    def read() -> T:
        raw = get(key)
        if raw is not seen[0]:  # identity: the cached raw value is kept alive, never reused
            seen[1] = parse(os.environ.get(name))
            seen[0] = raw
        return seen[1]  # type: ignore[no-any-return]

    return read


def flag(name: str, default: bool) -> Callable[[], bool]:
    """A boolean setting: `1/true/yes/on` turn it on and `0/false/no/off` off (any case, spaces
    ignored); unset or empty gives `default`; another word raises the setting's `UsageError`
    at that read (pypto/settings.py: a misspelt word must not silently mean the default)."""
    known = SETTINGS.get(name)
    see = known.see if known is not None else "docs/settings.md"
    return setting(name, lambda v: parse_flag(name, v, default, see))


def registered(name: str, default: Any = None) -> Callable[[], Any]:
    """The reader of the registered setting `name` (pypto/settings.py): its value, `default`
    when unset or blank, its `UsageError` for a value it does not take."""
    known = SETTINGS[name]
    return setting(name, lambda v: known.value(v, default))
