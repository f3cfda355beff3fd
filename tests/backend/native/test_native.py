"""The native backend against the interpreter (the oracle) and NumPy: bit for bit, the same
errors, unsupported kernels detected (never a wrong answer), the corpus of the zoo counted."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import NativeUnsupported
from pypto.errors import KernelError, MemoryAccessError
from tests.kernels import zoo
from tests.backend.native.helpers import both, same_bits


@pto.kernel
def control(a, o, n):
    i = pto.get_global_id()
    if i >= n:
        return
    x = pto.load(a + i)
    acc = 0
    for j in range(i % 7):
        acc += j
    while x > 1.0:
        x = x * 0.5
    pto.store(o + i, x + pto.cast(acc, pto.float32))


def test_divergent_control_flow_and_early_return_bit_exact():
    n = 1000
    a = (np.random.default_rng(0).random(n) * 10).astype(np.float32)
    o = np.zeros(n, np.float32)
    interp, native = both(control, 8, 128, [a, o], (n,))
    assert same_bits(interp, native)
    ref = a.copy()
    while (ref > 1).any():
        ref = np.where(ref > 1, ref * np.float32(0.5), ref)
    acc = np.array([sum(range(i % 7)) for i in range(n)], np.float32)
    assert np.array_equal(native[1], ref + acc)


@pto.kernel
def int_ops(a, o, n):
    i = pto.get_global_id()
    if i < n:
        x = pto.load(a + i)
        y = x * 1103515245 + 12345          # wraps
        z = (y >> (i % 40)) ^ (y << 3)       # shifts past the width have their defined value
        w = pto.select(z > x, z, x) - (z >> 2) + z % 5 + z // 7 + x // -3 + z // -1
        pto.store(o + i, w)


def test_integer_wrap_around_shifts_and_divisions_bit_exact():
    n = 777
    rng = np.random.default_rng(1)
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    a[:4] = [-2**31, -1, 2**31 - 1, 0]
    o = np.zeros(n, np.int32)
    interp, native = both(int_ops, 4, 256, [a, o], (n,))
    assert same_bits(interp, native)
    with np.errstate(over="ignore"):
        y = a * np.int32(1103515245) + np.int32(12345)
    assert native[1][0] != 0 or y[0] == 0


@pto.kernel
def float_ops(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        c = pto.sqrt(a * a) + b * a / (b - 1.0)
        d = pto.select(a < b, c, -c)
        pto.fma(o + i, a, b, d)


def test_float_ops_fma_and_special_values_bit_exact():
    n = 1024
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(n) * 1e3).astype(np.float32)
    y = (rng.standard_normal(n) * 1e-3).astype(np.float32)
    x[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45]
    y[:6] = [1.0, -np.inf, np.nan, -0.0, -0.0, 3e38]
    o = np.zeros(n, np.float32)
    interp, native = both(float_ops, 4, 256, [x, y, o], (n,))
    assert same_bits(interp, native)


def test_out_of_bounds_error_matches_the_interpreter():
    n = 1000
    a = np.ones(n, np.float32)
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(control, 8, 128, (a, np.zeros(n, np.float32), 1024), backend=backend)
        errors.append(info.value)
    assert str(errors[0]) == str(errors[1])
    assert errors[1].block == (7, 0, 0) and errors[1].lane == (104, 0, 0)
    assert errors[1].address == 1000


@pto.kernel
def endless(o, n):
    i = pto.get_global_id()
    x = 1
    while x > 0:
        x = x + 0 * n
    pto.store(o + i, x)


def test_endless_loop_stopped_by_the_watchdog():
    with pytest.raises(KernelError, match="trips without ending"):
        pto.launch(endless, 1, 1, (np.zeros(1, np.int32), 1), backend="native")


@pto.kernel
def in_place(a, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(a + i, pto.load(a + (n - 1 - i)))  # lanes read what others write


def test_unsupported_kernel_is_detected_and_auto_falls_back():
    n = 256
    a = np.arange(n, dtype=np.float32)
    # (a[i] and a[n - 1 - i]: lanes share elements; the lane-independence proof refuses the
    # launch, docs/native.md#lane-independence)
    with pytest.raises(NativeUnsupported, match="never share an HBM element"):
        pto.launch(in_place, 1, n, (a.copy(), n), backend="native")
    b = a.copy()
    pto.launch(in_place, 1, n, (b, n), backend="auto")
    c = a.copy()
    pto.launch(in_place, 1, n, (c, n), backend="interpreter")
    assert np.array_equal(b, c)


@pto.kernel
def exp_of(x, y, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.exp(pto.load(x + i)))


@pto.kernel
def log_until_small(x, y, n):
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i)
        while v > 2.0:  # a trip count per lane: LLVM does not vectorise the lane loop
            v = pto.log(v)
        pto.store(y + i, v)


def _counting_interpreter(monkeypatch):
    from pypto.backend.interpreter.executor import Executable
    interpreted = []
    real = Executable.run
    monkeypatch.setattr(Executable, "run",
                        lambda self, *a: (interpreted.append(1), real(self, *a))[1])
    return interpreted


def test_auto_runs_a_kernel_with_transcendentals_natively_when_its_lane_loop_is_vectorised(
        monkeypatch):
    """A vectorised lane loop calls NumPy's loop once per vector of lanes, not per element: as
    fast as the interpreter's one call or faster, so "auto" runs it natively (docs/native.md
    #choosing-a-backend), with the interpreter's bits."""
    n = 300
    x = np.linspace(-5, 5, n).astype(np.float32)
    outs = both(exp_of, 2, 256, [x, np.zeros(n, np.float32)], (n,))
    assert same_bits(outs[0], outs[1])
    assert np.array_equal(outs[0][1], np.exp(x.astype(np.float64)).astype(np.float32))
    interpreted = _counting_interpreter(monkeypatch)
    y = np.zeros(n, np.float32)
    pto.launch(exp_of, 2, 256, (x, y, n), backend="auto")
    assert interpreted == [] and same_bits([y], [outs[0][1]])


