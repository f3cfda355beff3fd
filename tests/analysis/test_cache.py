"""Shared analyses are computed once per kernel and IR state (pypto/analysis/cache.py)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func

import pypto as pto
from pypto.analysis import cache, lane_values, uniformity
from pypto.analysis.barriers import lane_space
from pypto.ir import make_context
from pypto.passes import parse_pipeline, run_pipeline
from pypto.tools.parsing import parse_module

TEXT = """
func.func @k(%a: !pto.ptr<f32, global>, %o: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %p = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %x = pto.load %p : !pto.ptr<f32, global> -> f32
  %y = pto.load %p : !pto.ptr<f32, global> -> f32
  %s = arith.addf %x, %y : f32
  %q = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  pto.store %s, %q : f32, !pto.ptr<f32, global>
  func.return
}
"""


def _kernel():
    ctx = make_context()
    module, _ = parse_module(ctx, TEXT, "<cache test>")
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return ctx, module, kernel


@pytest.fixture
def computations(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"varying": 0, "lane_model": 0}
    compute = uniformity._compute_varying
    init = lane_values.LaneModel.__post_init__

    def counted_compute(*args, **kwargs):
        counts["varying"] += 1
        return compute(*args, **kwargs)

    def counted_init(self):
        counts["lane_model"] += 1
        init(self)

    monkeypatch.setattr(uniformity, "_compute_varying", counted_compute)
    monkeypatch.setattr(lane_values.LaneModel, "__post_init__", counted_init)
    return counts


def test_same_result_until_the_ir_changes(computations: dict[str, int]) -> None:
    ctx, module, kernel = _kernel()
    first = uniformity.varying_values(kernel)
    assert uniformity.varying_values(kernel) is first
    assert computations["varying"] == 1
    loads = [op for op in kernel.walk() if isinstance(op, pto.dialects.pto.LoadOp)]
    assert {load.results[0] for load in loads} <= first
    # A verifier preserves analyses; CSE changes the IR (merges the two loads): recomputed.
    run_pipeline(module, parse_pipeline("pto-verify-barriers"), ctx)
    assert uniformity.varying_values(kernel) is first
    run_pipeline(module, parse_pipeline("cse"), ctx)
    after = uniformity.varying_values(kernel)
    assert after is not first and computations["varying"] == 2
    erased = [load.results[0] for load in loads if load.parent is None]
    assert len(erased) == 1 and erased[0] not in after and erased[0] in first


def test_the_two_flavours_are_separate_entries() -> None:
    _, _, kernel = _kernel()
    per_block = uniformity.varying_values(kernel)
    per_vector = uniformity.varying_values(kernel, block_ids_uniform=False)
    assert per_block is not per_vector
    assert uniformity.varying_values(kernel, block_ids_uniform=False) is per_vector


def test_lane_model_shared_and_invalidated() -> None:
    _, module, kernel = _kernel()
    space = lane_space(64)
    model = lane_values.lane_model(kernel, space)
    assert lane_values.lane_model(kernel, space) is model
    assert lane_values.lane_model(kernel, lane_space(128)) is not model
    cache.invalidate(module)  # a kernel nested in the module: dropped too
    assert lane_values.lane_model(kernel, space) is not model


@pto.kernel
def staged_sum(a, o):
    buf = pto.alloc_local(64, dtype=pto.float32)
    t = pto.get_local_id()
    pto.store(buf + t, pto.load(a + t))
    pto.barrier_block()
    pto.store(o + t, pto.load(buf + 63 - t))


def test_compile_and_first_launch_compute_each_analysis_once(computations) -> None:
    """Before the cache: the uniformity check, pto-verify-barriers, the mode choice and the code
    generator each recomputed `varying_values` (4 times for a block-level kernel)."""
    a, o = pto.alloc_tensor(64 * 4), pto.alloc_tensor(64 * 4)
    data = np.arange(64, dtype=np.float32)
    pto.memcpy_h2d(a, data)
    ck = pto.compile(staged_sum, args=(a, o), block=64)
    pto.launch(ck, grid=1, block=64, args=(a, o))
    out = np.empty(64, dtype=np.float32)
    pto.memcpy_d2h(out, o)
    np.testing.assert_array_equal(out, data[::-1])
    # one per flavour: block ids uniform (checks, barrier pass), not (batched blocks)
    assert computations["varying"] == 2
    assert computations["lane_model"] == 1


def test_passes_that_change_no_value_keep_the_analyses() -> None:
    """pto-allocate-l1 only sets offsets; pto-double-buffer drops a kernel's analyses only when
    it rewrites one of its loops (here there is none)."""
    ctx, module, kernel = _kernel()
    first = uniformity.varying_values(kernel)
    run_pipeline(module, parse_pipeline("pto-double-buffer,pto-allocate-l1"), ctx)
    assert uniformity.varying_values(kernel) is first
    run_pipeline(module, parse_pipeline("canonicalize"), ctx)
    assert uniformity.varying_values(kernel) is not first


def test_invalidate_while_another_thread_compiles() -> None:
    """The reported failure: `invalidate` (after every pass) iterated a process-wide weak
    dictionary while another thread's compile added an entry to it: `RuntimeError: dictionary
    changed size during iteration`. Switching threads every microsecond, the old code failed
    within a few hundred invalidations; now nothing is iterated."""
    import sys
    import threading

    _, module, kernel = _kernel()
    uniformity.varying_values(kernel)
    stop = threading.Event()
    errors: list[BaseException] = []

    def compile_others() -> None:
        try:
            while not stop.is_set():
                _, _, other = _kernel()
                uniformity.varying_values(other)  # adds an entry, drops it with the kernel
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    other = threading.Thread(target=compile_others)
    other.start()
    try:
        for _ in range(2000):
            cache.invalidate(module)
            assert cache.cached_keys(kernel) == []
            per_block = uniformity.varying_values(kernel)
            assert cache.cached_keys(kernel) == [("varying_values", True)]
            assert uniformity.varying_values(kernel) is per_block
    finally:
        stop.set()
        other.join(60)
        sys.setswitchinterval(before)
    assert not errors, errors


def test_analyses_die_with_their_kernel() -> None:
    """A `LaneModel` refers to its kernel: under the process-wide weak dictionary this kept
    the key alive, and every compiled block kernel's module leaked."""
    import gc
    import weakref

    _, module, kernel = _kernel()
    lane_values.lane_model(kernel, lane_space(64))
    uniformity.varying_values(kernel)
    gone = weakref.ref(kernel)
    del module, kernel
    gc.collect()
    assert gone() is None


def test_invalidating_one_kernel_keeps_the_others() -> None:
    text = TEXT + TEXT.replace("@k(", "@k2(")
    module, _ = parse_module(make_context(), text, "<two kernels>")
    first, second = [op for op in module.ops if isinstance(op, func.FuncOp)]
    a, b = uniformity.varying_values(first), uniformity.varying_values(second)
    cache.invalidate(first)
    assert uniformity.varying_values(first) is not a
    assert uniformity.varying_values(second) is b
    cache.invalidate(module)
    assert uniformity.varying_values(second) is not b
