"""bfloat16 atomics and bfloat16 values in kernels with phases, compiled natively
(docs/native.md#what-is-compiled-the-support-check, pypto/backend/native/bf16.py): bit for bit
against the interpreter and against NumPy references computed with ml_dtypes (float32
arithmetic rounded once to bfloat16, the lanes' order)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pypto as pto
from tests.backend.native.helpers import both, same_bits

BF = ml_dtypes.bfloat16
B = 128


def _both(kernel, grid, block, arrays, scalars=()):
    outs = both(kernel, grid, block, arrays, scalars)
    assert same_bits(*outs)
    return outs[1]


def _bf(x) -> np.ndarray:
    return np.asarray(x, np.float32).astype(BF)


@pto.kernel
def bf_add_into(x, total, olds, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(olds + i, pto.atomic_add(total + i % 4, pto.load(x + i)))


@pto.kernel
def bf_max_into(x, total, n):
    i = pto.get_global_id()
    if i < n:
        pto.atomic_max(total + i % 4, pto.load(x + i))


@pto.kernel
def bf_min_into(x, total, n):
    i = pto.get_global_id()
    if i < n:
        pto.atomic_min(total + i % 4, pto.load(x + i))


@pto.kernel
def bf_exch_into(x, slot, olds, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(olds + i, pto.atomic_exch(slot + 0, pto.load(x + i)))


def _sequential(kind: str, x: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The atomics one lane after another (docs/language.md#atomics), each combination in
    float32 rounded once to bfloat16 (ml_dtypes); `max` / `min` IEEE (a NaN wins, +0 > -0)."""
    total = start.copy()
    olds = np.zeros_like(x)
    for i, v in enumerate(x):
        a = total[i % 4]
        olds[i] = a
        fa, fv = np.float32(a), np.float32(v)
        if kind == "add":
            total[i % 4] = BF(fa + fv)
        elif np.isnan(fa) or np.isnan(fv):
            total[i % 4] = a if np.isnan(fa) else v
        elif fa == fv:
            pick_a = np.signbit(fa) if kind == "min" else not np.signbit(fa)
            total[i % 4] = a if pick_a else v
        else:
            total[i % 4] = a if (fa > fv) == (kind == "max") else v
    return total, olds


