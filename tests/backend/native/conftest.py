"""Every native backend test compiles into a fresh object-code cache."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    """Each test compiles into its own disk cache (docs/native.md#the-cache): no test reads
    object code another one wrote."""
    monkeypatch.setenv("PYPTO_NATIVE_CACHE", str(tmp_path / "native"))