def test_auto_keeps_a_kernel_calling_numpy_per_element_on_the_interpreter(monkeypatch):
    """A lane loop LLVM does not vectorise (a `while` with a trip count per lane) calls NumPy's
    loop once per element, slower than the interpreter: "auto" runs the interpreter;
    `backend="native"` still runs it natively, bit for bit."""
    n = 300
    x = np.exp(np.linspace(-3, 12, n)).astype(np.float32)
    outs = both(log_until_small, 2, 256, [x, np.zeros(n, np.float32)], (n,))
    assert same_bits(outs[0], outs[1])
    want = x.astype(np.float32)
    with np.errstate(all="ignore"):
        for _ in range(6):
            want = np.where(want > 2.0, np.log(want.astype(np.float64)).astype(np.float32),
                            want)
    assert np.array_equal(outs[1][1], want)
    interpreted = _counting_interpreter(monkeypatch)
    y = np.zeros(n, np.float32)
    pto.launch(log_until_small, 2, 256, (x, y, n), backend="auto")
    assert interpreted == [1] and same_bits([y], [outs[0][1]])
    pto.launch(log_until_small, 2, 256, (x, y, n), backend="native")
    assert interpreted == [1]  # not again: the native code ran


def test_set_backend_and_environment(monkeypatch):
    n = 300
    a = np.random.default_rng(3).random(n).astype(np.float32)
    o = np.zeros(n, np.float32)
    previous = pto.set_backend("native")
    try:
        control[2, 256](a, o, n)
    finally:
        pto.set_backend(previous)
    monkeypatch.setenv("PYPTO_BACKEND", "native")
    o2 = np.zeros(n, np.float32)
    control[2, 256](a, o2, n)
    expect = np.zeros(n, np.float32)
    pto.launch(control, 2, 256, (a, expect, n), backend="interpreter")
    assert same_bits([o, o2], [expect, expect])
    with pytest.raises(pto.LaunchError):
        pto.set_backend("gpu")


