"""Target descriptions: capacities, sizes, latencies and bandwidths live in TOML data files.

Never hard-code a machine number elsewhere: read it from a `Target`. A user's file needs only
the keys it changes: it is merged over the package's `default.toml`, table by table and key by
key (calibration: `[cost.fused.latency] LOAD = 4` changes one latency and nothing else).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
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
    path: str = field(default="", compare=False)
    """The file it was read from (a user's file is merged over `default.toml`)."""

    def __hash__(self) -> int:
        """The hash of the compared fields, computed once: a target is part of the key of
        every cached compile (`pto.launch` looks it up at every launch)."""
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(getattr(self, f.name) for f in fields(self) if f.compare))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_hash", None)  # string hashes differ between processes: not pickled
        return state

    @property
    def described(self) -> str:
        """`name (file)` as the cost model's outputs name their target."""
        default = str(_HERE / "default.toml")
        where = self.path if self.path in ("", default) else f"{self.path} over {default}"
        return f"{self.name} ({where})" if where else self.name

    def section(self, *keys: str) -> dict[str, Any]:
        """A table of the file (`target.section("cost", "fused")`), {} when absent."""
        table: Any = self.extra
        for key in keys:
            table = table.get(key, {}) if isinstance(table, dict) else {}
        return table if isinstance(table, dict) else {}


_REQUIRED = ("name", "warp_size", "max_block_lanes", "l1_bytes", "hbm_bytes", "ai_cores",
             "clock_ghz", "hbm_bytes_per_cycle")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as err:
        raise TargetError(f"{path}: cannot read the target file: {err.strerror or err}; pass "
                          f"a path to a TOML file like pypto/backend/targets/default.toml, the "
                          f"name of a shipped target ({', '.join(shipped_targets())}), or "
                          f"target=None for the default target") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise TargetError(f"{path}: not a valid TOML target file: {err}") from None


_POSITIVE_INTS = ("warp_size", "max_block_lanes", "l1_bytes", "hbm_bytes", "ai_cores")
_POSITIVE_NUMBERS = ("clock_ghz", "hbm_bytes_per_cycle")


def shipped_targets() -> list[str]:
    """The names of the targets that ship with pypto (`default`, `ascend910b`, ...): each
    is `pypto/backend/targets/<name>.toml`, and `target="<name>"` selects it."""
    return sorted(p.stem for p in _HERE.glob("*.toml"))


def load_target(path: str | Path) -> Target:
    """Load a target description from a TOML file (see `default.toml` for the keys), merged
    over the default target: a file that sets only some keys keeps the others. The name of a
    shipped target (`"ascend910b"`, see `shipped_targets()`) selects its file.

    Raises `TargetError` naming the file (and the key) for a missing or unreadable file, bad
    TOML, a missing key or a value that is not a positive number of the right kind."""
    path = Path(path)
    if not path.exists() and path.suffix == "" and len(path.parts) == 1 and \
            (_HERE / f"{path}.toml").is_file():
        path = _HERE / f"{path}.toml"
    data = _read(path)
    default_path = _HERE / "default.toml"
    if path.resolve() != default_path.resolve():
        data = _merge(_read(default_path), data)
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
    known = {k: data.pop(k) for k in list(data)
             if k in _REQUIRED or k in ("description", "l1_align_bytes")}
    return Target(**known, extra=data, path=str(path))


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
