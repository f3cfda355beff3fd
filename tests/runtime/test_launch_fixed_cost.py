"""The shortcuts of a cached launch (docs/interpreter.md, "Fixed cost of a launch") keep every
check of the general path: errors after many identical launches are the errors of the first,
settings read from the environment take effect at the next launch, the floating-point error
state of the caller is left as it was, and a failing launch in `pto.sync()` discards the rest
of its stream as before."""

from __future__ import annotations

import os

import numpy as np
import pytest

import pypto as pto
from pypto.errors import LaunchError, MemoryAccessError, RaceError, TensorFreedError
from pypto.runtime.env import flag, setting


@pto.kernel
def add(a, b, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(a + i) + pto.load(b + i))


@pto.kernel
def scale(o, n, k):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(o + i) * k)


@pto.kernel
def store_at(o, j):
    pto.store(o + j, 1.0)


@pto.kernel
def racy(o):
    buf = pto.alloc_local(64, pto.float32)
    t = pto.get_local_id()
    pto.store(buf + 0, pto.cast(t, pto.float32))  # every lane writes element 0
    pto.barrier_block()
    if t == 0:
        pto.store(o + 0, pto.load(buf + 0))


def _tensor(values: np.ndarray) -> pto.Tensor:
    t = pto.alloc_tensor(values.nbytes, dtype=values.dtype)
    pto.memcpy_h2d(t, values)
    return t


def _host(t: pto.Tensor, dtype=np.float32) -> np.ndarray:
    out = np.empty(t.size, dtype)
    pto.memcpy_d2h(out, t)
    return out


def test_repeated_launches_compute_the_same_as_numpy():
    a = np.arange(300, dtype=np.float32)
    b = np.full(300, 0.5, np.float32)
    d_a, d_b, d_o = _tensor(a), _tensor(b), pto.alloc_tensor(300 * 4)
    for n in (300, 300, 300, 100, 300):  # the same shape again and again, then another n
        pto.memcpy_h2d(d_o, np.zeros(300, np.float32))
        pto.launch(add, grid=3, block=128, args=(d_a, d_b, d_o, n))
        pto.sync()
        want = np.where(np.arange(300) < n, a + b, 0)
        assert np.array_equal(_host(d_o), want)


def test_freed_tensor_after_cached_launches_raises_at_the_launch():
    d_a, d_b, d_o = (_tensor(np.ones(64, np.float32)) for _ in range(3))
    for _ in range(3):
        pto.launch(add, grid=1, block=64, args=(d_a, d_b, d_o, 64))
    pto.sync()
    d_b.free()
    with pytest.raises(TensorFreedError, match="argument 1"):
        pto.launch(add, grid=1, block=64, args=(d_a, d_b, d_o, 64))


def test_compiled_kernel_rejects_another_dtype_after_cached_launches():
    d = _tensor(np.ones(64, np.float32))
    compiled = pto.compile(scale, args=(d, 64, 2.0), block=64)
    for _ in range(3):
        pto.launch(compiled, grid=1, block=64, args=(d, 64, 2.0))
    pto.sync()
    assert _host(d).tolist() == [8.0] * 64
    wrong = _tensor(np.ones(64, np.int32))
    pto.launch(compiled, grid=1, block=64, args=(wrong, 64, 2.0))
    with pytest.raises(LaunchError, match="compiled for float32 tensors, got a int32 tensor"):
        pto.sync()
    pto.launch(compiled, grid=1, block=64, args=(d, 2**40, 2.0))  # n is an int32 parameter
    with pytest.raises(LaunchError, match="must be int32, got 1099511627776"):
        pto.sync()


def test_out_of_bounds_after_cached_launches_is_reported():
    o = pto.alloc_tensor(64 * 4)
    for _ in range(3):
        pto.launch(store_at, grid=1, block=32, args=(o, 5))
    pto.sync()
    pto.launch(store_at, grid=1, block=32, args=(o, 64))
    with pytest.raises(MemoryAccessError, match="at element 64"):
        pto.sync()


def test_failing_launch_in_sync_discards_the_rest_of_its_stream():
    o = _tensor(np.zeros(64, np.float32))
    pto.launch(store_at, grid=1, block=32, args=(o, 1))
    pto.launch(store_at, grid=1, block=32, args=(o, 99))
    pto.launch(store_at, grid=1, block=32, args=(o, 2))
    with pytest.raises(MemoryAccessError) as info:
        pto.sync()
    assert info.value.discarded_ops == 1
    out = _host(o)
    assert out[1] == 1.0 and out[2] == 0.0
    pto.sync()  # nothing left