@pytest.mark.parametrize("n", [5, 300, 600])
def test_bf16_atomic_add_in_lane_order(n):
    x = _bf(np.random.default_rng(n).standard_normal(n) * 8)
    start = _bf([0.5, -1.0, 1e3, 0.0])
    total, olds = _both(bf_add_into, (n + 255) // 256, 256, [x, start, np.zeros(n, BF)], (n,))[1:]
    want_total, want_olds = _sequential("add", x, start)
    assert total.view(np.uint16).tolist() == want_total.view(np.uint16).tolist()
    assert olds.view(np.uint16).tolist() == want_olds.view(np.uint16).tolist()


@pytest.mark.parametrize("kind,kernel", [("max", bf_max_into), ("min", bf_min_into)])
def test_bf16_atomic_max_min_zeros_and_infinities(kind, kernel):
    x = _bf([-0.0, 0.0, -0.0, 3.0, -np.inf, np.inf, -0.0, 0.0, 2.5, -7.0, 0.0, -0.0])
    start = _bf([-0.0, 0.0, -1.0, 1.0])
    total = _both(kernel, 1, 32, [x, start], (x.size,))[1]
    want, _ = _sequential(kind, x, start)
    assert total.view(np.uint16).tolist() == want.view(np.uint16).tolist()


@pytest.mark.parametrize("kind,kernel", [("max", bf_max_into), ("min", bf_min_into)])
def test_bf16_atomic_max_min_nan_wins(kind, kernel):
    x = _bf([1.0, np.nan, 2.0, -3.0, 4.0, 5.0])
    start = _bf([0.0, 0.0, 0.0, 0.0])
    total = _both(kernel, 1, 32, [x, start], (x.size,))[1]
    assert np.isnan(np.float32(total[1])) and not np.isnan(total[[0, 2, 3]].astype(np.float32)).any()
    want, _ = _sequential(kind, x, start)
    np.testing.assert_array_equal(total[[0, 2, 3]].astype(np.float32),
                                  want[[0, 2, 3]].astype(np.float32))


def test_bf16_atomic_exch_keeps_the_bits():
    x = _bf([1.5, -0.0, np.inf, 3.0])
    olds = _both(bf_exch_into, 1, 32, [x, _bf([9.0]), np.zeros(4, BF)], (4,))[2]
    assert olds.view(np.uint16).tolist() == _bf([9.0, 1.5, -0.0, np.inf]).view(np.uint16).tolist()


@pto.kernel
def bf_l1_add(x, out):
    tid = pto.get_local_id()
    buf = pto.alloc_local(4, dtype=x.dtype)
    if tid < 4:
        pto.store(buf + tid, pto.cast(0.0, x.dtype))
    pto.barrier_block()
    pto.atomic_add(buf + tid % 4, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    if tid < 4:
        pto.store(out + pto.get_block_id() * 4 + tid, pto.load(buf + tid))


def test_bf16_atomic_add_on_l1_in_lane_order():
    x = _bf(np.random.default_rng(3).standard_normal(2 * B) * 4)
    out = _both(bf_l1_add, 2, B, [x, np.zeros(8, BF)])[1]
    for b in range(2):
        want, _ = _sequential("add", x[b * B:(b + 1) * B], _bf([0, 0, 0, 0]))
        assert out[b * 4:(b + 1) * 4].view(np.uint16).tolist() == want.view(np.uint16).tolist()


@pto.kernel
def bf_stage(x, y):
    """A bfloat16 value live across a barrier (a spill slot), staged through L1."""
    tid = pto.get_local_id()
    gid = pto.get_global_id()
    buf = pto.alloc_local(B, dtype=x.dtype)
    v = pto.load(x + gid) * pto.cast(1.5, x.dtype)
    pto.store(buf + tid, v)
    pto.barrier_block()
    w = pto.load(buf + (tid + 1) % B)
    pto.store(y + gid, v + w)


@pto.kernel
def bf_tree(x, y):
    """A block tree sum in bfloat16 (a uniform loop around the barrier)."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(B, dtype=x.dtype)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = B // 2
    for _ in range(7):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s //= 2
    if tid == 0:
        pto.store(y + pto.get_block_id(), pto.load(buf + 0))


@pto.kernel
def bf_carry(x, y, steps):
    """A bfloat16 accumulator carried by a block-level loop across phases."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(B, dtype=x.dtype)
    acc = pto.cast(0.0, x.dtype)
    for k in range(steps):
        pto.store(buf + tid, pto.load(x + k * B + tid))
        pto.barrier_block()
        acc = acc * pto.cast(0.5, x.dtype) + pto.load(buf + (B - 1 - tid))
        pto.barrier_block()
    pto.store(y + tid, acc)


def test_bf16_values_across_phases():
    rng = np.random.default_rng(0)
    x = _bf(rng.standard_normal(4 * B))
    y = _both(bf_stage, 4, B, [x, np.zeros_like(x)])[1]
    v = (x.astype(np.float32) * np.float32(1.5)).astype(BF)
    w = np.concatenate([np.roll(v[b * B:(b + 1) * B], -1) for b in range(4)])
    assert y.view(np.uint16).tolist() == \
        (v.astype(np.float32) + w.astype(np.float32)).astype(BF).view(np.uint16).tolist()


def test_bf16_tree_sum_across_phases():
    x = _bf(np.random.default_rng(1).standard_normal(4 * B))
    y = _both(bf_tree, 4, B, [x, np.zeros(4, BF)])[1]
    for b in range(4):
        part = x[b * B:(b + 1) * B].copy()
        s = B // 2
        while s:
            part[:s] = (part[:s].astype(np.float32) + part[s:2 * s].astype(np.float32)).astype(BF)
            s //= 2
        assert y[b].view(np.uint16) == part[0].view(np.uint16)


def test_bf16_value_carried_by_a_block_level_loop():
    steps = 4
    x = _bf(np.random.default_rng(2).standard_normal(steps * B))
    y = _both(bf_carry, 1, B, [x, np.zeros(B, BF)], (steps,))[1]
    acc = np.zeros(B, BF)
    for k in range(steps):
        tile = x[k * B:(k + 1) * B][::-1]
        acc = ((acc.astype(np.float32) * np.float32(0.5)).astype(BF).astype(np.float32) +
               tile.astype(np.float32)).astype(BF)
    assert y.view(np.uint16).tolist() == acc.view(np.uint16).tolist()


@pto.kernel
def bf_scale(x, y, a, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.load(x + i) * a)


@pto.kernel
def bf_scale_staged(x, y, a):
    """The bfloat16 parameter used after a barrier: a uniform value passed to a phase."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(B, dtype=x.dtype)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    pto.store(y + pto.get_global_id(), pto.load(buf + (B - 1 - tid)) - a)


@pytest.mark.parametrize("a", [BF(0.3), BF(-0.0), BF(np.inf), BF(3.0e38)])
def test_bf16_scalar_parameter(a):
    """A bfloat16 NumPy scalar (ml_dtypes) is a bfloat16 parameter (docs/language.md: a NumPy
    scalar's dtype), passed to compiled code as its bits."""
    x = _bf(np.random.default_rng(5).standard_normal(2 * B) * 3)
    y = _both(bf_scale, 2, B, [x, np.zeros_like(x)], (a, x.size))[1]
    with np.errstate(over="ignore"):
        want = (x.astype(np.float32) * np.float32(a)).astype(BF)
    assert same_bits([y], [want])
    z = _both(bf_scale_staged, 2, B, [x, np.zeros_like(x)], (a,))[1]
    rev = np.concatenate([x[b * B:(b + 1) * B][::-1] for b in range(2)])
    want = (rev.astype(np.float32) - np.float32(a)).astype(BF)
    assert same_bits([z], [want])
