"""The forms the native backend compiles since issue 29's coverage work — the atomics besides
`atomic_add`, the transcendental functions, `**` — against the interpreter (the oracle), bit for
bit, and against sequential NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import NativeUnsupported
from pypto.errors import KernelError, MemoryAccessError
from tests.backend.native.helpers import both, same_bits


# --- atomics ---------------------------------------------------------------------------------

@pto.kernel
def scatter_max(values, slot, best, n):
    i = pto.get_global_id()
    if i < n:
        pto.atomic_max(best + pto.load(slot + i), pto.load(values + i))


@pto.kernel
def scatter_min_old(values, slot, best, olds, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(olds + i, pto.atomic_min(best + pto.load(slot + i), pto.load(values + i)))


@pto.kernel
def claim(slot, owner, olds, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(olds + i, pto.atomic_cas(owner + pto.load(slot + i), -1, i))


@pto.kernel
def swap_in(values, cell, olds, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(olds + i, pto.atomic_exch(cell + 0, pto.load(values + i)))


@pto.kernel
def bits(values, slot, acc_and, acc_or, acc_xor, n):
    i = pto.get_global_id()
    if i < n:
        v = pto.load(values + i)
        s = pto.load(slot + i)
        pto.atomic_and(acc_and + s, v)
        pto.atomic_or(acc_or + s, v)
        pto.atomic_xor(acc_xor + s, v)


def _sequential(kind, data, idx, vals, compare=None):
    """The documented order (docs/language.md#atomics): lane by lane; returns the olds."""
    data = data.copy()
    olds = np.empty_like(vals)
    for k in range(idx.size):
        a = data[idx[k]]
        olds[k] = a
        v = vals[k]
        if kind == "max":
            data[idx[k]] = np.nan if np.isnan(a) or np.isnan(v) else (
                max(a, v) if a != v else (a if not np.signbit(a) else v))
        elif kind == "min":
            data[idx[k]] = np.nan if np.isnan(a) or np.isnan(v) else (
                min(a, v) if a != v else (a if np.signbit(a) else v))
        elif kind == "exch":
            data[idx[k]] = v
        elif kind == "cas":
            data[idx[k]] = v if a == compare else a
    return data, olds


def test_integer_atomic_max_and_bitwise_any_order_bit_exact():
    rng = np.random.default_rng(1)
    n = 3000
    for dt in (np.int32, np.int64):
        values = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, n, dtype=dt)
        slot = rng.integers(0, 7, n).astype(np.int32)
        best = np.full(7, np.iinfo(dt).min, dt)
        interp, native = both(scatter_max, 12, 256, [values, slot, best], (n,))
        assert same_bits(interp, native)
        expect = np.array([values[slot == s].max() for s in range(7)], dt)
        assert np.array_equal(native[2], expect)
        ones = np.full(7, -1, dt)
        interp, native = both(bits, 12, 256, [values, slot, ones, np.zeros(7, dt),
                                              np.zeros(7, dt)], (n,))
        assert same_bits(interp, native)
        for s in range(7):
            hit = values[slot == s]
            assert native[2][s] == np.bitwise_and.reduce(hit, initial=dt(-1))
            assert native[3][s] == np.bitwise_or.reduce(hit)
            assert native[4][s] == np.bitwise_xor.reduce(hit)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.int32])
def test_atomic_min_old_values_in_lane_order_nan_and_signed_zeros(dt):
    rng = np.random.default_rng(2)
    n = 700
    if np.dtype(dt).kind == "f":
        values = rng.standard_normal(n).astype(dt)
        values[::37] = np.nan
        values[5::41] = -0.0
        values[7::43] = 0.0
        best = np.array([np.inf, 0.0, -0.0, np.nan, 1.0], dt)
    else:
        values = rng.integers(-100, 100, n).astype(dt)
        best = np.array([50, 0, -3, 7, 1], dt)
    slot = rng.integers(0, 5, n).astype(np.int32)
    interp, native = both(scatter_min_old, 3, 256,
                          [values, slot, best, np.zeros(n, dt)], (n,))
    assert same_bits(interp, native)
    data, olds = _sequential("min", best, slot, values)
    assert same_bits([native[2], native[3]], [data, olds])


