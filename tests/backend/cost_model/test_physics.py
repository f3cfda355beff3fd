""""A model one can optimise against" (docs/cost-model.md#what-the-model-guarantees-and-where-it-is-tested): the physics the cost model must obey, stated as
properties and checked by hypothesis over generated kernels and the kernel zoo (tests/kernels).

* more work never costs less: an added instruction, a byte of traffic or a block;
* no pipe, copy engine or HBM above its peak (a fused load+MMA occupies MTE_IN too), so no
  launch beats its resource bound (`Profile.resource_bound`, the busiest resource's work);
* an argument the kernel never touches changes nothing;
* a launch has a fixed cost; accesses have latency by memory level (HBM farther than L1);
* contention: same-address atomics serialise, strided lanes cost by sectors, L1 bank conflicts.

The generated kernels are Python source written to a temporary module (the frontend reads a
kernel's source), built from a vocabulary of statements: lane loads and stores on HBM and L1,
arithmetic, atomics, barriers, bulk copies, fills, MMAs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto as pto
from pypto.backend.cost_model import ModelParams
from pypto.backend.cost_model.engine import copy_occupancy
from pypto.backend.targets import default_target

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402
from tests.kernels.test_histogram import histogram  # noqa: E402
from tests.kernels.test_reduction import block_sum  # noqa: E402
from tests.kernels.test_saxpy import saxpy  # noqa: E402
from tests.kernels.test_stencil import jacobi5  # noqa: E402

MODELS = ("table", "fused")
TARGETS = (None, "ascend910b")
"""The default target and the 910B (`pto.profile(target=...)`)."""
BLOCK = 64
GRID = 2
SPREAD = 64                              # x holds SPREAD elements per lane (strided loads)
LANES = BLOCK * GRID
PROPERTY = settings(max_examples=int(__import__("os").environ.get("PHYSICS_EXAMPLES", "12")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# generated kernels ------------------------------------------------------------------------------

PROLOGUE = """\
import pypto as pto


@pto.kernel
def k(x, y, z, n):
    i = pto.get_global_id()
    tid = pto.get_local_id()
    buf = pto.alloc_local(64)
    tile = pto.alloc_local(1024)
    A = pto.alloc_local(256)
    B = pto.alloc_local(256)
    C = pto.alloc_local(256)
    v = pto.load(y + i)
