"""The article's pipelined matmul, made complete: C = A @ B with L1 tiles and the CUBE unit.

Each block computes one tile_m x tile_n tile of C. A k-loop walks the K dimension; inside it a
`pto.pipeline` with four stages loads the A and B tiles (2-D strided async copies), waits and
multiplies-accumulates on the matrix unit. The C tile is written back once at the end.
The stages are written in program order; `pto.compile`'s default pipeline runs `pto-double-buffer`,
which costs its candidate schedules by the cost model and keeps the cheapest (the remarks say so):
here both tiles get two L1 slots, the tiles of step k+1 loading while the mma of step k runs (the
runner-up keeps each B load next to its mma, where the firmware fuses the two), then
`pto-allocate-l1`, which places the buffers in L1 (docs/passes.md#choosing-by-the-cost-model). The example prints the remarks and the L1 map of the double-buffered kernel
(`--svg FILE` also draws it).

Run:  python examples/pipeline_matmul.py [--svg l1.svg]
"""

import sys

import numpy as np

import pypto as pto


@pto.kernel
def matmul_tile(A, B, C, M, N, K, tile_m, tile_n, tile_k):
    # which tile of C this block owns
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n

    C_tile = pto.alloc_local(tile_m * tile_n)          # float32 accumulator in L1
    pto.fill(C_tile, 0.0, tile_m * tile_n)

    for k0 in range(0, K, tile_k):
        with pto.pipeline() as pl:
            # stage 1: asynchronously load the A tile (tile_m rows of tile_k elements)
            with pl.stage("load_a"):
                A_tile = pto.alloc_local(tile_m * tile_k, dtype=A.dtype)
                tok_a = pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * A.itemsize,
                                       rows=tile_m, src_stride=K)

            # stage 2: the B tile (tile_k rows of tile_n elements)
            with pl.stage("load_b", after="load_a"):
                B_tile = pto.alloc_local(tile_k * tile_n, dtype=B.dtype)
                tok_b = pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * B.itemsize,
                                       rows=tile_k, src_stride=N)

            # stage 3: wait for both loads, then C += A @ B on the matrix unit
            with pl.stage("compute", after="load_b"):
                pto.wait_all()
                pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
        pl.run()

    # write the finished tile back: tile_m rows of tile_n elements, row stride N
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


def matmul(a: np.ndarray, b: np.ndarray, tile: tuple[int, int, int] = (64, 64, 64)) -> np.ndarray:
    """C = A @ B (float32 result) on pypto; M, N, K must be multiples of the tile."""
    (m, k), (k2, n) = a.shape, b.shape
    tm, tn, tk = tile
    if k != k2:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    if m % tm or n % tn or k % tk:
        raise ValueError(f"matrix sizes ({m}x{k} @ {k}x{n}) must be multiples of the tile "
                         f"{tile}; pad the matrices or choose another tile")
    c = np.empty((m, n), dtype=np.float32)
    # NumPy arrays as arguments: copied to the device, and c copied back after the kernel
    matmul_tile[(n // tn, m // tm), 64](a, b, c, m, n, k, tm, tn, tk)
    return c


def show_l1_map(svg: str | None = None) -> None:
    """The L1 layout of the compiled (double-buffered) kernel: buffers, offsets, live ranges."""
    d = pto.empty((128, 128), np.float32)
    ck = pto.compile(matmul_tile, args=(d, d, d, 128, 128, 128, 64, 64, 32), block=64)
    for remark in ck.remarks:
        print(remark.message)
    l1 = ck.l1_map()
    print(l1, end="")
    if svg:
        l1.to_svg(svg)
        print(f"L1 map drawn in {svg}")
    d.free()


def main() -> None:
    svg = sys.argv[sys.argv.index("--svg") + 1] if "--svg" in sys.argv[:-1] else None
    show_l1_map(svg)
    rng = np.random.default_rng(0)
    for (m, n, k), dtype in [((128, 128, 128), np.float32), ((192, 320, 96), np.float16)]:
        tile = (64, 64, 32) if k % 64 else (64, 64, 64)
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        c = matmul(a, b, tile)
        ref = a.astype(np.float32) @ b.astype(np.float32)
        assert np.allclose(c, ref, rtol=1e-4, atol=1e-4), np.abs(c - ref).max()
        print(f"pypto: matmul {m}x{k} @ {k}x{n} ({np.dtype(dtype).name}) passed")


if __name__ == "__main__":
    main()
