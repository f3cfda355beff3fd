"""SIMT loops (SPEC §2 "Control flow"): `range` with per-lane bounds and a run-time uniform
step, `while`, `break` / `continue` under lane-dependent conditions, nested; checked against
NumPy / plain Python references, in every execution mode and through every pass."""

import numpy as np
import pytest

import pypto as pto

FULL_PIPELINE = ("canonicalize,cse,pto-double-buffer,pto-insert-barriers,pto-allocate-l1,"
                 "pto-verify-barriers,convert-pto-to-npu,npu-fuse-load-mma")


def _run(kernel, grid, block, arrays, scalars=(), **options):
    """Launch with device copies of `arrays` (then `scalars`); return the arrays after."""
    tensors = []
    for a in arrays:
        t = pto.alloc_tensor(a.nbytes, dtype=a.dtype)
        pto.memcpy_h2d(t, a)
        tensors.append(t)
    ck = pto.compile(kernel, args=(*tensors, *scalars), block=block, **options)
    ck(grid=grid, block=block, args=(*tensors, *scalars))
    out = []
    for a, t in zip(arrays, tensors):
        host = np.empty_like(a)
        pto.memcpy_d2h(host, t)
        out.append(host)
    return out


@pto.kernel
def grid_stride(x, y, n):
    for i in range(pto.get_global_id(), n, pto.get_grid_dim() * pto.get_block_dim()):
        pto.store(y + i, pto.load(x + i) * 2.0 + 1.0)


