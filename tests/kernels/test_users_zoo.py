"""The users' zoo: kernels written the way CUDA, Triton and Ascend C authors write them.

Not tuned for the interpreter: ids from `block_id * block_dim + local_id`, 2-D and 3-D blocks,
offsets in parentheses (`A + (row * ncols + c)`), interleaved trees (`index = 2 * s * tid`),
warp-synchronous code (`red + warp * 32 + lane`), filter taps read from L1 by every lane,
gathers through index arrays, argmax/argmin with two values per branch, scans, a convolution
with a halo, a shared-memory GEMM without `mma`, GEMV both ways, masked tails
(n = 2^k + 77), mixed float16/float32, grid-stride loops (host-computed trip counts) and a
transpose through strided stores. Several come in pairs with a "tuned" twin (bench/zoo.py
times both, docs/performance.md lists the pairs).

Every kernel is checked against a NumPy reference computing the same float operations in the
same order, bit for bit; bench/zoo.py runs them at full size, and
tests/backend/interpreter/fast_paths/test_fast_paths.py runs each with the interpreter's fast
paths on and off, in lockstep and under every warp schedule.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto

TS = 16          # shared-memory GEMM tile (16 x 16 blocks)
BIG = 3.0e38     # "infinity" for argmin


# --- element-wise, 2-D and 3-D blocks -------------------------------------------------------

@pto.kernel
def scale2d_ids(x, y, h, w, a, b):
    """CUDA style: ids from block_id * block_dim + local_id, offsets `y + r * w + c`."""
    c = pto.get_block_id(0) * pto.get_block_dim(0) + pto.get_local_id(0)
    r = pto.get_block_id(1) * pto.get_block_dim(1) + pto.get_local_id(1)
    if r < h and c < w:
        pto.store(y + (r * w + c), a * pto.load(x + (r * w + c)) + b)


@pto.kernel
def scale2d_global(x, y, h, w, a, b):
    """The tuned twin of scale2d_ids: global ids, one offset."""
    c = pto.get_global_id(0)
    r = pto.get_global_id(1)
    if r < h and c < w:
        i = r * w + c
        pto.store(y + i, a * pto.load(x + i) + b)


def scale2d_ref(x: np.ndarray, a: float, b: float) -> np.ndarray:
    return np.float32(a) * x + np.float32(b)


@pto.kernel
def add3d(x, y, out, d, h, w):
    """3-D blocks over a (d, h, w) volume."""
    i = pto.get_block_id(0) * pto.get_block_dim(0) + pto.get_local_id(0)
    j = pto.get_block_id(1) * pto.get_block_dim(1) + pto.get_local_id(1)
    k = pto.get_block_id(2) * pto.get_block_dim(2) + pto.get_local_id(2)
    if i < w and j < h and k < d:
        o = (k * h + j) * w + i
        pto.store(out + o, pto.load(x + o) + 2.0 * pto.load(y + o))


def add3d_ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + np.float32(2.0) * y


@pto.kernel
def transpose_naive(src, dst, h, w):
    """dst = src.T without L1: coalesced reads, strided writes."""
    c = pto.get_global_id(0)
    r = pto.get_global_id(1)
    if r < h and c < w:
        pto.store(dst + c * h + r, pto.load(src + r * w + c))


# --- masked tails, gathers, grid-stride loops, mixed precision ---------------------------

@pto.kernel
def axpy_tail(x, y, n, a):
    """n is not a multiple of the block: the last block is partial."""
    i = pto.get_block_id() * pto.get_block_dim() + pto.get_local_id()
    if i < n:
        pto.store(y + i, a * pto.load(x + i) + pto.load(y + i))


def axpy_ref(x: np.ndarray, y: np.ndarray, a: float) -> np.ndarray:
    return np.float32(a) * x + y


@pto.kernel
def gather_idx(x, idx, y, n):
    """y[i] = x[idx[i]]: an index array."""
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.load(x + pto.load(idx + i)))


@pto.kernel
def scale_grid_stride(x, y, n, iters, a):
    """CUDA's grid-stride loop, the trip count computed on the host."""
    i = pto.get_block_id() * pto.get_block_dim() + pto.get_local_id()
    stride = pto.get_grid_dim() * pto.get_block_dim()
    for k in range(iters):
        j = i + k * stride
        if j < n:
            pto.store(y + j, a * pto.load(x + j))


