"""pypto under threads (docs/reliability.md#threads): 8 host threads x 200 mixed operations —
compile fresh kernels (new kernel functions and new specialisations of shared ones, so the
caches grow and shrink), launch on per-thread streams and on NumPy arrays, profile, step
debugger sessions, allocate and free tensors — every result compared with NumPy, and any
exception in any thread fails the test.

Before the analysis cache was made per-kernel (pypto/analysis/cache.py), this failed within
a few hundred operations with `RuntimeError: dictionary changed size during iteration` from
`invalidate`, called after every pass of one thread's compile while another thread's compile
added an entry; `test_cache.py` has the focused version."""

from __future__ import annotations

import gc
import io
import os
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import pypto as pto
import pypto.debug as dbg

THREADS = 8
OPERATIONS = 200
N = 96  # elements of the element-wise kernels (two blocks of 64 lanes, the second partial)
BLOCK = 64


def make_affine(scale: float, shift: float) -> Any:
    """A new kernel function per call: its closed-over constants are folded in at compile
    time, so every one is a fresh compilation (and a fresh set of cached analyses)."""

    @pto.kernel
    def affine(a, o, n):
        i = pto.get_global_id()
        if i < n:
            pto.store(o + i, pto.load(a + i) * scale + shift)

    return affine


def make_rotate(shift: int) -> Any:
    """A new block kernel per call (L1, a block barrier): its compile runs the pass pipeline,
    which invalidates the cached analyses after every pass."""

    @pto.kernel
    def rotate(a, o):
        buf = pto.alloc_local(BLOCK, dtype=pto.float32)
        t = pto.get_local_id()
        pto.store(buf + t, pto.load(a + t))
        pto.barrier_block()
        pto.store(o + t, pto.load(buf + (t + shift) % BLOCK))

    return rotate


@pto.kernel
def reverse_in_l1(a, o, SIZE: pto.constexpr):
    """Shared by every thread; each SIZE is its own specialisation (L1, a block barrier)."""
    buf = pto.alloc_local(SIZE, dtype=pto.float32)
    t = pto.get_local_id()
    pto.store(buf + t, pto.load(a + t) + 1.0)
    pto.barrier_block()
    pto.store(o + t, pto.load(buf + (SIZE - 1) - t))


@pto.kernel
def axpy(x, y, o, alpha, n):
    """Shared by every thread, launched on each thread's own tensors."""
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i) * alpha
        pto.store(o + i, v + pto.load(y + i))


@pto.kernel
def int_mix(a, o, n):
    """Shared: int32 bit operations and a loop."""
    i = pto.get_global_id()
    if i < n:
        x = pto.load(a + i)
        acc = x
        for k in range(3):
            acc = (acc ^ (x << k)) + k
        pto.store(o + i, acc & 1023)


def int_mix_reference(a: np.ndarray) -> np.ndarray:
    acc = a.copy()
    for k in range(3):
        acc = (acc ^ (a << k)) + np.int32(k)
    return acc & np.int32(1023)


SIZES = (32, 64, 96, 128)


