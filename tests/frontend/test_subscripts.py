"""Subscripts (docs/language.md#subscripts): `p[i]` is `pto.load(p + i)`, `p[i] = v` is
`pto.store(p + i, v)`, `p[i] op= v` loads, computes and stores, on tensor parameters and L1
buffers. Exact against NumPy, through both IR levels, the debugger and the cost model
(tests/frontend/everywhere.py); the same IR as the spelled-out form; out-of-bounds errors point
at the subscript with block, lane and element."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from tests.frontend.everywhere import run_everywhere


@pto.kernel
def update(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        o[i] = x[i] * 2 + y[n - 1 - i]
        o[i] += y[i]
        o[i] -= 3
        o[i] *= x[i]
        o[i] //= 5
        o[i] <<= 1
        o[i] ^= 0x55
        y[i] = o[i] % 7


def test_pointer_subscripts_and_augmented_assignment_are_exact():
    n = 50
    rng = np.random.default_rng(3)
    x = rng.integers(-100, 100, 64).astype(np.int32)
    y = rng.integers(-100, 100, 64).astype(np.int32)
    x_out, y_out, o = run_everywhere(update, 64, (x, y.copy(), np.zeros(64, np.int32), n))
    ref = x[:n] * 2 + y[:n][::-1]
    ref = (((ref + y[:n] - 3) * x[:n]) // 5 << 1) ^ 0x55
    np.testing.assert_array_equal(o[:n], ref)
    assert not o[n:].any()
    np.testing.assert_array_equal(y_out[:n], ref % 7)
    np.testing.assert_array_equal(y_out[n:], y[n:])
    np.testing.assert_array_equal(x_out, x)


@pto.kernel
def reverse_in_l1(x, o):
    t = pto.get_local_id()
    buf = pto.alloc_local(128, pto.float16)
    buf[t] = x[t]
    buf[t + 64] = x[t] * 0.5
    pto.barrier_block()
    buf[t] += buf[127 - t]
    pto.barrier_block()
    o[t] = buf[t]


def test_l1_buffer_subscripts():
    x = np.linspace(-2, 2, 64).astype(np.float16)
    (_, o) = run_everywhere(reverse_in_l1, 64, (x, np.zeros(64, np.float16)))
    half = x * np.float16(0.5)
    np.testing.assert_array_equal(o, x + half[::-1])


@pto.kernel
def spelled_out(x, o):
    i = pto.get_global_id()
    p = o + i                      # `o[i] += v` computes the address once
    pto.store(p, pto.load(p) + pto.load(x + i))


@pto.kernel
def subscripted(x, o):
    i = pto.get_global_id()
    o[i] += x[i]


def _ops(kernel):
    args = (pto.tensor(np.zeros(32, np.float32)), pto.tensor(np.zeros(32, np.float32)))
    ir = pto.compile(kernel, args=args, block=32, pipeline="").mlir
    return [line.split("=")[-1].split()[0] for line in ir.splitlines()
            if "pto." in line or "arith." in line]


def test_a_subscript_is_the_same_ir_as_load_and_store():
    assert _ops(subscripted) == _ops(spelled_out)
    assert "pto.load" in _ops(subscripted) and "pto.store" in _ops(subscripted)


@pto.kernel
def past_the_end(x, o):
    i = pto.get_global_id()
    o[i] = x[i + 1]


def test_out_of_bounds_names_the_subscript_block_lane_and_element():
    x = np.arange(32, dtype=np.float32)
    with pytest.raises(pto.MemoryAccessError) as info:
        past_the_end[1, 32](x, np.zeros(32, np.float32))
        pto.sync()
    message = str(info.value)
    first = message.splitlines()[0]
    assert f"{__file__}:" in first and ":12:" in first  # the column of x[i + 1]
    assert "out-of-bounds load of HBM buffer 'x' at element 32 (valid elements 0..31" in first
    assert "block (0, 0, 0), lane (31, 0, 0)" in first
    assert message.splitlines()[1].strip() == "o[i] = x[i + 1]"


@pto.kernel
def table_lookup(o):
    i = pto.get_global_id()
    for k in pto.static_range(3):
        o[i * 3 + k] = (10, 20, 30)[k] + i


def test_a_compile_time_tuple_indexed_in_a_static_loop():
    (o,) = run_everywhere(table_lookup, 8, (np.zeros(24, np.int32),))
    np.testing.assert_array_equal(o, (np.array([10, 20, 30]) + np.arange(8)[:, None]).ravel())


def _error(kernel, *args):
    with pytest.raises(pto.CompileError) as info:
        pto.compile(kernel, args=args, block=32)
    return str(info.value)


def test_subscript_errors():
    @pto.kernel
    def float_index(x):
        x[1.5] = 1.0

    msg = _error(float_index, pto.tensor(np.zeros(4, np.float32)))
    assert "the index '1.5' of 'x[1.5]' must be an integer" in msg

    @pto.kernel
    def on_a_number(x, n):
        x[0] = n[0]

    msg = _error(on_a_number, pto.tensor(np.zeros(4, np.float32)), 3)
    assert "parameter 'n' is used as a pointer but launch argument 1 is the int 3" in msg

    @pto.kernel
    def l1_two_d(x):
        buf = pto.alloc_local(64, pto.float32)
        buf[1, 2] = 1.0

    msg = _error(l1_two_d, pto.tensor(np.zeros(4, np.float32)))
    assert "an L1 buffer of pto.alloc_local is one-dimensional" in msg
    assert "buf[1 * STRIDE0 + 2]" in msg

    @pto.kernel
    def wrong_type(x):
        x[0] = pto.cast(1, pto.int32)

    msg = _error(wrong_type, pto.tensor(np.zeros(4, np.float32)))
    assert "the stored value is pto.int32 but the pointer holds pto.float32" in msg


# ---- t[r, c] on a tensor argument with a shape ------------------------------------------------


@pto.kernel
def transpose_2d(a, o):
    r = pto.get_block_id()
    c = pto.get_local_id()
    o[c, r] = a[r, c] * 2.0
    o[c, r] += 1.0


def test_two_index_subscripts_use_the_launch_shape_and_specialise_on_it():
    transpose_2d.clear_cache()
    for rows, cols in ((12, 5), (6, 7)):
        a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) - 9.5
        o = np.zeros((cols, rows), np.float32)
        transpose_2d[rows, cols](a, o)
        pto.sync()
        np.testing.assert_array_equal(o, a.T * np.float32(2) + np.float32(1))
    assert len(transpose_2d.cache) == 2  # one specialisation per pair of shapes
    # the strides are constants of the IR: 7 for a's rows, 6 for o's
    ir = pto.compile(transpose_2d, args=(pto.tensor(a), pto.tensor(o)), block=cols).mlir
    assert "arith.constant 7 : i32" in ir and "arith.constant 6 : i32" in ir


@pto.kernel
def row_sums(m, out):
    r = pto.get_local_id()
    acc = m[r, 0] * 0
    for c in pto.static_range(6):
        acc += m[r, c]
    out[r] = acc


def test_two_index_subscripts_everywhere():
    m = np.arange(16 * 6, dtype=np.int32).reshape(16, 6) * 3 - 100
    _, out = run_everywhere(row_sums, 16, (m, np.zeros(16, np.int32)))
    np.testing.assert_array_equal(out, m.sum(axis=1))


def test_two_index_subscript_errors_say_what_shape_is_known():
    @pto.kernel
    def three_of_two(m):
        m[0, 1, 2] = 1.0

    msg = _error(three_of_two, pto.tensor(np.zeros((2, 3), np.float32)))
    assert "'m' was launched with shape (2, 3) (2 indices)" in msg

    @pto.kernel
    def bytes_only(m):
        m[0, 1] = 1.0

    msg = _error(bytes_only, pto.alloc_tensor(64))
    assert "'m' was launched with shape (16,) (1 index) (a tensor allocated in bytes is " \
        "flat: launch a shaped one, pto.tensor(array) or pto.empty(shape))" in msg

    @pto.kernel
    def offset_pointer(m):
        p = m + 1
        p[0, 1] = 1.0

    msg = _error(offset_pointer, pto.tensor(np.zeros((2, 3), np.float32)))
    assert "a pointer has no shape (only a tensor parameter itself" in msg


# ---- t[r, c] on a tile of pto.alloc_tile (a static shape) ------------------------------------


@pto.kernel
def tile_rows(x, o, sums, rows: pto.constexpr, cols: pto.constexpr):
    t = pto.alloc_tile(rows, cols, dtype=pto.float32)
    s = pto.alloc_tile(rows, 1, dtype=pto.float32)
    lane = pto.get_local_id()
    r = lane // cols
    c = lane % cols
    t[r, c] = x[lane] * 2.0
    t[r, c] += 1.0
    pto.barrier_block()
    pto.trowsum(s, t)                      # a tile instruction reads what the lanes wrote
    pto.barrier_block()
    o[c * rows + r] = t[r, c]              # the transpose, through the subscript
    if c == 0:
        sums[r] = s[r, 0]


def test_two_index_subscripts_on_a_tile_everywhere():
    rows, cols = 4, 8
    x = np.arange(rows * cols, dtype=np.float32) - 11.5
    _, o, sums = run_everywhere(tile_rows, rows * cols,
                                (x, np.zeros(rows * cols, np.float32), np.zeros(rows, np.float32),
                                 rows, cols))
    t = x.reshape(rows, cols) * np.float32(2) + np.float32(1)
    np.testing.assert_array_equal(o, t.T.ravel())
    np.testing.assert_array_equal(sums, t.sum(axis=1))  # small integers: exact in any order


def test_a_tile_subscript_is_the_same_ir_as_the_flat_pointer():
    @pto.kernel
    def indexed(o):
        t = pto.alloc_tile(4, 8, dtype=pto.float32)
        r = pto.get_local_id()
        t[r, 3] = 1.0
        o[r] = t[r, 3]

    @pto.kernel
    def spelled(o):
        t = pto.alloc_tile(4, 8, dtype=pto.float32)
        r = pto.get_local_id()
        pto.store(t + (r * 8 + 3), 1.0)
        v = pto.load(t + (r * 8 + 3))  # Python evaluates `o[r] = t[r, 3]`'s value first
        pto.store(o + r, v)

    def ops(kernel):
        ir = pto.compile(kernel, args=(pto.tensor(np.zeros(4, np.float32)),), block=4,
                         pipeline="").mlir
        body = [line.strip() for line in ir.splitlines()]
        # each op and, for constants, the value (SSA names differ: `%v` is named)
        return [line.split(" = ")[-1].split(" loc(")[0].split(" %")[0] for line in body
                if line.startswith(("%", "pto."))]

    assert ops(indexed) == ops(spelled)


def test_a_constant_index_outside_the_tile_is_a_compile_error_at_the_subscript():
    @pto.kernel
    def past_the_row(o):
        t = pto.alloc_tile(4, 8, dtype=pto.float32)
        r = pto.get_local_id()
        t[r, 8] = 1.0

    msg = _error(past_the_row, pto.tensor(np.zeros(4, np.float32)))
    assert "index 1 of 't[r, 8]' is '8' = 8, outside the tile's 4 x 8 shape (0 .. 7 along " \
        "that axis)" in msg
    assert f"{__file__}:" in msg.splitlines()[0]
    assert "t[r, 8] = 1.0" in msg


@pto.kernel
def tile_overrun(o, rows: pto.constexpr):
    t = pto.alloc_tile(4, 8, dtype=pto.float32)
    r = pto.get_local_id()
    t[r, 0] = 1.0
    o[r] = t[r, 0]


def test_a_run_time_index_outside_the_tile_names_the_subscript_block_lane_and_element():
    with pytest.raises(pto.MemoryAccessError) as info:
        tile_overrun[1, 6](np.zeros(6, np.float32), 4)
        pto.sync()
    first = str(info.value).splitlines()[0]
    assert f"{__file__}:" in first
    assert "out-of-bounds store of L1 buffer" in first and "at element 32" in first
    assert "lane (4, 0, 0)" in first
    assert str(info.value).splitlines()[1].strip() == "t[r, 0] = 1.0"
