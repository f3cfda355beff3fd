"""The atomics besides atomic_add (docs/language.md#atomics): `pto.atomic_max/min/and/or/xor/exch/
cas` return the old element and serialise the lanes of one address in lane order. Exact against
a sequential NumPy reference (one lane after the other, lowest first) in HBM and L1, with
collisions, masked lanes, int32 / int64, and for max / min the floats with NaN and signed zeros;
through both IR levels, the debugger and the cost model (tests/frontend/everywhere.py); their
compile errors; the race checker (atomics never race with each other); the cost facts; the
native backend's refusal."""

from __future__ import annotations

import io

import ml_dtypes
import numpy as np
import pytest

import pypto as pto
import pypto.debug as dbg
from tests.frontend.everywhere import run_everywhere


@pto.kernel
def a_max(p, v, idx, o, n):
    i = pto.get_global_id()
    if i < n:
        o[i] = pto.atomic_max(p + idx[i], v[i])


@pto.kernel
def a_min(p, v, idx, o, n):
    i = pto.get_global_id()
    if i < n:
        o[i] = pto.atomic_min(p + idx[i], v[i])


@pto.kernel
def a_and(p, v, idx, o, n):
    i = pto.get_global_id()
    if i < n:
        o[i] = pto.atomic_and(p + idx[i], v[i])


@pto.kernel
def a_or(p, v, idx, o, n):
    i = pto.get_global_id()
    if i < n:
        o[i] = pto.atomic_or(p + idx[i], v[i])


@pto.kernel
def a_xor(p, v, idx, o, n):
    i = pto.get_global_id()
    if i < n:
        o[i] = pto.atomic_xor(p + idx[i], v[i])


@pto.kernel
def a_exch(p, v, idx, o, n):
    i = pto.get_global_id()
    if i < n:
        o[i] = pto.atomic_exch(p + idx[i], v[i])


@pto.kernel
def a_cas(p, c, v, idx, o, n):
    i = pto.get_global_id()
    if i < n:
        o[i] = pto.atomic_cas(p + idx[i], c[i], v[i])


def _ieee_max(a, b):
    if np.isnan(a) or np.isnan(b):
        return a if np.isnan(a) else b
    if a == b == 0:
        return b if np.signbit(a) else a
    return a if a > b else b


def _ieee_min(a, b):
    if np.isnan(a) or np.isnan(b):
        return a if np.isnan(a) else b
    if a == b == 0:
        return a if np.signbit(a) else b
    return a if a < b else b


_REFERENCE = {
    a_max: _ieee_max, a_min: _ieee_min,
    a_and: lambda a, b: a & b, a_or: lambda a, b: a | b, a_xor: lambda a, b: a ^ b,
    a_exch: lambda a, b: b,
}


def _sequential(update, p, v, idx, n):
    """The reference: lane 0, then lane 1, ...: each lane's old value and the final memory."""
    p = p.copy()
    old = np.zeros(len(v), p.dtype)
    for lane in range(n):
        a = idx[lane]
        old[lane] = p[a]
        p[a] = update(p[a], v[lane])
    return p, old


def _same(actual, expected):
    """Equal element by element, signed zeros told apart, any NaN matching any NaN."""
    if actual.dtype.kind not in "iu":  # floats (bfloat16 is kind "V")
        a = actual.astype(np.float64)
        e = expected.astype(np.float64)
        nan = np.isnan(a) & np.isnan(e)
        return bool(np.all(nan | ((a == e) & (np.signbit(a) == np.signbit(e)))))
    return np.array_equal(actual, expected)


@pytest.mark.parametrize("kernel", list(_REFERENCE), ids=lambda k: k.__name__)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_atomics_are_the_lanes_in_order(kernel, dtype):
    rng = np.random.default_rng(3)
    lanes, n = 64, 57  # two warps; lanes 57.. masked off
    info = np.iinfo(dtype)
    p = rng.integers(info.min, info.max, 8, dtype=dtype, endpoint=True)
    v = rng.integers(info.min, info.max, lanes, dtype=dtype, endpoint=True)
    idx = rng.integers(0, 8, lanes).astype(np.int32)  # ~8 lanes per address
    p_out, *_, old = run_everywhere(kernel, lanes, (p, v, idx, np.zeros(lanes, dtype), n))
    p_ref, old_ref = _sequential(_REFERENCE[kernel], p, v, idx, n)
    assert np.array_equal(p_out, p_ref)
    assert np.array_equal(old[:n], old_ref[:n])
    assert not old[n:].any()  # masked lanes neither update nor write o


