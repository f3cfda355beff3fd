"""Kernels the tuning tests sweep. Module level in a module of their own, so that a worker
process (a process pool, Dask) imports them as the tuning process does."""

import pypto as pto


@pto.kernel
def tiled_matmul(A, B, C, M, N, K, tile_m, tile_n, tile_k):
    """The article's pipelined matmul (examples/pipeline_matmul.py): one C tile per block."""
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    for k0 in range(0, K, tile_k):
        with pto.pipeline() as pl:
            with pl.stage("load_a"):
                A_tile = pto.alloc_local(tile_m * tile_k, dtype=A.dtype)
                pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * A.itemsize,
                               rows=tile_m, src_stride=K)
            with pl.stage("load_b", after="load_a"):
                B_tile = pto.alloc_local(tile_k * tile_n, dtype=B.dtype)
                pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * B.itemsize,
                               rows=tile_k, src_stride=N)
            with pl.stage("compute", after="load_b"):
                pto.wait_all()
                pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


@pto.kernel
def scale(x, y, n, factor, unroll: pto.constexpr):
    """y[i] = x[i] * factor, each lane doing `unroll` strided elements."""
    base = pto.get_block_id() * pto.get_block_dim() * unroll + pto.get_local_id()
    for u in range(unroll):
        i = base + u * pto.get_block_dim()
        if i < n:
            pto.store(y + i, pto.load(x + i) * factor)
