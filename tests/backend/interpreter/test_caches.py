"""The interpreter's caches under concurrent launches: per-Executable facts (caches.RunCache,
lock-guarded), value caches shared by all (geometry, ramps, planned-access patterns), the
arena pool. Launches of different kernels (and of one kernel) from several threads give
NumPy's exact results, and no cache grows without bound."""

from __future__ import annotations

import threading

import numpy as np

import pypto as pto
from pypto.backend.interpreter import caches


@pto.kernel
def tree_sum(x, partial, n, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:                     # a shared mask: outcome and window cached
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


@pto.kernel
def reverse_blocks(x, y, n, BLOCK: pto.constexpr):
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + i))
    pto.barrier_block()
    pto.store(y + i, pto.load(buf + BLOCK - 1 - tid))   # a planned pattern


@pto.kernel
def axpy(x, y, n, a):
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, a * pto.load(x + i) + pto.load(y + i))


def dev(a: np.ndarray):
    """A device tensor holding `a` now (pto.tensor's copy is queued on a stream; these tests
    call Executable.run directly, from several threads)."""
    t = pto.zeros(a.size)
    t.data[...] = a
    return t


def tree_ref(x: np.ndarray, block: int) -> np.ndarray:
    v = x.reshape(-1, block).copy()
    s = block // 2
    while s:
        v[:, :s] = v[:, :s] + v[:, s:2 * s]
        s //= 2
    return v[:, 0].copy()