@pytest.mark.parametrize("kernel", [a_max, a_min, a_exch], ids=lambda k: k.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_float_max_min_and_exch_with_nan_and_signed_zeros(kernel, dtype):
    specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -1.5, 0.0, -0.0, 3.0],
                        dtype=np.float64)
    rng = np.random.default_rng(5)
    lanes = 96
    v = rng.choice(specials, lanes).astype(dtype)
    v[:20] = np.array([0.0, -0.0] * 10).astype(dtype)  # zeros of both signs collide first
    p = np.array([-0.0, 0.0, -np.inf, np.inf, 2.0, -2.0, 0.0, -0.0], dtype=np.float64).astype(dtype)
    idx = rng.integers(0, 8, lanes).astype(np.int32)
    idx[:20] = np.arange(20) % 2
    p_out, *_, old = run_everywhere(kernel, lanes, (p, v, idx, np.zeros(lanes, dtype), lanes))
    p_ref, old_ref = _sequential(_REFERENCE[kernel], p, v, idx, lanes)
    assert _same(p_out, p_ref)
    assert _same(old, old_ref)
    if kernel is a_exch:  # exch moves bits: a NaN's payload too
        payload = np.array([0x7FC01234], np.uint32).view(np.float32)
        p_out, *_ = run_everywhere(kernel, 32, (np.zeros(1, np.float32),
                                                 np.repeat(payload, 32),
                                                 np.zeros(32, np.int32),
                                                 np.zeros(32, np.float32), 32))
        assert p_out.view(np.uint32)[0] == 0x7FC01234


def test_compare_and_swap_in_lane_order():
    rng = np.random.default_rng(9)
    lanes, n = 64, 61
    p = rng.integers(0, 3, 6).astype(np.int32)
    c = rng.integers(0, 3, lanes).astype(np.int32)
    v = rng.integers(0, 3, lanes).astype(np.int32)
    idx = rng.integers(0, 6, lanes).astype(np.int32)
    p_out, *_, old = run_everywhere(a_cas, lanes, (p, c, v, idx, np.zeros(lanes, np.int32), n))
    ref = p.copy()
    for lane in range(n):
        a = idx[lane]
        assert old[lane] == ref[a], lane
        if ref[a] == c[lane]:
            ref[a] = v[lane]
    assert np.array_equal(p_out, ref)


@pto.kernel
def claim(owner, o):
    i = pto.get_global_id()
    o[i] = pto.atomic_cas(owner + i % 4, -1, i)   # the first lane of each slot wins


def test_claiming_slots_with_cas_the_lowest_lane_wins():
    owner, o = run_everywhere(claim, 64, (np.full(4, -1, np.int32), np.zeros(64, np.int32)))
    np.testing.assert_array_equal(owner, [0, 1, 2, 3])
    expected = np.where(np.arange(64) < 4, -1, np.arange(64) % 4)
    np.testing.assert_array_equal(o, expected)