"""

STATEMENTS = (
    "v = v + pto.load(x + i)",
    "v = v + pto.load(x + i * 7)",
    "v = v * 1.5",
    "v = pto.exp(v)",
    "pto.store(y + i, v)",
    "pto.store(buf + tid, v)",
    "v = v + pto.load(buf + tid)",
    "pto.barrier_block()",
    "pto.atomic_add(z, v)",
    "pto.atomic_add(z + tid, v)",
    "pto.wait(pto.async_load(tile, x, 2048))",
    "pto.wait(pto.async_load(B, x, 1024))",
    "pto.mma(C, A, B, 16, 16, 16)",
    "pto.fill(A, 1.0, 256)",
    "pto.store(x + 256 * pto.get_block_id(), tile, 1024)",
)

_loaded: dict[str, object] = {}


def kernel_from(body: list[str], tmp: Path, params: str = "x, y, z, n") -> object:
    """A kernel `k(x, y, z, n)` whose body is the prologue then `body`, from a real file."""
    source = PROLOGUE.replace("x, y, z, n", params) + \
        "".join(f"    {line}\n" for line in body)
    key = hashlib.sha1(source.encode()).hexdigest()[:16]
    if key not in _loaded:
        path = tmp / f"gen_{key}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"gen_{key}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[key] = module.k
    return _loaded[key]


def tensors() -> tuple:
    rng = np.random.default_rng(0)
    out = []
    for n in (LANES * SPREAD, LANES, LANES):
        t = pto.alloc_tensor(n * 4, dtype=np.float32)
        pto.memcpy_h2d(t, rng.random(n, dtype=np.float32))
        out.append(t)
    return (*out, LANES)


def cycles(kernel, model, grid=GRID, block=BLOCK, args=None, **kw) -> int:
    prof = pto.profile(kernel, grid=grid, block=block, args=args or tensors(), model=model, **kw)
    check_peaks(prof)
    return prof.total_cycles


@pytest.fixture(scope="module")
def gen_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("generated_kernels")


bodies = st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=6)


# peaks ------------------------------------------------------------------------------------------


def check_peaks(prof) -> None:
    """No pipe does two things at once or more than its throughput; HBM within its bandwidth;
    a fused load+MMA occupies MTE_IN for its copy."""
    p = prof.params
    for c in prof.launch.classes:
        sched = c.schedule
        by_pipe: dict[str, list] = {}
        for s in sched.slices:
            by_pipe.setdefault(s.pipe, []).append(s)
        for pipe, slices in by_pipe.items():
            slices.sort(key=lambda s: s.start)
            for a, b in zip(slices, slices[1:]):
                assert b.start >= a.end, f"{pipe} runs two instructions at once"
        for s in sched.slices:
            f = prof.facts[s.op_id]
            span = s.end - s.start
            assert span >= 1
            if f.macs and s.pipe == "CUBE":
                rate = p.cube_macs_per_cycle * (p.cube_fp32_rate if f.cube_fp32 else 1)
                assert f.macs / span <= rate + 1e-9
            if f.copy_bytes and s.pipe in ("MTE_IN", "MTE_OUT"):
                # its path's rate: GM->L1 for an MMA operand's copy and a fused load's
                # (docs/cost-model.md#two-copy-paths-mte_l1_bytes_per_cycle), else GM->UB
                assert f.copy_bytes / span <= mte_rate(p, f.to_cube or bool(f.macs)) + 1e-9
            if s.pipe == "VECTOR":
                moved = f.copy_bytes or s.lanes * f.elem_bytes
                assert moved / span <= p.vector_bytes_per_cycle + 1e-9
        fused = [s for s in sched.slices if prof.facts[s.op_id].kind == "LOAD_MMA"]
        on_cube = [s for s in fused if s.pipe == "CUBE"]
        on_mte = [s for s in fused if s.pipe == "MTE_IN"]
        assert len(on_cube) == len(on_mte), "a fused load+MMA must occupy MTE_IN as well"
        for cube, mte in zip(on_cube, on_mte):
            # the GM->L1 path's occupancy, plus what the block's HBM share stretched it by
            # (docs/cost-model.md#hbm-shared-by-the-blocks-of-a-wave)
            own = copy_occupancy(prof.facts[cube.op_id].copy_bytes, p, True)
            assert mte.end - mte.start == own + mte.hbm_extra
    busy = prof.total_cycles - prof.launch.launch_cycles
    assert prof.hbm_bytes <= busy * p.target.hbm_bytes_per_cycle + 1e-9
    # the roofline from the model: no block ends before its busiest pipe's work is done
    assert prof.total_cycles >= prof.resource_bound().cycles
    assert 0.0 <= prof.utilization()["HBM"] <= 1.0 + 1e-9


def mte_rate(p: ModelParams, to_cube: bool) -> float:
    """Bytes per cycle of a copy's path: GM->L1 (`mte_l1_bytes_per_cycle`, when the target
    sets it) for the Cube's tiles, GM->UB (`mte_bytes_per_cycle`) otherwise."""
    return p.mte_l1_bytes_per_cycle if to_cube and p.mte_l1_bytes_per_cycle else \
        p.mte_bytes_per_cycle


# more work never costs less ---------------------------------------------------------------------


@PROPERTY
@given(body=bodies, extra=st.sampled_from(STATEMENTS), where=st.integers(0, 6),
       model=st.sampled_from(MODELS), target=st.sampled_from(TARGETS))
def test_adding_an_instruction_never_lowers_the_modelled_time(gen_dir, body, extra, where,
                                                              model, target):
    """On both targets (issue 31's audit: one added L1 vector op made the 910B kernel 5388 ->
    5380 cycles under `fused`)."""
    where = min(where, len(body))
    more = body[:where] + [extra] + body[where:]
    args = tensors()
    base = cycles(kernel_from(body, gen_dir), model, args=args, target=target)
    assert cycles(kernel_from(more, gen_dir), model, args=args, target=target) >= base


@PROPERTY
@given(body=bodies, nbytes=st.integers(1, 512), more=st.integers(1, 512),
       model=st.sampled_from(MODELS), target=st.sampled_from(TARGETS))
