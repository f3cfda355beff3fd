"""SIMT loops, helpers and pto.reduce under the tools built on the interpreter: the cost model
(pto.profile), the debugger (pypto.debug), every execution mode of the interpreter, and run-time
errors located in helpers."""

import numpy as np
import pytest

import pypto as pto
from pypto.debug import debug_kernel


def divide(a, b):
    return a // b                     # a run-time division by zero names this line


@pto.kernel
def per_lane_work(x, out, n):
    g = pto.get_global_id()
    acc = 0.0
    for i in range(g, n, pto.get_grid_dim() * pto.get_block_dim()):
        acc += pto.load(x + i)
    j = 0
    while j < g % 4:
        acc += 1.0
        j += 1
    s = pto.reduce(acc, scope="block")
    pto.store(out + g, s + pto.reduce(acc, op="max"))


def _tensors(n, lanes):
    x = np.ones(n, np.float32)
    dx, dout = pto.alloc_tensor(x.nbytes), pto.alloc_tensor(lanes * 4)
    pto.memcpy_h2d(dx, x)
    return dx, dout


def test_cost_model_times_simt_loops_and_reductions_and_grows_with_the_trip_count():
    cycles = []
    for n in (256, 4096, 16384):
        dx, dout = _tensors(n, 128)
        p = pto.profile(per_lane_work, grid=2, block=64, args=(dx, dout, n))
        cycles.append(p.total_cycles)
    assert cycles[0] < cycles[1] < cycles[2]


def test_debugger_steps_through_a_while_loop():
    dx, dout = _tensors(256, 64)
    line = per_lane_work.fn.__code__.co_firstlineno + 8     # `acc += 1.0` in the while loop
    s = debug_kernel(per_lane_work, grid=1, block=64, args=(dx, dout, 256))
    s.break_at(line)
    s.continue_()
    lanes = s.active_lanes()
    assert 0 not in lanes and 4 not in lanes and 1 in lanes and 3 in lanes  # g % 4 > 0 only
    s.continue_()                     # second iteration: lanes with g % 4 >= 2
    j = s.value("j", lanes=[2, 3])
    assert list(np.asarray(j).ravel()) == [1, 1]
    s.continue_()
    s.continue_()                     # past the third iteration: the kernel ends
    assert s.finished


@pytest.mark.parametrize("options", [{}, {"schedule": "in_order"}, {"schedule": "random:1"}])
def test_block_mode_runs_a_loop_uniform_per_block(options):
    """The trip count depends on the block id: uniform in each block (barriers are legal in
    it) but not across blocks, so blocks cannot be batched in one lane vector."""
    @pto.kernel
    def per_block(out):
        buf = pto.alloc_local(64)
        t = pto.get_local_id()
        k = 0
        acc = 0.0
        while k <= pto.get_block_id():
            pto.store(buf + t, pto.cast(k, pto.float32))
            pto.barrier_block()
            acc += pto.load(buf + (63 - t))
            pto.barrier_block()
            k += 1
        pto.store(out + pto.get_global_id(), acc)

    out = pto.alloc_tensor(3 * 64 * 4)
    ck = pto.compile(per_block, args=(out,), block=64, **options)
    ck(grid=3, block=64, args=(out,))
    host = np.empty(3 * 64, np.float32)
    pto.memcpy_d2h(host, out)
    want = np.repeat([sum(range(b + 1)) for b in range(3)], 64).astype(np.float32)
    np.testing.assert_array_equal(host, want)


def test_a_run_time_error_in_a_helper_names_the_helpers_line():
    @pto.kernel
    def k(out, d):
        i = pto.get_global_id()
        pto.store(out + i, divide(i, d))

    with pytest.raises(pto.KernelError) as info:
        out = pto.alloc_tensor(32 * 4, dtype=np.int32)
        pto.launch(k, grid=1, block=32, args=(out, 0))
        pto.sync()
    line = divide.__code__.co_firstlineno + 1
    assert f"test_simt_tools.py:{line}:" in str(info.value)


def test_a_loop_that_never_ends_is_a_kernel_error(monkeypatch):
    monkeypatch.setenv("PYPTO_MAX_TRIPS", "1000")

    @pto.kernel
    def forever(out, n):
        i = pto.get_global_id()
        while i < n:             # i never changes: lanes below n never leave
            pto.store(out + i, 1)

    out = pto.alloc_tensor(32 * 4, dtype=np.int32)
    with pytest.raises(pto.KernelError, match="has run 1,000 trips without ending"):
        pto.launch(forever, grid=1, block=32, args=(out, 5))
        pto.sync()