def test_race_check_setting_is_read_at_every_compile(monkeypatch: pytest.MonkeyPatch):
    """`PYPTO_RACE_CHECK` is read at every (cached) compile; pipeline="" skips the static
    check that would reject this kernel before it runs."""
    o = pto.alloc_tensor(4)

    def run() -> None:
        compiled = pto.compile(racy, args=(o,), block=64, pipeline="")
        pto.launch(compiled, grid=1, block=64, args=(o,))
        pto.sync()

    for value, races in (("0", False), ("0", False), ("1", True), (None, True), (" Off ", False),
                         ("yes", True)):
        if value is None:
            monkeypatch.delenv("PYPTO_RACE_CHECK")
        else:
            monkeypatch.setenv("PYPTO_RACE_CHECK", value)
        if races:
            with pytest.raises(RaceError):
                run()
        else:
            run()


def test_callers_floating_point_error_state_is_kept():
    big = _tensor(np.full(64, 3e38, np.float32))
    with np.errstate(over="raise"):
        pto.launch(scale, grid=1, block=64, args=(big, 64, 10.0))  # overflows in the kernel
        pto.sync()
        assert np.isinf(_host(big)).all()
        with pytest.raises(FloatingPointError):
            np.float32(3e38) * np.float32(10)
    before = np.geterr()
    pto.launch(scale, grid=1, block=64, args=(big, 64, 10.0))
    pto.sync()
    assert np.geterr() == before


def test_env_setting_sees_every_change(monkeypatch: pytest.MonkeyPatch):
    name = "PYPTO_TEST_ENV_SETTING"
    monkeypatch.delenv(name, raising=False)
    reads: list[str | None] = []

    def parse(value: str | None) -> str | None:
        reads.append(value)
        return value

    read = setting(name, parse)
    on = flag(name, False)
    off = flag(name, True)
    assert read() is None and not on() and off()
    for value in ("1", "0", "1", " YES ", "off", ""):
        monkeypatch.setenv(name, value)
        assert read() == value
        assert on() == (value.strip().lower() in {"1", "true", "yes", "on"})
        assert off() == (value.strip().lower() not in {"0", "false", "no", "off"})
    monkeypatch.setenv(name, "whatever")  # not a flag's word: an error at every read
    for _ in range(2):
        with pytest.raises(pto.UsageError, match="PYPTO_TEST_ENV_SETTING='whatever'"):
            on()
    os.environ[name] = "1"
    assert read() == "1" and on()
    del os.environ[name]
    assert read() is None and not on() and off()
    count = len(reads)
    for _ in range(5):
        read()
    assert len(reads) == count  # unchanged: not parsed again


def _site_of(error: BaseException) -> str:
    notes = [n for n in getattr(error, "__notes__", []) if "enqueued at" in n]
    assert notes, error.__notes__
    return notes[0].split("enqueued at ", 1)[1].split(" on stream", 1)[0]


def _line_of(marker: str) -> int:
    lines = open(__file__).read().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(marker))


@pytest.mark.parametrize("how", ["pto.launch", "compiled call", "runtime.launch"])
def test_errors_name_the_users_launch_line(how):
    """The launch site is found without looking at pypto's own frames (caller_site(2)), for
    each way of launching."""
    from pypto.compiler import compile as compile_kernel
    from pypto.runtime import launch as runtime_launch

    o = pto.alloc_tensor(64 * 4)
    compiled = pto.compile(store_at, args=(o, 99), block=32)
    if how == "pto.launch":
        pto.launch(store_at, grid=1, block=32, args=(o, 99))  # SITE-1
        marker = "# SITE-1"
    elif how == "compiled call":
        compiled(grid=1, block=32, args=(o, 99))  # SITE-2
        marker = "# SITE-2"
    else:
        runtime_launch(store_at, 1, 32, (o, 99), compile=compile_kernel)  # SITE-3
        marker = "# SITE-3"
    with pytest.raises(MemoryAccessError) as info:
        pto.sync()
    assert _site_of(info.value) == f"{__file__}:{_line_of(marker)}"


def test_memcpy_names_the_users_line():
    t = pto.alloc_tensor(16)
    pto.memcpy_h2d(t, np.zeros(4, np.float32))  # SITE-4
    from pypto.runtime import stream

    op = t.device.default_stream._queue[-1]
    assert op.origin == f"{__file__}:{_line_of('# SITE-4')}"
    pto.sync()
    assert stream.caller_site(10_000) is not None  # a depth beyond the stack searches anyway


