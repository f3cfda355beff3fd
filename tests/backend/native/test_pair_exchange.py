"""Sorting-network steps (`if tid ^ j > tid`) as one branch-free phase (pair_exchange.py,
exchange_selects.py, docs/native.md#merged-tree-steps): the interpreter's bits and errors."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import scf

import pypto as pto
from pypto.backend.native.exchange_selects import select_exchanges
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.phases import plan
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import bitonic_ref, bitonic_sort_block

B = 64


@pto.kernel
def exchange_step(x, y, j, shift):
    """One compare-exchange step with `j` and a neighbour offset from the host: `shift == 0`
    is the pair exchange; otherwise the pair's read is `s[tid + shift]` (not a pair: split)."""
    tid = pto.get_local_id()
    s = pto.alloc_local(B, dtype=pto.int32)
    pto.store(s + tid, pto.load(x + tid))
    pto.barrier_block()
    ixj = tid ^ j
    if ixj > tid:
        a = pto.load(s + tid)
        b = pto.load(s + ixj + shift)
        if a > b:
            pto.store(s + tid, b)
            pto.store(s + ixj, a)
    pto.barrier_block()
    pto.store(y + tid, pto.load(s + tid))


@pto.kernel
def exchange_pair(x, y, j):
    """One compare-exchange step, `j` from the host (the pair exchange: one phase)."""
    tid = pto.get_local_id()
    s = pto.alloc_local(B, dtype=pto.int32)
    pto.store(s + tid, pto.load(x + tid))
    pto.barrier_block()
    ixj = tid ^ j
    if ixj > tid:
        a = pto.load(s + tid)
        b = pto.load(s + ixj)
        if a > b:
            pto.store(s + tid, b)
            pto.store(s + ixj, a)
    pto.barrier_block()
    pto.store(y + tid, pto.load(s + tid))


def _native_kernel(kernel, args, block):
    compiled = pto.compile(kernel, args=args, block=block)
    from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64
    func = compiled.func.clone()
    func.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(v, i64) for v in (block, 1, 1)])
    return func


@pytest.fixture(scope="module")
def keys() -> np.ndarray:
    x = np.random.default_rng(40).standard_normal(2 * B).astype(np.float32)
    x[:10] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, 1.0, np.nan, -0.0, 2.0]
    x.view(np.uint32)[7] = 0x7FC00123   # a NaN payload: compares false, moves unchanged
    return x


def test_bitonic_with_nan_ties_and_signed_zeros_bit_exact(keys):
    interp, native = both(bitonic_sort_block, 2, B, [keys, np.zeros_like(keys)], (B, 6))
    assert same_bits(interp, native)
    assert native[1].tobytes() == bitonic_ref(keys, B).tobytes()


def test_exchange_is_one_select_phase(keys):
    func = _native_kernel(bitonic_sort_block, (keys, keys.copy(), B, 6), B)
    assert plan(func).merged
    selected = select_exchanges(func)
    assert selected is not func
    nested = [o for o in selected.walk() if isinstance(o, scf.IfOp)
              and any(isinstance(i, scf.IfOp) and i is not o for i in o.walk())]
    assert not nested  # (the nested `if a > b` became selects)


def test_out_of_range_partner_same_error():
    """j = B: every lane's partner is past the L1 buffer; both backends report lane 0's load."""
    x = np.arange(B, dtype=np.int32)[::-1].copy()
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.MemoryAccessError) as err:
            pto.launch(exchange_pair, 1, B, (x, np.zeros(B, np.int32), B), backend=backend)
            pto.sync()
        messages.append(str(err.value).splitlines()[0])
    assert messages[0] == messages[1]


@pytest.mark.parametrize("j", [1, 8, 3, -5])
def test_exchange_pair_bit_exact(j):
    x = np.random.default_rng(abs(j)).integers(-50, 50, B).astype(np.int32)
    func = _native_kernel(exchange_pair, (x, x.copy(), j), B)
    assert plan(func).merged and select_exchanges(func) is not func
    interp, native = both(exchange_pair, 1, B, [x, np.zeros(B, np.int32)], (j,))
    assert same_bits(interp, native)
    ref = x.copy()
    for t in range(B):
        if 0 <= (t ^ j) < B and (t ^ j) > t and ref[t] > ref[t ^ j]:
            ref[t], ref[t ^ j] = ref[t ^ j], ref[t]
    np.testing.assert_array_equal(native[1], ref)


def test_neighbour_read_is_not_a_pair_and_stays_exact():
    """`s[(tid ^ 4) - 1]`: not the pair's element, so the step keeps its split phases."""
    x = np.random.default_rng(9).integers(-50, 50, B).astype(np.int32)
    assert not plan(_native_kernel(exchange_step, (x, x.copy(), 4, -1), B)).merged
    interp, native = both(exchange_step, 1, B, [x, np.zeros(B, np.int32)], (4, -1))
    assert same_bits(interp, native)


@pto.kernel
def exchange_reload(x, y, j):
    """A compare-exchange that loads its own element again inside the nested `if` (the swap's
    `old`): the converter forwards the top-level load (exchange_selects.py)."""
    tid = pto.get_local_id()
    s = pto.alloc_local(B, dtype=pto.int32)
    pto.store(s + tid, pto.load(x + tid))
    pto.barrier_block()
    ixj = tid ^ j
    if ixj > tid:
        a = pto.load(s + tid)
        b = pto.load(s + ixj)
        if a > b:
            old = pto.load(s + tid)
            pto.store(s + tid, b)
            pto.store(s + ixj, old)
    pto.barrier_block()
    pto.store(y + tid, pto.load(s + tid))


@pytest.mark.parametrize("j", [1, 4, 16])
def test_reloaded_element_is_forwarded_and_bit_exact(j):
    x = np.random.default_rng(j).integers(-50, 50, B).astype(np.int32)
    func = _native_kernel(exchange_reload, (x, x.copy(), j), B)
    assert plan(func).merged and select_exchanges(func) is not func
    interp, native = both(exchange_reload, 1, B, [x, np.zeros(B, np.int32)], (j,))
    assert same_bits(interp, native)
    ref = x.copy()
    for t in range(B):
        if (t ^ j) > t and ref[t] > ref[t ^ j]:
            ref[t], ref[t ^ j] = ref[t ^ j], ref[t]
    np.testing.assert_array_equal(native[1], ref)