@pytest.mark.parametrize("n", [1, 100, 1000, 4099])
def test_cuda_grid_stride_loop_works_as_written(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    (_, y) = _run(grid_stride, 3, 64, [x, np.zeros(n, np.float32)], (n,))
    np.testing.assert_array_equal(y, x * np.float32(2) + np.float32(1))


@pto.kernel
def collatz(out, n):
    g = pto.get_global_id()
    if g < n:
        x = g + 1
        steps = 0
        while x != 1:
            if x % 2 == 0:
                x = x // 2
            else:
                x = 3 * x + 1
            steps += 1
        pto.store(out + g, steps)


def _collatz(v):
    steps = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    return steps


def test_while_with_a_lane_dependent_condition():
    n = 200
    (out,) = _run(collatz, 4, 64, [np.zeros(n, np.int32)], (n,))
    assert out.tolist() == [_collatz(v + 1) for v in range(n)]


@pto.kernel
def break_continue(out, n):
    g = pto.get_global_id()
    total = 0
    for j in range(n):
        if j % 3 == g % 3:
            continue
        if j > g:
            break
        total += j
    k = 0
    while True:
        k += 1
        if k * k > g:
            break
    pto.store(out + g, total * 1000 + k)


def test_break_and_continue_under_lane_dependent_conditions():
    (out,) = _run(break_continue, 2, 32, [np.zeros(64, np.int32)], (40,))
    want = []
    for g in range(64):
        total = 0
        for j in range(40):
            if j % 3 == g % 3:
                continue
            if j > g:
                break
            total += j
        k = 0
        while True:
            k += 1
            if k * k > g:
                break
        want.append(total * 1000 + k)
    assert out.tolist() == want


@pto.kernel
def nested(out, n):
    g = pto.get_global_id()
    acc = 0.0
    for i in range(g % 5, n, 3):
        j = i
        while j > 0:
            if j == 7:
                break
            acc += pto.cast(j, pto.float32)
            j -= 2
    pto.store(out + g, acc)


def test_nested_simt_loops():
    (out,) = _run(nested, 2, 32, [np.zeros(64, np.float32)], (20,))
    want = []
    for g in range(64):
        acc = 0.0
        for i in range(g % 5, 20, 3):
            j = i
            while j > 0:
                if j == 7:
                    break
                acc += j
                j -= 2
        want.append(acc)
    np.testing.assert_array_equal(out, np.array(want, np.float32))


@pto.kernel
def runtime_step(out, step):
    g = pto.get_global_id()
    count = 0
    for i in range(g, 50, step):     # uniform run-time step, negative steps count down
        count += 1
    for i in range(g, -20, -step):
        count += 100
    pto.store(out + g, count)


@pytest.mark.parametrize("step", [1, 3, 7])
def test_runtime_uniform_step(step):
    (out,) = _run(runtime_step, 1, 64, [np.zeros(64, np.int32)], (step,))
    want = [len(range(g, 50, step)) + 100 * len(range(g, -20, -step)) for g in range(64)]
    assert out.tolist() == want


def test_zero_step_is_a_compile_error_when_known_and_a_kernel_error_otherwise():
    @pto.kernel
    def literal_zero(out):
        for i in range(0, 10, 0):
            pto.store(out, 1)

    t = pto.alloc_tensor(64 * 4, dtype=np.int32)
    with pytest.raises(pto.CompileError, match="step of range\\(\\) is zero") as info:
        pto.compile(literal_zero, args=(t,), block=32)
    assert "range(0, 10, 0)" in str(info.value)
    with pytest.raises(pto.KernelError, match="step of this range\\(\\) is 0") as info:
        _run(runtime_step, 1, 32, [np.zeros(64, np.int32)], (0,))
    assert "test_simt_loops.py:" in str(info.value)


def test_a_step_from_lane_ids_is_a_compile_error():
    @pto.kernel
    def id_step(out):
        g = pto.get_global_id()
        c = 0
        for i in range(0, 10, g % 2 + 1):
            c += 1
        pto.store(out + g, c)

    with pytest.raises(pto.CompileError, match=r"step of this range\(\) is computed from the "
                                               "lane's id") as info:
        pto.compile(id_step, args=(pto.alloc_tensor(128, dtype=np.int32),), block=32)
    assert "for i in range(0, 10, g % 2 + 1)" in str(info.value)


def test_a_step_that_differs_between_lanes_is_a_kernel_error_naming_the_line():
    @pto.kernel
    def lane_step(out, steps):
        g = pto.get_global_id()
        c = 0
        for i in range(0, 10, pto.load(steps + g)):
            c += 1
        pto.store(out + g, c)

    steps = np.ones(32, np.int32)
    steps[5] = 2
    with pytest.raises(pto.KernelError, match="differs between lanes") as info:
        _run(lane_step, 1, 32, [np.zeros(32, np.int32), steps])
    assert (_run(lane_step, 1, 32, [np.zeros(32, np.int32), np.full(32, 3, np.int32)])[0]
            == 4).all()
    line = lane_step.fn.__code__.co_firstlineno + 4  # the decorator line is the first
    assert f"test_simt_loops.py:{line}:" in str(info.value)


@pto.kernel
def tile_in_divergent_loop(x, out):
    buf = pto.alloc_local(64)
    i = pto.get_local_id()
    while i < 10:
        pto.fill(buf, 0.0, 64)
        i += 1


@pto.kernel
def barrier_after_lane_break(out, n):
    buf = pto.alloc_local(64)
    for k in range(n):
        if pto.get_local_id() == k:
            break
        pto.barrier_block()


@pytest.mark.parametrize("kernel, cond_text, pattern", [
    (tile_in_divergent_loop, "while i < 10", "trip count differs between lanes"),
    # after a lane-dependent break the rest of the body runs only on the lanes that stayed
    (barrier_after_lane_break, "if pto.get_local_id() == k", "lane-dependent control flow"),
])
def test_tile_ops_and_barriers_in_a_divergent_trip_loop_are_errors(kernel, cond_text, pattern):
    t = pto.alloc_tensor(64 * 4)
    args = (t, t) if kernel is tile_in_divergent_loop else (t, 8)
    with pytest.raises(pto.BarrierError, match=pattern) as info:
        pto.compile(kernel, args=args, block=64)
    message = str(info.value)
    line = int(message.split("condition at ")[1].split(":")[1])
    import linecache
    assert cond_text in linecache.getline(__file__, line)


@pto.kernel
def uniform_while_with_tiles(x, out, n: pto.constexpr):
    buf = pto.alloc_local(64)
    k = 0
    while k < n:                      # uniform: tile instructions and barriers are fine
        tok = pto.async_load(buf, x + k * 64, 64 * 4)
        pto.wait(tok)
        v = pto.load(buf + pto.get_local_id())
        pto.barrier_block()
        pto.store(buf + pto.get_local_id(), v * 2.0)
        pto.barrier_block()
        pto.store(out + k * 64, buf, 64 * 4)
        pto.barrier_block()
        k += 1


@pto.kernel
def divergent_loop_over_l1(x, out):
    buf = pto.alloc_local(64)
    t = pto.get_local_id()
    pto.store(buf + t, pto.load(x + t))
    pto.barrier_block()
    acc = 0.0
    j = t
    while j < 64:                     # each lane walks the tail of the L1 row
        acc += pto.load(buf + j)
        j += 1 + t % 4
    pto.store(out + t, acc)


def _divergent_ref(x):
    out = np.zeros(64, np.float32)
    for t in range(64):
        acc = np.float32(0)
        j = t
        while j < 64:
            acc = np.float32(acc + x[j])
            j += 1 + t % 4
        out[t] = acc
    return out


@pytest.mark.parametrize("options", [
    {},
    {"pipeline": FULL_PIPELINE, "validate": True},
    {"schedule": "reverse", "check_uninitialized": True},
    {"schedule": "random:7", "race_check": True},
    {"schedule": "in_order"},
])
def test_while_loops_through_every_pass_and_schedule(options):
    x = np.arange(4 * 64, dtype=np.float32)
    (_, out) = _run(uniform_while_with_tiles, 1, 64, [x, np.zeros_like(x)], (4,), **options)
    np.testing.assert_array_equal(out, x * 2)
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    (_, out) = _run(divergent_loop_over_l1, 1, 64, [x, np.zeros_like(x)], **options)
    np.testing.assert_array_equal(out, _divergent_ref(x))


def test_grid_stride_and_while_after_every_pass_and_in_batch_mode():
    n = 3000
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    for options in ({"pipeline": FULL_PIPELINE, "validate": True}, {}):
        (_, y) = _run(grid_stride, 5, 96, [x, np.zeros(n, np.float32)], (n,), **options)
        np.testing.assert_array_equal(y, x * np.float32(2) + np.float32(1))
    (out,) = _run(collatz, 8, 32, [np.zeros(256, np.int32)], (256,),
                  pipeline=FULL_PIPELINE, validate=True)
    assert out.tolist() == [_collatz(v + 1) for v in range(256)]


def test_values_assigned_only_inside_a_while_are_undefined_after_it():
    @pto.kernel
    def leaks(out):
        i = pto.get_global_id()
        while i < 10:
            fresh = i * 2
            i += 1
        pto.store(out, fresh)

    with pytest.raises(pto.CompileError, match="first assigned inside the loop"):
        pto.compile(leaks, args=(pto.alloc_tensor(4, dtype=np.int32),), block=32)


def test_while_true_without_break_is_a_compile_error():
    @pto.kernel
    def forever(out):
        while True:
            pto.store(out, 1)

    with pytest.raises(pto.CompileError, match="never end"):
        pto.compile(forever, args=(pto.alloc_tensor(4, dtype=np.int32),), block=32)


def test_uniform_loops_stay_scf_for():
    @pto.kernel
    def uniform(out, n):
        acc = 0
        for k in range(n):
            if k == 3:
                continue
            acc += k
        pto.store(out + pto.get_global_id(), acc)

    ck = pto.compile(uniform, args=(pto.alloc_tensor(256, dtype=np.int32), 9), block=32)
    assert "scf.for" in ck.mlir and "scf.while" not in ck.mlir
    (out,) = _run(uniform, 1, 32, [np.zeros(64, np.int32)], (9,))
    assert (out[:32] == sum(range(9)) - 3).all()


@pto.kernel
def strided_over_l1(out, STEP: pto.constexpr):
    tile = pto.alloc_local(256)
    pto.fill(tile, 0.0, 256)
    t = pto.get_local_id()
    for l in range(t, 256, STEP):       # lanes' elements are disjoint iff STEP >= lanes
        pto.store(tile + l, pto.load(tile + l) + 1.0)
    pto.barrier_block()
    pto.store(out + t, pto.load(tile + t))


@pto.kernel
def strided_by_block_dim(out):
    tile = pto.alloc_local(256)
    pto.fill(tile, 0.0, 256)
    t = pto.get_local_id()
    for l in range(t, 256, pto.get_block_dim()):
        pto.store(tile + l, pto.load(tile + l) + pto.cast(l, pto.float32))
    pto.barrier_block()
    pto.store(out + t, pto.load(tile + t))


def test_barrier_analysis_sees_a_lane_strided_loop_over_l1():
    """The induction variable of a SIMT loop is `start(lane) + k * step` with k the same on
    every lane still in the loop: lanes `t, t + 64, ...` never meet, across iterations either;
    with a step of 32 lanes of two warps do meet (t and t + 32): a hazard."""
    out = pto.alloc_tensor(64 * 4)
    pto.compile(strided_by_block_dim, args=(out,), block=64)
    pto.compile(strided_over_l1, args=(out, 64), block=64)
    # with a step of 32 the lanes meet in different iterations, which the analysis cannot
    # prove (docs/barriers.md#prove-or-defer): a remark, and the race detector at run time
    racy = pto.compile(strided_over_l1, args=(out, 32), block=64)
    assert any("possible" in r.message and "hazard on L1 buffer 'tile'" in r.message
               for r in racy.remarks)
    with pytest.raises(pto.RaceError):
        pto.launch(racy, grid=1, block=64, args=(out, 32))
        pto.sync()
    (res,) = _run(strided_by_block_dim, 1, 64, [np.zeros(64, np.float32)],
                  schedule="reverse", check_uninitialized=True)
    np.testing.assert_array_equal(res, np.arange(64, dtype=np.float32))


@pto.kernel
def while_continue(out, n):
    g = pto.get_global_id()
    k = 0
    odd = 0
    while k < n + g % 3:
        k += 1
        if k % 2 == 0:
            continue
        odd += k
    total = 0
    for i in range(g, -7, -3):        # a per-lane start, a compile-time negative step
        total += i
    pto.store(out + g, odd * 1000 + total)


def test_while_with_continue_and_a_counting_down_simt_range():
    (out,) = _run(while_continue, 1, 64, [np.zeros(64, np.int32)], (9,))
    want = [sum(k for k in range(1, 9 + g % 3 + 1) if k % 2) * 1000 + sum(range(g, -7, -3))
            for g in range(64)]
    assert out.tolist() == want


@pto.kernel
def return_in_loops(out, n):
    g = pto.get_global_id()
    pto.store(out + g, -1)
    for k in range(n):
        j = 0
        while j < 3:
            if k * 3 + j == g:
                return                  # this lane stops: nothing after the loops runs for it
            j += 1
        if k == 7:
            pto.store(out + g, k)
            return
    pto.store(out + g, 1000 + n)


def test_return_inside_nested_loops_stops_only_that_lane():
    (out,) = _run(return_in_loops, 1, 64, [np.zeros(64, np.int32)], (5,))
    want = [-1 if g < 15 else 1005 for g in range(64)]
    assert out.tolist() == want
    (out,) = _run(return_in_loops, 1, 64, [np.zeros(64, np.int32)], (20,))
    want = [-1 if g < 24 else 7 for g in range(64)]   # k = 7 reaches lanes 21-23 first
    assert out.tolist() == want


@pto.kernel
def pipeline_in_a_while(x, y, n):
    buf = pto.alloc_local(64)
    k = 0
    while k < n:                       # uniform: stages run in program order, not pipelined
        with pto.pipeline() as pl:
            with pl.stage("load"):
                tok = pto.async_load(buf, x + k * 64, 64 * 4)
            with pl.stage("compute", after="load"):
                pto.wait(tok)
                v = pto.load(buf + pto.get_local_id())
                pto.store(y + k * 64 + pto.get_local_id(), v * 3.0)
                pto.barrier_block()
        k += 1


@pytest.mark.parametrize("options", [{}, {"pipeline": FULL_PIPELINE, "validate": True}])
def test_a_pipeline_inside_a_while_loop(options):
    x = np.arange(256, dtype=np.float32)
    (_, y) = _run(pipeline_in_a_while, 1, 64, [x, np.zeros_like(x)], (4,), **options)
    np.testing.assert_array_equal(y, x * 3)


@pto.kernel
def per_lane_ranges(starts, stops, out, step, STEP: pto.constexpr):
    g = pto.get_global_id()
    a = pto.load(starts + g)
    b = pto.load(stops + g)
    acc = 0
    for i in range(a, b, step):          # bounds from memory, a run-time step
        acc = acc * 3 + i
        if acc > 100000 or acc < -100000:
            acc = acc % 977
    for i in range(b, a, STEP):          # a compile-time step (negative: counting down)
        if i % 5 == 0:
            continue
        acc += i
    pto.store(out + g, acc)


def _per_lane_ref(a, b, step, STEP):
    acc = 0
    for i in range(a, b, step):
        acc = acc * 3 + i
        if acc > 100000 or acc < -100000:
            acc = acc % 977
    for i in range(b, a, STEP):
        if i % 5 == 0:
            continue
        acc += i
    return acc


@pytest.mark.parametrize("seed", range(4))
def test_random_per_lane_ranges_match_python(seed):
    rng = np.random.default_rng(seed)
    lanes = 96
    starts = rng.integers(-20, 20, lanes).astype(np.int32)
    stops = rng.integers(-20, 40, lanes).astype(np.int32)
    step = int(rng.choice([-3, -1, 1, 2, 5]))
    STEP = int(rng.choice([-4, -1, 2]))
    (_, _, out) = _run(per_lane_ranges, 3, 32, [starts, stops, np.zeros(lanes, np.int32)],
                       (step, STEP))
    want = [_per_lane_ref(int(a), int(b), step, STEP) for a, b in zip(starts, stops)]
    assert out.tolist() == want