def test_validate_setting_is_read_at_every_compile(monkeypatch: pytest.MonkeyPatch):
    """PYPTO_VALIDATE (a flag or a pipeline to prepend) takes effect at the next compile."""
    from pypto.compiler import DEFAULT_PIPELINE

    d = _tensor(np.ones(64, np.float32))
    monkeypatch.delenv("PYPTO_VALIDATE", raising=False)
    plain = pto.compile(scale, args=(d, 64, 2.0), block=64)
    assert plain.pipeline == DEFAULT_PIPELINE
    monkeypatch.setenv("PYPTO_VALIDATE", "canonicalize")
    prepended = pto.compile(scale, args=(d, 64, 2.0), block=64)
    assert prepended.pipeline == f"canonicalize,{DEFAULT_PIPELINE}"
    monkeypatch.setenv("PYPTO_VALIDATE", "off")
    assert pto.compile(scale, args=(d, 64, 2.0), block=64) is plain
    monkeypatch.setenv("PYPTO_VALIDATE", "canonicalize")
    assert pto.compile(scale, args=(d, 64, 2.0), block=64) is prepended


def test_a_tensor_keeps_its_interpreter_buffer_until_it_is_freed():
    d = _tensor(np.ones(64, np.float32))
    pto.launch(scale, grid=1, block=64, args=(d, 64, 2.0))
    pto.sync()
    kept = d.views["o"]
    assert kept.data is d.data and kept.name == "o"
    pto.launch(scale, grid=1, block=64, args=(d, 64, 2.0))
    pto.sync()
    assert d.views["o"] is kept  # the second launch reused it
    assert _host(d).tolist() == [4.0] * 64
    d.free()
    assert d.views == {}  # nothing of the freed tensor's memory stays referenced
    with pytest.raises(TensorFreedError, match="argument 0"):
        pto.launch(scale, grid=1, block=64, args=(d, 64, 2.0))


def test_a_kept_buffer_of_another_dtype_is_still_rejected():
    ints = _tensor(np.ones(64, np.int32))
    pto.launch(scale, grid=1, block=64, args=(ints, 64, 2))  # an int32 specialisation
    pto.sync()
    assert ints.views["o"].data.dtype == np.int32
    floats = pto.compile(scale, args=(_tensor(np.ones(64, np.float32)), 64, 2.0), block=64)
    pto.launch(floats, grid=1, block=64, args=(ints, 64, 2.0))
    with pytest.raises(LaunchError, match="compiled for float32 tensors, got a int32 tensor"):
        pto.sync()


def test_launch_reads_the_validate_setting_at_every_launch(monkeypatch: pytest.MonkeyPatch):
    """pto.launch of a @pto.kernel finds its cached specialisation without pto.compile's
    wrapper; PYPTO_VALIDATE still picks the specialisation at every launch."""
    from pypto.compiler import DEFAULT_PIPELINE, CompiledKernel

    ran: list[str] = []
    execute = CompiledKernel.execute

    def recorded(self, grid, block, args):
        ran.append(self.pipeline)
        execute(self, grid, block, args)

    monkeypatch.setattr(CompiledKernel, "execute", recorded)
    d = _tensor(np.ones(64, np.float32))
    for value in (None, "canonicalize", "off", "canonicalize", None):
        if value is None:
            monkeypatch.delenv("PYPTO_VALIDATE", raising=False)
        else:
            monkeypatch.setenv("PYPTO_VALIDATE", value)
        pto.launch(scale, grid=1, block=64, args=(d, 64, 2.0))
        pto.sync()
    prepended = f"canonicalize,{DEFAULT_PIPELINE}"
    assert ran == [DEFAULT_PIPELINE, prepended, DEFAULT_PIPELINE, prepended, DEFAULT_PIPELINE]
    assert _host(d).tolist() == [32.0] * 64


# -- launch plans (pypto.compiler._plan_key): what a repeat pto.launch skips ---------------------


def test_a_planned_launch_still_rejects_a_float_grid():
    d = _tensor(np.ones(64, np.float32))
    for _ in range(3):
        pto.launch(scale, grid=1, block=64, args=(d, 64, 2.0))
    with pytest.raises(LaunchError, match="grid"):
        pto.launch(scale, grid=1.0, block=64, args=(d, 64, 2.0))  # 1.0 hashes like 1
    with pytest.raises(LaunchError, match="block"):
        pto.launch(scale, grid=1, block=(64.0,), args=(d, 64, 2.0))
    pto.sync()
    assert _host(d).tolist() == [8.0] * 64


def test_a_planned_launch_sees_a_tensor_passed_twice():
    """The plan of `add(a, b, o)` with three tensors is not the plan of `add(x, x, o)`
    (its parameters alias); both compute what NumPy does."""
    x, y, o = (_tensor(np.arange(64, dtype=np.float32)) for _ in range(3))
    for _ in range(2):
        pto.launch(add, grid=1, block=64, args=(x, y, o, 64))
        pto.sync()
        assert _host(o).tolist() == (2 * np.arange(64, dtype=np.float32)).tolist()
        pto.launch(add, grid=1, block=64, args=(x, x, x, 64))
        pto.sync()
        expected = np.arange(64, dtype=np.float32) * 2
        assert _host(x).tolist() == expected.tolist()
        pto.memcpy_h2d(x, np.arange(64, dtype=np.float32))


