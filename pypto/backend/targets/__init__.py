"""Target descriptions: capacities, sizes and (later) latencies live in TOML data files.

Never hard-code a machine number elsewhere: read it from a `Target`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def load_target(path: str | Path) -> Target:
    """Load a target description from a TOML file (see `default.toml` for the keys)."""
    path = Path(path)
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise ValueError(f"{path}: target file is missing keys: {', '.join(missing)}")
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
    return load_target(target)