@pto.kernel
def scale_flat(x, y, n, a):
    """The grid-stride scale's tuned twin: one lane per element."""
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, a * pto.load(x + i))


@pto.kernel
def mixed_axpy(x16, y, z16, n, a):
    """float16 in, float32 accumulate, float16 out."""
    i = pto.get_global_id()
    if i < n:
        acc = pto.cast(pto.load(x16 + i), pto.float32) * a + pto.load(y + i)
        pto.store(y + i, acc)
        pto.store(z16 + i, pto.cast(acc, pto.float16))


def mixed_ref(x16: np.ndarray, y: np.ndarray, a: float) -> tuple[np.ndarray, np.ndarray]:
    acc = x16.astype(np.float32) * np.float32(a) + y
    return acc, acc.astype(np.float16)


# --- GEMV both ways, argmax / argmin ----------------------------------------------------------

@pto.kernel
def gemv_block_row(A, x, y, ncols, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """One block per row; offsets in parentheses `A + (row * ncols + c)`; L1 tree."""
    tid = pto.get_local_id()
    row = pto.get_block_id()
    buf = pto.alloc_local(BLOCK)
    acc = 0.0
    for k in range(0, ncols, BLOCK):
        c = k + tid
        acc = acc + pto.load(A + (row * ncols + c)) * pto.load(x + c)
    pto.store(buf + tid, acc)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(y + row, pto.load(buf))


@pto.kernel
def gemv_block_row_tuned(A, x, y, ncols, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """The twin of gemv_block_row: `A + row * ncols + c` (a row pointer, then the column)."""
    tid = pto.get_local_id()
    row = pto.get_block_id()
    buf = pto.alloc_local(BLOCK)
    acc = 0.0
    for k in range(0, ncols, BLOCK):
        acc = acc + pto.load(A + row * ncols + k + tid) * pto.load(x + k + tid)
    pto.store(buf + tid, acc)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(y + row, pto.load(buf))


def gemv_block_ref(A: np.ndarray, x: np.ndarray, block: int) -> np.ndarray:
    rows, ncols = A.shape
    acc = np.zeros((rows, block), np.float32)
    for k in range(0, ncols, block):
        acc = acc + A[:, k:k + block] * x[k:k + block]
    s = block // 2
    while s:
        acc[:, :s] = acc[:, :s] + acc[:, s:2 * s]
        s //= 2
    return acc[:, 0].copy()


@pto.kernel
def gemv_lane_row(A, x, y, nrows, ncols):
    """The naive CUDA GEMV: one lane per row, every lane reads x[c] (a broadcast)."""
    r = pto.get_global_id()
    if r < nrows:
        acc = 0.0
        for c in range(ncols):
            acc = acc + pto.load(A + r * ncols + c) * pto.load(x + c)
        pto.store(y + r, acc)


def gemv_lane_ref(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    acc = np.zeros(A.shape[0], np.float32)
    for c in range(A.shape[1]):
        acc = acc + A[:, c] * x[c]
    return acc


@pto.kernel
def argmax_rows(x, idx, val, nrows, ncols):
    """One lane per row; `if v > best:` assigns two values."""
    r = pto.get_global_id()
    if r < nrows:
        best = pto.load(x + r * ncols)
        bi = 0
        for c in range(1, ncols):
            v = pto.load(x + r * ncols + c)
            if v > best:
                best = v
                bi = c
        pto.store(idx + r, bi)
        pto.store(val + r, best)


@pto.kernel
def argmin_block(x, out_idx, out_val, n, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """Block argmin through two L1 arrays (values, indices), the smaller index on ties."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    vals = pto.alloc_local(BLOCK)
    ids = pto.alloc_local(BLOCK, dtype=pto.int32)
    v = BIG
    if i < n:
        v = pto.load(x + i)
    pto.store(vals + tid, v)
    pto.store(ids + tid, i)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            a = pto.load(vals + tid)
            b = pto.load(vals + tid + s)
            if b < a or (b == a and pto.load(ids + tid + s) < pto.load(ids + tid)):
                pto.store(vals + tid, b)
                pto.store(ids + tid, pto.load(ids + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(out_val + pto.get_block_id(), pto.load(vals))
        pto.store(out_idx + pto.get_block_id(), pto.load(ids))


# --- trees, warp-synchronous code, scans -------------------------------------------------------

@pto.kernel
def dot_interleaved(a, b, partial, n, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """Dot product, the interleaved tree of CUDA's reduce #1: `index = 2 * s * tid`."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    v = 0.0
    if i < n:
        v = pto.load(a + i) * pto.load(b + i)
    pto.store(buf + tid, v)
    pto.barrier_block()
    s = 1
    for _ in range(LOG2):
        index = 2 * s * tid
        if index < BLOCK:
            pto.store(buf + index, pto.load(buf + index) + pto.load(buf + index + s))
        pto.barrier_block()
        s = s * 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


def dot_interleaved_ref(a: np.ndarray, b: np.ndarray, block: int) -> np.ndarray:
    v = (a * b).reshape(-1, block).copy()
    s = 1
    while s < block:
        v[:, ::2 * s] = v[:, ::2 * s] + v[:, s::2 * s]
        s *= 2
    return v[:, 0].copy()


@pto.kernel
def warp_sync_sum(x, partial, n, WARPS: pto.constexpr):
    """Each warp reduces its 32 values in L1 with warp barriers only (`red + warp * 32 +
    lane`), lane 0 of each warp posts the warp's sum, one lane adds those up."""
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    red = pto.alloc_local(WARPS * 32)
    sums = pto.alloc_local(WARPS)
    i = pto.get_global_id()
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(red + warp * 32 + lane, v)
    pto.barrier()
    s = 16
    for _ in range(5):
        if lane < s:
            pto.store(red + warp * 32 + lane,
                      pto.load(red + warp * 32 + lane) + pto.load(red + warp * 32 + lane + s))
        pto.barrier()
        s = s // 2
    if lane == 0:
        pto.store(sums + warp, pto.load(red + warp * 32))
    pto.barrier_block()
    if pto.get_local_id() == 0:
        acc = 0.0
        for k in range(WARPS):
            acc = acc + pto.load(sums + k)
        pto.store(partial + pto.get_block_id(), acc)


def warp_sync_ref(x: np.ndarray, warps: int) -> np.ndarray:
    r = x.reshape(-1, warps, 32).copy()
    s = 16
    while s:
        r[:, :, :s] = r[:, :, :s] + r[:, :, s:2 * s]
        s //= 2
    acc = np.zeros(r.shape[0], np.float32)
    for k in range(warps):
        acc = acc + r[:, k, 0]
    return acc


@pto.kernel
def scan_block(x, y, n, BLOCK: pto.constexpr, HALF_LOG2: pto.constexpr):
    """Hillis-Steele inclusive scan per block, ping-ponging between two L1 buffers."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    a = pto.alloc_local(BLOCK, dtype=pto.int32)
    b = pto.alloc_local(BLOCK, dtype=pto.int32)
    v = 0
    if i < n:
        v = pto.load(x + i)
    pto.store(a + tid, v)
    pto.barrier_block()
    d = 1
    for _ in range(HALF_LOG2):
        t = pto.load(a + tid)
        if tid >= d:
            t = t + pto.load(a + tid - d)
        pto.store(b + tid, t)
        pto.barrier_block()
        d = d * 2
        t = pto.load(b + tid)
        if tid >= d:
            t = t + pto.load(b + tid - d)
        pto.store(a + tid, t)
        pto.barrier_block()
        d = d * 2
    if i < n:
        pto.store(y + i, pto.load(a + tid))


def scan_ref(x: np.ndarray, block: int) -> np.ndarray:
    return np.cumsum(x.reshape(-1, block), axis=1, dtype=np.int32).reshape(-1)


# --- convolution with a halo, shared-memory GEMM ------------------------------------------------

@pto.kernel
def conv1d_taps_l1(x, taps, y, n, BLOCK: pto.constexpr, K: pto.constexpr):
    """y[i] = sum_k taps[k] * x[i + k - K//2] (zero padded): the block's inputs plus a halo and
    the taps are staged in L1; every lane reads the same tap (`w + k`)."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    tile = pto.alloc_local(BLOCK + K - 1)
    w = pto.alloc_local(K)
    if tid < K:
        pto.store(w + tid, pto.load(taps + tid))
    base = pto.get_block_id() * BLOCK - K // 2
    for k in range(0, BLOCK + K - 1, BLOCK):
        t = tid + k
        g = base + t
        if t < BLOCK + K - 1:
            v = 0.0
            if g >= 0 and g < n:
                v = pto.load(x + g)
            pto.store(tile + t, v)
    pto.barrier_block()
    if i < n:
        acc = 0.0
        for k in range(K):
            acc = acc + pto.load(w + k) * pto.load(tile + tid + k)
        pto.store(y + i, acc)


@pto.kernel
def conv1d_taps_hbm(x, taps, y, n, BLOCK: pto.constexpr, K: pto.constexpr):
    """The twin of conv1d_taps_l1 with the taps read from HBM."""
    tid = pto.get_local_id()
    i = pto.get_global_id()
    tile = pto.alloc_local(BLOCK + K - 1)
    base = pto.get_block_id() * BLOCK - K // 2
    for k in range(0, BLOCK + K - 1, BLOCK):
        t = tid + k
        g = base + t
        if t < BLOCK + K - 1:
            v = 0.0
            if g >= 0 and g < n:
                v = pto.load(x + g)
            pto.store(tile + t, v)
    pto.barrier_block()
    if i < n:
        acc = 0.0
        for k in range(K):
            acc = acc + pto.load(taps + k) * pto.load(tile + tid + k)
        pto.store(y + i, acc)


def conv1d_ref(x: np.ndarray, taps: np.ndarray) -> np.ndarray:
    k = taps.size
    pad = np.concatenate([np.zeros(k // 2, np.float32), x, np.zeros(k, np.float32)])
    acc = np.zeros(x.size, np.float32)
    for j in range(k):
        acc = acc + taps[j] * pad[j:j + x.size]
    return acc


@pto.kernel
def gemm_smem(A, B, C, N, K):
    """The CUDA textbook shared-memory GEMM (16 x 16 blocks, no mma): each block stages a
    tile of A and of B in L1, every lane accumulates one element of C."""
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    row = pto.get_block_id(1) * TS + ty
    col = pto.get_block_id(0) * TS + tx
    As = pto.alloc_local(TS * TS)
    Bs = pto.alloc_local(TS * TS)
    acc = 0.0
    for t in range(0, K, TS):
        pto.store(As + ty * TS + tx, pto.load(A + row * K + t + tx))
        pto.store(Bs + ty * TS + tx, pto.load(B + (t + ty) * N + col))
        pto.barrier_block()
        for k in range(TS):
            acc = acc + pto.load(As + ty * TS + k) * pto.load(Bs + k * TS + tx)
        pto.barrier_block()
    pto.store(C + row * N + col, acc)


def gemm_ref(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(A.shape[1]):
        acc = acc + A[:, k:k + 1] * B[k:k + 1, :]
    return acc


# --- tests against NumPy (small sizes; bench/zoo.py and test_fast_paths.py run them big and
# --- both ways under every schedule) ------------------------------------------------------------

def _same(a: np.ndarray, b: np.ndarray) -> None:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes(), np.flatnonzero(a.reshape(-1) != b.reshape(-1))[:8]


RNG = np.random.default_rng


@pytest.mark.parametrize("kernel", [scale2d_ids, scale2d_global])
def test_scale2d(run, kernel):
    h, w = 37, 70          # neither a multiple of the block
    x = RNG(1).random((h, w), dtype=np.float32)
    y = np.zeros_like(x)
    _, out, *_ = run(kernel, ((w + 15) // 16, (h + 7) // 8), (16, 8), [x, y, h, w, 1.5, -0.25])
    _same(out, scale2d_ref(x, 1.5, -0.25))


def test_add3d(run):
    d, h, w = 5, 9, 20
    x = RNG(2).random((d, h, w), dtype=np.float32)
    y = RNG(3).random((d, h, w), dtype=np.float32)
    out = np.zeros_like(x)
    _, _, res = run(add3d, ((w + 7) // 8, (h + 3) // 4, (d + 1) // 2), (8, 4, 2),
                           [x, y, out, d, h, w])
    _same(res, add3d_ref(x, y))


def test_transpose_naive(run):
    h, w = 40, 24
    src = RNG(4).random((h, w), dtype=np.float32)
    dst = np.zeros((w, h), np.float32)
    _, out, *_ = run(transpose_naive, (w // 8, h // 8), (8, 8), [src, dst, h, w])
    _same(out, src.T)


def test_axpy_tail(run):
    n = 4096 + 77
    x = RNG(5).random(n, dtype=np.float32)
    y = RNG(6).random(n, dtype=np.float32)
    _, out, *_ = run(axpy_tail, (n + 255) // 256, 256, [x, y.copy(), n, 0.75])
    _same(out, axpy_ref(x, y, 0.75))


def test_gather_idx(run):
    n = 1000 + 77
    x = RNG(7).random(3000, dtype=np.float32)
    idx = RNG(8).integers(0, 3000, n).astype(np.int32)
    _, _, y = run(gather_idx, (n + 127) // 128, 128, [x, idx, np.zeros(n, np.float32), n])
    _same(y, x[idx])


def test_scale_grid_stride(run):
    n, grid = 5000, 4
    iters = -(-n // (grid * 128))
    x = RNG(9).random(n, dtype=np.float32)
    _, y, *_ = run(scale_grid_stride, grid, 128, [x, np.zeros(n, np.float32), n, iters, 3.0])
    _same(y, np.float32(3.0) * x)


def test_scale_flat(run):
    n = 5000
    x = RNG(9).random(n, dtype=np.float32)
    _, y, *_ = run(scale_flat, (n + 127) // 128, 128, [x, np.zeros(n, np.float32), n, 3.0])
    _same(y, np.float32(3.0) * x)


def test_mixed_axpy(run):
    n = 2000
    x16 = (RNG(10).standard_normal(n) * 4).astype(np.float16)
    y = RNG(11).random(n, dtype=np.float32)
    _, y_out, z, *_ = run(mixed_axpy, (n + 255) // 256, 256,
                          [x16, y.copy(), np.zeros(n, np.float16), n, 0.5])
    acc, acc16 = mixed_ref(x16, y, 0.5)
    _same(y_out, acc)
    _same(z, acc16)


@pytest.mark.parametrize("kernel", [gemv_block_row, gemv_block_row_tuned])
def test_gemv_block_row(run, kernel):
    rows, ncols, block = 6, 256, 64
    A = RNG(12).random((rows, ncols), dtype=np.float32)
    x = RNG(13).random(ncols, dtype=np.float32)
    _, _, y, *_ = run(kernel, rows, block, [A, x, np.zeros(rows, np.float32), ncols, block, 6])
    _same(y, gemv_block_ref(A, x, block))


def test_gemv_lane_row(run):
    rows, ncols = 300, 20
    A = RNG(14).random((rows, ncols), dtype=np.float32)
    x = RNG(15).random(ncols, dtype=np.float32)
    _, _, y, *_ = run(gemv_lane_row, 3, 128, [A, x, np.zeros(rows, np.float32), rows, ncols])
    _same(y, gemv_lane_ref(A, x))


def test_argmax_rows(run):
    rows, ncols = 200, 33
    x = RNG(16).integers(0, 50, (rows, ncols)).astype(np.float32)   # ties: the first wins
    _, idx, val, *_ = run(argmax_rows, 2, 128, [x, np.zeros(rows, np.int32),
                                                 np.zeros(rows, np.float32), rows, ncols])
    _same(idx, x.argmax(axis=1).astype(np.int32))
    _same(val, x.max(axis=1))


def test_argmin_block(run):
    n, block = 1000, 128
    x = RNG(17).integers(0, 40, n).astype(np.float32)
    nb = -(-n // block)
    _, idx, val, *_ = run(argmin_block, nb, block, [x, np.zeros(nb, np.int32),
                                                     np.zeros(nb, np.float32), n, block, 7])
    pad = np.concatenate([x, np.full(nb * block - n, BIG, np.float32)]).reshape(nb, block)
    _same(idx, (pad.argmin(axis=1) + np.arange(nb) * block).astype(np.int32))
    _same(val, pad.min(axis=1))


def test_dot_interleaved(run):
    n, block = 1024, 128
    a = RNG(18).random(n, dtype=np.float32)
    b = RNG(19).random(n, dtype=np.float32)
    nb = n // block
    _, _, p, *_ = run(dot_interleaved, nb, block, [a, b, np.zeros(nb, np.float32), n, block, 7])
    _same(p, dot_interleaved_ref(a, b, block))


def test_warp_sync_sum(run):
    n, warps = 1024, 4
    x = RNG(20).random(n, dtype=np.float32)
    nb = n // (warps * 32)
    _, p, *_ = run(warp_sync_sum, nb, warps * 32, [x, np.zeros(nb, np.float32), n, warps])
    _same(p, warp_sync_ref(x, warps))


def test_scan_block(run):
    n, block = 1024, 256
    x = RNG(21).integers(-100, 100, n).astype(np.int32)
    _, y, *_ = run(scan_block, n // block, block, [x, np.zeros(n, np.int32), n, block, 4])
    _same(y, scan_ref(x, block))


@pytest.mark.parametrize("kernel", [conv1d_taps_l1, conv1d_taps_hbm])
def test_conv1d(run, kernel):
    n, block, k = 1000, 128, 7
    x = RNG(22).random(n, dtype=np.float32)
    taps = RNG(23).random(k, dtype=np.float32)
    _, _, y, *_ = run(kernel, -(-n // block), block, [x, taps, np.zeros(n, np.float32), n,
                                                       block, k])
    _same(y, conv1d_ref(x, taps))


def test_gemm_smem(run):
    m, n, k = 48, 32, 64
    A = RNG(24).random((m, k), dtype=np.float32)
    B = RNG(25).random((k, n), dtype=np.float32)
    _, _, C, *_ = run(gemm_smem, (n // TS, m // TS), (TS, TS),
                      [A, B, np.zeros((m, n), np.float32), n, k])
    _same(C, gemm_ref(A, B))


# --- the loop-heavy kernels of issue 29's "Why": a sorting network, a generator, quantise-and-
# --- pack, a tiled blur, CSR row sums ----------------------------------------------------------

SORT_BLOCK = 256  # bitonic sort: one block sorts 256 keys in L1
BT = 16           # tiled blur: 16 x 16 blocks, an 18 x 18 L1 tile (one-pixel halo)
NINTH = 1.0 / 9.0


@pto.kernel
def bitonic_sort_block(x, y, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """The CUDA SDK's bitonic sort: each block sorts its BLOCK keys in L1 (ascending), one
    compare-exchange per lane per step (`ixj = tid ^ j`), a block barrier between steps (CUDA's
    `for (j = k >> 1; j > 0; j >>= 1)` written with the step's exponent, so each step's `j` is
    a compile-time constant the native backend's runs of pairs use, docs/native.md#phases; the
    `while` form compiles too, docs/native.md#while-loops, tests/backend/native/test_while_phases.py)."""
    tid = pto.get_local_id()
    base = pto.get_block_id() * BLOCK
    s = pto.alloc_local(BLOCK)
    pto.store(s + tid, pto.load(x + base + tid))
    pto.barrier_block()
    for stage in range(LOG2):
        k = 2 << stage
        for step in range(stage, -1, -1):
            j = 1 << step
            ixj = tid ^ j
            if ixj > tid:
                a = pto.load(s + tid)
                b = pto.load(s + ixj)
                if (tid & k) == 0:
                    if a > b:
                        pto.store(s + tid, b)
                        pto.store(s + ixj, a)
                else:
                    if a < b:
                        pto.store(s + tid, b)
                        pto.store(s + ixj, a)
            pto.barrier_block()
    pto.store(y + base + tid, pto.load(s + tid))


def bitonic_ref(x: np.ndarray, block: int) -> np.ndarray:
    """The network itself, stage by stage on every block at once (not np.sort: the network's
    result is a permutation, so both agree on NaN-free keys, but this checks -0/+0 order too)."""
    s = x.reshape(-1, block).copy()
    tid = np.arange(block)
    k = 2
    while k <= block:
        j = k // 2
        while j:
            ixj = tid ^ j
            lo = tid[ixj > tid]
            hi = ixj[ixj > tid]
            a, b = s[:, lo], s[:, hi]
            up = (lo & k) == 0
            swap = np.where(up, a > b, a < b)
            s[:, lo] = np.where(swap, b, a)
            s[:, hi] = np.where(swap, a, b)
            j //= 2
        k *= 2
    return s.reshape(-1)


@pto.kernel
def xorshift32(seeds, out, n, iters):
    """Marsaglia's xorshift32, one generator per lane, `iters` numbers each (written
    `out[k * n + i]`, coalesced); int32 has no `>>>`, so the logical shift is `(x >> 17) &
    0x7FFF`, as a Java author writes it."""
    i = pto.get_global_id()
    if i < n:
        x = pto.load(seeds + i)
        for k in range(iters):
            x = x ^ (x << 13)
            x = x ^ ((x >> 17) & 0x7FFF)
            x = x ^ (x << 5)
            pto.store(out + k * n + i, x)


def xorshift_ref(seeds: np.ndarray, iters: int) -> np.ndarray:
    """What a NumPy user writes: the generator vectorised over the lanes, in uint32."""
    x = seeds.view(np.uint32).copy()
    out = np.empty((iters, x.size), np.uint32)
    for k in range(iters):
        x ^= x << np.uint32(13)
        x ^= x >> np.uint32(17)
        x ^= x << np.uint32(5)
        out[k] = x
    return out.view(np.int32).reshape(-1)


@pto.kernel
def quantize_pack_int8(x, inv_scale, packed, nwords, words_per_row):
    """float32 -> int8 with a per-row scale, saturated to [-127, 127], rounded half away from
    zero (`v + 0.5` or `v - 0.5`, then the truncating cast), four int8 packed little-endian
    into one int32 per lane (CUDA's char4)."""
    i = pto.get_global_id()
    if i < nwords:
        inv = pto.load(inv_scale + i // words_per_row)
        word = 0
        for k in range(4):
            v = pto.load(x + 4 * i + k) * inv
            v = min(max(v, -127.0), 127.0)
            q = pto.cast(v + (0.5 if v >= 0.0 else -0.5), pto.int32)
            word = word | ((q & 0xFF) << (8 * k))
        pto.store(packed + i, word)


def quantize_ref(x: np.ndarray, inv_scale: np.ndarray) -> np.ndarray:
    """The kernel's float32 operations in its order; the int8 bytes viewed as int32 words."""
    v = x * inv_scale[:, None]
    v = np.minimum(np.maximum(v, np.float32(-127.0)), np.float32(127.0))
    q = (v + np.where(v >= 0, np.float32(0.5), np.float32(-0.5))).astype(np.int32)
    return q.astype(np.int8).reshape(-1).view(np.int32)


@pto.kernel
def blur3x3_tiled(img, out, h, w):
    """3 x 3 box blur (zero padded): each 16 x 16 block stages its 18 x 18 tile (the halo
    included) in L1, the lanes loading it cooperatively (`t = k + tid` for k in steps of the
    block, masked: CUDA's `for (i = tid; i < N; i += blockDim)` with a lane-dependent start puts
    an L1 write in a lane-dependent loop, which the native backend refuses,
    docs/native.md#phases), then every lane sums its nine neighbours row by row, times 1/9."""
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    c = pto.get_block_id(0) * BT + tx
    r = pto.get_block_id(1) * BT + ty
    tile = pto.alloc_local((BT + 2) * (BT + 2))
    r0 = pto.get_block_id(1) * BT - 1
    c0 = pto.get_block_id(0) * BT - 1
    for k in range(0, (BT + 2) * (BT + 2), BT * BT):
        t = k + ty * BT + tx
        if t < (BT + 2) * (BT + 2):
            gr = r0 + t // (BT + 2)
            gc = c0 + t % (BT + 2)
            v = 0.0
            if gr >= 0 and gr < h and gc >= 0 and gc < w:
                v = pto.load(img + gr * w + gc)
            pto.store(tile + t, v)
    pto.barrier_block()
    if r < h and c < w:
        acc = 0.0
        for dy in range(3):
            for dx in range(3):
                acc = acc + pto.load(tile + (ty + dy) * (BT + 2) + tx + dx)
        pto.store(out + r * w + c, acc * NINTH)


def blur_ref(img: np.ndarray) -> np.ndarray:
    """What a NumPy user writes: nine shifted slices of the zero-padded image, in the kernel's
    order, then * 1/9 (float32)."""
    h, w = img.shape
    p = np.pad(img, 1)
    acc = np.zeros_like(img)
    for dy in range(3):
        for dx in range(3):
            acc = acc + p[dy:dy + h, dx:dx + w]
    return acc * np.float32(NINTH)


@pto.kernel
def csr_row_sums(rowptr, vals, out, nrows):
    """One lane per CSR row: a per-lane loop from rowptr[r] to rowptr[r + 1] (lengths differ
    per lane: divergent trip counts)."""
    r = pto.get_global_id()
    if r < nrows:
        acc = 0.0
        for k in range(pto.load(rowptr + r), pto.load(rowptr + r + 1)):
            acc = acc + pto.load(vals + k)
        pto.store(out + r, acc)


def csr_ref(rowptr: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Each row summed left to right in float32 (the kernel's order), all rows at once."""
    lens = np.diff(rowptr)
    acc = np.zeros(lens.size, np.float32)
    for k in range(int(lens.max(initial=0))):
        live = k < lens
        acc = np.where(live, acc + vals[np.minimum(rowptr[:-1] + k, vals.size - 1)], acc)
    return acc


def csr_matrix(rng: np.random.Generator, nrows: int, nnz: int) -> tuple[np.ndarray, np.ndarray]:
    """A CSR row pointer of `nnz` values over `nrows` rows, cut at random points (ragged rows,
    empty ones included), and the values."""
    cuts = np.sort(rng.integers(0, nnz + 1, nrows - 1))
    rowptr = np.concatenate([[0], cuts, [nnz]]).astype(np.int32)
    return rowptr, rng.standard_normal(nnz).astype(np.float32)


def _native(kernel, grid, block, args) -> list[np.ndarray]:
    """The same launch on the native backend (docs/native.md), host arrays copied first; the
    arrays after it, as the `run` fixture returns them."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    pto.launch(kernel, grid, block, tuple(copies), backend="native")
    return [a for a in copies if isinstance(a, np.ndarray)]


def _both(run, kernel, grid, block, args) -> list[np.ndarray]:
    """The interpreter at both IR levels (`run`), then the native backend: bit for bit."""
    interp = run(kernel, grid, block, args)
    for index, (a, b) in enumerate(zip(interp, _native(kernel, grid, block, args))):
        assert a.tobytes() == b.tobytes(), f"argument {index}: native differs from interpreter"
    return interp


def test_bitonic_sort_block(run):
    nb = 3
    x = RNG(26).standard_normal(nb * SORT_BLOCK).astype(np.float32)
    x[:40] = np.round(x[:40])       # ties, and -0.0 beside +0.0
    x[5], x[300] = -0.0, -0.0
    _, y = _both(run, bitonic_sort_block, nb, SORT_BLOCK,
                 [x, np.zeros_like(x), SORT_BLOCK, 8])
    _same(y, bitonic_ref(x, SORT_BLOCK))
    assert np.array_equal(y.reshape(nb, -1), np.sort(x.reshape(nb, -1), axis=1))


def test_xorshift32(run):
    n, iters = 300, 5
    seeds = RNG(27).integers(1, 2**31, n).astype(np.int32)
    seeds[0] = -1                   # the top bit set: `>>` is arithmetic, the mask makes it >>>
    _, out, *_ = _both(run, xorshift32, 3, 128, [seeds, np.zeros(n * iters, np.int32), n, iters])
    _same(out, xorshift_ref(seeds, iters))


def test_quantize_pack_int8(run):
    rows, cols = 5, 24
    x = (RNG(28).standard_normal((rows, cols)) * 3).astype(np.float32)
    x[0, :6] = [0.5, -0.5, 1.5, -2.5, 1e9, -1e9]        # ties away from zero, saturation
    inv = np.array([1.0, 20.0, 0.5, 40.0, 3.0], np.float32)
    nw = rows * cols // 4
    _, _, packed, *_ = _both(run, quantize_pack_int8, 1, 64,
                             [x, inv, np.zeros(nw, np.int32), nw, cols // 4])
    _same(packed, quantize_ref(x, inv))
    assert packed.view(np.int8)[:6].tolist() == [1, -1, 2, -3, 127, -127]


def test_blur3x3_tiled(run):
    h, w = 37, 50                   # partial edge blocks both ways
    img = RNG(29).random((h, w), dtype=np.float32)
    _, out, *_ = _both(run, blur3x3_tiled, (-(-w // BT), -(-h // BT)), (BT, BT),
                       [img, np.zeros_like(img), h, w])
    _same(out, blur_ref(img))


def test_csr_row_sums(run):
    nrows = 200
    rowptr, vals = csr_matrix(RNG(30), nrows, 1200)
    _, _, out, *_ = _both(run, csr_row_sums, 2, 128,
                          [rowptr, vals, np.zeros(nrows, np.float32), nrows])
    _same(out, csr_ref(rowptr, vals))
    assert out[np.diff(rowptr) == 0].tolist() == [0.0] * int((np.diff(rowptr) == 0).sum())
