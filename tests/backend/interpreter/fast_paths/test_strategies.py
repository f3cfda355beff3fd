"""The access strategies (pypto/backend/interpreter/strategies/) as units: every module there is
registered and has the shape the recipe (docs/interpreter.md, "Adding an access kind") says;
the plan is a mapping op -> decisions, empty with the fast paths off; and the worked example,
`broadcast`, is one module: taken out of the registry, the same kernel runs the general path
with the same bits, checked against NumPy."""

from __future__ import annotations

import dataclasses
import pkgutil

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter import strategies
from pypto.backend.interpreter.executor import Executable
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.backend.interpreter.strategies import base, broadcast

T = 64


@pytest.fixture
def fast_paths():
    saved = FAST_PATHS.on
    yield FAST_PATHS
    FAST_PATHS.on = saved


def test_every_strategy_module_is_registered_and_well_formed():
    names = {m.name for m in pkgutil.iter_modules(strategies.__path__)} - {"base"}
    assert {s.__name__.rsplit(".", 1)[1] for s in strategies.REGISTRY} == names
    for s in strategies.REGISTRY:
        assert issubclass(s.Decision, base.Decision) and dataclasses.is_dataclass(s.Decision)
        assert s.Decision.__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert callable(s.match) and s.__doc__


@pto.kernel
def scale_by_staged(x, taps, y, S):
    tid = pto.get_local_id()
    w = pto.alloc_local(1)
    if tid == 0:
        pto.store(w, pto.load(taps + pto.get_block_id() * S))
    pto.barrier_block()
    pto.store(y + pto.get_global_id(), pto.load(x + pto.get_global_id()) * pto.load(w))


def _run(taps: np.ndarray, S: int, blocks: int = 8):
    x = np.random.default_rng(4).standard_normal(blocks * T).astype(np.float32)
    dev = [pto.alloc_tensor(a.nbytes, dtype=a.dtype) for a in (x, taps, x)]
    for d, a in zip(dev, (x, taps, np.zeros_like(x))):
        pto.memcpy_h2d(d, a)
    pto.sync()
    # a fresh Executable each time (pto.compile caches them): planned with the registry of now
    ck = Executable(pto.compile(scale_by_staged, args=dev + [S], block=T).executable.func)
    ck.run((blocks, 1, 1), (T, 1, 1), dev + [S])
    y = np.empty_like(x)
    pto.memcpy_d2h(y, dev[2])
    want = (x.reshape(blocks, T) * taps[np.arange(blocks) * S][:, None]).reshape(-1)
    return ck, y, want


def _broadcast_ops(ck) -> list[str]:
    plan = ck.variant(True).plan
    return [op.name for op, ds in plan.decisions.items()
            if any(isinstance(d, broadcast.Decision) for d in ds)]


def test_the_worked_example_decides_the_broadcast_read_only(fast_paths):
    ck, y, want = _run(np.array([2.5], np.float32), 0)
    # the read of `w` (one L1 element per block) and of `taps + block * 0`; not `x + gid`
    assert _broadcast_ops(ck) == ["pto.load", "pto.load"]
    np.testing.assert_array_equal(y, want)


def test_without_the_module_the_same_kernel_takes_the_general_path(fast_paths, monkeypatch):
    """One module is the whole access kind: out of the registry, nothing decides it, its
    run-time part never runs, and the bits are NumPy's all the same."""
    calls = []
    real = broadcast.one_value
    monkeypatch.setattr(broadcast, "one_value", lambda *a: calls.append(1) or real(*a))
    taps = np.array([0.0, -0.0] * 4, np.float32)  # blocks disagree in the sign of zero
    ck, y, want = _run(taps, 1)
    assert calls and _broadcast_ops(ck)
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))
    monkeypatch.setattr(strategies, "REGISTRY",
                        tuple(s for s in strategies.REGISTRY if s is not broadcast))
    calls.clear()
    ck, y, want = _run(taps, 1)
    assert not calls and not _broadcast_ops(ck)
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))


def test_an_empty_mapping_is_the_general_path(fast_paths):
    fast_paths.on = False
    ck, y, want = _run(np.array([2.5], np.float32), 0)
    gen = ck.variant(True)
    assert gen.plan.decisions == {} and gen.decisions == {}
    np.testing.assert_array_equal(y, want)


COMPILE_TIME = ("window", "ramp", "rows", "tail1d", "planned_view", "hoist", "alias")
ZOO = ("vector_add", "saxpy (fma)", "block_sum (L1 tree)", "transpose (L1 tile)", "argmin block",
       "axpy masked tail", "scale2d ids", "dot interleaved tree", "warp_sync_sum", "popcount")


@pytest.mark.parametrize("kind", COMPILE_TIME)
def test_a_compile_time_kind_out_of_the_registry_changes_no_result(fast_paths, monkeypatch,
                                                                    kind):
    """Each compile-time kind is one module too: out of the registry, no op gets its
    decisions, its calls vanish from the generated code, and zoo kernels that used it still
    pass their NumPy checks (the general path, or another kind, runs those ops)."""
    from tests.kernels.zoo import cases
    module = getattr(strategies, kind)
    monkeypatch.setattr(strategies, "REGISTRY",
                        tuple(s for s in strategies.REGISTRY if s is not module))
    ran = 0
    executables = []
    # variants are cached per Executable (and compiles per process): drop them before and
    # after, so neither this test nor a later one runs code planned with another registry
    monkeypatch.setattr(Executable, "variant", _fresh_variants(executables))
    for case in cases("tiny"):
        if not case.name.startswith(ZOO):
            continue
        host = case.inputs(np.random.default_rng(5))
        tensors = {k: pto.tensor(a) for k, a in host.items()}
        args = case.lead + tuple(tensors.values()) + tuple(case.scalars(host))
        ck = pto.compile(case.kernel, args=args, block=case.block)
        one_d = isinstance(case.grid, int) and isinstance(case.block, int)
        plan = ck.executable.variant(one_d).plan
        assert not plan.decides(module.Decision)
        assert f"_s_{kind}." not in ck.executable.variant(one_d).source
        pto.launch(case.kernel, case.grid, case.block, args)
        pto.sync()
        outs = {k: t.numpy() for k, t in tensors.items()}
        case.check(outs, host)
        ran += 1
    assert ran >= 5


def _fresh_variants(seen: list) -> object:
    real = Executable.variant

    def variant(self, *a, **kw):  # type: ignore[no-untyped-def]
        if self not in seen:
            seen.append(self)
            self._variants.clear()
            self._chunks.clear()  # launch shapes memoised with their variant
        return real(self, *a, **kw)
    return variant


@pytest.fixture(autouse=True)
def _forget_variants():
    yield
    import gc
    for obj in gc.get_objects():
        if isinstance(obj, Executable):
            obj._variants.clear()
            obj._chunks.clear()
