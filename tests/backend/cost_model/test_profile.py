"""`pto.profile()` end to end: physics, the two models, overrides, traces, the device registry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from pypto.backend.cost_model.chrome import validate_chrome_trace
from pypto.backend.cost_model.engine import copy_occupancy
from pypto.backend.targets import default_target
from pypto.compiler import DEFAULT_PIPELINE
from pypto.runtime import npu as npu_runtime

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402


@pto.kernel
def vector_add(a, b, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.fma(o + i, pto.load(a + i), 1.0, pto.load(b + i))


@pto.kernel
def matmul_double_buffered(A, B, C, M, N, K, tile_m, tile_n, tile_k):
    """The matmul with two A-tile slots: the A tile of the next k-step loads on MTE_IN while
    the current one multiplies; each B tile is loaded right before its MMA, where the firmware
    fuses the two (K a multiple of 2 * tile_k)."""
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    A0 = pto.alloc_local(tile_m * tile_k)
    A1 = pto.alloc_local(tile_m * tile_k)
    B0 = pto.alloc_local(tile_k * tile_n)
    for k0 in range(0, K, 2 * tile_k):
        ta0 = pto.async_load(A0, A + row0 * K + k0, tile_m * tile_k * 4, rows=tile_m,
                             src_stride=K)
        ta1 = pto.async_load(A1, A + row0 * K + k0 + tile_k, tile_m * tile_k * 4, rows=tile_m,
                             src_stride=K)
        pto.wait(ta0)
        tb = pto.async_load(B0, B + k0 * N + col0, tile_k * tile_n * 4, rows=tile_k,
                            src_stride=N)
        pto.wait(tb)
        pto.mma(C_tile, A0, B0, tile_m, tile_n, tile_k)
        pto.wait(ta1)
        tb = pto.async_load(B0, B + (k0 + tile_k) * N + col0, tile_k * tile_n * 4,
                            rows=tile_k, src_stride=N)
        pto.wait(tb)
        pto.mma(C_tile, A1, B0, tile_m, tile_n, tile_k)
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


SINGLE = "pto-allocate-l1,pto-verify-barriers"
"""The default pipeline without pto-double-buffer: the matmul as written, single-buffered."""


def single_buffered(model):
    return SINGLE + (",convert-pto-to-npu,npu-fuse-load-mma" if model == "fused" else "")


def tensors(*sizes, dtype=np.float32):
    return [pto.alloc_tensor(n * np.dtype(dtype).itemsize, dtype=dtype) for n in sizes]


def va_profile(n, block=256, **kw):
    a, b, o = tensors(n, n, n)
    return pto.profile(vector_add, grid=(n + block - 1) // block, block=block,
                       args=(a, b, o, n), **kw)


def mm_profile(kernel, m, n, k, tile=(64, 64, 64), **kw):
    a, b, c = tensors(m * k, k * n, m * n)
    return pto.profile(kernel, grid=(n // tile[1], m // tile[0]), block=64,
                       args=(a, b, c, m, n, k, *tile), **kw)


# physics ----------------------------------------------------------------------------------------


def test_a_large_vector_add_is_bound_by_the_latency_of_its_loads_and_says_so():
    # one block at a time per core, its FMA waiting for data from HBM: every block pays the
    # HBM latency once, and the bubbles name it
    n = 1 << 20
    prof = va_profile(n)
    p = prof.params
    assert prof.hbm_bytes == 12 * n
    assert prof.launch.bound == "compute"
    per_block = prof.representative.cycles
    assert per_block > 2 * p.hbm_latency  # the FMA waits for its loads, the block for its store
    assert prof.total_cycles == p.launch_cycles + (n // 256 // 32) * (per_block + p.block_cycles)
    assert any("data from HBM" in b.cause for b in prof.bubbles())


@pytest.mark.parametrize("m", [128, 512])
def test_matmul_flop_rate_never_exceeds_the_cube_peak(m):
    prof = mm_profile(matmul_tile, m, m, m)
    t = default_target()
    cost = t.section("cost")
    peak_fp32 = 2 * cost["cube_macs_per_cycle"] * cost["cube_fp32_rate"] * t.ai_cores
    assert 2 * m ** 3 / prof.total_cycles <= peak_fp32


def test_vector_add_counts_every_instruction_of_every_lane():
    n = 1000  # the last block has 232 active lanes
    prof = va_profile(n, model="table")
    kinds = {k.kind: k.count for k in prof.cycle_breakdown()}
    assert kinds["LOAD"] == 8 and kinds["FMA"] == 4
    assert prof.hbm_bytes == 12 * n
    assert len(prof.launch.classes) == 2  # full blocks, and the partial last one


# the two models -----------------------------------------------------------------------------------


def test_the_articles_breakdown_lines():
    text = str(va_profile(1024).cycle_breakdown())
    assert "LOAD: 3 cycles" in text and "FMA: 5 cycles" in text
    table = str(va_profile(1024, model="table").cycle_breakdown())
    assert "LOAD: 4 cycles" in table and "FMA: 8 cycles" in table


def test_fused_is_faster_than_table_where_fusion_applies():
    """Where only the instructions' heads differ (vector_add) `fused` is faster. On the
    single-buffered matmul the fused B copy starts with its MMA, after the A tile has landed,
    so it pays HBM's latency after A's where the table's kernel overlaps both copies'
    latencies (docs/cost-model.md#one-latency-per-memory-level): the two models' totals are
    not compared there, their instructions are."""
    fused, table = (mm_profile(matmul_tile, 128, 128, 128, model=m, pipeline=single_buffered(m))
                    for m in ("fused", "table"))
    assert "LOAD_MMA" in {k.kind for k in fused.cycle_breakdown()}
    assert "LOAD_MMA" not in {k.kind for k in table.cycle_breakdown()}
    assert va_profile(1024).total_cycles < va_profile(1024, model="table").total_cycles


def test_pto_and_npu_levels_cost_the_same_where_no_fusion_applies():
    pto_level = va_profile(4096, pipeline=DEFAULT_PIPELINE)
    npu_level = va_profile(4096, pipeline=DEFAULT_PIPELINE + ",convert-pto-to-npu")
    assert pto_level.total_cycles == npu_level.total_cycles
    assert [(k.kind, k.count, k.busy) for k in pto_level.cycle_breakdown()] == \
        [(k.kind, k.count, k.busy) for k in npu_level.cycle_breakdown()]


@pytest.mark.parametrize("model", ["table", "fused"])
def test_double_buffered_matmul_takes_fewer_cycles_than_single_buffered(model):
    # by hand: a second A tile loads while the first multiplies, each B load stays fusable
    single = mm_profile(matmul_tile, 128, 128, 512, model=model, pipeline=single_buffered(model))
    double = mm_profile(matmul_double_buffered, 128, 128, 512, model=model,
                        pipeline=single_buffered(model))
    assert single.launch.bound == double.launch.bound == "compute"
    assert double.total_cycles < single.total_cycles


@pytest.mark.parametrize("size,tile,dtype,fused_speedup", [
    (512, (64, 64, 64), np.float32, 1.0),     # copy-bound: see the next test
    (1024, (128, 128, 64), np.float16, 1.3),
])
def test_the_default_pipeline_beats_single_buffering_under_both_models(size, tile, dtype,
                                                                       fused_speedup):
    """docs/passes.md#choosing-by-the-cost-model: the default pipeline's pto-double-buffer
    keeps the cheapest of its candidate schedules, so it is faster than the single-buffered
    kernel under both models and never slower than the fusion-aware schedule (A prefetched,
    each B load next to its MMA: a LOAD_MMA per k-step), one of its candidates."""
    a, b = tensors(size * size, size * size, dtype=dtype)
    (c,) = tensors(size * size)
    args = (a, b, c, size, size, size, *tile)
    grid = (size // tile[1], size // tile[0])
    for model in ("table", "fused"):
        single = pto.profile(matmul_tile, grid=grid, block=64, args=args, model=model,
                             pipeline=single_buffered(model)).total_cycles
        default = pto.profile(matmul_tile, grid=grid, block=64, args=args, model=model)
        assert default.total_cycles < single, model
        fusion_aware = pto.profile(
            matmul_tile, grid=grid, block=64, args=args, model=model,
            pipeline="pto-double-buffer{choose=fusion},pto-allocate-l1,pto-verify-barriers")
        assert default.total_cycles <= fusion_aware.total_cycles, model
        if model == "fused":
            assert single / default.total_cycles >= fused_speedup
            kinds = {k.kind: k.count for k in fusion_aware.cycle_breakdown()}
            assert kinds["LOAD_MMA"] == grid[0] * grid[1] * (size // tile[2])
            assert "MMA" not in kinds


def test_the_512_cubed_f32_matmul_is_copy_bound_and_deeper_pipelines_approach_the_bound():
    """The article's 512^3 f32 matmul with 64^3 tiles under `fused`: every k-step copies two
    16 KiB tiles through MTE_IN (2 x 128 cycles at 128 B/cycle) for one 132-cycle fp32 MMA,
    so a block needs MTE_IN for 8 x 256 = 2048 cycles whatever the schedule (the bound). The
    single-buffered kernel also waits HBM's latency (200 cycles, as a lane load does) twice
    per k-step; double buffering hides part of it (>= 1.3x, issue 19's goal) and a third
    stage more."""
    size, tile = 512, (64, 64, 64)
    a, b = tensors(size * size, size * size)
    (c,) = tensors(size * size)
    args = (a, b, c, size, size, size, *tile)
    grid = (size // tile[1], size // tile[0])

    def run(pipeline):
        return pto.profile(matmul_tile, grid=grid, block=64, args=args, model="fused",
                           pipeline=pipeline)

    single = run(single_buffered("fused"))
    default = run(None)
    three = run("pto-double-buffer{stages=3},pto-allocate-l1,pto-verify-barriers")
    bound = single.resource_bound()
    assert bound.resource == "MTE_IN"
    params = single.params
    per_block = 2 * (size // tile[2]) * copy_occupancy(tile[0] * tile[2] * 4, params)
    assert bound.block_work["MTE_IN"] == per_block == 2048
    cores = params.target.ai_cores
    waves = -(-grid[0] * grid[1] // cores)
    assert bound.cycles == params.launch_cycles + waves * (params.block_cycles + per_block)
    for prof in (default, three):  # the same copies and MMAs: the same bound
        assert prof.resource_bound().cycles == bound.cycles
    assert bound.cycles <= three.total_cycles < default.total_cycles < single.total_cycles
    assert single.total_cycles / default.total_cycles >= 1.3


# data, not code ------------------------------------------------------------------------------------


def test_target_overrides_change_the_result(tmp_path):
    base = va_profile(4096)
    slow = tmp_path / "slow.toml"
    slow.write_text("[cost.fused.latency]\nLOAD = 30\n")
    slower = va_profile(4096, target=str(slow))
    assert slower.cycle_breakdown().latency("LOAD") == 30
    assert slower.cycle_breakdown().latency("FMA") == 5  # everything else kept
    assert slower.total_cycles > base.total_cycles
    few = tmp_path / "one_core.toml"
    few.write_text("ai_cores = 1\n")
    one_core = va_profile(4096, target=str(few))
    assert one_core.compute_cycles == 16 * base.compute_cycles  # 16 blocks, one at a time
    assert str(slow) in slower.header


def test_tensors_fitting_in_l2_reach_hbm_once(tmp_path):
    # 64 blocks each stream a 64-row band of A and a 64-column band of B: 16 MiB of traffic
    # for 3 MiB of tensors. With the default 32 MiB L2 each tensor comes from HBM once; with
    # no L2 all the traffic does and the launch becomes bandwidth-bound.
    cached = mm_profile(matmul_tile, 512, 512, 512)
    assert cached.launch.traffic_bytes == 17 * 2 ** 20 and cached.hbm_bytes == 3 * 2 ** 20
    assert cached.launch.bound == "compute"
    no_l2 = tmp_path / "no_l2.toml"
    no_l2.write_text("[cost]\nl2_bytes = 0\n")
    uncached = mm_profile(matmul_tile, 512, 512, 512, target=str(no_l2))
    assert uncached.hbm_bytes == 17 * 2 ** 20 and uncached.launch.bound.startswith("HBM")
    # the blocks of a wave share HBM at every moment: no faster than the roofline
    assert uncached.total_cycles >= uncached.params.launch_cycles + -(-17 * 2 ** 20 // 1200)
    assert uncached.total_cycles > cached.total_cycles


def test_the_binding_hbm_shows_in_the_timeline_the_trace_and_the_bubbles(tmp_path):
    """Without an L2 the 512^3 matmul's 64 blocks (32 at once) draw 37.5 B/cycle of HBM each
    at most: their copies stream slower than the copy engine's 128 B/cycle, and that shows."""
    no_l2 = tmp_path / "no_l2.toml"
    no_l2.write_text("[cost]\nl2_bytes = 0\n")
    prof = mm_profile(matmul_tile, 512, 512, 512, target=str(no_l2))
    assert prof.launch.bound.startswith("HBM bandwidth") and prof.launch.shared
    assert prof.launch.hbm_share == 1200 / 32
    # bubbles: the stretched copies name the share
    share = [b for b in prof.bubbles() if b.pipe == "HBM"]
    assert share and all("HBM share" in b.cause and b.blocks == 64 for b in share)
    # timeline: block 0's copies are stretched
    stretched = [e for e in prof.timeline if e.hbm_extra]
    assert stretched and all(e.pipe in ("MTE_IN", "MTE_OUT") for e in stretched)
    # Chrome trace: valid, ends at the modelled total, the stretched copies say so
    trace = prof.to_chrome_trace()
    assert validate_chrome_trace(trace) == []
    us = 1e-3 / prof.params.target.clock_ghz
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    end = max(e["ts"] + e["dur"] for e in slices)
    assert end == pytest.approx(prof.total_cycles * us, rel=1e-3)
    assert any(e["args"].get("hbm_share_cycles") for e in slices)
    assert prof.utilization()["HBM"] > 0.5
    # no moment above the peak: 32 blocks at 37.5 B/cycle each
    for c in prof.launch.classes:
        assert c.schedule.hbm_peak(prof.launch.l2_miss) <= prof.launch.hbm_share + 1e-6


def test_every_output_says_modelled_by_which_model_and_target():
    prof = va_profile(1024, model="table")
    for text in (prof.header, prof.to_text(), str(prof.cycle_breakdown()),
                 json.dumps(prof.to_chrome_trace()["otherData"])):
        assert "modelled" in text and "'table'" in text and "default.toml" in text


# timeline, bubbles, utilization, chrome trace ---------------------------------------------------


def test_timeline_entries_name_pipe_lanes_instruction_and_python_line():
    prof = va_profile(1024)
    loads = [e for e in prof.timeline if e.inst == "LOAD"]
    assert len(loads) == 2
    assert all(e.pipe == "VECTOR" and e.lanes == 256 and e.lane == "0-255" for e in loads)
    line = vector_add.fn.__code__.co_firstlineno + 4
    assert all(e.source.endswith(f"test_profile.py:{line}") for e in loads)
    assert [e.cycle for e in prof.timeline] == sorted(e.cycle for e in prof.timeline)


def test_bubbles_name_their_cause_and_utilization_is_a_fraction():
    prof = mm_profile(matmul_tile, 64, 64, 128, pipeline=single_buffered("fused"))
    bubbles = prof.bubbles()
    assert any("wait for async copy token" in b.cause for b in bubbles)
    assert all(b.cycles > 0 and b.source for b in bubbles)
    assert all(0.0 <= u <= 1.0 for u in prof.utilization().values())


def test_chrome_trace_is_valid_one_track_per_pipe_per_core(tmp_path):
    prof = mm_profile(matmul_tile, 128, 128, 128)
    path = tmp_path / "trace.json"
    trace = prof.to_chrome_trace(path)
    assert json.loads(path.read_text()) == trace
    assert validate_chrome_trace(trace) == []
    names = [(e["pid"], e["args"]["name"]) for e in trace["traceEvents"]
             if e.get("name") == "thread_name"]
    assert len(names) == len(set(names)) == 4 * 6  # 4 blocks on 4 cores, 5 pipes + HBM each
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert all("source" in e["args"] and "op" in e["args"] for e in slices)


def test_the_validator_catches_overlaps():
    bad = {"traceEvents": [
        {"ph": "X", "name": "A", "ts": 0, "dur": 5, "pid": 0, "tid": 0, "args": {}},
        {"ph": "X", "name": "B", "ts": 3, "dur": 5, "pid": 0, "tid": 0, "args": {}}]}
    assert "inside A" in validate_chrome_trace(bad)[0]


# cost does not grow with identical blocks -------------------------------------------------------


def test_identical_blocks_are_simulated_once():
    prof = va_profile(1 << 16)
    assert len(prof.launch.classes) == 1 and len(prof.launch.classes[0].blocks) == 256


# device backends -------------------------------------------------------------------------------


def test_profile_on_npu_uses_a_registered_backend_and_otherwise_points_to_the_model():
    a, b, o = tensors(16, 16, 16)
    with pytest.raises(pto.DeviceUnavailableError, match=r'model="fused"'):
        pto.profile_on_npu(vector_add, args=(a, b, o, 16))

    class Fake:
        def available(self) -> bool:
            return True

        def profile(self, kernel, *, grid, block, args):
            return ("measured", kernel.name)

    npu_runtime.register_backend("fake", Fake)
    try:
        assert pto.profile_on_npu(vector_add, args=(a, b, o, 16)) == ("measured", "vector_add")
    finally:
        del npu_runtime.BACKENDS["fake"]


def test_a_backend_registered_while_backends_are_being_tried(monkeypatch):
    """A factory runs Python code while `profile_on_npu` tries the registered backends; another
    thread (here: the factory itself) registering one meanwhile made the loop over the registry
    raise `RuntimeError: dictionary changed size during iteration`."""
    monkeypatch.setattr(npu_runtime, "BACKENDS", {})

    class Registers:
        def available(self) -> bool:
            return False

    class Late:
        def available(self) -> bool:
            return True

        def profile(self, kernel, *, grid, block, args):
            return "late"

    def registering() -> Registers:
        npu_runtime.register_backend("late", Late)
        return Registers()

    npu_runtime.register_backend("registering", registering)
    assert npu_runtime.available_backend() is None  # the registry as it was when asked
    assert npu_runtime.available_backend()[0] == "late"  # the next call sees the new one


def test_the_double_buffered_matmul_computes_the_product():
    from tests.conftest import run_kernel

    rng = np.random.default_rng(1)
    m, n, k = 64, 128, 256
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = run_kernel(matmul_double_buffered, (n // 64, m // 64), 64,
                   (a, b, np.zeros((m, n), np.float32), m, n, k, 64, 64, 64))[2]
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)
