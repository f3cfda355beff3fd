"""The disk cache of a tuning sweep: one small JSON file per profiled (or checked) config.

A key is a SHA-256 of everything a config's result depends on: the kernel's fingerprint (its
source, the helpers it calls, the constants it names), the config, the launch (grid, block,
argument types, scalar values and the contents of the input tensors), the model, the pass
pipelines, the target (its fields and the contents of its files) and pypto itself (its version
and a digest of its installed source, so that a development checkout whose cost model changes
does not serve stale cycles). A re-run therefore profiles exactly the configs whose inputs
changed. Entries are written atomically; an unreadable entry is a miss.

Where: `$PYPTO_CACHE_DIR/autotune` when the variable is set, else the user's cache directory
(`$XDG_CACHE_HOME/pypto/autotune`, `~/.cache/pypto/autotune`; `~/Library/Caches/pypto/...` on
macOS, `%LOCALAPPDATA%\\pypto\\Cache\\...` on Windows). `pto.autotune(cache=PATH)` uses PATH,
`cache=False` none.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from pypto.backend.targets import Target
from pypto.settings import read

CACHE_ENV = "PYPTO_CACHE_DIR"


def default_cache_dir() -> Path:
    """`$PYPTO_CACHE_DIR/autotune`, else the platform's user cache directory's pypto/autotune."""
    root = read(CACHE_ENV)  # (a file there: its `UsageError`, pypto/settings.py)
    if root is not None:
        return Path(root) / "autotune"
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
        return base / "pypto" / "Cache" / "autotune"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "pypto" / "autotune"
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "pypto" / "autotune"


class DiskCache:
    """JSON entries under `root`, by key (a hex digest)."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with self._path(key).open(encoding="utf-8") as fh:
                value = json.load(fh)
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(value, fh)
            os.replace(tmp, path)
        except OSError:  # a read-only or full disk costs the cache, not the sweep
            pass

    def __repr__(self) -> str:
        return f"<autotune cache {self.root}>"


def digest(*parts: Any) -> str:
    """SHA-256 of the canonical JSON of `parts` (dict keys sorted)."""
    text = json.dumps(parts, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def target_digest(target: Target) -> str:
    """The target's fields and the contents of the files it was read from."""
    h = hashlib.sha256(repr(target).encode())
    default = Path(__file__).resolve().parents[1] / "backend" / "targets" / "default.toml"
    for path in dict.fromkeys([str(default), target.path]):
        if path:
            try:
                h.update(Path(path).read_bytes())
            except OSError:
                h.update(f"unreadable:{path}".encode())
    return h.hexdigest()


_PYPTO_DIGEST: str | None = None


def pypto_digest() -> str:
    """pypto's version and a digest of its source and data files (computed once)."""
    global _PYPTO_DIGEST
    if _PYPTO_DIGEST is None:
        from pypto import __version__

        package = Path(__file__).resolve().parents[1]
        h = hashlib.sha256(__version__.encode())
        for path in sorted(package.rglob("*")):
            if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(package)).encode())
                h.update(path.read_bytes())
        _PYPTO_DIGEST = h.hexdigest()
    return _PYPTO_DIGEST