def _kernels():
    n, block = 1 << 14, 128
    x = pto.zeros(n)
    ks = {
        "tree": pto.compile(tree_sum, args=(x, pto.zeros(n // block), n, block, 7), block=block),
        "reverse": pto.compile(reverse_blocks, args=(x, pto.zeros(n), n, block), block=block),
        "axpy": pto.compile(axpy, args=(x, pto.zeros(n), n, 2.0), block=256),
    }
    return n, block, ks


def test_concurrent_launches_of_different_kernels_are_exact():
    n, block, ks = _kernels()
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            for _ in range(6):
                xs = rng.standard_normal(n).astype(np.float32)
                which = ("tree", "reverse", "axpy")[int(rng.integers(3))]
                x = dev(xs)
                if which == "tree":
                    out = pto.zeros(n // block)
                    ks[which].executable.run((n // block, 1, 1), (block, 1, 1),
                                             (x, out, n, block, 7))
                    np.testing.assert_array_equal(out.data, tree_ref(xs, block))
                elif which == "reverse":
                    out = pto.zeros(n)
                    ks[which].executable.run((n // block, 1, 1), (block, 1, 1),
                                             (x, out, n, block))
                    np.testing.assert_array_equal(out.data,
                                                  xs.reshape(-1, block)[:, ::-1].reshape(-1))
                else:
                    ys = rng.standard_normal(n).astype(np.float32)
                    y = dev(ys)
                    ks[which].executable.run((n // 256, 1, 1), (256, 1, 1), (x, y, n, 2.0))
                    np.testing.assert_array_equal(y.data, np.float32(2.0) * xs + ys)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    pto.sync()
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_concurrent_launches_of_one_kernel_share_its_caches_safely():
    n, block, ks = _kernels()
    ex = ks["tree"].executable
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            for _ in range(8):
                blocks = int(rng.integers(1, n // block + 1))
                xs = rng.standard_normal(blocks * block).astype(np.float32)
                x, out = dev(xs), pto.zeros(blocks)
                ex.run((blocks, 1, 1), (block, 1, 1), (x, out, blocks * block, block, 7))
                np.testing.assert_array_equal(out.data, tree_ref(xs, block))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    pto.sync()
    threads = [threading.Thread(target=worker, args=(10 + s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_no_cache_grows_without_bound():
    n, block, ks = _kernels()
    ex = ks["tree"].executable
    rng = np.random.default_rng(3)
    for blocks in range(1, 200, 3):  # many launch shapes: many vectors, masks and patterns
        xs = rng.standard_normal(blocks * block).astype(np.float32)
        x, out = dev(xs), pto.zeros(blocks)
        ex.run((blocks, 1, 1), (block, 1, 1), (x, out, blocks * block, block, 7))
        np.testing.assert_array_equal(out.data, tree_ref(xs, block))
        rev = ks["reverse"].executable
        y = pto.zeros(blocks * block)
        rev.run((blocks, 1, 1), (block, 1, 1), (x, y, blocks * block, block))
    for e in (ex, ks["reverse"].executable):
        for table, size in e.cache.sizes().items():
            assert size <= caches.LIMITS[table] + 1, table
        assert len(e._chunks) <= 16
        for pool in e._arenas.values():
            for _, arenas in pool:
                for arena in arenas:
                    if arena.shadow is not None:
                        assert len(arena.shadow.trie) <= 4096


@pto.kernel
def tiled_matmul(A, B, C, M, N, K, T: pto.constexpr):
    row0 = pto.get_block_id(1) * T
    col0 = pto.get_block_id(0) * T
    acc = pto.alloc_local(T * T)
    pto.fill(acc, 0.0, T * T)
    for k0 in range(0, K, T):
        a = pto.alloc_local(T * T)
        b = pto.alloc_local(T * T)
        ta = pto.async_load(a, A + row0 * K + k0, T * T * 4, rows=T, src_stride=K)
        tb = pto.async_load(b, B + k0 * N + col0, T * T * 4, rows=T, src_stride=N)
        pto.wait_all()
        pto.mma(acc, a, b, T, T, T)
    pto.store(C + row0 * N + col0, acc, T * T * 4, rows=T, dst_stride=N)


def _tile_ref(a: np.ndarray, b: np.ndarray, t: int) -> np.ndarray:
    """C tile by tile, k step by k step, each product one 2-D matmul (the interpreter's bits)."""
    m, k = a.shape
    n = b.shape[1]
    c = np.zeros((m, n), np.float32)
    for i in range(0, m, t):
        for j in range(0, n, t):
            acc = np.zeros((t, t), np.float32)
            for k0 in range(0, k, t):
                acc += a[i:i + t, k0:k0 + t] @ b[k0:k0 + t, j:j + t]
            c[i:i + t, j:j + t] = acc
    return c


def test_block_offsets_are_remembered_read_only_and_bounded(monkeypatch):
    """The tile copies' HBM offsets (one per block, views.block_offset) are worked out once
    per launch shape and k step and kept by the Executable, read-only; the copies' plans
    are found again at the next launch; the results stay NumPy's, launch after launch, for
    other operands and other shapes."""
    from pypto.backend.interpreter.strategies import batch_copy

    rng = np.random.default_rng(5)
    t = 16
    for m, n, k in ((64, 64, 64), (32, 64, 96), (64, 32, 32)):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        ta, tb, tc = pto.tensor(a), pto.tensor(b), pto.zeros(m * n)
        args = (ta, tb, tc, m, n, k, t)
        ck = pto.compile(tiled_matmul, args=args, block=32)
        for launch in range(3):
            if launch == 2:  # a third launch of this shape: every copy finds its plan
                def no_new_plans(*_: object, **__: object) -> None:
                    raise AssertionError("a copy worked out its geometry again")

                monkeypatch.setattr(batch_copy.CopyGeometry, "of", no_new_plans)
            pto.launch(ck, grid=(n // t, m // t), block=32, args=args)
            pto.sync()
            monkeypatch.undo()
            np.testing.assert_array_equal(tc.numpy().reshape(m, n), _tile_ref(a, b, t))
            b = b + np.float32(1)
            pto.memcpy_h2d(tb, b)
        offsets = ck.executable.cache.offsets
        assert offsets and len(offsets) <= caches.MAX_ENTRIES
        for value in offsets.values():
            assert not isinstance(value, np.ndarray) or not value.flags.writeable


@pto.kernel
def block_reverse(x, y):
    """Each block reverses its lanes through L1 (64 elements: room for blocks up to 64)."""
    tid = pto.get_local_id()
    nl = pto.get_block_dim()
    i = pto.get_global_id()
    buf = pto.alloc_local(64)
    pto.store(buf + tid, pto.load(x + i))
    pto.barrier_block()
    pto.store(y + i, pto.load(buf + nl - 1 - tid))


def test_the_arena_pool_keeps_block_shapes_apart():
    """Lane vectors of one length but different blocks (8 blocks of 32 lanes, then 4 of 64:
    256 lanes each) must not share a pooled arena: its buffers are laid out per block."""
    x = np.arange(256, dtype=np.float32)
    kernel = pto.compile(block_reverse, args=(x, x.copy()), block=64, race_check=False)
    for block in (32, 64, 16, 32):
        y = np.zeros_like(x)
        pto.launch(kernel, 256 // block, block, (x, y), backend="interpreter")
        pto.sync()
        np.testing.assert_array_equal(y, x.reshape(-1, block)[:, ::-1].reshape(-1))