def test_atomic_cas_claims_and_exch_chain_in_lane_order():
    rng = np.random.default_rng(3)
    n = 900
    slot = rng.integers(0, 20, n).astype(np.int32)
    interp, native = both(claim, 4, 256, [slot, np.full(20, -1, np.int32),
                                          np.zeros(n, np.int32)], (n,))
    assert same_bits(interp, native)
    data, olds = _sequential("cas", np.full(20, -1, np.int32), slot,
                             np.arange(n, dtype=np.int32), compare=-1)
    assert np.array_equal(native[1], data) and np.array_equal(native[2], olds)
    values = rng.standard_normal(n).astype(np.float32)
    values[3] = -0.0
    values[4] = np.float32(np.nan)
    interp, native = both(swap_in, 4, 256, [values, np.zeros(1, np.float32),
                                            np.zeros(n, np.float32)], (n,))
    assert same_bits(interp, native)
    assert same_bits([native[2][1:], native[1]], [values[:-1], values[-1:]])


def test_atomic_out_of_bounds_error_as_the_interpreter():
    n = 10
    slot = np.zeros(n, np.int32)
    slot[6] = 9
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(claim, 1, 32, (slot, np.full(4, -1, np.int32), np.zeros(n, np.int32),
                                      n), backend=backend)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert "atomic_cas" in errors[1] and "lane (6, 0, 0)" in errors[1]


@pto.kernel
def old_in_loop(values, cell, olds, n):
    i = pto.get_global_id()
    for k in range(2):
        pto.store(olds + 2 * i + k, pto.atomic_exch(cell + 0, pto.load(values + i)))


def test_atomics_whose_order_differs_are_refused_and_auto_runs_the_interpreter():
    values = np.arange(8, dtype=np.float32)
    with pytest.raises(NativeUnsupported, match="order shows"):
        pto.launch(old_in_loop, 1, 8, (values, np.zeros(1, np.float32),
                                       np.zeros(16, np.float32), 8), backend="native")


# --- transcendental functions and ** ---------------------------------------------------------