def test_adding_bytes_to_a_copy_never_lowers_the_modelled_time(gen_dir, body, nbytes, more,
                                                                model, target):
    copy = "pto.wait(pto.async_load(tile, x, {}))"
    args = tensors()
    small = cycles(kernel_from(body + [copy.format(4 * nbytes)], gen_dir), model, args=args,
                   target=target)
    large = cycles(kernel_from(body + [copy.format(4 * (nbytes + more))], gen_dir), model,
                   args=args, target=target)
    assert large >= small


@PROPERTY
@given(stride=st.integers(1, 31), more=st.integers(1, 32), model=st.sampled_from(MODELS))
def test_lanes_touching_more_sectors_never_cost_less(gen_dir, stride, more, model):
    args = tensors()
    load = "v = v + pto.load(x + i * {})"
    narrow = cycles(kernel_from([load.format(stride)], gen_dir), model, args=args)
    wide = cycles(kernel_from([load.format(stride + more)], gen_dir), model, args=args)
    assert wide >= narrow


def _zoo(name: str, grid: int):
    """(kernel, grid, block, args) of a zoo kernel whose extra blocks are bounds-checked off."""
    n = 1024
    f32 = lambda k: pto.alloc_tensor(4 * k, dtype=np.float32)  # noqa: E731
    i32 = lambda k: pto.alloc_tensor(4 * k, dtype=np.int32)  # noqa: E731
    if name == "saxpy":
        return saxpy, grid, 256, (2.0, f32(n), f32(n), n)
    if name == "histogram":
        return histogram, grid, 256, (i32(n), i32(16), i32(n), n, 16)
    if name == "block_sum":
        return block_sum, grid, 256, (f32(n), f32(128), n, 256, 8)
    if name == "jacobi5":  # more blocks: another row of them (appended in linear order)
        return jacobi5, (2, grid), (16, 8), (f32(32 * 32), f32(32 * 32), 32, 32)
    if name == "matmul":
        m = 128
        return matmul_tile, (grid, 2), 64, (f32(m * m), f32(m * m), f32(m * m), m, m, m,
                                            64, 64, 64)
    raise KeyError(name)


ZOO = ("saxpy", "histogram", "block_sum", "jacobi5", "matmul")


@PROPERTY
@given(name=st.sampled_from(ZOO), grid=st.integers(1, 40), more=st.integers(1, 40),
       model=st.sampled_from(MODELS))
def test_adding_a_block_never_lowers_the_modelled_time(name, grid, more, model):
    """Blocks appended to the grid (in linear block order) never shorten the launch."""
    if name == "matmul":  # its grid is bounded by the matrix: 2 x 2 tiles
        grid, more = 1, 1
    kernel, g, block, args = _zoo(name, grid)
    _, g_more, _, _ = _zoo(name, grid + more)
    assert cycles(kernel, model, g_more, block, args) >= cycles(kernel, model, g, block, args)


@pytest.mark.parametrize("target", TARGETS)
def test_an_mma_that_fuses_with_a_waited_copy_never_lets_later_work_start_sooner(gen_dir,
                                                                                 target):
    """Issue 31, hypothesis's find: the MMA fuses with the copy before it, absorbing the copy's
    wait; the front end must still stall until the copy has landed, or the later HBM lane load
    starts ~200 cycles sooner and the kernel with the added MMA is faster (1456 -> 1432)."""
    body = ["v = v + pto.load(x + i)", "pto.wait(pto.async_load(B, x, 1024))",
            "v = v + pto.load(x + i)"]
    more = body[:2] + ["pto.mma(C, A, B, 16, 16, 16)"] + body[2:]
    args = tensors()
    base = cycles(kernel_from(body, gen_dir), "fused", args=args, target=target)
    prof = pto.profile(kernel_from(more, gen_dir), grid=GRID, block=BLOCK, args=args,
                       model="fused", target=target)
    check_peaks(prof)
    assert any(f.kind == "LOAD_MMA" for f in prof.facts.values())  # it did fuse
    assert prof.total_cycles >= base


