"""Tile instructions of a batch of blocks (batch mode: several blocks in one lane vector, each
with its own L1 arena) against exact NumPy references, with the fast paths on and off.

The fast paths (strategies/batch_copy.py `copy_blocks`, strategies/batched_mma.py `run`) do a
copy or an mma for every block of the batch at once: one strided assignment when the blocks' HBM tiles form an affine
grid of block coordinates, one batched matmul accumulated in place. The general path does each
block on its own. Both must give the reference's bits, and every error (out of bounds, in-flight
hazards, uninitialised L1) must read the same.
"""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import numpy as np
import pytest


import pypto as pto
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from tests.conftest import from_device, to_device

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402

GX, GY = 4, 3          # grid of blocks
R, C = 8, 8            # tile rows and columns (64 elements: one per lane)
W = 64                 # HBM row length (elements)
H = 40                 # HBM rows


@pytest.fixture(params=[True, False], ids=["fast", "general"])
def fast_paths(request):
    saved = FAST_PATHS.on
    FAST_PATHS.on = request.param
    yield request.param
    FAST_PATHS.on = saved


def offset(bx: int, by: int, co: tuple[int, int, int, int]) -> int:
    """The kernel's per-block offset: affine in (by, bx) unless co[3] (a (bx*bx) % 3 term)."""
    return co[0] + by * co[1] + bx * co[2] + ((bx * bx) % 3) * co[3]


@pto.kernel
def roundtrip(src, dst, Wd, s0, s1, s2, s3, d0, d1, d2, d3):
    """Each block loads an R x C tile of `src`, adds its block number, stores it to `dst`."""
    bx = pto.get_block_id(0)
    by = pto.get_block_id(1)
    lid = pto.get_local_id()
    tile = pto.alloc_local(64)
    so = s0 + by * s1 + bx * s2 + ((bx * bx) % 3) * s3
    tok = pto.async_load(tile, src + so, 64 * 4, rows=8, src_stride=Wd)
    pto.wait(tok)
    pto.store(tile + lid, pto.load(tile + lid) + pto.cast(by * 4 + bx, pto.float32))
    do = d0 + by * d1 + bx * d2 + ((bx * bx) % 3) * d3
    tok2 = pto.async_store(dst + do, tile, 64 * 4, rows=8, dst_stride=Wd)
    pto.wait(tok2)


def roundtrip_reference(src: np.ndarray, dst: np.ndarray, so: tuple[int, int, int, int],
                        do: tuple[int, int, int, int]) -> np.ndarray:
    """Blocks in linear order (bx fastest), each copying its tile: the last writer wins."""
    out = dst.copy()
    for by, bx in itertools.product(range(GY), range(GX)):
        s, d = offset(bx, by, so), offset(bx, by, do)
        tile = np.stack([src[s + r * W:s + r * W + C] for r in range(R)])
        tile = tile + np.float32(by * 4 + bx)
        for r in range(R):
            out[d + r * W:d + r * W + C] = tile[r]
    return out


SRC_PATTERNS = {
    "2-D grid": (0, R * W, C, 0),                 # every block its own tile
    "shared per row": (5, R * W, 0, 0),            # blocks of a row share a tile (A of matmul)
    "shared per column": (3 * W, 0, C, 0),          # ... of a column (B of matmul)
    "one tile": (7, 0, 0, 0),                       # all blocks load one tile
    "reversed columns": ((GX - 1) * C, R * W, -C, 0),  # negative step along the row
    "not affine": (1, R * W, 0, C),                # (bx * bx) % 3: block by block
}
DST_PATTERNS = {
    "2-D grid": (0, R * W, C, 0),
    "transposed grid": (0, C, R * W, 0),
    "colliding": (2, 0, 0, C),                     # blocks share destinations: last one wins
    "overlapping rows": (0, R * W, 4, 0),           # tiles overlap by half a row
}


@pytest.mark.parametrize("dst_name", list(DST_PATTERNS))
@pytest.mark.parametrize("src_name", list(SRC_PATTERNS))
def test_batched_copies_match_the_reference(src_name, dst_name, fast_paths):
    rng = np.random.default_rng(len(src_name) * 31 + len(dst_name))
    so, do = SRC_PATTERNS[src_name], DST_PATTERNS[dst_name]
    src = rng.standard_normal(H * W).astype(np.float32)
    dst = np.full(H * W, -1.0, np.float32)
    args, tensors = to_device((src, dst, W, *so, *do))
    ck = pto.compile(roundtrip, args=args, block=64)
    assert ck.executable.mode == "batch"
    pto.launch(ck, grid=(GX, GY), block=64, args=args)
    _, out = from_device(tensors)
    ref = roundtrip_reference(src, dst, so, do)
    assert np.array_equal(out.view(np.uint32), ref.view(np.uint32))


