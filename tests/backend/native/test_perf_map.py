"""PYPTO_PERF_MAP (perf_map.py, docs/native.md#profiling-native-code): the JIT's functions
named in perf's map at the addresses the engine loaded them, compiled or from the disk cache."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native import perf_map
from pypto.backend.native.jit import ENTRY_SUFFIX, NativeKernel
from pypto.errors import UsageError


@pto.kernel
def scale(x, y, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.load(x + i) * 2.0)


def _map_lines(path: Path) -> list[tuple[int, int, str]]:
    rows = []
    for line in path.read_text().splitlines():
        start, size, name = line.split(" ", 2)
        rows.append((int(start, 16), int(size, 16), name))
    return rows


def test_functions_are_named_where_the_engine_put_them(monkeypatch, tmp_path):
    monkeypatch.setenv("PYPTO_PERF_MAP", "on")
    path = Path(f"/tmp/perf-{os.getpid()}.map")
    before = path.read_text() if path.exists() else ""
    x = np.arange(64, dtype=np.float32)
    compiled = pto.compile(scale, args=(x, x.copy(), 64), block=32)
    for _ in range(2):  # (compiled, then loaded from the disk cache)
        native = NativeKernel(compiled.func, compiled.name, compiled.block)
        entry = native.engine.get_function_address(compiled.name + ENTRY_SUFFIX)
        rows = _map_lines(path)[len(before.splitlines()):]
        hit = [r for r in rows if r[2] == f"pypto:scale:scale{ENTRY_SUFFIX}"]
        assert hit and hit[-1][0] == entry and hit[-1][1] > 0
        assert any(r[2] == "pypto:scale:scale" for r in rows)  # (the grid function)
        before = path.read_text()
    assert native.cached


def test_functions_of_a_non_elf_blob_are_none():
    assert perf_map.functions(b"MZ not an object") == []


def test_a_bad_value_is_a_usage_error(monkeypatch):
    monkeypatch.setenv("PYPTO_PERF_MAP", "sometimes")
    x = np.arange(64, dtype=np.float32)
    compiled = pto.compile(scale, args=(x, x.copy(), 64), block=32)
    with pytest.raises(UsageError, match="PYPTO_PERF_MAP"):
        NativeKernel(compiled.func, compiled.name, compiled.block)