@pytest.mark.parametrize("target", TARGETS)
def test_an_mma_is_never_fused_across_a_lane_op_so_that_op_never_starts_sooner(gen_dir, target):
    """Issue 31, hypothesis's find after the fix above: fused, the copy and the wait it absorbs
    moved down to the MMA, past the lane op between them, which then no longer waited for the
    copy (1249 -> 1248 cycles). npu-fuse-load-mma does not fuse across a lane instruction
    (docs/cost-model.md#the-firmware-level-npu-dialect): the copy keeps its wait, the lane op
    waits for it, and the added MMA costs its own cycles."""
    body = ["pto.wait(pto.async_load(B, x, 1024))", "v = v * 1.5"]
    args = tensors()
    base = cycles(kernel_from(body, gen_dir), "fused", args=args, target=target)
    more = pto.profile(kernel_from(body + ["pto.mma(C, A, B, 16, 16, 16)"], gen_dir),
                       grid=GRID, block=BLOCK, args=args, model="fused", target=target)
    check_peaks(more)
    assert not any(f.kind == "LOAD_MMA" for f in more.facts.values())  # not fused
    assert more.total_cycles > base
    # a uniform computation between them (the scalar unit's) still fuses
    scalar = ["pto.wait(pto.async_load(B, x, 1024))", "s = n * 3",
              "pto.mma(C, A, B, 16, 16, 16)"]
    fused = pto.profile(kernel_from(scalar, gen_dir), grid=GRID, block=BLOCK, args=args,
                        model="fused", target=target)
    assert any(f.kind == "LOAD_MMA" for f in fused.facts.values())


def test_a_redundant_tile_reload_before_each_mma_costs_more_not_less():
    """Issue 19: reloading B before every MMA (fusable) must not model faster than not."""
    m = 128
    d = [pto.alloc_tensor(m * m * 4, dtype=np.float32) for _ in range(3)]
    args = (*d, m, m, m, 64, 64, 64)
    for model in MODELS:
        plain = cycles(matmul_tile, model, (2, 2), 64, args)
        reload = cycles(matmul_reloading_b, model, (2, 2), 64, args)
        assert reload >= plain, model


@pto.kernel
def matmul_reloading_b(A, B, C, M, N, K, tile_m, tile_n, tile_k):
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    for k0 in range(0, K, tile_k):
        with pto.pipeline() as pl:
            with pl.stage("load_a"):
                A_tile = pto.alloc_local(tile_m * tile_k, dtype=A.dtype)
                pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * 4, rows=tile_m,
                               src_stride=K)
            with pl.stage("load_b", after="load_a"):
                B_tile = pto.alloc_local(tile_k * tile_n, dtype=B.dtype)
                pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * 4, rows=tile_k,
                               src_stride=N)
            with pl.stage("compute", after="load_b"):
                pto.wait_all()
                tb = pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * 4,
                                    rows=tile_k, src_stride=N)   # redundant: the same tile
                pto.wait(tb)
                pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


def test_an_unfused_mma_costs_no_more_than_a_fused_ones_mma_part():
    latency = default_target().section("cost", "fused", "latency")
    assert latency["MMA"] <= latency["LOAD_MMA"]


# untouched arguments ----------------------------------------------------------------------------


@PROPERTY
@given(body=bodies, scratch=st.integers(1, 1 << 23), model=st.sampled_from(MODELS))
def test_an_argument_the_kernel_never_touches_changes_nothing(gen_dir, body, scratch, model):
    kernel = kernel_from(body, gen_dir, params="x, y, z, n, unused")
    args = tensors()
    small = pto.alloc_tensor(4, dtype=np.float32)
    big = pto.alloc_tensor(4 * scratch, dtype=np.float32)
    assert cycles(kernel, model, args=(*args, big)) == cycles(kernel, model, args=(*args, small))


@pto.kernel
def matmul_with_scratch(A, B, C, M, N, K, tile_m, tile_n, tile_k, scratch):
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    for k0 in range(0, K, tile_k):
        A_tile = pto.alloc_local(tile_m * tile_k)
        B_tile = pto.alloc_local(tile_k * tile_n)
        ta = pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * 4, rows=tile_m,
                            src_stride=K)
        tb = pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * 4, rows=tile_k,
                            src_stride=N)
        pto.wait(ta)
        pto.wait(tb)
        pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


