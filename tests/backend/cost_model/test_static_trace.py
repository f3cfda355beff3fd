"""A candidate schedule costed from its IR (static_trace.py) gives the traced run's cycles.

`pto-double-buffer`'s coster walks a candidate's IR instead of generating and running a traced
executable when every value is block-uniform (docs/cost-model.md "What choosing costs at
compile time"). Checked here against the traced run it replaces, on every candidate trial a
compile builds: the article's matmul at random shapes, tiles and dtypes, stages 2 and 3, and
the zoo's matmul (the zoo's pipelined kernel with candidates to choose between), on both
shipped targets and under both models — the same cycles for every candidate (hence the same
choice and the same remark), with the walk actually used; the whole profile report is the
traced one's; a kernel the walk cannot reproduce (lane ids, a copy out of bounds) is left to
the traced run, which reports the fault.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func

import pypto as pto
from pypto import compiler
from pypto.backend.cost_model import ModelParams
from pypto.backend.cost_model.run import model_lowering, run_and_cost
from pypto.backend.cost_model.schedule import ScheduleCoster, launch_arguments
from pypto.backend.cost_model.static_trace import static_profile
from pypto.backend.interpreter import Executable
from pypto.backend.targets import resolve_target
from pypto.ir import make_context
from pypto.passes import parse_pipeline

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402

sys.path.insert(0, str(ROOT))
from tests.kernels import zoo  # noqa: E402

TARGETS = [None, "ascend910b"]
MODELS = ["fused", "table"]


class BothWays(ScheduleCoster):
    """Costs every candidate by the walk and by the traced run; keeps both."""

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple[bool, int, int]] = []  # (walked, walk's cycles, traced cycles)

    def _cost(self, module: Any, kernel: str, model: str, target: str,
              block: tuple[int, ...], values: dict[str, str]) -> int:
        twin = module.clone()
        walked = self.walked
        self.static = True
        mine = super()._cost(module, kernel, model, target, block, values)
        self.static = False
        try:
            traced = super()._cost(twin, kernel, model, target, block, values)
        finally:
            twin.erase()
            self.static = True
        self.pairs.append((self.walked > walked, mine, traced))
        return mine


@pytest.fixture
def both(monkeypatch: pytest.MonkeyPatch) -> BothWays:
    coster = BothWays()
    monkeypatch.setattr(compiler, "_SCHEDULE_COSTER", coster)
    return coster


def _matmul_args(size: int, tile: tuple[int, int, int], dtype: Any) -> tuple[Any, ...]:
    a = pto.alloc_tensor(size * size * np.dtype(dtype).itemsize, dtype=dtype)
    c = pto.alloc_tensor(size * size * 4, dtype=np.float32)
    return (a, a, c, size, size, size, *tile)


def _compile(kernel: Any, args: tuple[Any, ...], target: str | None, model: str,
             stages: int = 2) -> Any:
    pipe = (f"pto-double-buffer{{model={model} stages={stages}}},pto-allocate-l1,"
            f"pto-verify-barriers")
    return pto.compile(pto.kernel(kernel.fn), args=args, block=64, pipeline=pipe, target=target)


def _check(both: BothWays, ck: Any) -> None:
    assert both.pairs, "no candidate was costed"
    assert all(walked for walked, _, _ in both.pairs), both.pairs
    assert [mine for _, mine, _ in both.pairs] == [traced for _, _, traced in both.pairs]
    assert any("chose" in r.message for r in ck.remarks)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", MODELS)
def test_the_article_matmul_costs_the_same_walked_as_traced(both, target, model):
    for stages in (2, 3):
        both.pairs.clear()
        ck = _compile(matmul_tile, _matmul_args(512, (128, 128, 64), np.float16), target, model,
                      stages)
        _check(both, ck)


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tm=st.sampled_from([32, 64, 128]), tn=st.sampled_from([32, 64, 128]),
       tk=st.sampled_from([16, 32, 64]), trips=st.integers(1, 6),
       dtype=st.sampled_from([np.float16, np.float32]), target=st.sampled_from(TARGETS),
       model=st.sampled_from(MODELS), stages=st.sampled_from([2, 3]))
def test_random_matmul_shapes_cost_the_same_walked_as_traced(both, tm, tn, tk, trips, dtype,
                                                              target, model, stages):
    size = max(tm, tn, tk * trips)
    size = -(-size // 128) * 128
    both.pairs.clear()
    ck = _compile(matmul_tile, _matmul_args(size, (tm, tn, tk), dtype), target, model, stages)
    if both.pairs:  # (a loop of one trip may leave nothing to choose between)
        _check(both, ck)


@pytest.mark.parametrize("target", TARGETS)
def test_the_zoo_matmul_costs_the_same_walked_as_traced(both, target):
    case = next(c for c in zoo.cases("quick") if c.name.startswith("matmul (pipelined"))
    host = case.inputs(np.random.default_rng(0))
    tensors = []
    for a in host.values():
        d = pto.alloc_tensor(a.nbytes, dtype=a.dtype)
        pto.memcpy_h2d(d, a)
        tensors.append(d)
    args = case.lead + tuple(tensors) + tuple(case.scalars(host))
    ck = pto.compile(pto.kernel(case.kernel.fn), args=args, block=case.block, target=target)
    _check(both, ck)


def _lowered(target: str | None, m: int, tile: tuple[int, int, int]) -> tuple[Any, Any]:
    """The article's matmul as the default pipeline leaves it, lowered as `fused` costs it."""
    ck = pto.compile(pto.kernel(matmul_tile.fn), args=_matmul_args(m, tile, np.float16),
                     block=64, target=target)
    module = ck.module.clone()
    t = resolve_target(target)
    for p in parse_pipeline(model_lowering(t)):
        p.apply(make_context(), module)
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return module, kernel


