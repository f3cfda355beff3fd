"""Every module-level switch that changes the native object code is part of the disk cache's
key (docs/native.md#the-cache): an object compiled with a switch off must never be loaded with it
on, in a test that patches it or in any later process."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from pypto.backend.native import jit

NATIVE = Path(jit.__file__).parent
RUN_TIME_ONLY = {("replay", "ENABLED")}  # (a launch-time re-run on the interpreter: no code)


def _boolean_switches() -> list[tuple[str, str]]:
    """Each `NAME = True|False` at module level in the native backend's sources."""
    found = []
    for path in sorted(NATIVE.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                    isinstance(node.value.value, bool):
                found += [(path.stem, t.id) for t in node.targets
                          if isinstance(t, ast.Name) and t.id.isupper()]
    return found


SWITCHES = [s for s in _boolean_switches() if s not in RUN_TIME_ONLY]


def test_the_scan_finds_the_known_switches():
    assert {("tile_loops", "ENABLED"), ("copy_loops", "ENABLED"), ("mma_calls", "ENABLED"),
            ("pair_runs", "ENABLED")} <= set(SWITCHES)


@pytest.mark.parametrize("module,name", SWITCHES, ids=[f"{m}.{n}" for m, n in SWITCHES])
def test_flipping_a_switch_changes_the_cache_key(module, name, monkeypatch):
    mod = importlib.import_module(f"pypto.backend.native.{module}")
    before = jit.switches()
    monkeypatch.setattr(mod, name, not getattr(mod, name))
    assert jit.switches() != before, f"{module}.{name} is not in jit.SWITCHES"