class Worker:
    """One thread's operations; each checks its result against NumPy."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.rng = random.Random(1000 + index)
        self.np_rng = np.random.default_rng(index)
        self.stream = pto.Stream()
        self.counts: dict[str, int] = {}

    def small_ints(self, n: int = N) -> np.ndarray:
        """float32 values that make every operation below exact."""
        return self.np_rng.integers(-64, 64, n).astype(np.float32)

    def fresh_compile(self) -> None:
        if self.rng.random() < 0.5:
            self.fresh_block_kernel()
            return
        scale, shift = float(self.rng.randint(-8, 8)), float(self.rng.randint(-100, 100))
        kernel = make_affine(scale, shift)
        a = self.small_ints()
        d_a, d_o = pto.tensor(a), pto.empty(N, np.float32)
        if self.rng.random() < 0.5:
            ck = pto.compile(kernel, args=(d_a, d_o, N), block=BLOCK)
            assert "affine" in ck.mlir  # printing the IR (formats compiled on first use)
            ck(grid=2, block=BLOCK, args=(d_a, d_o, N))
        else:
            pto.launch(kernel, grid=2, block=BLOCK, args=(d_a, d_o, N), stream=self.stream)
            self.stream.synchronize()
        np.testing.assert_array_equal(d_o.numpy(), a * np.float32(scale) + np.float32(shift))
        d_a.free()
        d_o.free()

    def fresh_block_kernel(self) -> None:
        shift = self.rng.randint(0, BLOCK - 1)
        kernel = make_rotate(shift)
        a = self.small_ints(BLOCK)
        d_a, d_o = pto.tensor(a), pto.empty(BLOCK, np.float32)
        if self.rng.random() < 0.5:
            prof = pto.profile(kernel, grid=1, block=BLOCK, args=(d_a, d_o))
            assert prof.total_cycles > 0
        else:
            kernel[1, BLOCK](d_a, d_o)
        np.testing.assert_array_equal(d_o.numpy(), np.roll(a, -shift))
        d_a.free()
        d_o.free()

    def specialise(self) -> None:
        size = self.rng.choice(SIZES)
        a = self.small_ints(size)
        o = np.zeros(size, np.float32)
        reverse_in_l1[1, size](a, o, size)  # NumPy arrays: copied in and back, synchronous
        np.testing.assert_array_equal(o, (a + np.float32(1))[::-1])

    def launch_stream(self) -> None:
        x, y = self.small_ints(), self.small_ints()
        alpha = float(self.rng.randint(-4, 4))
        d_x, d_y, d_o = pto.tensor(x), pto.tensor(y), pto.zeros(N, np.float32)
        for _ in range(3):
            pto.launch(axpy, grid=2, block=BLOCK, args=(d_x, d_y, d_o, alpha, N),
                       stream=self.stream)
        self.stream.synchronize()
        np.testing.assert_array_equal(d_o.numpy(), x * np.float32(alpha) + y)
        for t in (d_x, d_y, d_o):
            t.free()

    def launch_ints(self) -> None:
        a = self.np_rng.integers(0, 1 << 20, N).astype(np.int32)
        d_a, d_o = pto.tensor(a), pto.empty(N, np.int32)
        int_mix[2, BLOCK](d_a, d_o, N)
        np.testing.assert_array_equal(d_o.numpy(), int_mix_reference(a))
        d_a.free()
        d_o.free()

    def profile(self) -> None:
        x, y = self.small_ints(), self.small_ints()
        d_x, d_y, d_o = pto.tensor(x), pto.tensor(y), pto.zeros(N, np.float32)
        if self.rng.random() < 0.5:
            prof = pto.profile(axpy, grid=2, block=BLOCK, args=(d_x, d_y, d_o, 2.0, N))
            expected = x * np.float32(2) + y
        else:
            size = self.rng.choice([s for s in SIZES if s <= N])
            prof = pto.profile(reverse_in_l1, grid=1, block=size, args=(d_x, d_o, size),
                               model=self.rng.choice(("fused", "table")))
            expected = np.zeros(N, np.float32)
            expected[:size] = (x[:size] + np.float32(1))[::-1]
        assert prof.total_cycles > 0
        np.testing.assert_array_equal(d_o.numpy(), expected)  # the profiled run wrote it
        for t in (d_x, d_y, d_o):
            t.free()

    def debug(self) -> None:
        x, y = self.small_ints(BLOCK), self.small_ints(BLOCK)
        d_x, d_y, d_o = pto.tensor(x), pto.tensor(y), pto.zeros(BLOCK, np.float32)
        session = dbg.debug_kernel(axpy, args=(d_x, d_y, d_o, 3.0, BLOCK), grid=1,
                                   block=BLOCK, out=io.StringIO())
        session.step(self.rng.randint(1, 3))
        if not session.finished:
            v = session.value("v", lanes=range(BLOCK)) if self._has_v(session) else None
            if v is not None:
                np.testing.assert_array_equal(v, x * np.float32(3))
        session.continue_()
        assert session.finished and session.error is None
        np.testing.assert_array_equal(d_o.numpy(), x * np.float32(3) + y)
        session.close()
        for t in (d_x, d_y, d_o):
            t.free()

    @staticmethod
    def _has_v(session: Any) -> bool:
        """Is `v` defined at the paused instruction (stepping may stop before it)?"""
        try:
            session.value("v", lanes=range(1))
        except dbg.DebugError:
            return False
        return True

    def alloc_free(self) -> None:
        n = self.rng.choice((1, 7, 64, 1000))
        dtype = self.rng.choice((np.float32, np.int32, np.float16))
        data = self.np_rng.integers(-100, 100, n).astype(dtype)
        if self.rng.random() < 0.5:
            t = pto.alloc_tensor(data.nbytes, dtype=dtype)
            pto.memcpy_h2d(t, data)
            out = np.empty_like(data)
            pto.memcpy_d2h(out, t)
            np.testing.assert_array_equal(out, data)
            t.free()
        else:
            with pto.Tensor(data.nbytes, dtype=dtype) as t:
                pto.memcpy_h2d(t, data)
                np.testing.assert_array_equal(t.numpy(), data)

    def operations(self) -> list[Callable[[], None]]:
        return [self.fresh_compile, self.specialise, self.launch_stream, self.launch_ints,
                self.profile, self.debug, self.alloc_free]

    def run(self) -> None:
        ops = self.operations()
        weights = [3, 2, 2, 2, 2, 1, 3]
        for _ in range(OPERATIONS):
            op = self.rng.choices(ops, weights)[0]
            op()
            self.counts[op.__name__] = self.counts.get(op.__name__, 0) + 1
        self.stream.synchronize()


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads every 50 us instead of every 5 ms: many more interleavings per run."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(5e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_eight_threads_of_mixed_operations(fast_switching: None) -> None:
    workers = [Worker(k) for k in range(THREADS)]
    failures: list[str] = []

    def body(worker: Worker) -> None:
        try:
            worker.run()
        except BaseException:  # noqa: BLE001 - every thread's failure is reported below
            failures.append(f"thread {worker.index}:\n{traceback.format_exc()}")

    threads = [threading.Thread(target=body, args=(w,), name=f"stress-{w.index}")
               for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    assert not any(thread.is_alive() for thread in threads), "a thread hangs"
    assert not failures, "\n".join(failures)
    done = sum(sum(w.counts.values()) for w in workers)
    assert done == THREADS * OPERATIONS
    # every kind of operation ran in every thread's mix
    kinds = {name for w in workers for name in w.counts}
    assert kinds == {op.__name__ for op in workers[0].operations()}
    pto.sync()
    gc.collect()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_locks_held_by_another_thread_at_a_fork_are_free_in_the_child() -> None:
    """A fork copies only the forking thread; a lock another thread held stays held in the
    child for ever. Every process-wide lock of pypto is made anew in a forked child
    (docs/reliability.md#threads): the child takes each one at once, and compiles."""
    from pypto.frontend import lowering, python_ast
    from pypto.tuning import shipping, worker

    holders = {"parse": lambda: python_ast._PARSE_LOCK, "recursion": lambda: lowering._RECURSION_LOCK,
               "autotune": lambda: worker._LOCK, "load": lambda: shipping._LOAD_LOCK}
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        locks = [get() for get in holders.values()]
        for lock in locks:
            lock.acquire()
        held.set()
        release.wait(30)
        for lock in locks:
            lock.release()

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(30)
    try:
        pid = os.fork()
        if pid == 0:  # the child: every lock free, and a compile works
            code = 0
            try:
                for get in holders.values():
                    if not get().acquire(timeout=5):
                        code = 3
                    else:
                        get().release()
                ck = pto.compile(make_affine(2.0, 1.0), args=(pto.empty(8, np.float32),
                                                               pto.empty(8, np.float32), 8),
                                 block=32)
                if "affine" not in ck.mlir:
                    code = 4
            except BaseException:  # noqa: BLE001 - reported by the exit status
                code = 5
            os._exit(code)
        waited = 0.0
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if waited > 60:
                os.kill(pid, 9)
                pytest.fail("the forked child deadlocked on a lock held by a parent's thread")
            time.sleep(0.05)
            waited += 0.05
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        release.set()
        thread.join(30)
