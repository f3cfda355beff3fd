"""The transcendental functions called once per vector of lanes (docs/native.md#exactness):
LLVM's vectoriser calls NumPy's float64 loop on 2-64 lanes at a time (numpy_math.py
`add_vector_variants`), with and without a lane mask, and the remainder lanes of a block one at
a time. Bit for bit against the interpreter and against the definition (NumPy's float64 ufunc,
rounded once), for blocks that are not a multiple of the vector width, partial last blocks and
blocks of one lane."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native import numpy_math
from tests.backend.native.helpers import both, same_bits


@pto.kernel
def five(x, y, o_exp, o_log, o_tanh, o_sig, o_pow, n):
    i = pto.get_global_id()
    if i < n:  # a masked vector call (a partial block's lanes past n are off)
        a = pto.load(x + i)
        pto.store(o_exp + i, pto.exp(a))
        pto.store(o_log + i, pto.log(a))
        pto.store(o_tanh + i, pto.tanh(a))
        pto.store(o_sig + i, pto.sigmoid(a))
        pto.store(o_pow + i, a ** pto.load(y + i))


@pto.kernel
def exp_tanh_full(x, o):
    i = pto.get_global_id()  # no guard: every lane calls (the unmasked variants)
    a = pto.load(x + i)
    pto.store(o + i, pto.tanh(a) + pto.exp(a * 0.25))


def _inputs(dt, n, rng):
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 1e-30,
                         88.7, 89.0, -104.0, 709.0, -745.0, 3.0, -2.5], np.float64)
    with np.errstate(over="ignore"):
        body = np.concatenate([rng.standard_normal(n) * 4, np.exp(rng.uniform(-80, 80, n))])
        return rng.permutation(np.concatenate([specials, body]))[:n].astype(dt)


def _definition(xs, ys, dt):
    with np.errstate(all="ignore"):
        w, wy = xs.astype(np.float64), ys.astype(np.float64)
        sq = np.sqrt(w) + 0.0
        sq[np.isneginf(w)] = np.inf
        power = np.where(wy == 2.0, w * w, np.where(wy == -1.0, 1.0 / w,
                                                     np.where(wy == 0.5, sq, np.power(w, wy))))
        return [r.astype(dt) for r in (np.exp(w), np.log(w), np.tanh(w),
                                        1.0 / (1.0 + np.exp(-w)), power)]


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("block,n", [(256, 1000), (100, 1000), (33, 97), (7, 50), (1, 5)])
def test_vector_calls_give_the_interpreters_and_numpys_bits(dt, block, n):
    rng = np.random.default_rng(block * 7 + n)
    xs = _inputs(dt, n, rng)
    ys = _inputs(dt, n, rng)
    ys[::5] = 2.0
    ys[1::7] = 0.5
    outs = [np.zeros(n, dt) for _ in range(5)]
    with np.errstate(all="ignore"):
        interp, native = both(five, (n + block - 1) // block, block, [xs, ys, *outs], (n,))
    assert same_bits(interp, native)
    for got, want in zip(native[2:], _definition(xs, ys, dt)):
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("dt", [np.float16, np.float32])
@pytest.mark.parametrize("block", [256, 48, 5])
def test_unguarded_full_blocks_bit_exact(dt, block):
    rng = np.random.default_rng(block)
    grid = 7
    x = _inputs(dt, grid * block, rng)
    with np.errstate(all="ignore"):
        interp, native = both(exp_tanh_full, grid, block, [x, np.zeros(x.size, dt)])
        w = x.astype(np.float64)
        tanh = np.tanh(w).astype(dt)
        e = np.exp((x * dt(0.25)).astype(np.float64)).astype(dt)
        want = (tanh + e).astype(dt)
    assert same_bits(interp, native)
    assert np.array_equal(native[1].view(np.uint8), want.view(np.uint8))


def test_the_lane_loop_is_vectorised_and_calls_a_vector_variant():
    """What makes it fast: the optimised code calls `pypto.numpy.exp.mN` (a masked vector
    variant) and the kernel is not marked as calling NumPy per element."""
    from pypto.compiler import _native

    n = 1000
    x = np.linspace(-3, 3, n).astype(np.float32)
    ck = pto.compile(five, args=(x, x.copy(), *[np.zeros(n, np.float32) for _ in range(5)], n),
                     block=256)
    native = _native(ck, required=True)
    assert not numpy_math.per_element(native.engine)
    assert native.auto_prefers_interpreter is None


def test_the_loops_agree_with_the_ufunc_on_a_vector_and_one_element_at_a_time():
    """The first-use check numpy_math._agrees: one element per call (the scalar helper) and a
    whole array per call (the vector variants) both give np.<name>'s bits."""
    for name in sorted(set(numpy_math.UFUNCS.values())):
        address, why = numpy_math._loop(name)
        assert address is not None, why


@pto.kernel
def exp_and_atomic(x, y, total, n):
    i = pto.get_global_id()
    if i < n:
        v = pto.exp(pto.load(x + i))
        pto.store(y + i, v)
        pto.atomic_add(total + 0, v)


@pto.kernel
def exp_under_printf(x, y, n):
    i = pto.get_global_id()
    if i < n:
        v = pto.exp(pto.load(x + i))
        if v > 1e30:
            pto.printf("big %f\n", v)
        pto.store(y + i, v)


def test_compiling_prints_nothing_when_a_lane_loop_cannot_be_vectorised(capfd):
    """The lane loops calling NumPy's loops get a vectorisation width hint (numpy_math.py
    `widen_lane_loops`): LLVM prints a remark on stderr for a hinted loop it cannot vectorise,
    so kernels with atomics (a store every lane shares) or printf get no hint. Bit exact
    either way."""
    n = 1000
    x = np.linspace(-3, 3, n).astype(np.float32)
    interp, native = both(exp_and_atomic, 4, 256,
                          [x, np.zeros(n, np.float32), np.zeros(1, np.float32)], (n,))
    assert same_bits(interp, native)
    interp, native = both(exp_under_printf, 4, 256, [x, np.zeros(n, np.float32)], (n,))
    assert same_bits(interp, native)
    interp, native = both(five, 4, 256, [x, x.copy(), *[np.zeros(n, np.float32)
                                                       for _ in range(5)]], (n,))
    assert same_bits(interp, native)
    err = capfd.readouterr().err
    assert "remark" not in err and "not vectorized" not in err, err
