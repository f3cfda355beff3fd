"""`pto-double-buffer` chooses its schedule by the cost model (docs/passes.md#choosing-by-the-cost-model).

On the article's matmul (examples/pipeline_matmul.py), on both shipped targets and under both
models: the schedule `pto.compile`'s default pipeline chooses is never modelled slower than any
candidate it rejected (each forced with `pto-double-buffer{prefetch=...}`, costed by
`pto.profile` on the launch's whole grid, not by the pass's own coster); more work (an unused
`pto.fill`, the audit's finding of issue 31) never makes the compiled kernel faster, also as a
property over generated sizes, trip counts and fills on both targets and models; every
candidate schedule gives the bits of the kernel without the pass; the remark's cycles are
`pto.profile`'s for one block; a second compile of the same IR costs no candidate again.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto as pto

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402

TARGETS = [None, "ascend910b"]
MODELS = ["fused", "table"]
CANDIDATES = ["A_tile", "A_tile,B_tile"]
"""Which tiles are prefetched (the others' loads stay in their iteration): the candidates of the
default `stages=2` — the fusable pair (B's load and its MMA) kept together or not."""
EVERY = ["A_tile", "B_tile", "A_tile,B_tile"]
"""Every way to prefetch at least one tile (B alone: a candidate only when nothing else fits)."""
SIZE, TILE = 512, (128, 128, 64)


@pto.kernel
def matmul_with_fill(A, B, C, M, N, K, tile_m, tile_n, tile_k):
    """The article's matmul with one unused `pto.fill` in its compute stage: more work."""
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    scratch = pto.alloc_local(64)
    for k0 in range(0, K, tile_k):
        with pto.pipeline() as pl:
            with pl.stage("load_a"):
                A_tile = pto.alloc_local(tile_m * tile_k, dtype=A.dtype)
                pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * A.itemsize,
                               rows=tile_m, src_stride=K)
            with pl.stage("load_b", after="load_a"):
                B_tile = pto.alloc_local(tile_k * tile_n, dtype=B.dtype)
                pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * B.itemsize,
                               rows=tile_k, src_stride=N)
            with pl.stage("compute", after="load_b"):
                pto.wait_all()
                pto.fill(scratch, 0.0, 64)
                pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
        pl.run()
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


def _args(size: int = SIZE, tile: tuple[int, int, int] = TILE, seed: int | None = None):
    if seed is None:
        a = pto.empty((size, size), np.float16)
        b = a
    else:
        rng = np.random.default_rng(seed)
        a = pto.tensor(rng.standard_normal((size, size)).astype(np.float16))
        b = pto.tensor(rng.standard_normal((size, size)).astype(np.float16))
    c = pto.zeros((size, size), np.float32)
    return (a, b, c, size, size, size, *tile)