@pytest.mark.fresh_native_cache
def test_object_code_is_cached_on_disk(tmp_path):
    from pypto.backend.native.jit import NativeKernel

    ck = pto.compile(control, args=(pto.empty(10, np.float32), pto.empty(10, np.float32), 10),
                     block=64)
    assert not NativeKernel(ck.func, ck.name).cached
    assert gc.isenabled()  # (paused during the compile only: docs/native.md#compile-time)
    gc.disable()  # a caller's own choice stands
    try:
        assert NativeKernel(ck.func, ck.name).cached
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_is_back_on_after_a_failed_compile(monkeypatch):
    """The garbage collector, paused during a compile (docs/native.md#compile-time), runs
    again when the compile raises."""
    from pypto.backend.native import jit

    def failing(kernel):
        raise RuntimeError("the lowering failed")

    monkeypatch.setattr(jit, "lowered", failing)
    ck = pto.compile(control, args=(pto.empty(10, np.float32), pto.empty(10, np.float32), 10),
                     block=64)
    with pytest.raises(RuntimeError, match="the lowering failed"):
        jit.NativeKernel(ck.func, ck.name)
    assert gc.isenabled()


def test_zoo_corpus_both_backends_bit_exact():
    """Every zoo kernel the native backend supports gives the interpreter's bits; the others
    are reported unsupported (counted, never run wrong)."""
    supported, unsupported = [], []
    for case in zoo.cases("tiny"):
        rng = np.random.default_rng(7)
        arrays = case.inputs(rng)
        results = []
        for backend in ("interpreter", "native"):
            copies = {k: v.copy() for k, v in arrays.items()}
            args = (*case.lead, *copies.values(), *case.scalars(copies))
            try:
                pto.launch(case.kernel, case.grid, case.block, args, backend=backend)
            except NativeUnsupported:
                unsupported.append(case.name)
                break
            results.append(list(copies.values()))
        else:
            assert same_bits(*results), case.name
            supported.append(case.name)
    print(f"native: {len(supported)} of {len(supported) + len(unsupported)} zoo kernels "
          f"supported: {supported}")
    assert len(supported) >= 54  # docs/native.md: all 54


@pto.kernel
def saxpy_like(x, y, a, n):
    i = pto.get_global_id()
    if i < n:
        pto.fma(y + i, a, pto.load(x + i), pto.load(y + i))


def test_lane_private_read_write_in_1d_launches_only():
    n = 1000
    rng = np.random.default_rng(4)
    x, y = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
    interp, native = both(saxpy_like, 4, 256, [x, y], (2.5, n))
    assert same_bits(interp, native)
    np.testing.assert_allclose(native[1], np.float32(2.5) * x + y, rtol=1e-6)
    with pytest.raises(NativeUnsupported, match="1-D launches"):
        pto.launch(saxpy_like, (2, 2), 256, (x.copy(), y.copy(), 2.5, n), backend="native")
    # in a 2-D grid, get_global_id(0) repeats: lanes share elements, "auto" takes the oracle
    auto, oracle = y.copy(), y.copy()
    pto.launch(saxpy_like, (2, 2), 256, (x, auto, 2.5, n), backend="auto")
    pto.launch(saxpy_like, (2, 2), 256, (x, oracle, 2.5, n), backend="interpreter")
    assert same_bits([auto], [oracle])


@pto.kernel
def hist(keys, counts, n):
    i = pto.get_global_id()
    if i < n:
        pto.atomic_add(counts + pto.load(keys + i) % 16, 1)


@pto.kernel
def running(xs, total, olds, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(olds + i, pto.atomic_add(total + 0, pto.load(xs + i)))


def test_atomics_in_the_interpreters_lane_order():
    rng = np.random.default_rng(5)
    n = 3000
    keys = rng.integers(0, 1000, n).astype(np.int32)
    interp, native = both(hist, 12, 256, [keys, np.zeros(16, np.int32)], (n,))
    assert same_bits(interp, native)
    assert np.array_equal(native[1], np.bincount(keys % 16, minlength=16).astype(np.int32))
    xs = rng.standard_normal(n).astype(np.float32)
    interp, native = both(running, 12, 256,
                          [xs, np.zeros(1, np.float32), np.zeros(n, np.float32)], (n,))
    assert same_bits(interp, native)  # float sums: the same order, lane by lane
    expect = np.concatenate([[0], np.cumsum(xs, dtype=np.float32)[:-1]]).astype(np.float32)
    assert np.array_equal(native[2], expect)


def test_compile_refuses_the_lowering_passes():
    args = (pto.empty(10, np.float32), pto.empty(10, np.float32), 10)
    with pytest.raises(pto.CompileError, match="lowers the kernel out of pto"):
        pto.compile(control, args=args, block=64, pipeline="canonicalize,pto-simt-to-lanes")


def test_emit_llvm_prints_the_kernels_llvm_ir(tmp_path):
    from pypto.tools.opt import main

    ck = pto.compile(control, args=(pto.empty(10, np.float32), pto.empty(10, np.float32), 10),
                     block=64)
    path = tmp_path / "k.mlir"
    path.write_text(ck.as_text())  # (with debuginfo, scf.while does not parse back: xDSL)
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([str(path), "--emit=llvm"]) == 0
    text = out.getvalue()
    assert 'define i32 @"control"' in text and "@llvm.fma" not in text
    assert "fcmp ogt float" in text  # the while loop's condition, x > 1.0


@pto.kernel
def wrapping_offset(a, o, n, c):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(a + ((i + c) - c)))  # i + c wraps int32: still element i


