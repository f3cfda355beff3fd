"""Tile stores as row copies (docs/native.md#tile-stores): the staging phases of a
shared-memory tile kernel compiled as constant-length copies of consecutive lanes, bit for bit
the interpreter's (NaN payloads and -0 included), its errors unchanged, and the phases that
are not plain L1 stores declined."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.errors import MemoryAccessError
from tests.backend.native.helpers import both, same_bits

W, H = 8, 4  # the compiled block: 4 rows of 8 lanes


@pto.kernel
def stage_and_flip(x, y, n):
    """Each block stages an H x W tile of the (H * rows) x n matrix x (its columns
    `bx * W + tx`: an offset sum the range check proves) in L1, then lane (tx, ty) writes the
    tile's element (W - 1 - tx, ty) to y: the copy's bits, read back in another order."""
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    row = pto.get_block_id(1) * H + ty
    col = pto.get_block_id(0) * W + tx
    tile = pto.alloc_local(W * H, dtype=x.dtype)
    pto.store(tile + ty * W + tx, pto.load(x + row * n + col))
    pto.barrier_block()
    pto.store(y + row * n + col, pto.load(tile + ty * W + (W - 1 - tx)))


def _reference(x: np.ndarray) -> np.ndarray:
    t = x.reshape(x.shape[0], -1, W)
    return t[:, :, ::-1].reshape(x.shape)


@pytest.fixture(scope="module")
def compiled():
    x = np.zeros((2 * H, 3 * W), np.float32)
    return pto.compile(stage_and_flip, args=(x, x.copy(), 3 * W), block=(W, H))


def test_tile_store_copies_bits(compiled):
    """NaNs with payloads, -0 and infinities copied as bits; the compiled block (constant
    row copies) and another launch block (the launch's lane loops) agree with the interpreter."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**32, (2 * H, 3 * W), dtype=np.uint64).astype(np.uint32)
    bits[0, :4] = [0x7FC00001, 0xFFA00000, 0x80000000, 0x7F800000]
    x = bits.view(np.float32)
    interp, native = both(compiled, (3, 2), (W, H), [x, np.zeros_like(x)], (3 * W,))
    assert same_bits(interp, native)
    assert np.array_equal(native[1].view(np.uint32), _reference(x).view(np.uint32))
    # a narrower launch block (half of each tile): the plain lane loops, the same bytes
    interp, native = both(compiled, (3, 2), (W // 2, H // 2), [x, np.zeros_like(x)], (3 * W,))
    assert same_bits(interp, native)


def test_tile_store_out_of_range_reports_the_interpreters_error(compiled):
    """n larger than the matrix: the staging load of the last block runs past x; the range
    check fails and the checked lanes report the interpreter's error (block, lane, element)."""
    x = np.ones((2 * H, 3 * W), np.float32)
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(compiled, (3, 2), (W, H), (x, np.zeros_like(x), 3 * W + 5),
                       backend=backend)
            pto.sync()
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_only_plain_l1_store_phases_are_tile_stores():
    """The predicate declines a phase that writes HBM, loops or calls; accepts loads,
    address arithmetic and L1 stores."""
    from pypto.backend.native.inline_stages import inline_pipelines
    from pypto.backend.native.phases import Phase, plan
    from pypto.backend.native.row_copies import tile_store

    from tests.kernels import test_users_zoo as ku

    a = np.zeros((32, 32), np.float32)
    kernel = pto.compile(ku.gemm_smem, args=(a, a.copy(), a.copy(), 32, 32), block=(16, 16))
    items = plan(inline_pipelines(kernel.func).clone()).items
    flat: list[Phase] = []
    for item in items:
        flat += [p for p in getattr(item, "body", [item]) if isinstance(p, Phase)]
    verdicts = [tile_store(p.ops) for p in flat]
    # the two staging phases are tile stores; the k loop (a loop) and C's store (HBM) are not
    assert verdicts == [True, True, False, False]