@pytest.mark.parametrize("target", TARGETS)
def test_the_walks_profile_report_is_the_traced_runs(target):
    m, tile = 256, (64, 128, 32)
    _, kernel = _lowered(target, m, tile)
    params = ModelParams.of(resolve_target(target), "fused")
    values = {"A": str(m * m), "B": str(m * m), "C": str(m * m), "M": str(m), "N": str(m),
              "K": str(m), "tile_m": str(tile[0]), "tile_n": str(tile[1]),
              "tile_k": str(tile[2])}
    scalars = [None, None, None, m, m, m, *tile]
    sizes = [m * m] * 3 + [None] * 6
    walked = static_profile(kernel, (64, 1, 1), scalars, sizes, params)
    assert walked is not None
    executable = Executable(kernel, target=params.target, race_check=False, fast_paths=False)
    traced = run_and_cost(executable, (1, 1, 1), (64, 1, 1), launch_arguments(kernel, values),
                          params, by_class=False)
    assert walked.total_cycles == traced.total_cycles
    assert walked.to_text() == traced.to_text()


def test_a_copy_out_of_bounds_is_left_to_the_interpreter():
    m, tile = 256, (64, 64, 32)
    _, kernel = _lowered(None, m, tile)
    params = ModelParams.of(resolve_target(None), "fused")
    scalars = [None, None, None, m, m, m, *tile]
    # B holds fewer elements than the copies read: the walk declines (the traced run faults)
    assert static_profile(kernel, (64, 1, 1), scalars, [m * m, m * m // 2, m * m],
                          params) is None
    assert static_profile(kernel, (64, 1, 1), scalars, [m * m] * 3, params) is not None


@pto.kernel
def lanes_in_the_loop(A, B, n, tile):
    buf = pto.alloc_local(tile)
    for k0 in range(0, n, tile):
        with pto.pipeline() as pl:
            with pl.stage("load"):
                x = pto.alloc_local(tile)
                pto.async_load(x, A + k0, tile * 4)
            with pl.stage("use", after="load"):
                pto.wait_all()
                i = pto.get_local_id(0)
                buf[i] = buf[i] + x[i]
        pl.run()
    pto.store(B, buf, tile * 4)


def test_a_kernel_with_lane_values_is_walked_by_no_one():
    a = pto.alloc_tensor(1024 * 4, dtype=np.float32)
    b = pto.alloc_tensor(64 * 4, dtype=np.float32)
    ck = pto.compile(lanes_in_the_loop, args=(a, b, 1024, 64), block=64,
                     pipeline="pto-allocate-l1")
    module = ck.module.clone()
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    params = ModelParams.of(resolve_target(None), "table")
    assert static_profile(kernel, (64, 1, 1), [None, None, 1024, 64], [1024, 64, None, None],
                          params) is None