@pto.kernel
def affine_2d(a, o, w, h):
    x = pto.get_global_id(0)
    y = pto.get_global_id(1)
    if x < w and y < h:
        pto.store(o + (y * w + x), pto.load(a + (y * w + x)) * 2.0 + 1.0)


def test_fast_blocks_fall_back_to_checked_lanes_bit_exact():
    """Blocks whose lane-affine accesses are in range run the unchecked (vectorised) lane
    loop, the others (partial edge blocks, an offset whose int32 arithmetic wraps) the checked
    one: the same bits, and the same out-of-bounds error as the interpreter."""
    rng = np.random.default_rng(8)
    w, h = 1000, 37
    a = rng.standard_normal(w * h).astype(np.float32)
    interp, native = both(affine_2d, (16, 10), (64, 4), [a, np.zeros(w * h, np.float32)],
                          (w, h))
    assert same_bits(interp, native)
    assert np.array_equal(native[1], a * np.float32(2) + np.float32(1))
    n = 4096
    a = rng.standard_normal(n).astype(np.float32)
    for c in (2**31 - 1, 7):
        interp, native = both(wrapping_offset, 16, 256, [a, np.zeros(n, np.float32)], (n, c))
        assert same_bits(interp, native) and np.array_equal(native[1], a)
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(affine_2d, (16, 10), (64, 4), (a, np.zeros(n, np.float32), 1000, 37),
                       backend=backend)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


@pto.kernel
def divide(a, b, o, k, n):
    i = pto.get_global_id()
    if i < n:
        x = pto.load(a + i)
        y = pto.load(b + i)
        pto.store(o + i, x // y + x % y + (x // k) * 3 + x % k)


def _errors(kernel, grid, block, args):
    """The messages each backend raises for one launch (None: no error)."""
    found = []
    for backend in ("interpreter", "native"):
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            pto.launch(kernel, grid, block, copies, backend=backend)
            found.append(None)
        except KernelError as exc:
            found.append(str(exc))
    return found


def test_divisions_by_run_time_divisors_and_the_division_by_zero_error():
    n = 1000
    rng = np.random.default_rng(9)
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-50, 50, n).astype(np.int32)
    b[b == 0] = 3
    a[:3], b[:3] = -2**31, [-1, 1, -7]
    interp, native = both(divide, 4, 256, [a, b, np.zeros(n, np.int32)], (-5, n))
    assert same_bits(interp, native)
    with np.errstate(over="ignore"):  # (NumPy's // and % floor: pypto's too, on int32)
        expect = a // b + a % b + (a // np.int32(-5)) * np.int32(3) + a % np.int32(-5)
    assert np.array_equal(native[2][3:], expect[3:])
    b[700] = 0  # a lane's divisor: the message names the lane
    inter, nat = _errors(divide, 4, 256, (a, b, np.zeros(n, np.int32), -5, n))
    assert inter == nat and "division by zero in block (2, 0, 0), lane (188, 0, 0)" in nat
    b[700] = 1  # a uniform divisor: no lane named, as in the interpreter
    inter, nat = _errors(divide, 4, 256, (a, b, np.zeros(n, np.int32), 0, n))
    assert inter == nat and nat is not None and "division by zero" in nat