@pto.kernel
def l1_flags(x, out, olds):
    buf = pto.alloc_local(4, dtype=pto.int32)
    t = pto.get_local_id()
    if t < 4:
        buf[t] = 0
    pto.barrier_block()
    olds[t] = pto.atomic_or(buf + t % 4, 1 << (t // 4))
    m = pto.atomic_max(buf + t % 4, x[t])
    pto.barrier_block()
    if t < 4:
        out[t] = buf[t]
    olds[t] += m * 0


def test_l1_atomics_from_several_warps_need_no_barrier_between_them():
    x = np.arange(128, dtype=np.int32) % 7 - 3
    _, out, olds = run_everywhere(l1_flags, 128, (x, np.zeros(4, np.int32), np.zeros(128, np.int32)))
    ref = np.zeros(4, np.int64)
    old_ref = np.zeros(128, np.int64)
    for t in range(128):
        old_ref[t] = ref[t % 4]
        ref[t % 4] |= 1 << (t // 4)
    ref = ref.astype(np.int32)  # lanes 31.. shift past bit 31: int32 wraps
    np.testing.assert_array_equal(olds, old_ref.astype(np.int32))
    for t in range(128):
        ref[t % 4] = max(ref[t % 4], x[t])
    np.testing.assert_array_equal(out, ref)


def _error(kernel, *args):
    with pytest.raises(pto.CompileError) as info:
        pto.compile(kernel, args=args, block=32)
    return str(info.value)


def test_atomic_errors_say_what_types_they_take():
    @pto.kernel
    def float_or(p):
        pto.atomic_or(p, 1.0)

    msg = _error(float_or, pto.tensor(np.zeros(4, np.float32)))
    assert "pto.atomic_or is bitwise: the pointer holds pto.float32, it needs int32 or int64" \
        in msg

    @pto.kernel
    def float_cas(p):
        pto.atomic_cas(p, 0.0, 1.0)

    msg = _error(float_cas, pto.tensor(np.zeros(4, np.float32)))
    assert "pto.atomic_cas compares integers exactly" in msg

    @pto.kernel
    def bool_max(p):
        pto.atomic_max(p, True)

    msg = _error(bool_max, pto.tensor(np.zeros(4, np.bool_)))
    assert "pto.atomic_max is not defined on bool elements" in msg

    @pto.kernel
    def wrong_type(p, v):
        pto.atomic_exch(p, v)

    msg = _error(wrong_type, pto.tensor(np.zeros(4, np.float32)), 3)
    assert "the value is pto.int32 but the pointer holds pto.float32" in msg

    @pto.kernel
    def not_a_pointer(p):
        pto.atomic_min(3, p)

    msg = _error(not_a_pointer, 2.5)
    assert "pto.atomic_min's first argument must be a pointer" in msg


def test_the_verifier_rejects_a_bitwise_atomic_on_floats():
    text = """
    func.func @k(%p: !pto.ptr<f32, global>, %v: f32) -> f32 attributes {pto.kernel} {
      %old = pto.atomic_xor %p, %v : !pto.ptr<f32, global>, f32
      func.return %old : f32
    }"""
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import VerifyException

    from pypto.ir import make_context

    with pytest.raises(VerifyException, match="is bitwise: its element type must be an integer"):
        Parser(make_context(), text).parse_module().verify()


def test_debugger_shows_each_update():
    @pto.kernel
    def updates(h, o):
        i = pto.get_global_id()
        o[i] = pto.atomic_max(h + i % 2, i)
        o[i] += pto.atomic_cas(h + i % 2, 5, i)

    h, o = pto.tensor(np.zeros(2, np.int32)), pto.tensor(np.zeros(4, np.int32))
    out = io.StringIO()
    session = dbg.debug_kernel(updates, args=(h, o), grid=1, block=4,
                               pipeline="pto-verify-barriers", out=out)
    lines = []
    while not session.finished:
        session.step()
    lines = out.getvalue().splitlines()
    assert any("ATOMIC_MAX" in line and "max= " in line for line in lines), lines
    assert any("ATOMIC_CAS" in line and "cas(" in line for line in lines), lines


@pto.kernel
def one_address_max(p, v):
    i = pto.get_global_id()
    pto.atomic_max(p, v[i])


@pto.kernel
def own_address_max(p, v):
    i = pto.get_global_id()
    pto.atomic_max(p + i, v[i])


@pto.kernel
def one_address_add(p, v):
    i = pto.get_global_id()
    pto.atomic_add(p, v[i])


def test_cost_facts_lanes_on_one_address_serialise_as_atomic_add():
    v = np.arange(256, dtype=np.int32)

    def cycles(kernel, size):
        args = (pto.tensor(np.zeros(size, np.int32)), pto.tensor(v))
        return pto.profile(kernel, grid=1, block=256, args=args).total_cycles

    one, own = cycles(one_address_max, 1), cycles(own_address_max, 256)
    assert one > own  # 255 further lanes on one address, atomic_cycles each
    assert one == cycles(one_address_add, 1)  # the same facts as atomic_add


def test_the_native_backend_compiles_the_new_atomics_with_the_interpreters_bits(tmp_path,
                                                                               monkeypatch):
    """docs/native.md#what-is-compiled-the-support-check: load, combine, store in lane order."""
    monkeypatch.setenv("PYPTO_NATIVE_CACHE", str(tmp_path))
    v = np.arange(-100, 156, dtype=np.int32)
    outs = []
    for backend in ("interpreter", "native"):
        dst = np.full(256, 7, np.int32)
        pto.launch(own_address_max, 1, 256, (dst, v), backend=backend)
        outs.append(dst)
    assert np.array_equal(outs[0], outs[1])
    assert np.array_equal(outs[1], np.maximum(v, 7))


def test_lanes_of_several_blocks_go_in_global_lane_order():
    rng = np.random.default_rng(1)
    n = 1000
    v = rng.integers(0, 100, 1024).astype(np.int32)
    idx = rng.integers(0, 5, 1024).astype(np.int32)
    p, o = np.zeros(5, np.int32), np.zeros(1024, np.int32)
    a_exch[8, 128](p, v, idx, o, n)
    pto.sync()
    p_ref, old_ref = _sequential(_REFERENCE[a_exch], np.zeros(5, np.int32), v, idx, n)
    np.testing.assert_array_equal(p, p_ref)
    np.testing.assert_array_equal(o[:n], old_ref[:n])


@pto.kernel
def l1_exch(out, olds):
    buf = pto.alloc_local(1, dtype=pto.int32)
    t = pto.get_local_id()
    if t == 0:
        buf[0] = -1
    pto.barrier_block()
    olds[t] = pto.atomic_exch(buf, t)
    pto.barrier_block()
    if t == 0:
        out[0] = buf[0]


def test_under_the_reverse_schedule_warps_go_last_first():
    from tests.conftest import run_kernel

    args = (np.zeros(1, np.int32), np.zeros(64, np.int32))
    out, old = run_kernel(l1_exch, 1, 64, args)  # lockstep: lane order across the block
    assert out[0] == 63 and old[0] == -1 and old[32] == 31
    out, old = run_kernel(l1_exch, 1, 64, args, schedule="reverse")
    # warp 1 (lanes 32..63) first, in lane order, then warp 0: lane 0 sees lane 63's value
    assert out[0] == 31
    assert old[32] == -1 and old[33] == 32 and old[0] == 63 and old[1] == 0
