"""Target descriptions: capacities, sizes and (later) latencies live in TOML data files.

Never hard-code a machine number elsewhere: read it from a `Target`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto.errors import TargetError

_HERE = Path(__file__).parent


@dataclass(frozen=True)
class Target:
    name: str
    warp_size: int
    max_block_lanes: int
    l1_bytes: int
    hbm_bytes: int
    ai_cores: int
    clock_ghz: float
    hbm_bytes_per_cycle: float
    description: str = ""
    l1_align_bytes: int = 32
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


_REQUIRED = ("name", "warp_size", "max_block_lanes", "l1_bytes", "hbm_bytes", "ai_cores",
             "clock_ghz", "hbm_bytes_per_cycle")


_POSITIVE_INTS = ("warp_size", "max_block_lanes", "l1_bytes", "hbm_bytes", "ai_cores")
_POSITIVE_NUMBERS = ("clock_ghz", "hbm_bytes_per_cycle")


def load_target(path: str | Path) -> Target:
    """Load a target description from a TOML file (see `default.toml` for the keys).

    Raises `TargetError` naming the file (and the key) for a missing or unreadable file, bad
    TOML, a missing key or a value that is not a positive number of the right kind."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except OSError as err:
        raise TargetError(f"{path}: cannot read the target file: {err.strerror or err}; pass "
                          f"a path to a TOML file like pypto/backend/targets/default.toml, or "
                          f"target=None for the default target") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise TargetError(f"{path}: not a valid TOML target file: {err}") from None
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise TargetError(f"{path}: target file is missing keys: {', '.join(missing)} (see "
                          f"pypto/backend/targets/default.toml)")
    for key in _POSITIVE_INTS:
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise TargetError(f"{path}: '{key}' must be a positive integer, got {value!r}")
    for key in _POSITIVE_NUMBERS:
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 \
                or value == float("inf"):
            raise TargetError(f"{path}: '{key}' must be a positive number, got {value!r}")
    if not isinstance(data["name"], str) or not data["name"]:
        raise TargetError(f"{path}: 'name' must be a non-empty string, got {data['name']!r}")
    if data["max_block_lanes"] % data["warp_size"]:
        raise TargetError(f"{path}: max_block_lanes ({data['max_block_lanes']}) must be a "
                          f"multiple of warp_size ({data['warp_size']})")
    known = {k: data.pop(k) for k in list(data) if k in _REQUIRED or k in ("description", "l1_align_bytes")}
    return Target(**known, extra=data)


_DEFAULT: Target | None = None


def default_target() -> Target:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = load_target(_HERE / "default.toml")
    return _DEFAULT


def resolve_target(target: Target | str | Path | None) -> Target:
    """`None` -> the default target; a path -> that file; a `Target` -> itself."""
    if target is None:
        return default_target()
    if isinstance(target, Target):
        return target
    if not isinstance(target, str | Path):
        raise TargetError(f"target must be None, a pypto Target or the path of a target TOML "
                          f"file, got {type(target).__name__} {target!r}")
    return load_target(target)
