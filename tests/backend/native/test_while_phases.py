"""`while` loops holding barriers or L1 writes, compiled at block level (docs/native.md#while-loops):
a uniform condition (tree reductions, CUDA's bitonic sort), a lane-dependent one (block-stride
cooperative loads, warp barriers), the interpreter's errors (a warp barrier some lanes miss, the
watchdog, a zero run-time step) — each against NumPy and the interpreter, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native import replay
from pypto.backend.native.jit import NativeUnsupported
from pypto.errors import DeadlockError, KernelError
from tests.backend.native.helpers import both, same_bits

BT = 16  # the blur's 16 x 16 blocks and 18 x 18 tile
NINTH = 1.0 / 9.0


@pto.kernel
def tree_while(x, out, weight):
    """CUDA's tree reduction, `while s > 0` (a uniform condition around a barrier), with a
    lane value carried by the loop (`w`, in a spill slot) and used after it."""
    t = pto.get_local_id()
    buf = pto.alloc_local(256, pto.int32)
    pto.store(buf + t, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = pto.get_block_dim() // 2
    w = t
    while s > 0:
        if t < s:
            pto.store(buf + t, pto.load(buf + t) + pto.load(buf + t + s))
        pto.barrier_block()
        w = w + s * weight
        s //= 2
    pto.store(out + pto.get_global_id(), pto.load(buf) + w)


@pto.kernel
def bitonic_cuda(x, y, BLOCK: pto.constexpr):
    """The CUDA SDK's bitonic sort as written there: `for (k = 2; k <= n; k <<= 1)` and
    `for (j = k >> 1; j > 0; j >>= 1)`, a barrier inside the inner `while`."""
    tid = pto.get_local_id()
    base = pto.get_block_id() * BLOCK
    s = pto.alloc_local(BLOCK)
    pto.store(s + tid, pto.load(x + base + tid))
    pto.barrier_block()
    k = 2
    while k <= BLOCK:
        j = k // 2
        while j > 0:
            ixj = tid ^ j
            if ixj > tid:
                a = pto.load(s + tid)
                b = pto.load(s + ixj)
                if (tid & k) == 0:
                    if a > b:
                        pto.store(s + tid, b)
                        pto.store(s + ixj, a)
                else:
                    if a < b:
                        pto.store(s + tid, b)
                        pto.store(s + ixj, a)
            pto.barrier_block()
            j = j // 2
        k = k * 2
    pto.store(y + base + tid, pto.load(s + tid))


@pto.kernel
def blur_cuda(img, out, h, w):
    """The tiled 3 x 3 blur with CUDA's cooperative load `for (t = tid; t < N; t +=
    blockDim.x * blockDim.y)`: an L1 write in a loop whose trip count differs between lanes,
    its step a run-time value (`pto.loop_step`)."""
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    c = pto.get_block_id(0) * BT + tx
    r = pto.get_block_id(1) * BT + ty
    tile = pto.alloc_local((BT + 2) * (BT + 2))
    r0 = pto.get_block_id(1) * BT - 1
    c0 = pto.get_block_id(0) * BT - 1
    for t in range(ty * BT + tx, (BT + 2) * (BT + 2),
                   pto.get_block_dim(0) * pto.get_block_dim(1)):
        gr = r0 + t // (BT + 2)
        gc = c0 + t % (BT + 2)
        v = 0.0
        if gr >= 0 and gr < h and gc >= 0 and gc < w:
            v = pto.load(img + gr * w + gc)
        pto.store(tile + t, v)
    pto.barrier_block()
    if r < h and c < w:
        acc = 0.0
        for dy in range(3):
            for dx in range(3):
                acc = acc + pto.load(tile + (ty + dy) * (BT + 2) + tx + dx)
        pto.store(out + r * w + c, acc * NINTH)


@pto.kernel
def guarded_fill(x, out, n, m):
    """A lane-dependent loop (each lane its own trip count) storing into L1, under a
    lane-dependent `if`, its per-lane results (`k`, `trips`) used after it."""
    t = pto.get_local_id()
    buf = pto.alloc_local(256, pto.int32)
    pto.store(buf + t, -1)
    pto.barrier_block()
    k = t
    trips = 0
    if t < m:
        while k < n:
            pto.store(buf + k, pto.load(x + k) + trips)
            k = k + m
            trips = trips + 1
    pto.barrier_block()
    pto.store(out + t, pto.load(buf + t) * 1000 + trips * 10 + k % 7)


@pto.kernel
def warp_rounds(x, n):
    """A warp barrier in a loop whose trip count differs between warps (each warp agrees:
    legal), which the interpreter runs with a mask per trip."""
    buf = pto.alloc_local(64)
    tid = pto.get_local_id()
    for k in range(n + tid // 32):
        pto.store(buf + tid, pto.cast(k, pto.float32))
        pto.barrier()
    pto.store(x + tid, pto.load(buf + (tid ^ 1)))


@pto.kernel
def split_warp(x, out, n):
    """Lanes of one warp leave the loop at different trips; the warp barrier inside is then
    reached by part of a warp: the interpreter's deadlock."""
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    k = 0
    while k < n + t % 2:
        pto.store(buf + t, pto.load(x + t))
        pto.barrier()
        k += 1
    pto.store(out + t, pto.load(buf + t))


@pto.kernel
def divergent_barrier(x, out):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + t, pto.load(x + t))
    if t < pto.cast(pto.load(x), pto.int32):
        pto.barrier()
    pto.store(out + t, pto.load(buf + (t ^ 1)))


@pto.kernel
def spin(out, n):
    """A uniform loop around a barrier that runs `n` trips (the watchdog's)."""
    t = pto.get_local_id()
    buf = pto.alloc_local(64, pto.int32)
    k = 0
    while k < n:
        pto.store(buf + t, k)
        pto.barrier_block()
        k += 1
    pto.store(out + t, pto.load(buf + t))


@pto.kernel
def stepped(x, out, s):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    for i in range(t, 64, s):
        pto.store(buf + i, pto.load(x + i))
    pto.barrier_block()
    pto.store(out + t, pto.load(buf + t))


@pto.kernel
def lane_step(x, out, steps):
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    for i in range(t, 64, pto.load(steps + t)):
        pto.store(buf + i, pto.load(x + i))
    pto.barrier_block()
    pto.store(out + t, pto.load(buf + t))


@pto.kernel
def tiles_in_a_while(x, out, n):
    """Async copies in a uniform `while`: each trip issues a tile, waits, reads it, and a
    barrier ends the trip before the next copy overwrites it."""
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    acc = 0.0
    k = 0
    while k < n:
        tok = pto.async_load(buf, x + k, 64 * 4)
        pto.wait(tok)
        acc = acc * 0.5 + pto.load(buf + t)
        pto.barrier_block()
        k += pto.get_block_dim()
    pto.store(out + t, acc)


@pto.kernel
def read_in_flight(x, idx, out, n):
    """A data-dependent read of the tile before its wait: the interpreter's RaceError."""
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    acc = 0.0
    k = 0
    while k < n:
        tok = pto.async_load(buf, x + k, 64 * 4)
        acc = acc + pto.load(buf + pto.load(idx + t))
        pto.wait(tok)
        pto.barrier_block()
        k += 64
    pto.store(out + t, acc)


def blur_ref(img: np.ndarray) -> np.ndarray:
    h, w = img.shape
    p = np.pad(img, 1)
    acc = np.zeros_like(img)
    for dy in range(3):
        for dx in range(3):
            acc = acc + p[dy:dy + h, dx:dx + w]
    return acc * np.float32(NINTH)


@pytest.fixture(scope="module")
def compiled():
    """Each kernel compiled once for the module (its native code built at its first launch)."""
    def z(dtype=np.float32, n=64):
        return np.zeros(n, dtype)

    img = np.zeros((20, 30), np.float32)
    return {
        "tree": pto.compile(tree_while, args=(z(np.int32), z(np.int32), 1), block=128),
        "bitonic": pto.compile(bitonic_cuda, args=(z(), z(), 256), block=256),
        "blur": pto.compile(blur_cuda, args=(img, img.copy(), 20, 30), block=(BT, BT)),
        "fill": pto.compile(guarded_fill, args=(z(np.int32), z(np.int32), 1, 1), block=64),
        "spin": pto.compile(spin, args=(z(np.int32), 1), block=64),
        "stepped": pto.compile(stepped, args=(z(), z(), 1), block=64),
        "tiles": pto.compile(tiles_in_a_while, args=(z(n=320), z(), 1), block=64),
    }


def test_uniform_while_around_barriers_is_a_block_level_loop(compiled):
    x = np.random.default_rng(0).integers(-1000, 1000, 512).astype(np.int32)
    interp, native = both(compiled["tree"], 4, 128, [x, np.zeros(512, np.int32)], (3,))
    assert same_bits(interp, native)
    sums = x.reshape(4, 128).sum(axis=1)
    w = np.arange(128) + 3 * (64 + 32 + 16 + 8 + 4 + 2 + 1)
    assert np.array_equal(native[1], (sums[:, None] + w[None, :]).reshape(-1))


def test_cuda_bitonic_sort_with_nested_while_loops(compiled):
    x = np.random.default_rng(1).standard_normal(1024).astype(np.float32)
    interp, native = both(compiled["bitonic"], 4, 256, [x, np.zeros(1024, np.float32)], (256,))
    assert same_bits(interp, native)
    assert np.array_equal(native[1], np.sort(x.reshape(4, 256), axis=1).reshape(-1))


@pytest.mark.parametrize("h, w", [(20, 30), (33, 17)])
def test_cooperative_load_in_a_lane_dependent_loop(compiled, h, w):
    img = np.random.default_rng(h).standard_normal((h, w)).astype(np.float32)
    grid = (-(-w // BT), -(-h // BT))
    interp, native = both(compiled["blur"], grid, (BT, BT), [img, np.zeros_like(img)], (h, w))
    assert same_bits(interp, native)
    assert np.array_equal(native[1], blur_ref(img))


def test_lane_dependent_loop_under_a_guard_with_results(compiled):
    n, m = 200, 48
    x = np.arange(256, dtype=np.int32) * 3
    interp, native = both(compiled["fill"], 1, 64, [x, np.zeros(64, np.int32)], (n, m))
    assert same_bits(interp, native)
    t = np.arange(64)
    trips = np.where(t < m, np.maximum(0, -(-(n - t) // m)), 0)
    k = np.where(t < m, t + trips * m, t)
    value = x[t] + t // m  # buf[t]: lane t's first store, or lane t - m's second
    assert np.array_equal(native[1], value * 1000 + trips * 10 + k % 7)


def test_warp_barrier_in_a_loop_whose_trips_differ_between_warps():
    out = [np.zeros(64, np.float32) for _ in range(2)]
    for backend, o in zip(("interpreter", "native"), out):
        pto.launch(warp_rounds, 1, 64, (o, 2), backend=backend)
    assert np.array_equal(out[0], out[1]) and np.array_equal(out[1], [1.0] * 32 + [2.0] * 32)


@pytest.mark.parametrize("replayed", [True, False])
def test_warp_barrier_some_lanes_miss_is_the_interpreters_deadlock(monkeypatch, replayed):
    """Under a lane-dependent `if` and in a loop lanes of one warp leave at different trips:
    the interpreter's DeadlockError, message and line, from the replay or from compiled code's
    own record (replay off)."""
    monkeypatch.setattr(replay, "ENABLED", replayed)
    cases = [(divergent_barrier, (np.full(64, 5, np.float32), np.zeros(64, np.float32))),
             (split_warp, (np.ones(64, np.float32), np.zeros(64, np.float32), 3))]
    for kernel, args in cases:
        messages = []
        for backend in ("interpreter", "native"):
            with pytest.raises(DeadlockError) as info:
                pto.launch(kernel, 1, 64, tuple(a.copy() if isinstance(a, np.ndarray) else a
                                                for a in args), backend=backend)
            messages.append(str(info.value))
        assert messages[0] == messages[1]
        assert "not reached by every lane of the warp" in messages[1]


def test_block_level_while_counts_trips_for_the_watchdog(compiled, monkeypatch):
    out = np.zeros(64, np.int32)
    interp, native = both(compiled["spin"], 1, 64, [out], (50,))
    assert same_bits(interp, native) and np.array_equal(native[0], np.full(64, 49))
    monkeypatch.setenv("PYPTO_MAX_TRIPS", "40")
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(KernelError) as info:
            pto.launch(compiled["spin"], 1, 64, (out.copy(), 50), backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "40 trips" in messages[1]
    pto.launch(compiled["spin"], 1, 64, (out, 39), backend="native")  # 40 evaluations: fine
    assert np.array_equal(out, np.full(64, 38))


def test_run_time_step_zero_and_a_step_that_differs_between_lanes(compiled, monkeypatch):
    x = np.arange(64, dtype=np.float32)
    interp, native = both(compiled["stepped"], 1, 64, [x, np.zeros(64, np.float32)], (64,))
    assert same_bits(interp, native) and np.array_equal(native[1], x)
    for replayed in (True, False):
        monkeypatch.setattr(replay, "ENABLED", replayed)
        messages = []
        for backend in ("interpreter", "native"):
            with pytest.raises(KernelError) as info:
                pto.launch(compiled["stepped"], 1, 64, (x, np.zeros(64, np.float32), 0),
                           backend=backend)
            messages.append(str(info.value))
        assert messages[0] == messages[1] and "step of this range() is 0" in messages[1]
    with pytest.raises(NativeUnsupported, match=r"test_while_phases.py:\d+:\d+: the step of "
                                                r"this range\(\) may differ between lanes"):
        pto.launch(lane_step, 1, 64, (x, np.zeros(64, np.float32), np.full(64, 64, np.int32)),
                   backend="native")


def test_async_copies_in_a_while_loop(compiled):
    x = np.random.default_rng(5).integers(-50, 50, 320).astype(np.float32)
    interp, native = both(compiled["tiles"], 1, 64, [x, np.zeros(64, np.float32)], (320,))
    assert same_bits(interp, native)
    acc = np.zeros(64, np.float32)
    for k in range(0, 320, 64):
        acc = acc * np.float32(0.5) + x[k:k + 64]
    assert np.array_equal(native[1], acc)
    args = (x, np.arange(64, dtype=np.int32), np.zeros(64, np.float32), 128)
    with pytest.raises(NativeUnsupported, match=r"'pto.load' may touch the L1 buffer of the "
                                                r"async copy at .*test_while_phases.py"):
        pto.launch(read_in_flight, 1, 64, args, backend="native")


@pto.kernel
def printing_fill(out, n):
    """printf in a lane-dependent loop around L1 writes: the lines in the interpreter's order
    (op by op over its lane vector, trip by trip)."""
    t = pto.get_local_id()
    buf = pto.alloc_local(64)
    i = t
    while i < n:
        pto.store(buf + i, 1.0)
        if t < 2:
            pto.printf("lane %d i %d\n", t, i)
        i += 16
    pto.barrier_block()
    pto.store(out + pto.get_global_id(), pto.load(buf + t))


def test_printf_in_a_lane_dependent_loop_around_l1_writes(capsys):
    printed = []
    for backend in ("interpreter", "native"):
        out = np.zeros(48, np.float32)
        pto.launch(printing_fill, 3, 16, (out, 40), backend=backend)
        pto.sync()
        printed.append(capsys.readouterr().out)
        assert np.array_equal(out, np.ones(48, np.float32))
    assert printed[0] == printed[1] and printed[1].count("\n") == 18
    lines = printed[1].splitlines()  # (the interpreter's vector holds the 3 blocks: trip 0 of
    assert lines[2] == "[block (1, 0, 0) lane (0, 0, 0)] lane 0 i 0"  # each, then trip 1)
    assert sorted(lines) == sorted(f"[block ({b}, 0, 0) lane ({t}, 0, 0)] lane {t} i {i}"
                                   for b in range(3) for t in range(2) for i in (t, t + 16, t + 32))
