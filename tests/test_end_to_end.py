"""The article's programs end to end: real kernels through frontend, interpreter and runtime."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from vector_add import vector_add  # noqa: E402


def test_example_prints_the_pass_line():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "vector_add.py")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pypto: vector_add 1024 elements passed"


def test_del_right_after_launch_is_safe():
    """The article's segfault pitfall: the launch keeps its tensors alive."""
    n = 4096
    a = np.random.rand(n).astype(np.float32)
    b = np.random.rand(n).astype(np.float32)
    d_a, d_b = pto.alloc_tensor(n * 4), pto.alloc_tensor(n * 4)
    d_o = pto.alloc_tensor(n * 4)
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)
    pto.launch(vector_add, grid=16, block=256, args=(d_a, d_b, d_o, n))
    del d_a, d_b
    gc.collect()
    out = np.empty(n, dtype=np.float32)
    pto.memcpy_d2h(out, d_o)
    np.testing.assert_array_equal(out, a + b)


def test_with_tensor_waits_for_the_kernel_then_frees():
    n = 512
    a = np.arange(n, dtype=np.float32)
    out = np.empty(n, dtype=np.float32)
    with pto.Tensor(n * 4) as d_a, pto.Tensor(n * 4) as d_o:
        pto.memcpy_h2d(d_a, a)
        pto.launch(vector_add, grid=2, block=256, args=(d_a, d_a, d_o, n))
        pto.memcpy_d2h(out, d_o)
    assert d_a.freed and d_o.freed
    np.testing.assert_array_equal(out, 2 * a)


def test_use_after_free_is_an_error_not_garbage():
    t = pto.alloc_tensor(64 * 4)
    o = pto.alloc_tensor(64 * 4)
    t.free()
    with pytest.raises(pto.TensorFreedError):
        pto.launch(vector_add, grid=1, block=64, args=(t, t, o, 64))
    with pytest.raises(pto.TensorFreedError):
        pto.memcpy_d2h(np.empty(64, np.float32), t)


def test_kernel_error_surfaces_at_the_next_synchronising_call():
    n = 100
    d = [pto.alloc_tensor(n * 4) for _ in range(3)]
    for t in d:
        pto.memcpy_h2d(t, np.zeros(n, np.float32))
    # n too large: lanes 100..127 read past the end
    pto.launch(vector_add, grid=1, block=128, args=(*d, 128))
    with pytest.raises(pto.MemoryAccessError) as info:
        pto.sync()
    assert info.value.kernel == "vector_add"
    assert "vector_add.py" in str(info.value)


def test_launch_blocking_raises_at_the_launch(monkeypatch):
    monkeypatch.setenv("PYPTO_LAUNCH_BLOCKING", "1")
    n = 100
    d = [pto.alloc_tensor(n * 4) for _ in range(3)]
    with pytest.raises(pto.MemoryAccessError):
        pto.launch(vector_add, grid=1, block=128, args=(*d, 128))


def test_bad_launch_configuration():
    d = [pto.alloc_tensor(64) for _ in range(3)]
    with pytest.raises(pto.LaunchError):
        pto.launch(vector_add, grid=0, block=16, args=(*d, 16))
    with pytest.raises(pto.LaunchError):
        pto.launch(vector_add, grid=1, block=2048, args=(*d, 16))
    with pytest.raises(pto.LaunchError, match=r"takes 4 parameter\(s\) \(a, b, o, n\) but got 3"):
        pto.launch(vector_add, grid=1, block=16, args=(*d,))


def test_readme_first_command_environment_has_no_hidden_state():
    """The example runs in a fresh interpreter with LAUNCH_BLOCKING set too."""
    env = dict(os.environ, PYPTO_LAUNCH_BLOCKING="1")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "vector_add.py")],
                         capture_output=True, text=True, env=env, check=True)
    assert "passed" in out.stdout


def test_pipeline_matmul_example_runs():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "pipeline_matmul.py")],
                         capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[-2:] == ["pypto: matmul 128x128 @ 128x128 (float32) passed",
                          "pypto: matmul 192x96 @ 96x320 (float16) passed"]
    # the remarks and the L1 map of the double-buffered kernel come first: the schedule the
    # cost model chose (both tiles prefetched, two slots each) and its runner-up (B's load next
    # to its MMA, where the firmware fuses them)
    assert "chose prefetch 'A_tile', 'B_tile' with 2 stages" in lines[0]
    assert "runner-up prefetch 'A_tile' with 2 stages, 'B_tile' in its own iteration" in lines[0]
    assert "2 slots for 'A_tile', 'B_tile';" in lines[1]
    assert "the load of 'B_tile'" in lines[3] and "is prefetched although" in lines[3]
    l1 = lines.index(next(x for x in lines if x.startswith("L1 map of kernel")))
    assert lines[l1].startswith("L1 map of kernel 'matmul_tile': peak 49152 of 196608 bytes")
    rows = {line.split()[3]: line.split()[4] for line in lines[l1:l1 + 8]
            if len(line.split()) > 4 and line.split()[3] in ("A_tile", "B_tile")}
    assert rows == {"A_tile": "2", "B_tile": "2"}


def test_barrier_pitfall_example_shows_both_reports_with_both_lines():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "barrier_pitfall.py")],
                         capture_output=True, text=True, check=True).stdout
    example = str(ROOT / "examples" / "barrier_pitfall.py")
    static = next(line for line in out.splitlines() if "pto.BarrierError" in line)
    dynamic = next(line for line in out.splitlines() if "pto.RaceError" in line)
    for report in (static, dynamic):
        assert f"{example}:30:" in report and f"{example}:32:" in report  # store and load lines
        assert "use pto.barrier_block()" in report
    assert out.strip().endswith("pypto: barrier_pitfall passed")


def test_fusion_pitfall_example_table_recommends_what_the_firmware_runs_slower():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "fusion_pitfall.py")],
                         capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()

    def line(prefix: str) -> str:
        return next(x for x in lines if x.startswith(prefix))

    # 1. the table rewards hoisting the B load above the vector work; the firmware, whose
    # load/mma fusion the hoisting breaks, runs it slower
    assert "faster" in line("hoisting under 'table'")
    assert "slower" in line("hoisting under 'fused'")
    assert "the table picks mma_hoisted, the firmware runs mma_direct faster" in out
    # 2. padding: free under the table, costly once it breaks the fusion
    assert line("padding under 'table'").endswith("costs nothing")
    assert " costs " in line("padding under 'fused'")
    assert "modelled by the pypto cost model (not measured): model 'table'" in out
    assert "modelled by the pypto cost model (not measured): model 'fused'" in out
    assert "LOAD_MMA: 5 cycles" in out and "MMA: 8 cycles" in out
    assert lines[-1].startswith("pypto: fusion pitfall reproduced")
