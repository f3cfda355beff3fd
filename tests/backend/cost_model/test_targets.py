"""The shipped targets: every parameter names its public source (or says it is assumed), the
910B-class target loads by name, and its figures reproduce the single instructions pto-isa's
system tests measured on a 910B3 (bench/calibrate.py, the table in docs/cost-model.md)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import pypto as pto
from pypto.backend.cost_model import ModelParams
from pypto.backend.targets import load_target, resolve_target, shipped_targets
from pypto.errors import TargetError

ROOT = Path(__file__).resolve().parents[3]
TARGETS = ROOT / "pypto" / "backend" / "targets"
sys.path.insert(0, str(ROOT / "bench"))
import calibrate  # noqa: E402

_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([^#]*?)\s*(#.*)?$")
_SOURCED = re.compile(r"\[[A-Z0-9-]+|assumed|pypto's")


def unsourced(text: str) -> list[str]:
    """Keys whose line (and the comment lines continuing it) neither names a [SOURCE] nor says
    assumed; tables with a `source` key and zero-cost kinds are sourced as a whole."""
    lines = text.splitlines()
    tables: dict[str, list[int]] = {}
    table = ""
    for i, line in enumerate(lines):
        header = re.match(r"^\s*\[([^\]]+)\]", line)
        if header:
            table = header.group(1)
        tables.setdefault(table, []).append(i)
    sourced_tables = {t for t, rows in tables.items()
                      if any(re.match(r"^\s*source\s*=", lines[r]) for r in rows)}
    out = []
    table = ""
    for i, line in enumerate(lines):
        header = re.match(r"^\s*\[([^\]]+)\]", line)
        if header:
            table = header.group(1)
            continue
        m = _ASSIGNMENT.match(line)
        if not m or m.group(1) in ("name", "description", "level", "source"):
            continue
        parent = table.rsplit(".", 1)[0]
        if table in sourced_tables or parent in sourced_tables or m.group(2) == "0":
            continue
        comment = m.group(3) or ""
        j = i + 1
        while j < len(lines) and re.match(r"^\s+#", lines[j]):
            comment += lines[j]
            j += 1
        if not _SOURCED.search(comment):
            out.append(f"[{table}] {m.group(1)}")
    return out


@pytest.mark.parametrize("name", ["default", "ascend910b"])
def test_every_parameter_names_its_source_or_says_assumed(name):
    assert unsourced((TARGETS / f"{name}.toml").read_text()) == []


def test_the_source_check_catches_a_bare_number():
    assert unsourced("[cost]\nfoo = 3\nbar = 4  # [HC31]\nbaz = 5  # (assumed)\n") == \
        ["[cost] foo"]


def test_the_910b_target_loads_by_name_with_its_own_machine():
    assert {"default", "ascend910b"} <= set(shipped_targets())
    t = resolve_target("ascend910b")
    assert t.name == "ascend910b" and t.path.endswith("ascend910b.toml")
    assert (t.ai_cores, t.l1_bytes, t.clock_ghz) == (20, 512 * 1024, 1.85)
    p = ModelParams.of(t, "fused")
    assert (p.cube_fp32_rate, p.vector_cycles_per_repeat, p.l2_bytes) == (0.25, 2, 192 << 20)
    with pytest.raises(TargetError, match="shipped target.*ascend910b"):
        load_target("ascend910c")


def test_the_910b_target_sets_every_physics_key_itself():
    """[cost.launch] and [cost.memory] are this core's, each sourced, not inherited silently
    from the default target."""
    import tomllib

    default = tomllib.loads((TARGETS / "default.toml").read_text())["cost"]
    b910 = tomllib.loads((TARGETS / "ascend910b.toml").read_text())["cost"]
    for table in ("launch", "memory"):
        assert set(b910[table]) == set(default[table]), table
    p = ModelParams.of(resolve_target("ascend910b"), "fused")
    assert p.launch_cycles == 1850 and p.hbm_latency == 200


def test_profile_and_the_cli_take_the_target_by_name(capsys, tmp_path):
    from pypto.tools.opt import main

    d = pto.alloc_tensor(64 * 4)
    a, b = (pto.profile(calibrate.mma_chain, grid=1, block=64, args=(d, 64, 64, 64, 1),
                        target=t) for t in (None, "ascend910b"))
    assert a.total_cycles != b.total_cycles
    assert "ascend910b" in b.header
    mlir = tmp_path / "k.mlir"
    mlir.write_text(pto.compile(calibrate.mma_chain, args=(d, 64, 64, 64, 1), block=64,
                                pipeline="").mlir)
    assert main([str(mlir), "--emit=cost", "--target", "ascend910b", "--block", "64",
                 "--arg", "count=1", "--arg", "X=64"]) == 0
    out = capsys.readouterr().out
    assert "target ascend910b" in out


def test_mma_figures_are_the_910b3_measurements():
    """Fractal padding (m, n to 16, K to 32 bytes), the fp32 rate and the Cube's head are
    modelled, not fitted per shape: every measured MMA comes out to the cycle."""
    for name, shape, measured, (b910, _), _ in calibrate.mma_rows():
        assert b910 == measured, (name, shape)


def test_tile_load_figures_are_within_one_percent_of_the_910b3_measurements():
    for name, shape, measured, (b910, _), _ in calibrate.load_rows():
        assert abs(b910 - measured) <= 0.01 * measured, (name, shape, b910)


@pto.kernel
def _copy_then_use(src, C, cube: pto.constexpr):
    """One 64 x 64 fp16 copy (8 KiB), then an MMA that reads it (`cube`) or a vector fill of
    another buffer: the copy is the same instruction either way."""
    a = pto.alloc_local(64 * 64, dtype=src.dtype)
    b = pto.alloc_local(64 * 64, dtype=src.dtype)
    c = pto.alloc_local(64 * 64)
    pto.fill(b, 1.0, 64 * 64)
    pto.fill(c, 0.0, 64 * 64)
    pto.wait(pto.async_load(a, src, 64 * 64 * 2))
    if cube:
        pto.mma(c, a, b, 64, 64, 64)
    pto.store(C, c, 64 * 64 * 4)


@pytest.mark.parametrize("model", ["table", "fused"])
@pytest.mark.parametrize("target", ["default", "ascend910b"])
def test_a_copy_into_an_mma_operand_takes_the_gm_to_l1_path(target, model):
    """Issue 31: the 910B file separates GM->UB (128 B/cycle, pto-isa's measured TLOAD) from
    GM->L1 (64 B/cycle, CANN's GEMM tiling model); a copy whose buffer an MMA reads streams at
    the GM->L1 rate, the same copy into a buffer only the vector unit uses at the GM->UB rate.
    The default target sets one rate for both."""
    import numpy as np

    t = resolve_target(None if target == "default" else target)
    p = ModelParams.of(t, model)
    src = pto.alloc_tensor(64 * 64 * 2, dtype=np.float16)
    out = pto.alloc_tensor(64 * 64 * 4, dtype=np.float32)
    pto.memcpy_h2d(src, np.ones(64 * 64, np.float16))
    cycles = {}
    for cube in (False, True):
        prof = pto.profile(_copy_then_use, grid=1, block=1, args=(src, out, cube), model=model,
                           target=t)
        (copy,) = [e for e in prof.timeline if e.pipe == "MTE_IN"]  # or the fused load's copy
        cycles[cube] = copy.cycles
    assert cycles[False] == 8192 // p.mte_bytes_per_cycle
    assert cycles[True] == 8192 // (64 if target == "ascend910b" else p.mte_bytes_per_cycle)
    if target == "ascend910b":
        assert (p.mte_bytes_per_cycle, p.mte_l1_bytes_per_cycle) == (128, 64)