def launch_error(kernel, grid, args, **options) -> pto.PtoError:
    dev, tensors = to_device(args)
    ck = pto.compile(kernel, args=dev, block=64, **options)
    pto.launch(ck, grid=grid, block=64, args=dev)
    with pytest.raises(pto.PtoError) as info:
        pto.sync()
    for t, _ in tensors:
        t.free()
    return info.value


def errors_on_and_off(kernel, grid, args, **options) -> tuple[str, str]:
    texts = []
    saved = FAST_PATHS.on
    try:
        for on in (True, False):
            FAST_PATHS.on = on
            err = launch_error(kernel, grid, args, **options)
            texts.append(f"{type(err).__name__}: {err}")
    finally:
        FAST_PATHS.on = saved
    return texts[0], texts[1]


def test_an_out_of_bounds_tile_of_a_later_block_reads_the_same():
    src = np.zeros(H * W, np.float32)
    dst = np.zeros(H * W, np.float32)
    # only block (3, 2), the last, runs past H * W = 2560: 2 * 512 + 3 * 400 + 7 * 64 + 8
    fast, general = errors_on_and_off(roundtrip, (GX, GY), (src, dst, W, 0, R * W, 400, 0,
                                                            0, 0, 0, 0))
    assert fast == general
    assert fast.startswith("MemoryAccessError")
    assert "out-of-bounds async_load source: HBM buffer 'src' element 2679" in fast
    assert fast.splitlines()[0].endswith("in block (3, 2, 0)")  # then the source line, caret


def test_an_out_of_bounds_store_reads_the_same():
    src = np.zeros(H * W, np.float32)
    dst = np.zeros(H * W, np.float32)
    # block (0, 0) stores R rows before the start of `dst`
    fast, general = errors_on_and_off(roundtrip, (GX, GY), (src, dst, W, 0, 0, 0, 0,
                                                            -R * W, R * W, C, 0))
    assert fast == general
    assert fast.startswith("MemoryAccessError")
    assert "out-of-bounds async_store destination: HBM buffer 'dst' element -512" in fast
    assert fast.splitlines()[0].endswith("in block (0, 0, 0)")  # then the source line, caret


@pto.kernel
def reload_before_wait(src, dst, Wd):
    """The second load into `tile` is issued while the first is still in flight."""
    bx = pto.get_block_id(0)
    tile = pto.alloc_local(64)
    tok = pto.async_load(tile, src + bx * 8, 64 * 4, rows=8, src_stride=Wd)
    tok2 = pto.async_load(tile, src + bx * 8 + 1, 64 * 4, rows=8, src_stride=Wd)
    pto.wait(tok)
    pto.wait(tok2)
    pto.store(dst + bx * 8, tile, 64 * 4, rows=8, dst_stride=Wd)


@pto.kernel
def store_uninitialised(src, dst, Wd):
    bx = pto.get_block_id(0)
    lid = pto.get_local_id()
    tile = pto.alloc_local(64)
    if lid < 32:
        pto.store(tile + lid, pto.load(src + lid))
    pto.barrier_block()
    pto.store(dst + bx * 8, tile, 64 * 4, rows=8, dst_stride=Wd)


@pto.kernel
def store_to_hbm_in_flight(src, dst, Wd):
    """A block stores to HBM rows that an earlier, unwaited store of the batch writes."""
    bx = pto.get_block_id(0)
    tile = pto.alloc_local(64)
    pto.fill(tile, 1.0, 64)
    tok = pto.async_store(dst + bx * 8, tile, 64 * 4, rows=8, dst_stride=Wd)
    tok2 = pto.async_store(dst + bx * 8 + 4, tile, 64 * 4, rows=8, dst_stride=Wd)
    pto.wait(tok)
    pto.wait(tok2)


@pytest.mark.parametrize("kernel,options,kind", [
    (reload_before_wait, {"pipeline": ""}, "RaceError"),
    (store_to_hbm_in_flight, {"pipeline": ""}, "RaceError"),
    (store_uninitialised, {"check_uninitialized": True}, "KernelError"),
])
def test_hazards_and_uninitialised_reads_read_the_same(kernel, options, kind):
    src = np.arange(H * W, dtype=np.float32)
    dst = np.zeros(H * W, np.float32)
    fast, general = errors_on_and_off(kernel, (GX, 1), (src, dst, W), **options)
    assert fast == general
    assert fast.startswith(kind)


