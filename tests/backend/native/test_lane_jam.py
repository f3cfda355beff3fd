"""Jammed rows of lanes (docs/native.md#jammed-rows), the chunk loops of a block-strided row
(docs/native.md#strided-loops-interchanged) and NumPy's loops widened per lane function, bit
for bit against the interpreter (the oracle) and NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.errors import MemoryAccessError
from tests.backend.native.helpers import same_bits

BX, BY = 8, 6  # 6 rows: one jammed group of 4, then 2 rows one by one


@pto.kernel
def tile_products(x, y, idx, rows, GATHER: pto.constexpr):
    """Each block stages a BY x BX tile of x in L1; lane (tx, ty) sums, over k < rows,
    tile[k, tx] * tile[ty, k] (or tile[idx[k], tx] with GATHER: an index from memory, so
    its L1 access keeps its check and the phase is not jammed)."""
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    base = pto.get_block_id(0) * BX * BY
    tile = pto.alloc_local(BX * BY, dtype=x.dtype)
    pto.store(tile + ty * BX + tx, pto.load(x + base + ty * BX + tx))
    pto.barrier_block()
    acc = pto.cast(0.0, x.dtype)
    for k in range(rows):
        r = k
        if GATHER:
            r = pto.load(idx + k)
        acc = acc + pto.load(tile + r * BX + tx) * pto.load(tile + ty * BX + k)
    pto.store(y + base + ty * BX + tx, acc)


def _reference(x: np.ndarray, rows: int) -> np.ndarray:
    """The interpreter's order: each lane's own sequential sum, rounded per operation."""
    t = x.reshape(-1, BY, BX)
    acc = np.zeros_like(t)
    for k in range(rows):
        acc = acc + t[:, k:k + 1, :] * t[:, :, k:k + 1]
    return acc.reshape(-1)


def _run(compiled, blocks, block, arrays, scalars):
    outs = []
    for backend in ("interpreter", "native"):
        copies = [a.copy() for a in arrays]
        pto.launch(compiled, blocks, block, (*copies, *scalars), backend=backend)
        outs.append(copies)
    return outs


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_jammed_rows_bit_exact(dtype):
    """The compiled block (jammed, a leftover pair of rows) and another launch block (the
    plain lane loops), each lane's sum the interpreter's addition by addition."""
    blocks = 5
    rng = np.random.default_rng(3)
    x = (rng.random(blocks * BX * BY) * 4 - 2).astype(dtype)
    idx = np.zeros(BY, np.int32)
    args = [x, np.zeros_like(x), idx]
    compiled = pto.compile(tile_products, args=(*args, BY, 0), block=(BX, BY))
    interp, native = _run(compiled, blocks, (BX, BY), args, (BY, 0))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1], _reference(x, BY))
    # another block shape at launch: the lane loops with the launch's dims
    interp, native = _run(compiled, blocks, (BX, 3), args, (3, 0))
    assert same_bits(interp, native)


def test_gather_in_the_phase_keeps_the_interpreters_error():
    """An L1 row index read from memory: the phase can fail, so it is not jammed, and the
    first failing lane is the interpreter's."""
    x = np.ones(2 * BX * BY, np.float32)
    idx = np.array([0, 1, 2, 99, 99, 0], np.int32)
    args = [x, np.zeros_like(x), idx]
    compiled = pto.compile(tile_products, args=(*args, BY, 1), block=(BX, BY))
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(MemoryAccessError) as info:
            pto.launch(compiled, 2, (BX, BY), (x, np.zeros_like(x), idx, BY, 1),
                       backend=backend)
            pto.sync()
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "lane (0, 0, 0)" in messages[1]


def test_block_strided_chunk_loops_are_interchanged():
    """`for c0 in range(0, ncols, BLOCK): x[row * ncols + c0 + tid]` walks memory BLOCK
    elements per iteration (counter coefficient 1, step BLOCK): interchanged, like a
    grid-stride loop (softmax_rows' three chunk loops; their bits: test_softmax_rows_shapes)."""
    from pypto.backend.native.interchange import interchange_strided_loops
    from pypto.dialects import pto as dialect
    from tests.kernels.test_softmax import BLOCK, softmax_rows

    x = np.zeros((2, 300), np.float32)
    compiled = pto.compile(softmax_rows, args=(x, x.copy(), x[0].copy(), x[0].copy(), 300),
                           block=BLOCK)
    moved = interchange_strided_loops(compiled.func)
    barriers = sum(isinstance(op, dialect.BarrierBlockOp) for op in moved.walk())
    before = sum(isinstance(op, dialect.BarrierBlockOp) for op in compiled.func.walk())
    assert barriers == before + 3



def test_double_buffered_tile_slots_are_loops_bit_exact(monkeypatch):
    """examples/softmax_tiles.py: its input tile has two slots (pto-double-buffer), so trowmax
    and trowexpandexpdif read a tile at a run-time offset in its buffer: loop nests (no call
    into the interpreter's definition), bit for bit the interpreter's."""
    import sys
    from pathlib import Path

    from pypto.backend.native import tiles

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
    from softmax_tiles import softmax_tiles

    rows, cols, tile_rows, blocks = 18, 20, 3, 2
    x = (np.random.default_rng(7).standard_normal((rows, cols)) * 3).astype(np.float32)
    args = [x, np.zeros_like(x)]
    scalars = (cols, tile_rows, rows // blocks)
    compiled = pto.compile(softmax_tiles, args=(*args, *scalars), block=64)
    interp, native = _run(compiled, blocks, 64, args, scalars)
    calls = []
    monkeypatch.setattr(tiles, "compute_into", lambda *a: calls.append(a[0]))
    again = np.zeros_like(x)
    pto.launch(compiled, blocks, 64, (x, again, *scalars), backend="native")
    pto.sync()
    assert calls == [] and np.array_equal(again, native[1])
    assert same_bits(interp, native)
    e = np.exp((x - x.max(axis=1)[:, None]).astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(native[1], e / e.sum(axis=1)[:, None], rtol=1e-6)