@pto.kernel
def to_int(x, o32, o64, n):
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i)
        pto.store(o32 + i, pto.cast(v, pto.int32))
        pto.store(o64 + i, pto.cast(v * 16.0, pto.int64))


def test_float_to_int_truncates_and_raises_the_interpreters_range_error():
    n = 600
    rng = np.random.default_rng(10)
    for dtype in (np.float32, np.float64, np.float16):
        x = (rng.standard_normal(n) * 1000).astype(dtype)
        x[:4] = [-0.0, 2.9, -2.9, 0.5]
        interp, native = both(to_int, 3, 256, [x, np.zeros(n, np.int32), np.zeros(n, np.int64)],
                              (n,))
        assert same_bits(interp, native), dtype
        assert np.array_equal(native[1], np.trunc(x.astype(np.float64)).astype(np.int32))
    x = np.ones(n, np.float32)
    for bad in (np.nan, 3e9, -np.inf):
        x[300] = bad
        inter, nat = _errors(to_int, 3, 256, (x, np.zeros(n, np.int32), np.zeros(n, np.int64), n))
        assert inter == nat and "is out of range (or NaN)" in nat, (inter, nat)


@pto.kernel
def spin_native(o, n):
    i = pto.get_global_id()
    k = 0
    while k < n:   # n > 0: never ends (k only decreases)
        k = k - 1
    pto.store(o + i, k)


def test_watchdog_trip_limit_and_timeout_as_the_interpreter(monkeypatch):
    monkeypatch.setenv("PYPTO_MAX_TRIPS", "500")
    inter, nat = _errors(spin_native, 1, 32, (np.zeros(32, np.int32), 1))
    assert inter == nat and "has run 500 trips without ending" in nat
    monkeypatch.setenv("PYPTO_MAX_TRIPS", str(10**12))  # only the clock stops it
    o = pto.empty(32, np.int32)
    with pytest.raises(KernelError, match=r"time limit of 0.2 s ran out") as info:
        pto.launch(spin_native, 1, 32, (o, 1), timeout=0.2, backend="native")
        pto.sync()
    assert "test_native.py" in str(info.value)
    pto.launch(spin_native, 1, 32, (o, -3), timeout=5, backend="native")  # ends at once
    assert np.array_equal(o.numpy(), np.zeros(32, np.int32))


@pto.kernel
def narrow(x, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.cast(pto.load(x + i), pto.float16))


def test_float64_to_float16_rounds_once():
    """Midpoints between float16 neighbours, nudged by less than float32 can hold: rounding to
    float32 first would land on the midpoint and round to even (twice rounded); rounding to
    odd then to nearest gives NumPy's single rounding."""
    rng = np.random.default_rng(11)
    h = rng.integers(0, 0x7BFF, 2000).astype(np.uint16).view(np.float16)
    lo, hi = h.astype(np.float64), np.nextafter(h, np.float16(np.inf)).astype(np.float64)
    mid = (lo + hi) / 2
    x = np.concatenate([mid, mid + mid * 2.0**-40, mid - mid * 2.0**-40,
                        [np.nan, np.inf, -0.0, 65520.0, 65519.99, 1e-8, -3e-8, 1e300]])
    n = x.size
    interp, native = both(narrow, (n + 255) // 256, 256, [x, np.zeros(n, np.float16)], (n,))
    with np.errstate(over="ignore"):
        expect = x.astype(np.float16)
    assert np.array_equal(native[1].view(np.uint16), expect.view(np.uint16))
    assert same_bits(interp, native)


@pto.kernel
def offset_by_cast(a, o, s, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(a + (i + pto.cast(s, pto.int32) // 3)))


def test_uniform_offsets_with_checked_ops_in_the_fast_path():
    """An offset's uniform part computed by ops that can fail (a float -> int cast, a division
    by a run-time value) stays in the lane function, checked, not in the range check."""
    n = 512
    a = np.arange(n + 10, dtype=np.float32)
    interp, native = both(offset_by_cast, 2, 256, [a, np.zeros(n, np.float32)], (9.7, n))
    assert same_bits(interp, native) and np.array_equal(native[1], a[3:n + 3])