@pytest.mark.parametrize("model", MODELS)
def test_a_32_mib_scratch_argument_does_not_change_the_512_cubed_matmul(model):
    m = 512
    d = [pto.alloc_tensor(m * m * 4, dtype=np.float32) for _ in range(3)]
    args = (*d, m, m, m, 64, 64, 64)
    small = pto.alloc_tensor(4, dtype=np.float32)
    big = pto.alloc_tensor(32 << 20, dtype=np.float32)
    grid = (m // 64, m // 64)
    assert cycles(matmul_with_scratch, model, grid, 64, (*args, big)) == \
        cycles(matmul_with_scratch, model, grid, 64, (*args, small))


# fixed costs and latency ------------------------------------------------------------------------


@pto.kernel
def empty(x):
    pass


@given(blocks=st.integers(1, 2000))
@settings(max_examples=10, deadline=None)
def test_a_launch_has_a_fixed_cost_and_every_block_a_start(blocks):
    p = pto.profile(empty, grid=blocks, block=32, args=(pto.alloc_tensor(4),))
    params = p.params
    assert params.launch_cycles > 0 and params.block_cycles > 0
    per_core = -(-blocks // default_target().ai_cores)
    assert p.total_cycles == params.launch_cycles + per_core * params.block_cycles


@pto.kernel
def chain_hbm(x, y, n):
    i = pto.get_global_id()
    pto.barrier_block()
    v = pto.load(x + i)
    v = pto.load(x + (i + pto.cast(v, pto.int32)) % n)
    pto.store(y + i, v)


@pto.kernel
def chain_l1(x, y, n):
    i = pto.get_global_id()
    tid = pto.get_local_id()
    buf = pto.alloc_local(256)
    pto.store(buf + tid, 0.0)
    pto.barrier_block()
    v = pto.load(buf + tid)
    v = pto.load(buf + (tid + pto.cast(v, pto.int32)) % 256)
    pto.store(y + i, v)


@pytest.mark.parametrize("model", MODELS)
def test_a_dependent_load_from_hbm_waits_longer_than_one_from_l1(model):
    x = pto.alloc_tensor(256 * 4, dtype=np.float32)
    pto.memcpy_h2d(x, np.zeros(256, np.float32))
    y = pto.alloc_tensor(256 * 4, dtype=np.float32)
    hbm = pto.profile(chain_hbm, grid=1, block=256, args=(x, y, 256), model=model)
    l1 = pto.profile(chain_l1, grid=1, block=256, args=(x, y, 256), model=model)
    assert hbm.total_cycles - l1.total_cycles >= hbm.params.hbm_latency - \
        hbm.params.l1_latency
    assert any("data from HBM" in b.cause for b in hbm.bubbles())


@PROPERTY
@given(k=st.integers(1, 4), model=st.sampled_from(MODELS))
def test_every_dependent_load_from_hbm_pays_its_latency(gen_dir, k, model):
    """A chain of k loads, each addressed by the value of the one before, from HBM or from L1
    (the same instructions otherwise): the HBM chain waits at least k x (hbm - l1 latency)
    longer."""
    start = ["pto.store(buf + tid, 1.0)", "pto.barrier_block()"]
    hbm = start + ["v = pto.load(x + i)"] + \
        ["v = pto.load(x + i + pto.cast(v * 0.0, pto.int32))"] * (k - 1) + ["pto.store(y + i, v)"]
    l1 = start + ["v = pto.load(buf + tid)"] + \
        ["v = pto.load(buf + tid + pto.cast(v * 0.0, pto.int32))"] * (k - 1) + \
        ["pto.store(y + i, v)"]
    far = cycles(kernel_from(hbm, gen_dir), model)
    near = cycles(kernel_from(l1, gen_dir), model)
    p = ModelParams.of(default_target(), model)
    assert far - near >= k * (p.hbm_latency - p.l1_latency)


# contention -------------------------------------------------------------------------------------


@pto.kernel
def atomics(x, spread):
    pto.atomic_add(x + pto.get_local_id() % spread, 1.0)


@PROPERTY
@given(spread=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256]), model=st.sampled_from(MODELS))
def test_same_address_atomics_serialise(spread, model):
    x = pto.alloc_tensor(256 * 4, dtype=np.float32)
    pto.memcpy_h2d(x, np.zeros(256, np.float32))
    fewer = pto.profile(atomics, grid=1, block=256, args=(x, spread), model=model)
    assert fewer.total_cycles >= pto.profile(atomics, grid=1, block=256, args=(x, 256),
                                             model=model).total_cycles
    p = fewer.params
    same = 256 // spread
    (atomic,) = [s for s in fewer.representative.slices if fewer.facts[s.op_id].atomic]
    assert atomic.end - atomic.start >= (same - 1) * p.atomic_cycles
    out = np.empty(256, np.float32)
    pto.memcpy_d2h(out, x)
    # it ran: the first profile added 256 / spread to each of `spread` counters, the second 1
    np.testing.assert_array_equal(out[:spread], 256 // spread + 1)


@pto.kernel
def l1_stride(y, stride):
    tid = pto.get_local_id()
    buf = pto.alloc_local(256 * 33)
    pto.store(buf + tid * stride, 1.0)
    pto.barrier_block()
    pto.store(y + tid, pto.load(buf + tid * stride))


@pytest.mark.parametrize("model", MODELS)
def test_l1_bank_conflicts_cost_passes(model):
    y = pto.alloc_tensor(256 * 4, dtype=np.float32)
    t = {s: pto.profile(l1_stride, grid=1, block=256, args=(y, s), model=model).total_cycles
         for s in (1, 2, 32, 33)}
    # stride 32 puts a warp's 32 words in one bank: 32 passes per warp; 33 is conflict-free
    assert t[1] == t[33] < t[2] < t[32]
    p = pto.profile(l1_stride, grid=1, block=256, args=(y, 32), model=model)
    assert t[32] - t[1] >= 2 * (256 // 32) * (32 - 1)  # a store and a load, 8 warps, 31 more


def bank_passes(stride: int, banks: int = 32, warp: int = 32) -> int:
    """Serialised passes of one warp storing to word lane * stride of L1 (NumPy reference):
    the most distinct words any one bank must serve."""
    words = np.arange(warp) * stride
    return max(len(np.unique(words[words % banks == b])) for b in range(banks))


@PROPERTY
@given(stride=st.integers(1, 33), model=st.sampled_from(MODELS))
def test_l1_bank_conflicts_cost_the_passes_they_serialise(stride, model):
    y = pto.alloc_tensor(256 * 4, dtype=np.float32)
    t = {s: cycles(l1_stride, model, grid=1, block=256, args=(y, s)) for s in (1, stride)}
    extra = bank_passes(stride) - 1
    # a store and a load per lane, 8 warps, each pass beyond the first a cycle
    assert t[stride] - t[1] >= 2 * (256 // 32) * extra
    assert (t[stride] == t[1]) == (extra == 0)


@pytest.mark.parametrize("model", MODELS)
def test_strided_lane_loads_move_whole_sectors(model):
    x = pto.alloc_tensor(256 * 32 * 4, dtype=np.float32)
    y = pto.alloc_tensor(256 * 4, dtype=np.float32)

    def prof(stride):
        return pto.profile(strided, grid=1, block=256, args=(x, y, stride), model=model)

    unit, wide = prof(1), prof(32)
    # contiguous: 4 sectors per warp; stride 32 floats = 128 B: a sector per lane
    assert unit.hbm_bytes == 2 * 256 * 4
    assert wide.hbm_bytes == 256 * 32 + 256 * 4
    assert wide.total_cycles > unit.total_cycles


@pto.kernel
def strided(x, y, stride):
    i = pto.get_global_id()
    pto.store(y + i, pto.load(x + i * stride))


def test_the_sector_size_is_the_targets(tmp_path):
    target = tmp_path / "wide_sectors.toml"
    target.write_text("[cost.memory]\nsector_bytes = 128\n")
    x = pto.alloc_tensor(256 * 32 * 4, dtype=np.float32)
    y = pto.alloc_tensor(256 * 4, dtype=np.float32)
    prof = pto.profile(strided, grid=1, block=256, args=(x, y, 32), target=str(target))
    # every lane of stride 32 floats in its own 128-byte sector; the store: 1 sector per warp
    assert prof.hbm_bytes == 256 * 128 + 8 * 128