def tiled_matmul_reference(a: np.ndarray, b: np.ndarray, t: int) -> np.ndarray:
    """pto.mma's definition, tile by tile: C_tile = C_tile + A_tile @ B_tile for each k tile, on
    contiguous float32 tiles (the BLAS calls of the interpreter, so bit for bit equal)."""
    m, k = a.shape
    n = b.shape[1]
    c = np.zeros((m, n), np.float32)
    for i, j in itertools.product(range(0, m, t), range(0, n, t)):
        acc = np.zeros((t, t), np.float32)
        for k0 in range(0, k, t):
            acc = acc + np.ascontiguousarray(a[i:i + t, k0:k0 + t]) @ \
                np.ascontiguousarray(b[k0:k0 + t, j:j + t])
        c[i:i + t, j:j + t] = acc
    return c


NPU_PIPELINE = "pto-allocate-l1,pto-verify-barriers,convert-pto-to-npu,npu-fuse-load-mma"


@pytest.mark.parametrize("pipeline", [None, NPU_PIPELINE], ids=["pto", "npu-fused"])
@pytest.mark.parametrize("m,n,k,t", [(128, 192, 128, 64), (96, 64, 160, 32)])
def test_batched_mma_is_the_tiled_reference_bit_for_bit(m, n, k, t, pipeline, fast_paths):
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    args, tensors = to_device((a, b, c, m, n, k, t, t, t))
    options = {} if pipeline is None else {"pipeline": pipeline}
    ck = pto.compile(matmul_tile, args=args, block=64, **options)
    assert ck.executable.mode == "batch"
    pto.launch(ck, grid=(n // t, m // t), block=64, args=args)
    out = from_device(tensors)[2]
    ref = tiled_matmul_reference(a, b, t)
    assert np.array_equal(out.view(np.uint32), ref.view(np.uint32))


@pto.kernel
def mma_misuse(A, B, C, K, OFF, WHICH: pto.constexpr):
    """One 64 x 64 x 64 mma per block, A read from element OFF of its tile: WHICH 1 leaves C
    unfilled, 2 reads B in flight."""
    row0 = pto.get_block_id(1) * 64
    col0 = pto.get_block_id(0) * 64
    C_tile = pto.alloc_local(64 * 64)
    if WHICH != 1:
        pto.fill(C_tile, 0.0, 64 * 64)
    A_tile = pto.alloc_local(64 * 64)
    B_tile = pto.alloc_local(64 * 64)
    tok_a = pto.async_load(A_tile, A + row0 * K, 64 * 64 * 4, rows=64, src_stride=K)
    tok_b = pto.async_load(B_tile, B + col0, 64 * 64 * 4, rows=64, src_stride=K)
    pto.wait(tok_a)
    if WHICH != 2:
        pto.wait(tok_b)
    pto.mma(C_tile, A_tile + OFF, B_tile, 64, 64, 64)
    if WHICH == 2:
        pto.wait(tok_b)
    pto.store(C + row0 * K + col0, C_tile, 64 * 64 * 4, rows=64, dst_stride=K)


@pytest.mark.parametrize("which,off,options,expect", [
    (1, 0, {"check_uninitialized": True}, "KernelError: .*read of uninitialised L1 in 'C_tile'"),
    (2, 0, {"pipeline": ""}, "RaceError: .*hazard: read of L1 buffer 'B_tile'"),
    (0, 8, {}, "MemoryAccessError: .*out-of-bounds mma A: L1 buffer 'A_tile' element 4103"),
])
def test_mma_errors_read_the_same(which, off, options, expect):
    k = 128
    a = np.ones((k, k), np.float32)
    fast, general = errors_on_and_off(mma_misuse, (2, 2), (a, a, np.zeros((k, k), np.float32),
                                                          k, off, which), **options)
    assert fast == general
    assert re.match(expect, fast), fast


@pto.kernel
def lane_dependent_offset(src, dst, SHIFT):
    """Lanes at or after 64 - SHIFT of each block load from a different offset."""
    bx = pto.get_block_id(0)
    lid = pto.get_local_id()
    tile = pto.alloc_local(64)
    tok = pto.async_load(tile, src + bx * 64 + ((lid + SHIFT) // 64) * 8, 64 * 4)
    pto.wait(tok)
    pto.store(dst + bx * 64, tile, 64 * 4)


@pytest.mark.parametrize("shift", [1, 63, 32])
def test_an_operand_that_differs_within_a_block_is_an_error(shift, fast_paths):
    src = np.arange(GX * 64 + 8, dtype=np.float32)
    err = launch_error(lane_dependent_offset, GX, (src, np.zeros_like(src), shift))
    assert isinstance(err, pto.KernelError)
    assert "must be uniform across the block" in str(err)


def test_an_operand_uniform_within_blocks_is_fine(fast_paths, run):
    src = np.arange(GX * 64 + 8, dtype=np.float32)
    _, out = run(lane_dependent_offset, GX, 64, (src, np.zeros_like(src), 0))
    np.testing.assert_array_equal(out[:GX * 64], src[:GX * 64])