def _grid(size: int = SIZE, tile: tuple[int, int, int] = TILE) -> tuple[int, int]:
    return (size // tile[1], size // tile[0])


def _forced(prefetch: str, stages: int = 2) -> str:
    return (f"pto-double-buffer{{prefetch={prefetch} stages={stages}}},pto-allocate-l1,"
            f"pto-verify-barriers")


def _cycles(kernel, model: str, target: str | None, pipeline: str | None = None,
            grid: tuple[int, ...] | None = None) -> int:
    prof = pto.profile(kernel, grid=grid or _grid(), block=64, args=_args(), model=model,
                       pipeline=pipeline, target=target)
    return prof.total_cycles


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", MODELS)
def test_the_chosen_schedule_is_never_slower_than_a_rejected_one(model, target):
    chosen = _cycles(matmul_tile, model, target)
    rejected = {c: _cycles(matmul_tile, model, target, _forced(c)) for c in CANDIDATES}
    assert chosen == min(rejected.values()), rejected


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", MODELS)
def test_more_work_never_makes_the_compiled_kernel_faster(model, target):
    """Issue 31's finding: an unused `pto.fill` made the default pipeline prefetch both tiles
    and the kernel faster (table 4969 -> 3982). Choosing by the model, the kernel as written
    gets the faster schedule itself."""
    assert _cycles(matmul_with_fill, model, target) >= _cycles(matmul_tile, model, target)


@pytest.mark.parametrize("stages", [2, 3])
def test_every_candidate_schedule_gives_the_bits_of_the_kernel_without_the_pass(stages):
    size, tile = 256, (64, 64, 64)

    def run(pipeline: str | None) -> np.ndarray:
        args = _args(size, tile, seed=3)
        pto.launch(matmul_tile, grid=_grid(size, tile), block=64, args=args, pipeline=pipeline)
        return args[2].numpy()

    before = run("")  # the matmul itself: test_the_results_without_the_pass_are_the_matmul
    for candidate in EVERY:
        np.testing.assert_array_equal(run(_forced(candidate, stages)), before)
    np.testing.assert_array_equal(run(None), before)


def test_the_results_without_the_pass_are_the_matmul():
    size, tile = 256, (64, 64, 64)
    args = _args(size, tile, seed=3)
    expected = args[0].numpy().astype(np.float32) @ args[1].numpy().astype(np.float32)
    pto.launch(matmul_tile, grid=_grid(size, tile), block=64, args=args, pipeline="")
    np.testing.assert_allclose(args[2].numpy(), expected, rtol=1e-4, atol=1e-3)


REMARK = re.compile(r"chose prefetch (?P<chosen>.*?) \((?P<cycles>\d+) cycles, model "
                    r"'(?P<model>\w+)'.*runner-up prefetch (?P<runner>.*?) \((?P<runner_cycles>"
                    r"\d+) cycles\); (?P<count>\d+) candidates")


@pytest.mark.parametrize("target", TARGETS)
def test_the_remark_names_the_choice_and_the_runner_up_with_the_profiles_cycles(target):
    """The pass costs one block of the recorded launch: its figure is `pto.profile`'s for a
    one-block grid of the compiled kernel, cycle for cycle."""
    ck = pto.compile(matmul_tile, args=_args(), block=64, target=target)
    found = [m for r in ck.remarks if (m := REMARK.search(r.message))]
    assert len(found) == 1, [r.message for r in ck.remarks]
    remark = found[0]
    assert remark["model"] == "fused" and int(remark["count"]) == len(CANDIDATES)
    assert int(remark["cycles"]) <= int(remark["runner_cycles"])
    assert int(remark["cycles"]) == _cycles(matmul_tile, "fused", target, grid=(1, 1))


def test_a_second_compile_of_the_same_ir_costs_no_candidate_again():
    import pypto.compiler as compiler

    matmul_tile.clear_cache()  # (an earlier compile's specialisation serves 384 too)
    pto.compile(matmul_tile, args=_args(384), block=64)
    before = compiler._SCHEDULE_COSTER.costed
    assert before >= len(CANDIDATES)
    matmul_tile.clear_cache()
    pto.compile(matmul_tile, args=_args(384), block=64)
    assert compiler._SCHEDULE_COSTER.costed == before


def test_without_a_recorded_launch_the_fusion_aware_default_is_kept():
    """`pypto-opt -p pto-double-buffer` on hand-written IR (no `pto.launch` record): nothing to
    cost on; the fusion-aware default (tests/filecheck/passes/pto-double-buffer-fusion.mlir)."""
    from pypto.diagnostics import capture_diagnostics
    from pypto.ir import LAUNCH_ATTR, make_context
    from pypto.passes import parse_pipeline, run_pipeline
    from pypto.passes.double_buffer import costing_schedules
    from pypto.backend.cost_model.schedule import ScheduleCoster

    module = pto.compile(matmul_tile, args=_args(), block=64, pipeline="").module.clone()
    del module.attributes[LAUNCH_ATTR]
    coster = ScheduleCoster()
    messages: list[str] = []
    with capture_diagnostics(lambda d: messages.append(d.message)), costing_schedules(coster):
        run_pipeline(module, parse_pipeline("pto-double-buffer{block-dims=64}"), make_context())
    assert coster.costed == 0 and not any("chose" in m for m in messages)
    assert any("2 slots for 'A_tile';" in m for m in messages)
    assert any("the load of 'B_tile'" in m and "stays next to its MMA" in m for m in messages)


# more work never faster, as a property ------------------------------------------------------


@pto.kernel
def matmul_with_fills(A, B, C, M, N, K, tile_m, tile_n, tile_k, before: pto.constexpr,
                      after: pto.constexpr, nfill: pto.constexpr):
    """The article's matmul with unused `pto.fill`s of `nfill` elements in its compute stage:
    `before` of them between the wait and the MMA (where they separate the B load from its
    MMA), `after` of them after the MMA (the B load stays next to its MMA)."""
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    scratch = pto.alloc_local(nfill)
    for k0 in range(0, K, tile_k):
        with pto.pipeline() as pl:
            with pl.stage("load_a"):
                A_tile = pto.alloc_local(tile_m * tile_k, dtype=A.dtype)
                pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * A.itemsize,
                               rows=tile_m, src_stride=K)
            with pl.stage("load_b", after="load_a"):
                B_tile = pto.alloc_local(tile_k * tile_n, dtype=B.dtype)
                pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * B.itemsize,
                               rows=tile_k, src_stride=N)
            with pl.stage("compute", after="load_b"):
                pto.wait_all()
                for _ in pto.static_range(before):
                    pto.fill(scratch, 0.0, nfill)
                pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
                for _ in pto.static_range(after):
                    pto.fill(scratch, 0.0, nfill)
        pl.run()
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(where=st.sampled_from(["before", "after"]),
       size=st.sampled_from([64, 128]), tile=st.sampled_from([(32, 32, 32), (64, 64, 32),
                                                               (64, 64, 64)]),
       trips=st.integers(1, 6), fills=st.integers(0, 2), more=st.integers(1, 2),
       nfill=st.sampled_from([64, 1024]), dtype=st.sampled_from([np.float16, np.float32]))
def test_more_work_never_makes_pto_compiles_output_faster(model, target, where, size, tile,
                                                          trips, fills, more, nfill, dtype):
    """Issue 31's invariant through `pto.compile`'s default pipeline (which chooses its
    double-buffer schedule by the model): `more` added unused fills in the compute stage of
    a pipelined matmul never lower its modelled cycles, on both targets and under both
    models, at generated sizes and trip counts."""
    tm, tn, tk = tile
    k = trips * tk
    a = pto.tensor(np.ones((size, k), dtype))
    b = pto.tensor(np.ones((k, size), dtype))
    c = pto.zeros((size, size), np.float32)

    def cycles(n: int) -> int:
        fills_at = (n, 0) if where == "before" else (0, n)
        # a compile for this launch: a specialisation cached by an earlier example (or test)
        # of the same types keeps the schedule chosen for its own trip counts (the known
        # limit, docs/passes.md#choosing-by-the-cost-model), which is not what is checked here
        matmul_with_fills.clear_cache()
        return pto.profile(matmul_with_fills, grid=(size // tn, size // tm), block=64,
                           args=(a, b, c, size, size, k, tm, tn, tk, *fills_at, nfill),
                           model=model, target=target).total_cycles

    assert cycles(fills + more) >= cycles(fills)