@pto.kernel
def transcendental(x, y, o_exp, o_log, o_tanh, o_sig, o_pow, o_pow_half, o_sq, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        pto.store(o_exp + i, pto.exp(a))
        pto.store(o_log + i, pto.log(a))
        pto.store(o_tanh + i, pto.tanh(a))
        pto.store(o_sig + i, pto.sigmoid(a))
        pto.store(o_pow + i, a ** b)
        pto.store(o_pow_half + i, a ** 0.5)
        pto.store(o_sq + i, a ** 2.0)


def _special_and_random(dt, n, rng):
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 1e-30,
                         -1e-30, 88.7, 89.0, -104.0, 709.0, -745.0, 3.0, -2.5], np.float64)
    with np.errstate(over="ignore"):  # float16: large values become inf
        return np.concatenate([specials, rng.standard_normal(n) * 4, rng.uniform(-1, 1, n),
                               np.exp(rng.uniform(-80, 80, n))]).astype(dt)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_transcendentals_and_float_power_bit_exact(dt):
    rng = np.random.default_rng(11)
    xs = _special_and_random(dt, 700, rng)
    ys = rng.permutation(np.concatenate([_special_and_random(dt, 700, rng)[: xs.size - 60],
                                         np.repeat(np.array([2.0, -1.0, 0.5], dt), 20)]))
    n = xs.size
    outs = [np.zeros(n, dt) for _ in range(7)]
    with np.errstate(all="ignore"):
        interp, native = both(transcendental, (n + 255) // 256, 256, [xs, ys, *outs], (n,))
    assert same_bits(interp, native)
    with np.errstate(all="ignore"):  # the definition: NumPy in float64, rounded once
        wide, wy = xs.astype(np.float64), ys.astype(np.float64)
        sq = np.sqrt(wide) + 0.0
        sq[np.isneginf(wide)] = np.inf
        expect = [np.exp(wide), np.log(wide), np.tanh(wide), 1.0 / (1.0 + np.exp(-wide)),
                  np.where(wy == 2.0, wide * wide, np.where(
                      wy == -1.0, 1.0 / wide, np.where(wy == 0.5, sq, np.power(wide, wy)))),
                  sq, wide * wide]
    for got, want in zip(native[2:], expect):
        with np.errstate(over="ignore"):
            assert np.array_equal(got.view(np.uint8), want.astype(dt).view(np.uint8))


@pto.kernel
def pow_lanes(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(x + i) ** pto.load(y + i))


def test_float_power_by_a_lane_exponent_of_two_is_the_square_on_both_backends():
    """One definition whatever the exponent's shape: NumPy squares for a scalar exponent 2 (and
    takes sqrt for 0.5, 1/x for -1); the interpreter applies that to every lane."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal(4096) * 3
    y = np.full(x.size, 2.0)
    y[::2] = 0.5
    y[1::4] = -1.0
    interp, native = both(pow_lanes, 16, 256, [x, y, np.zeros(x.size)], (x.size,))
    assert same_bits(interp, native)
    with np.errstate(invalid="ignore"):
        want = np.where(y == 2.0, x * x, np.where(y == 0.5, np.sqrt(x) + 0.0, 1.0 / x))
    assert np.array_equal(native[2].view(np.uint64), want.view(np.uint64))


@pto.kernel
def int_power(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(x + i) ** pto.load(y + i))


@pto.kernel
def cube_and_bool(x, o, f, n):
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i)
        pto.store(o + i, v ** 3)
        pto.store(f + i, pto.cast(v > 0, pto.float16) + pto.cast(v > 5, pto.float32))


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_integer_power_wraps_as_numpy(dt):
    rng = np.random.default_rng(13)
    n = 2000
    x = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, n, dtype=dt)
    x[:40] = np.arange(-20, 20)
    y = rng.integers(0, 200, n).astype(dt)
    y[:5] = 0
    interp, native = both(int_power, 8, 256, [x, y, np.zeros(n, dt)], (n,))
    assert same_bits(interp, native)
    with np.errstate(over="ignore"):
        assert np.array_equal(native[2], np.power(x, y))
    interp, native = both(cube_and_bool, 8, 256, [x, np.zeros(n, dt), np.zeros(n, np.float32)],
                          (n,))
    assert same_bits(interp, native)
    assert np.array_equal(native[1], x * x * x)
    assert np.array_equal(native[2], (x > 0).astype(np.float32) + (x > 5))


def test_negative_integer_exponent_is_the_interpreters_error():
    x = np.arange(10, dtype=np.int32)
    y = np.ones(10, np.int32)
    y[7] = -2
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(KernelError) as info:
            pto.launch(int_power, 1, 16, (x, y, np.zeros(10, np.int32), 10), backend=backend)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert "negative exponent" in errors[1] and "test_more_ops.py" in errors[1]
    y[7] = 2  # lanes 10..15 (i >= n) compute nothing: no error
    out = np.zeros(10, np.int32)
    pto.launch(int_power, 1, 16, (x, y, out, 10), backend="native")
    assert np.array_equal(out, x ** y)


# --- warp shuffles and votes -----------------------------------------------------------------

@pto.kernel
def shuffles(x, k, o_idx, o_up, o_down, o_xor, n):
    i = pto.get_global_id()
    v = pto.select(i < n, x[min(i, n - 1)], 0.0)
    d = pto.select(i < n, k[min(i, n - 1)], 0)
    pto.store(o_idx + i, pto.shfl(v, d))
    pto.store(o_up + i, pto.shfl_up(v, d))
    pto.store(o_down + i, pto.shfl_down(v, 3))
    pto.store(o_xor + i, pto.shfl_xor(v, d))


@pto.kernel
def warp_sums(x, sums, n):
    i = pto.get_global_id()
    v = pto.select(i < n, x[min(i, n - 1)], 0.0)
    for off in (16, 8, 4, 2, 1):
        v += pto.shfl_down(v, off)
    if pto.get_lane_id() == 0:
        sums[i // 32] = v


@pto.kernel
def votes(x, o_ballot, o_any, o_all, n):
    i = pto.get_global_id()
    p = i < n and x[min(i, n - 1)] > 0
    pto.store(o_ballot + i, pto.ballot(p))
    pto.store(o_any + i, pto.cast(pto.vote_any(p), pto.int32))
    pto.store(o_all + i, pto.cast(pto.vote_all(p), pto.int32))


def _reference_shuffle(mode, v, k, block):
    """docs/language.md#warp-shuffles-and-votes, lane by lane."""
    out = v.copy()
    for g in range(v.size):
        local = g % block
        lane, start = local % 32, g - local % 32
        width = min(32, block - (local - lane))
        kk = int(k[g]) & 31
        j = {"idx": kk, "up": lane - kk, "down": lane + kk, "xor": lane ^ kk}[mode]
        if 0 <= j < width:
            out[g] = v[start + j]
    return out


@pytest.mark.parametrize("block", [64, 80])  # 80: a partial warp of 16 lanes
def test_shuffles_bit_exact_with_edges_and_partial_warps(block):
    rng = np.random.default_rng(21)
    n = 200
    grid = 4
    total = grid * block
    x = rng.standard_normal(n).astype(np.float32)
    x[3], x[5] = -0.0, np.float32(np.nan)
    k = rng.integers(-40, 70, n).astype(np.int32)
    outs = [np.zeros(total, np.float32) for _ in range(4)]
    interp, native = both(shuffles, grid, block, [x, k, *outs], (n,))
    assert same_bits(interp, native)
    v = np.concatenate([x, np.zeros(total - n, np.float32)])
    kk = np.concatenate([k, np.zeros(total - n, np.int32)])
    for mode, got in zip(("idx", "up", "down", "xor"), native[2:]):
        kind = kk if mode != "down" else np.full(total, 3)
        assert same_bits([got], [_reference_shuffle(mode, v, kind, block)]), mode


def test_warp_sum_tree_and_votes_bit_exact():
    rng = np.random.default_rng(22)
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    interp, native = both(warp_sums, 4, 256, [x, np.zeros(32, np.float32)], (n,))
    assert same_bits(interp, native)
    x[x > 0] *= rng.random(int((x > 0).sum())) < 0.05  # warps of all, some, no positives
    x[:32] = 1.0
    outs = [np.zeros(1024, np.int32) for _ in range(3)]
    for block in (256, 96):
        grid = -(-1024 // block)
        outs = [np.zeros(grid * block, np.int32) for _ in range(3)]
        interp, native = both(votes, grid, block, [x, *outs], (n,))
        assert same_bits(interp, native)
    p = np.concatenate([x > 0, np.zeros(grid * block - n, bool)])
    lanes = np.arange(p.size) % block
    for g in range(0, p.size, 1):
        start = g - lanes[g] % 32
        width = min(32, block - (lanes[g] - lanes[g] % 32))
        warp = p[start:start + width]
        assert native[2][g] == int(warp.any()) and native[3][g] == int(warp.all())
        assert native[1][g] == np.array(sum(1 << b for b in np.flatnonzero(warp)),
                                        np.int64).astype(np.uint32).view(np.int32)


@pto.kernel
def shuffle_in_branches(x, o, n):
    i = pto.get_global_id()
    v = pto.select(i < n, x[min(i, n - 1)], 0.0)
    if n > 4:  # uniform across the block: a block-level branch around the exchange
        v = pto.shfl_xor(v, 1)
    if pto.get_warp_id() == 1:  # uniform across each warp only: the exchange is guarded
        v = v + pto.shfl_down(v, 2)
    pto.store(o + i, v)


def test_shuffles_under_warp_uniform_conditions_bit_exact():
    x = np.random.default_rng(23).standard_normal(100).astype(np.float32)
    interp, native = both(shuffle_in_branches, 2, 96, [x, np.zeros(192, np.float32)], (100,))
    assert same_bits(interp, native)
    v = np.concatenate([x, np.zeros(92, np.float32)])[np.arange(192) ^ 1]
    want = v.copy()
    for g in range(192):
        if (g % 96) // 32 == 1:
            want[g] = v[g] + (v[g + 2] if g % 32 < 30 else v[g])
    assert same_bits([native[1]], [want])


def test_a_shuffle_under_a_warp_divergent_condition_is_refused():
    from pypto.backend.native.warp_exchange import refusal
    from xdsl.parser import Parser

    from pypto.ir import make_context

    module = Parser(make_context(), """
    func.func @k(%o: !pto.ptr<f32, global> {pto.noalias}) attributes {pto.kernel} {
      %l = pto.get_lane_id : i32
      %c = arith.constant 3 : i32
      %lt = arith.cmpi slt, %l, %c : i32
      %f = arith.constant 1.0 : f32
      scf.if %lt {
        %s = pto.shfl_xor %f, %c : f32
        %p = pto.addptr %o, %l : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
        pto.store %s, %p : f32, !pto.ptr<f32, global>
      }
      func.return
    }""").parse_module()
    kernel = next(op for op in module.walk() if op.name == "func.func")
    reason = refusal(kernel)
    assert reason is not None and "may differ between the lanes of a warp" in reason


# --- printf ----------------------------------------------------------------------------------

@pto.kernel
def trace(x, h, flags, n):
    i = pto.get_global_id()
    if i < n and i % 3 != 1:
        pto.printf("i=%d x=%.3f h=%r ok=%s %x %e%%\n", i, x[i], h[i], flags[i] > 0, i * 7919,
                   x[i])


@pto.kernel
def bad_format(x, n):
    i = pto.get_global_id()
    if i < n:
        pto.printf("%d", x[i])


def test_printf_prints_the_interpreters_lines_in_its_order(capsys):
    x = np.array([0.5, -0.0, np.nan, np.inf, 1e-8, 3.25, -2.0, 7.0, 1.0, 2.0], np.float32)
    h = x.astype(np.float16)
    flags = np.arange(10, dtype=np.int32) % 2
    texts = []
    for backend in ("interpreter", "native"):
        pto.launch(trace, (3, 1), (4, 1), (x, h, flags, 10), backend=backend)
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1]
    lines = texts[1].splitlines()
    assert len(lines) == 7 and lines[0] == "[block (0, 0, 0) lane (0, 0, 0)] i=0 x=0.500 " \
        "h=0.5 ok=False 0 5.000000e-01%"
    assert lines[-1].startswith("[block (2, 0, 0) lane (1, 0, 0)] i=9 ")


def test_printf_format_error_is_the_interpreters():
    x = np.array([1.0, np.inf], np.float32)
    errors = []
    for backend in ("interpreter", "native"):
        with pytest.raises(KernelError) as info:
            pto.launch(bad_format, 1, 2, (x, 2), backend=backend)
        errors.append(str(info.value))
    assert errors[0] == errors[1] and "cannot print (inf,)" in errors[1]


# --- float16 / bfloat16 fma rounded once -----------------------------------------------------

@pto.kernel
def fma_narrow(a, b, c, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.fma(o + i, a[i], b[i], c[i])


def _round_once(exact, dt):
    """The value of the 16-bit float type `dt` nearest to the Fraction `exact`, ties to even:
    among the float64 guess's neighbours (sign-magnitude encodings one apart)."""
    from fractions import Fraction

    bits = int(np.array(float(exact)).astype(dt).view(np.uint16))
    best = None
    for cand in {bits - 1, bits, bits + 1, 0x0001, 0x8001} & set(range(0x10000)):
        value = np.array(cand, np.uint16).view(dt)[()]
        if not np.isfinite(np.float32(value)):
            continue
        key = (abs(Fraction(float(value)) - exact), cand & 1)
        if best is None or key < best[0]:
            best = (key, value)
    return best[1]


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_narrow_fma_is_rounded_once(dt):
    from fractions import Fraction

    from pypto.exact import BFLOAT16

    dt = np.dtype(np.float16) if dt == "float16" else BFLOAT16
    rng = np.random.default_rng(31)
    n = 600
    a = rng.uniform(-4, 4, n).astype(dt)
    b = rng.uniform(-4, 4, n).astype(dt)
    c = (-(a.astype(np.float64) * b.astype(np.float64)) *
         (1 + rng.uniform(-1e-2, 1e-2, n))).astype(dt)  # cancellation: the hard cases
    interp, native = both(fma_narrow, 3, 256, [a, b, c, np.zeros(n, dt)], (n,))
    assert same_bits(interp, native)
    for k in range(0, n, 7):
        exact = Fraction(float(a[k])) * Fraction(float(b[k])) + Fraction(float(c[k]))
        want = _round_once(exact, dt)
        assert float(native[3][k]) == float(want), k


@pto.kernel
def printf_after_barrier(x, n):
    buf = pto.alloc_local(64, pto.float32)
    t = pto.get_local_id()
    i = pto.get_global_id()
    buf[t] = x[i]
    pto.barrier_block()
    if i < n:
        pto.printf("%d %g", i, buf[63 - t])


@pto.kernel
def rotate_rounds(x, o, rounds):
    i = pto.get_global_id()
    v = x[i]
    for r in range(rounds):  # a uniform loop around the exchange: block-level
        v = pto.shfl(v, pto.get_lane_id() + r) * 0.5 + v
    o[i] = v


def test_printf_with_phases_and_a_shuffle_in_a_uniform_loop(capsys):
    x = np.random.default_rng(41).standard_normal(128).astype(np.float32)
    texts = []
    for backend in ("interpreter", "native"):
        pto.launch(printf_after_barrier, 2, 64, (x, 100), backend=backend)
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1] and len(texts[1].splitlines()) == 100
    interp, native = both(rotate_rounds, 2, 64, [x, np.zeros(128, np.float32)], (3,))
    assert same_bits(interp, native)
    v = x.copy()
    for r in range(3):
        lanes = np.arange(128)
        v = v[(lanes // 32) * 32 + (lanes % 32 + r) % 32] * np.float32(0.5) + v
    assert same_bits([native[1]], [v])