def test_a_planned_launch_runs_on_the_device_of_its_tensors():
    from pypto.runtime.device import Device

    other = Device()
    here = _tensor(np.ones(64, np.float32))
    there = pto.alloc_tensor(64 * 4, device=other)
    pto.memcpy_h2d(there, np.full(64, 3.0, np.float32))
    for _ in range(2):
        pto.launch(scale, grid=1, block=64, args=(here, 64, 2.0))
        before = other.default_stream.pending
        pto.launch(scale, grid=1, block=64, args=(there, 64, 2.0))
        assert other.default_stream.pending == before + 1
        pto.sync()
    assert _host(here).tolist() == [4.0] * 64
    assert _host(there).tolist() == [12.0] * 64
    with pytest.raises(LaunchError, match="different devices"):
        pto.launch(add, grid=1, block=64, args=(here, there, here, 64))


def test_clear_cache_forgets_the_launch_plans():
    scale.clear_cache()
    d = _tensor(np.ones(64, np.float32))
    pto.launch(scale, grid=1, block=64, args=(d, 64, 2.0))
    pto.launch(scale, grid=1, block=64, args=(d, 64, 2.0))
    first = scale.__dict__["_launch_plans"]
    (plan,) = first.values()
    scale.clear_cache()
    pto.launch(scale, grid=1, block=64, args=(d, 64, 2.0))
    pto.sync()
    (again,) = scale.__dict__["_launch_plans"].values()
    assert again[0] is not plan[0]  # compiled afresh
    assert _host(d).tolist() == [8.0] * 64


def test_launch_plans_stay_bounded():
    from pypto.compiler import MAX_LAUNCH_PLANS

    d = _tensor(np.ones(64, np.float32))
    for grid in range(1, MAX_LAUNCH_PLANS + 10):
        pto.launch(scale, grid=grid, block=1, args=(d, 64, 1.0))
    pto.sync()
    assert len(scale.__dict__["_launch_plans"]) <= MAX_LAUNCH_PLANS


def test_sync_with_nothing_queued_returns_and_errors_still_surface():
    pto.sync()
    o = pto.alloc_tensor(64 * 4)
    for _ in range(2):
        pto.launch(store_at, grid=1, block=32, args=(o, 99))
        with pytest.raises(MemoryAccessError):
            pto.sync()
        pto.sync()  # the failed launch was taken off its stream


@pto.kernel
def one_param(o):
    pto.store(o + pto.get_global_id(), 2.0)


@pto.kernel
def mixed(o, k, x, flag):
    i = pto.get_global_id()
    v = pto.cast(k, pto.float32) * x
    if flag:
        v = v + 1.0
    pto.store(o + i, v)


def test_arguments_bound_by_the_generated_binder_keep_every_check():
    """Executable.bind's straight-line binder: one parameter, ints, floats and bools; a value
    it does not take at once goes through the general checks, with their errors."""
    o = pto.zeros(32)
    for _ in range(2):
        pto.launch(one_param, grid=1, block=32, args=(o,))
        pto.sync()
        assert _host(o).tolist() == [2.0] * 32
    for k, x, flag in ((3, 0.5, True), (np.int32(4), np.float32(0.25), False), (5, 2.0, True)):
        pto.launch(mixed, grid=1, block=32, args=(o, k, x, flag))
        pto.sync()
        assert _host(o).tolist() == [float(k) * float(x) + (1.0 if flag else 0.0)] * 32
    ck = pto.compile(mixed, args=(o, 3, 0.5, True), block=32)
    ck.execute((1, 1, 1), (32, 1, 1), (o, 3, 0.5, True))
    with pytest.raises(LaunchError, match="argument 'k' of kernel 'mixed' must be int32"):
        ck.execute((1, 1, 1), (32, 1, 1), (o, 2**40, 0.5, True))
    with pytest.raises(LaunchError, match="takes 4 arguments"):
        ck.execute((1, 1, 1), (32, 1, 1), (o, 3, 0.5))
    ints = pto.zeros(32, dtype=np.int32)
    with pytest.raises(LaunchError, match="compiled for float32 tensors, got a int32 tensor"):
        ck.execute((1, 1, 1), (32, 1, 1), (ints, 3, 0.5, True))
    o.free()
    with pytest.raises(TensorFreedError, match="argument 'o'"):
        ck.execute((1, 1, 1), (32, 1, 1), (o, 3, 0.5, True))
