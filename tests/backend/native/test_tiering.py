"""The "tiered" backend, the default (pypto/runtime/tiering.py, docs/native.md#choosing-a-backend):
the interpreter until a specialisation's interpreted launches have taken as long as switching
costs, then the disk cache's object code or a compile. No timing: the budget is pinned with
PYPTO_NATIVE_AFTER and the clock replaced by one that advances a fixed step per reading."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.runtime import tiering
from pypto.backend.native.jit import NativeKernel
from pypto.compiler import _backend_setting


pytestmark = pytest.mark.fresh_native_cache  # (each test: a cold disk cache first)


@pto.kernel
def fma_step(x, y, n):
    i = pto.get_global_id()
    if i < n:
        pto.fma(y + i, 2.5, pto.load(x + i), pto.load(y + i))


@pto.kernel
def reverse_in_l1(x, y, n):
    buf = pto.alloc_local(64)
    lane = pto.get_local_id()
    i = pto.get_global_id()
    pto.store(buf + lane, pto.load(x + i))
    pto.barrier_block()
    pto.store(y + i, pto.load(buf + (63 - lane)))


N = 1000
X = np.random.default_rng(7).random(N).astype(np.float32)


def fma_ref(y: np.ndarray, launches: int) -> np.ndarray:
    """`launches` steps of y = fma(2.5, x, y), each rounded once (float64 is exact here)."""
    for _ in range(launches):
        y = (np.float64(2.5) * X.astype(np.float64) + y.astype(np.float64)).astype(np.float32)
    return y


class StepClock:
    """Advances `step` seconds at every reading: an interpreted launch "takes" `step`."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def fresh(kernel=fma_step, **options):
    """A compiled specialisation with no native code or tier state on it yet."""
    args = (pto.empty(N, np.float32), pto.empty(N, np.float32), N)
    ck = pto.compile(kernel, args=args, block=64, **options)
    ck.__dict__.pop("_native", None)
    ck.__dict__.pop("_tier", None)
    return ck


def launches_until_native(ck, y: np.ndarray, count: int, backend: str = "tiered") -> list[bool]:
    """Launch `count` times on `backend`; whether native code was on the kernel after each."""
    native = []
    for _ in range(count):
        pto.launch(ck, 16, 64, (X, y, N), backend=backend)
        native.append(isinstance(ck.__dict__.get("_native"), NativeKernel))
    return native


def test_the_default_backend_is_tiered(monkeypatch):
    monkeypatch.delenv("PYPTO_BACKEND", raising=False)
    previous = pto.set_backend(None)
    try:
        assert _backend_setting() == "tiered"
        ck = fresh()
        y = np.zeros(N, np.float32)
        pto.launch(ck, 16, 64, (X, y, N))  # the default: a tier is kept on the kernel
        assert isinstance(ck.__dict__.get("_tier"), tiering.Tier)
        assert np.array_equal(y, fma_ref(np.zeros(N, np.float32), 1))
    finally:
        pto.set_backend(previous)


def test_switches_after_the_budget_of_interpreted_time(monkeypatch):
    """Budget 1 s, each interpreted launch 'takes' 0.25 s (between its two clock readings):
    launches 1-4 are interpreted, the 5th finds no object code on disk, compiles and runs
    natively; every launch's bits are NumPy's."""
    monkeypatch.setenv("PYPTO_NATIVE_AFTER", "1")
    monkeypatch.setattr(tiering, "clock", StepClock(0.25))
    ck = fresh()
    y = np.zeros(N, np.float32)
    native = launches_until_native(ck, y, 6)
    assert native == [False] * 4 + [True] * 2
    tier = ck.__dict__["_tier"]
    assert tier.launches == 4 and tier.missed
    assert not ck.__dict__["_native"].cached  # compiled here, and written to the disk cache
    assert np.array_equal(y, fma_ref(np.zeros(N, np.float32), 6))


def test_a_disk_cache_hit_switches_at_the_load_budget_without_compiling(monkeypatch):
    """With the object code on disk, the switch comes at the (smaller) load budget; a miss
    waits for the compile budget (the defaults, the native backend already imported here)."""
    monkeypatch.delenv("PYPTO_NATIVE_AFTER", raising=False)
    monkeypatch.setattr(tiering, "LOAD_COST", 0.25)  # (dyadic: sums of steps are exact)
    monkeypatch.setattr(tiering, "COMPILE_COST", 1.0)
    monkeypatch.setattr(tiering, "clock", StepClock(0.25))
    assert tiering.budget(cached=True) == 0.25  # (imported here: no import cost)
    cold = fresh()
    y = np.zeros(N, np.float32)
    native = launches_until_native(cold, y, 6)  # looked up at the 2nd launch, compiled at the 5th
    assert native == [False] * 4 + [True] * 2 and cold.__dict__["_tier"].missed
    warm = fresh()  # the same specialisation in a "new process": its object code is on disk
    y2 = np.zeros(N, np.float32)
    assert launches_until_native(warm, y2, 3) == [False, True, True]
    assert warm.__dict__["_native"].cached and not warm.__dict__["_tier"].missed
    assert np.array_equal(y, fma_ref(np.zeros(N, np.float32), 6))
    assert np.array_equal(y2, fma_ref(np.zeros(N, np.float32), 3))


