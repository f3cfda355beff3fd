"""`pto.mma` compiled as a call of NumPy's own sgemm (pypto/backend/native/mma_calls.py): the
interpreter's bits for every accumulation it compiles, the callback for the others and for
errors (docs/native.md#mma)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native import mma_calls
from pypto.exact import BFLOAT16
from tests.backend.native.helpers import both, same_bits

pytestmark = [pytest.mark.shared_native_cache,  # (mma_calls.cache_key() is in the cache key;
              pytest.mark.skipif(mma_calls.blas() is None,  # the spies run after compiling)
                                 reason="NumPy's BLAS is not an ILP64 OpenBLAS here: every "
                                        "mma stays a callback")]


@pytest.fixture(params=[True, False], ids=["blas", "callback"])
def compiled_mma(request, monkeypatch):
    monkeypatch.setattr(mma_calls, "ENABLED", request.param)
    return request.param


def _fresh():
    """`mma_tiles` without the native code an earlier test compiled into its specialisations."""
    return pto.kernel(mma_tiles.fn)


@pto.kernel
def mma_tiles(A, B, C, M: pto.constexpr, N: pto.constexpr, K: pto.constexpr,
              STEPS: pto.constexpr):
    """C (M x N) += A_s (M x K) @ B_s (K x N) for STEPS pairs of tiles, one block per C."""
    blk = pto.get_block_id()
    a = pto.alloc_local(M * K, dtype=A.dtype)
    b = pto.alloc_local(K * N, dtype=B.dtype)
    c = pto.alloc_local(M * N, dtype=C.dtype)
    pto.wait(pto.async_load(c, C + blk * M * N, M * N * C.itemsize))
    for s in range(STEPS):
        pto.wait(pto.async_load(a, A + (blk * STEPS + s) * M * K, M * K * A.itemsize))
        pto.wait(pto.async_load(b, B + (blk * STEPS + s) * K * N, K * N * B.itemsize))
        pto.mma(c, a, b, M, N, K)
    pto.wait(pto.async_store(C + blk * M * N, c, M * N * C.itemsize))


def _run(ins, acc, m, n, k, steps=3, blocks=2):
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a = rng.standard_normal(blocks * steps * m * k).astype(ins)
    b = rng.standard_normal(blocks * steps * k * n).astype(ins)
    c = rng.standard_normal(blocks * m * n).astype(acc)
    interp, native = both(_fresh(), blocks, 32, [a, b, c], (m, n, k, steps))
    want = c.reshape(blocks, m, n).astype(np.float64)
    for s in range(steps):
        want = want + np.einsum("bmk,bkn->bmn",
                                a.reshape(blocks, steps, m, k)[:, s].astype(np.float64),
                                b.reshape(blocks, steps, k, n)[:, s].astype(np.float64))
    return interp, native, want


_TYPES = {"f32+=f32": (np.float32, np.float32), "f32+=f16": (np.float16, np.float32),
          "f32+=bf16": (BFLOAT16, np.float32), "f16+=f16": (np.float16, np.float16)}
_CASES = [  # (types, shape, BLAS path on): every type on the gemm shapes, the vector and
    # k == 1 shapes (callbacks either way) on two types, the callback path on one shape each
    *[(t, s, True) for t in _TYPES for s in ((16, 16, 16), (3, 5, 7), (2, 2, 2))],
    *[(t, s, True) for t in ("f32+=f32", "f16+=f16") for s in ((1, 8, 8), (8, 8, 1),
                                                                 (8, 1, 8))],
    *[(t, (16, 16, 16), False) for t in _TYPES]]


@pytest.mark.parametrize("types,shape,enabled", _CASES,
                         ids=[f"{t}-{'x'.join(map(str, s))}-{'blas' if e else 'callback'}"
                              for t, s, e in _CASES])
def test_every_accumulation_gives_the_interpreters_bits(types, shape, enabled, monkeypatch):
    from pypto.backend.native import collectives

    monkeypatch.setattr(mma_calls, "ENABLED", enabled)
    ins, acc = _TYPES[types]
    m, n, k = shape
    callbacks = []
    real = collectives._run
    monkeypatch.setattr(collectives, "_run", lambda kernel, site, *rest: (
        callbacks.append(site.kind), real(kernel, site, *rest))[1])
    interp, native, want = _run(ins, acc, m, n, k)
    assert same_bits(interp, native)
    blas = enabled and min(m, n, k) >= 2
    assert ("mma" in callbacks) != blas  # the BLAS call, or the callback, really ran
    tol = 2e-2 if acc == np.float16 else 1e-4
    np.testing.assert_allclose(native[2].reshape(want.shape).astype(np.float64), want,
                               rtol=tol, atol=tol * max(k, 1))


def test_which_mmas_compile():
    """The gemm shapes NumPy sends to sgemm compile; float vectors and k == 1 stay callbacks
    (NumPy takes other routes for them); int32 compiles on every shape (loops)."""
    cases = {(16, 16, 16, "f32", "f32"): True, (2, 2, 2, "f16", "f16"): True,
             (1, 8, 8, "f32", "f32"): False, (8, 1, 8, "f32", "f32"): False,
             (8, 8, 1, "f32", "f32"): False, (1, 8, 1, "i32", "i32"): True}
    kinds = {"f32": np.float32, "f16": np.float16, "i32": np.int32}
    for (m, n, k, ins, acc), expected in cases.items():
        a = np.zeros(m * k, kinds[ins])
        b = np.zeros(k * n, kinds[ins])
        c = np.zeros(m * n, kinds[acc])
        compiled = pto.compile(mma_tiles, args=(a, b, c, m, n, k, 1), block=32)
        mma = next(o for o in compiled.func.walk() if isinstance(o, pto.dialects.pto.MmaOp))
        assert mma_calls.compiled(mma) == expected, (m, n, k, ins, acc)


def test_auto_runs_a_compiled_mma_loop_natively(compiled_mma, monkeypatch):
    """With the BLAS call, an mma in a loop no longer keeps "auto" on the interpreter."""
    from pypto.backend.interpreter.executor import Executable

    ran = []
    real = Executable.run
    monkeypatch.setattr(Executable, "run", lambda self, *args, **kw: (
        ran.append(1), real(self, *args, **kw))[1])
    a = np.ones(2 * 3 * 64, np.float32)
    c = np.zeros(2 * 64, np.float32)
    compiled = pto.compile(_fresh(), args=(a, a, c, 8, 8, 8, 3), block=32)
    pto.launch(compiled, 2, 32, (a, a, c, 8, 8, 8, 3), backend="auto")
    assert (ran == []) == compiled_mma
    np.testing.assert_array_equal(c, np.full(2 * 64, 24.0, np.float32))


def test_an_out_of_range_tile_is_the_interpreters_error(compiled_mma):
    a = np.ones(2 * 3 * 64 - 1, np.float32)  # the last block's last A tile one element short
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(pto.MemoryAccessError) as info:
            pto.launch(_fresh(), 2, 32, (a.copy(), np.ones(2 * 3 * 64, np.float32),
                                          np.zeros(128, np.float32), 8, 8, 8, 3),
                       backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "out-of-bounds async_load source" in messages[1]


@pytest.mark.parametrize("shape", [(16, 16, 16), (3, 5, 7), (1, 8, 8), (8, 8, 1)],
                         ids=lambda s: "x".join(map(str, s)))
def test_int32_accumulations_are_loops_that_wrap_as_numpy(shape, monkeypatch):
    """i32 += i32: NumPy's integer matmul and add wrap modulo 2^32, so any order of the sums
    gives its bits: compiled as loops on every shape, no callback."""
    from pypto.backend.native import collectives

    callbacks = []
    real = collectives._run
    monkeypatch.setattr(collectives, "_run", lambda kernel, site, *rest: (
        callbacks.append(site.kind), real(kernel, site, *rest))[1])
    m, n, k = shape
    steps, blocks = 3, 2
    rng = np.random.default_rng(7)
    big = np.iinfo(np.int32)
    a = rng.integers(big.min, big.max, blocks * steps * m * k, dtype=np.int32)
    b = rng.integers(big.min, big.max, blocks * steps * k * n, dtype=np.int32)
    c = rng.integers(big.min, big.max, blocks * m * n, dtype=np.int32)
    interp, native = both(_fresh(), blocks, 32, [a, b, c], (m, n, k, steps))
    assert same_bits(interp, native)
    assert "mma" not in callbacks
    want = c.reshape(blocks, m, n).astype(np.int64)
    for s in range(steps):  # exact products and sums in int64, reduced modulo 2^32
        want = want + np.einsum("bmk,bkn->bmn",
                                a.reshape(blocks, steps, m, k)[:, s].astype(np.int64),
                                b.reshape(blocks, steps, k, n)[:, s].astype(np.int64))
    np.testing.assert_array_equal(native[2].reshape(want.shape), want.astype(np.int32))
