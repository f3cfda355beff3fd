"""Flash-attention-style forward pass written with tile vector instructions and `pto.mma`.

Each block owns `br` query rows. It walks the keys in blocks of `bc`: S = Q Kᵀ on the matrix
unit (Kᵀ by `pto.ttrans`), then the online softmax of FlashAttention on the vector unit —
the running row maximum `m`, the rescaling `alpha = exp(m_old - m_new)`, P = exp(S - m_new)
(`pto.trowexpandexpdif`), the running row sum `l` — and O = alpha O + P V (`pto.mma`). At the
end O / l. Checked against NumPy's softmax(Q Kᵀ / sqrt(d)) V in float64 with a float32
tolerance (the summation orders differ: mma's, the fold order of `pto.trowsum`, the online
rescaling).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import pypto as pto
from tests.conftest import run_kernel


@pto.kernel
def flash_attention_tiles(Q, K, V, O, n: pto.constexpr, d: pto.constexpr,
                          br: pto.constexpr, bc: pto.constexpr, scale):
    q0 = pto.get_block_id() * br
    q = pto.alloc_tile(br, d)
    k = pto.alloc_tile(bc, d)
    kt = pto.alloc_tile(d, bc)
    v = pto.alloc_tile(bc, d)
    s = pto.alloc_tile(br, bc)
    o = pto.alloc_tile(br, d)
    m = pto.alloc_tile(br, 1)          # running row maximum
    m_new = pto.alloc_tile(br, 1)
    alpha = pto.alloc_tile(br, 1)      # exp(m - m_new): how much the old sums shrink
    l = pto.alloc_tile(br, 1)          # running row sum
    row = pto.alloc_tile(br, 1)
    pto.wait(pto.async_load(q, Q + q0 * d, br * d * 4))
    pto.tmuls(q, q, scale)             # fold 1/sqrt(d) into Q once
    pto.texpands(m, -math.inf)
    pto.texpands(l, 0.0)
    pto.texpands(o, 0.0)
    for j in range(0, n, bc):
        pto.wait(pto.async_load(k, K + j * d, bc * d * 4))
        pto.wait(pto.async_load(v, V + j * d, bc * d * 4))
        pto.ttrans(kt, k)
        pto.texpands(s, 0.0)
        pto.mma(s, q, kt, br, bc, d)                 # S = Q Kᵀ
        pto.trowmax(row, s)
        pto.tmax(m_new, m, row)
        pto.tsub(alpha, m, m_new)
        pto.texp(alpha, alpha)
        pto.trowexpandexpdif(s, s, m_new)            # P = exp(S - m_new)
        pto.trowsum(row, s)
        pto.tmul(l, l, alpha)
        pto.tadd(l, l, row)
        pto.trowexpandmul(o, o, alpha)
        pto.mma(o, s, v, br, d, bc)                  # O = alpha O + P V
        pto.tmuls(m, m_new, 1.0)
    pto.trowexpanddiv(o, o, l)
    pto.store(O + q0 * d, o, br * d * 4)


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q.astype(np.float64) @ k.astype(np.float64).T / math.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, br: int = 32, bc: int = 32
              ) -> np.ndarray:
    n, d = q.shape
    o = np.zeros_like(q)
    flash_attention_tiles[n // br, 64](q, k, v, o, n, d, br, bc, 1.0 / math.sqrt(d))
    return o


@pytest.mark.parametrize("n,d,br,bc", [(128, 32, 32, 32), (64, 64, 16, 32)])
def test_flash_attention_with_tiles_matches_numpy(n, d, br, bc):
    rng = np.random.default_rng(n + d)
    q, k, v = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(3))
    o = np.zeros_like(q)
    out = run_kernel(flash_attention_tiles, n // br, 64,
                     (q, k, v, o, n, d, br, bc, 1.0 / math.sqrt(d)))[3]
    np.testing.assert_allclose(out, attention_reference(q, k, v), rtol=1e-4, atol=1e-5)