def test_never_and_zero(monkeypatch):
    """`never` keeps the interpreter (not even the cache is looked up); 0 is "auto" from the
    first launch."""
    monkeypatch.setenv("PYPTO_NATIVE_AFTER", "never")
    ck = fresh()
    y = np.zeros(N, np.float32)
    assert launches_until_native(ck, y, 3) == [False] * 3
    assert "_native" not in ck.__dict__
    monkeypatch.setenv("PYPTO_NATIVE_AFTER", "0")
    assert launches_until_native(ck, y, 1) == [True]
    assert np.array_equal(y, fma_ref(np.zeros(N, np.float32), 4))


def test_race_checking_keeps_l1_kernels_on_the_interpreter(monkeypatch):
    """An L1 kernel with the race detector on (the default) never leaves the interpreter, the
    detector's own; with it off, it switches like any kernel."""
    monkeypatch.setenv("PYPTO_NATIVE_AFTER", "0")
    x = np.arange(N // 64 * 64, dtype=np.float32)
    expect = x.reshape(-1, 64)[:, ::-1].reshape(-1)
    for race_check, switched in ((True, False), (False, True)):
        ck = fresh(reverse_in_l1, race_check=race_check)
        y = np.zeros_like(x)
        pto.launch(ck, x.size // 64, 64, (x, y, x.size), backend="tiered")
        assert isinstance(ck.__dict__.get("_native"), NativeKernel) is switched
        assert np.array_equal(y, expect)


@pytest.mark.parametrize("value, expected", [("0.5", 0.5), ("inf", float("inf")),
                                             ("never", float("inf")), ("0", 0.0)])
def test_budget_setting(monkeypatch, value, expected):
    monkeypatch.setenv("PYPTO_NATIVE_AFTER", value)
    assert tiering.budget(cached=False) == expected


def test_budget_defaults_to_the_switch_cost(monkeypatch):
    """Unset or empty: the cost of switching (the import is paid: imported); not a number
    >= 0: the setting's error (tests/test_settings.py), not the default."""
    for value in (None, "", " "):
        if value is None:
            monkeypatch.delenv("PYPTO_NATIVE_AFTER", raising=False)
        else:
            monkeypatch.setenv("PYPTO_NATIVE_AFTER", value)
        assert tiering.budget(cached=False) == tiering.COMPILE_COST
        assert tiering.budget(cached=True) == tiering.LOAD_COST
    for value in ("-1", "soon"):
        monkeypatch.setenv("PYPTO_NATIVE_AFTER", value)
        with pytest.raises(pto.UsageError, match=f"PYPTO_NATIVE_AFTER='{value}'"):
            tiering.budget(cached=True)


@pto.kernel
def report(x, n):
    i = pto.get_global_id()
    if i == 5:
        pto.printf("x[5]=%.2f n=%d\n", pto.load(x + i), n)
    pto.store(x + i, pto.load(x + (i + n)))  # out of bounds for n > 0


def test_printf_lines_and_errors_are_the_same_across_the_switch(monkeypatch, capsys):
    """The launch that switches changes nothing a user sees: the same printf line, then the
    same error (message and source line) on the interpreter (1st launch) and natively (2nd)."""
    monkeypatch.setenv("PYPTO_NATIVE_AFTER", "1")
    monkeypatch.setattr(tiering, "clock", StepClock(1.0))
    x = np.arange(64, dtype=np.float32)
    ck = pto.compile(report, args=(pto.empty(64, np.float32), 64), block=64)
    ck.__dict__.pop("_native", None)
    ck.__dict__.pop("_tier", None)
    seen = []
    for _ in range(2):
        with pytest.raises(pto.KernelError) as error:
            pto.launch(ck, 1, 64, (x.copy(), 64), backend="tiered")
            pto.sync()
        seen.append((capsys.readouterr().out, str(error.value)))
    assert isinstance(ck.__dict__.get("_native"), NativeKernel)  # the 2nd ran natively
    assert seen[0] == seen[1]
    assert seen[0][0] == "[block (0, 0, 0) lane (5, 0, 0)] x[5]=5.00 n=64\n"
    assert "out of bounds" in seen[0][1] and "test_tiering.py" in seen[0][1]


def test_a_kernel_the_native_backend_refuses_stays_interpreted(monkeypatch):
    """Refused at compile time (here: every kernel, by a stand-in), "tiered" keeps the reason
    and runs every later launch on the interpreter — none is skipped."""
    from pypto.backend.native import jit

    def refuse(*args, **kwargs):
        raise jit.NativeUnsupported("the native backend does not compile kernel 'fma_step' yet: "
                                    "test stand-in", kernel="fma_step")

    monkeypatch.setattr(jit, "NativeKernel", refuse)
    monkeypatch.setenv("PYPTO_NATIVE_AFTER", "0")
    ck = fresh()
    y = np.zeros(N, np.float32)
    for _ in range(3):
        pto.launch(ck, 16, 64, (X, y, N), backend="tiered")
    assert isinstance(ck.__dict__["_native"], jit.NativeUnsupported)
    assert np.array_equal(y, fma_ref(np.zeros(N, np.float32), 3))
