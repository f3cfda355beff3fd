"""One trace, one entry point (`run_and_cost`): the Python API, `pypto-opt --emit=cost` and the
debugger's timeline give the same cycles; block classes proven from the launch give the same
profile and outputs as tracing every block."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
import pypto.debug as dbg
from pypto.backend.cost_model import ModelParams
from pypto.backend.cost_model.access import AccessGeometry
from pypto.backend.cost_model.classes import plan_block_classes
from pypto.backend.cost_model.run import run_and_cost
from pypto.backend.targets import default_target
from pypto.profiling import model_pipeline
from pypto.tools.opt import main as opt_main

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402

M = N = K = 128
TILE = (64, 64, 64)
GRID = (N // TILE[1], M // TILE[0])


def matmul_args(rng=None):
    rng = rng or np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    d = [pto.alloc_tensor(x.nbytes, dtype=np.float32) for x in (a, b)]
    d_c = pto.alloc_tensor(M * N * 4, dtype=np.float32)
    pto.memcpy_h2d(d[0], a)
    pto.memcpy_h2d(d[1], b)
    return a, b, (d[0], d[1], d_c, M, N, K, *TILE)


def host(t):
    out = np.empty(t.size, dtype=np.float32)
    pto.memcpy_d2h(out, t)
    return out


# API == CLI ------------------------------------------------------------------------------------


def cli_total(capsys, mlir: Path, pipeline: str, model: str) -> int:
    argv = [str(mlir), "-p", pipeline, "--emit=cost", "--model", model, "--grid",
            ",".join(map(str, GRID)), "--block", "64", "--arg", f"A={M * K}",
            "--arg", f"B={K * N}", "--arg", f"C={M * N}"]
    argv += [f"--arg={name}={value}" for name, value in
             zip(("M", "N", "K", "tile_m", "tile_n", "tile_k"), (M, N, K, *TILE))]
    assert opt_main(argv) == 0
    out = capsys.readouterr().out
    return int(next(line for line in out.splitlines()
                    if line.startswith("total_cycles:")).split()[1])


@pytest.mark.parametrize("pipeline", ["pto-allocate-l1",
                                      "pto-double-buffer,pto-allocate-l1,pto-verify-barriers"])
def test_profile_and_pypto_opt_give_one_figure_for_the_pipelined_matmul(capsys, tmp_path,
                                                                         pipeline):
    _, _, args = matmul_args()
    # the kernel at the pto level, as a user would hand it to pypto-opt
    mlir = tmp_path / "matmul.mlir"
    mlir.write_text(pto.compile(matmul_tile, args=args, block=64, pipeline="").mlir)
    for model in ("fused", "table"):
        api = pto.profile(matmul_tile, grid=GRID, block=64, args=args, model=model,
                          pipeline=pipeline)
        assert api.total_cycles == cli_total(capsys, mlir, pipeline, model), model
    # under "fused" the API lowered the pto-level pipeline itself: the B load fused
    fused = pto.profile(matmul_tile, grid=GRID, block=64, args=args, pipeline=pipeline)
    kinds = {e.inst for e in fused.timeline}
    assert "COPY_IN" in kinds and ("LOAD_MMA" in kinds or pipeline != "pto-allocate-l1")
    table = pto.profile(matmul_tile, grid=GRID, block=64, args=args, model="table",
                        pipeline=pipeline)
    assert "ASYNC_LOAD" in {e.inst for e in table.timeline}


def test_model_pipeline_appends_the_lowering_only_to_a_pto_level_pipeline():
    target = default_target()
    lowered = model_pipeline("fused", target, "pto-allocate-l1")
    assert lowered.startswith("pto-allocate-l1,convert-pto-to-npu{warp-size=")
    assert "block" not in lowered.replace("max-block-lanes", "")  # pto.compile gives the block
    assert lowered.endswith(",npu-fuse-load-mma")
    already = "pto-allocate-l1,convert-pto-to-npu,npu-fuse-load-mma"
    assert model_pipeline("fused", target, already) == already
    assert model_pipeline("table", target, "pto-allocate-l1") == "pto-allocate-l1"


# debugger == profile ---------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["fused", "table"])
@pytest.mark.parametrize("block_id", [0, 3])
def test_debugger_timeline_is_the_profiles_cycle_for_cycle_on_the_pipelined_matmul(model,
                                                                                   block_id):
    _, _, args = matmul_args()
    prof = pto.profile(matmul_tile, grid=GRID, block=64, args=args, model=model)
    ctx = dbg.debug_kernel(matmul_tile, args=args, grid=GRID, block=64, model=model,
                           block_id=block_id, out=io.StringIO())
    timeline = ctx.get_instruction_timeline(every_op=True)
    ctx.close()
    schedule = prof.launch.class_of(block_id).schedule
    expected = sorted((e.op_id, e.cycle, e.end, e.pipe) for e in prof.entries(schedule)
                      if e.op_id >= 0)  # (the HBM rows of a block are not instructions)
    assert sorted((e.op_id, e.cycle, e.end, e.pipe) for e in timeline) == expected
    assert max(e.end for e in timeline) <= schedule.cycles <= prof.launch.block_cycles[block_id]
    kinds = {e.inst for e in timeline}
    assert ("COPY_IN" if model == "fused" else "ASYNC_LOAD") in kinds  # the model's IR level
    assert kinds & {"MMA", "LOAD_MMA"}


# block classes ---------------------------------------------------------------------------------


@pto.kernel
def vector_add(a, b, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.fma(o + i, pto.load(a + i), 1.0, pto.load(b + i))


@pto.kernel
def first_block_doubles(a, o, n):
    """Block 0 takes another path than the others (a block-uniform, block-dependent branch)."""
    i = pto.get_global_id()
    if pto.get_block_id() == 0:
        pto.store(o + i, pto.load(a + i) * 2.0)
    else:
        pto.store(o + i, pto.load(a + i))


@pto.kernel
def positives_only(a, o, n):
    """Control flow that depends on loaded data: only running a block tells what it does."""
    i = pto.get_global_id()
    x = pto.load(a + i)
    if x > 0.0:
        pto.store(o + i, pto.exp(x))


@pto.kernel
def histogram(a, counts, n):
    """Atomics: a second execution of any block would change the counts."""
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(counts + (i % 4), pto.load(a + i))


def profiles_both_ways(kernel, grid, block, make_args, model="fused"):
    """(block-class profile, its args), (every block traced, its args): each on fresh tensors."""
    target = default_target()
    params = ModelParams.of(target, model)
    out = []
    for by_class in (True, False):
        args = make_args()
        grid3 = (grid, 1, 1)
        block3 = (block, 1, 1)
        compiled = pto.compile(kernel, args=args, block=block3,
                               pipeline=model_pipeline(model, target))
        pto.sync()
        prof = run_and_cost(compiled.executable, grid3, block3, args, params,
                            by_class=by_class)
        out.append((prof, args, compiled))
    return out


def same_profile(a, b):
    assert a.total_cycles == b.total_cycles
    assert a.compute_cycles == b.compute_cycles and a.hbm_bytes == b.hbm_bytes
    np.testing.assert_array_equal(a.launch.block_cycles, b.launch.block_cycles)
    assert [c.blocks for c in a.launch.classes] == [c.blocks for c in b.launch.classes]
    assert [(e.op_id, e.cycle, e.end) for e in a.timeline] == \
        [(e.op_id, e.cycle, e.end) for e in b.timeline]
    assert str(a.cycle_breakdown()) == str(b.cycle_breakdown())


def tensor_from(values):
    t = pto.alloc_tensor(values.nbytes, dtype=values.dtype)
    pto.memcpy_h2d(t, values)
    return t


@pytest.mark.parametrize("n, blocks", [(64 * 256, 1), (64 * 256 - 100, 2)])
@pytest.mark.parametrize("model", ["fused", "table"])
def test_vector_add_profiles_one_block_per_class(n, blocks, model):
    rng = np.random.default_rng(1)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)

    def make():
        return (tensor_from(a), tensor_from(b), pto.alloc_tensor(n * 4), n)

    grid = -(-n // 256)
    (fast, fast_args, compiled), (full, full_args, _) = profiles_both_ways(
        vector_add, grid, 256, make, model)
    plan = plan_block_classes(compiled.executable, (grid, 1, 1), (256, 1, 1), fast_args)
    # classes by the guard's lanes and the loads' alignment (mod 4 KiB: 4 x 1 KiB blocks)
    assert plan is not None and blocks <= len(plan) <= 4 * blocks
    assert sorted(b for _, members in plan for b in members) == list(range(grid))
    assert len(fast.launch.classes) == blocks  # what ran alike is one class again
    same_profile(fast, full)
    for args in (fast_args, full_args):
        np.testing.assert_array_equal(host(args[2]), a + b)


def test_the_pipelined_matmul_is_one_class_and_computes_the_product():
    a, b, _ = matmul_args()
    target = default_target()
    params = ModelParams.of(target, "fused")
    grid3, block3 = (*GRID, 1), (64, 1, 1)
    results = []
    for by_class in (True, False):
        _, _, args = matmul_args()
        compiled = pto.compile(matmul_tile, args=args, block=block3,
                               pipeline=model_pipeline("fused", target))
        pto.sync()
        plan = plan_block_classes(compiled.executable, grid3, block3, args)
        assert plan is not None and len(plan) <= 4
        results.append(run_and_cost(compiled.executable, grid3, block3, args, params,
                                    by_class=by_class))
        np.testing.assert_allclose(host(args[2]).reshape(M, N), a @ b, rtol=1e-4, atol=1e-4)
    same_profile(*results)


@pytest.mark.parametrize("block, classes", [(256, 1), (36, 2)])
def test_global_addresses_are_classed_by_the_targets_sector_period(block, classes):
    # 256 lanes (1 KiB): every block starts on a sector boundary, one class traced, not the
    # 4 a 4 KiB alignment gives; 36 lanes (144 bytes): blocks start on or half-way through a
    # sector (8 starts modulo 128 bytes) and move different sectors, so they stay apart
    n = 64 * block
    rng = np.random.default_rng(2)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    target = default_target()
    (fast, fast_args, compiled), (full, _, _) = profiles_both_ways(
        vector_add, 64, block, lambda: (tensor_from(a), tensor_from(b), pto.alloc_tensor(n * 4),
                                        n))
    period = AccessGeometry.of(target).global_period
    assert period == 128  # 32-byte sectors; 32 banks x 4 bytes
    plan = plan_block_classes(compiled.executable, (64, 1, 1), (block, 1, 1), fast_args, period)
    assert plan is not None and len(plan) == (1 if block == 256 else 8)
    assert len(fast.launch.classes) == classes
    same_profile(fast, full)
    np.testing.assert_array_equal(host(fast_args[2]), a + b)


def test_a_second_profile_asks_no_op_trait_again(monkeypatch):
    n = 1 << 12
    args = (tensor_from(np.ones(n, np.float32)), tensor_from(np.ones(n, np.float32)),
            pto.alloc_tensor(n * 4), n)
    first = pto.profile(vector_add, grid=n // 256, block=256, args=args)
    import pypto.backend.cost_model.profile as profile_module
    import pypto.backend.interpreter.instruments as instruments_module

    def asked(*_args, **_kwargs):
        raise AssertionError("an op's facts were derived again for a compiled kernel")

    monkeypatch.setattr(profile_module, "facts_of", asked)
    monkeypatch.setattr(instruments_module, "waits_on", asked)
    again = pto.profile(vector_add, grid=n // 256, block=256, args=args)
    same_profile(first, again)


def test_a_block_dependent_branch_makes_two_classes():
    n = 64 * 128
    x = np.arange(n, dtype=np.float32)
    (fast, fast_args, compiled), (full, full_args, _) = profiles_both_ways(
        first_block_doubles, 64, 128, lambda: (tensor_from(x), pto.alloc_tensor(n * 4), n))
    plan = plan_block_classes(compiled.executable, (64, 1, 1), (128, 1, 1), fast_args)
    # block 0 alone, the others by their loads' alignment (512-byte blocks, mod 4 KiB)
    assert plan is not None and plan[0] == (0, [0]) and len(plan) <= 9
    assert [c.blocks for c in fast.launch.classes] == [[0], list(range(1, 64))]
    same_profile(fast, full)
    expected = np.where(np.arange(n) < 128, 2 * x, x)
    for args in (fast_args, full_args):
        np.testing.assert_array_equal(host(args[1]), expected)


def test_data_dependent_control_flow_traces_every_block():
    n = 8 * 128
    x = np.where(np.arange(n) // 128 % 2 == 0, 1.0, -1.0).astype(np.float32)  # blocks differ
    (fast, fast_args, compiled), (full, full_args, _) = profiles_both_ways(
        positives_only, 8, 128, lambda: (tensor_from(x), pto.alloc_tensor(n * 4), n))
    assert plan_block_classes(compiled.executable, (8, 1, 1), (128, 1, 1), fast_args) is None
    same_profile(fast, full)
    assert len(fast.launch.classes) == 2  # the trace tells the two behaviours apart
    for args in (fast_args, full_args):
        out = host(args[1])
        np.testing.assert_allclose(out[x > 0], np.exp(x[x > 0]), rtol=1e-6)


def test_atomics_are_applied_once_when_one_block_per_class_is_traced():
    n = 64 * 64
    x = np.ones(n, dtype=np.float32)

    def make():
        counts = pto.alloc_tensor(16)
        pto.memcpy_h2d(counts, np.zeros(4, dtype=np.float32))
        return (tensor_from(x), counts, n)

    (fast, fast_args, compiled), (full, full_args, _) = profiles_both_ways(
        histogram, 64, 64, make)
    assert plan_block_classes(compiled.executable, (64, 1, 1), (64, 1, 1), fast_args) \
        is not None
    same_profile(fast, full)
    for args in (fast_args, full_args):
        np.testing.assert_array_equal(host(args[1]), np.full(4, n / 4, dtype=np.float32))


def test_pto_profile_uses_block_classes_and_keeps_its_figures():
    n = 1 << 16
    a, b = np.ones(n, dtype=np.float32), np.full(n, 2.0, dtype=np.float32)
    args = (tensor_from(a), tensor_from(b), pto.alloc_tensor(n * 4), n)
    prof = pto.profile(vector_add, grid=n // 256, block=256, args=args)
    assert len(prof.launch.classes) == 1 and len(prof.launch.classes[0].blocks) == n // 256
    np.testing.assert_array_equal(host(args[2]), a + b)
