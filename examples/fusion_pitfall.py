"""The article's first pitfall: optimising against the simulator's latency table.

The simulator's table knows one latency per PTO instruction (LOAD 4, MMA 8). The NPU firmware
fuses an MMA with the tile load that feeds it (a LOAD_MMA: the copy streams into the Cube while
it multiplies) when the load sits right before the MMA. A schedule tuned against the table
does not know that, and this example shows two ways it goes wrong, both modelled by pypto
(`model="table"`: pto level, the table; `model="fused"`: npu level after convert-pto-to-npu and
npu-fuse-load-mma). All four kernels compute the same 64 x 64 product over K = 512.

1. The table *recommends* a schedule that the firmware runs slower. Prefetching both tiles of
   the next k-step into second buffers (`mma_prefetch_both`) hides the copies behind the MMA:
   under the table it is 1.26x faster than the kernel as written. But it moves every B load an
   iteration away from its MMA, where the firmware cannot fuse them: each k-step pays a separate
   copy, a flag handshake and an unfused MMA, and under `fused` it is *slower* than the kernel
   as written. Prefetching only A and keeping each B load next to its MMA (`mma_prefetch_a`, what
   the fusion-aware `pto-double-buffer` does) never loses under either model; at this shape it
   gains nothing either — the copy engine (MTE_IN) is the bottleneck: the A and B tiles (2 x
   16 KiB per k-step at 128 B/cycle) take longer than the FP32 MMA (262144 MACs at 2048 per
   cycle), and the kernel as written already streams each B tile under its MMA.
2. The table says padding is free. Three scalar instructions between the B load and its MMA
   (`mma_padded`) hide in the copy's shadow under the table; on the firmware they put the load
   beyond the fusion distance, and the MMA is no longer fused.

The numbers are modelled (never measured); measure on hardware with `pto.profile_on_npu` when
a device backend is available.

Run:  python examples/fusion_pitfall.py
"""

import numpy as np

import pypto as pto

TILE = 64
K = 8 * TILE
NBYTES = TILE * TILE * 4


@pto.kernel
def mma_direct(A, B, C, K):
    """As written: each B tile is loaded right before the MMA it feeds (the firmware fuses)."""
    A_tile = pto.alloc_local(TILE * TILE)
    B_tile = pto.alloc_local(TILE * TILE)
    C_tile = pto.alloc_local(TILE * TILE)
    pto.fill(C_tile, 0.0, TILE * TILE)
    for k0 in range(0, K, TILE):
        ta = pto.async_load(A_tile, A + k0, NBYTES, rows=TILE, src_stride=K)
        tb = pto.async_load(B_tile, B + k0 * TILE, NBYTES)
        pto.wait(ta)
        pto.wait(tb)
        pto.mma(C_tile, A_tile, B_tile, TILE, TILE, TILE)
    pto.store(C, C_tile, NBYTES)


@pto.kernel
def mma_prefetch_both(A, B, C, K):
    """What the table rewards: both tiles of the next k-step load while this one multiplies."""
    A0 = pto.alloc_local(TILE * TILE)
    A1 = pto.alloc_local(TILE * TILE)
    B0 = pto.alloc_local(TILE * TILE)
    B1 = pto.alloc_local(TILE * TILE)
    C_tile = pto.alloc_local(TILE * TILE)
    pto.fill(C_tile, 0.0, TILE * TILE)
    ta = pto.async_load(A0, A, NBYTES, rows=TILE, src_stride=K)
    tb = pto.async_load(B0, B, NBYTES)
    for k0 in range(0, K, 2 * TILE):
        ta1 = pto.async_load(A1, A + k0 + TILE, NBYTES, rows=TILE, src_stride=K)
        tb1 = pto.async_load(B1, B + (k0 + TILE) * TILE, NBYTES)
        pto.wait(ta)
        pto.wait(tb)
        pto.mma(C_tile, A0, B0, TILE, TILE, TILE)
        if k0 + 2 * TILE < K:
            ta = pto.async_load(A0, A + k0 + 2 * TILE, NBYTES, rows=TILE, src_stride=K)
            tb = pto.async_load(B0, B + (k0 + 2 * TILE) * TILE, NBYTES)
        pto.wait(ta1)
        pto.wait(tb1)
        pto.mma(C_tile, A1, B1, TILE, TILE, TILE)
    pto.store(C, C_tile, NBYTES)


@pto.kernel
def mma_prefetch_a(A, B, C, K):
    """Fusion-aware: the next A tile loads while this one multiplies; each B load stays next
    to its MMA, so the firmware still fuses them."""
    A0 = pto.alloc_local(TILE * TILE)
    A1 = pto.alloc_local(TILE * TILE)
    B_tile = pto.alloc_local(TILE * TILE)
    C_tile = pto.alloc_local(TILE * TILE)
    pto.fill(C_tile, 0.0, TILE * TILE)
    ta = pto.async_load(A0, A, NBYTES, rows=TILE, src_stride=K)
    for k0 in range(0, K, 2 * TILE):
        ta1 = pto.async_load(A1, A + k0 + TILE, NBYTES, rows=TILE, src_stride=K)
        pto.wait(ta)
        tb = pto.async_load(B_tile, B + k0 * TILE, NBYTES)
        pto.wait(tb)
        pto.mma(C_tile, A0, B_tile, TILE, TILE, TILE)
        if k0 + 2 * TILE < K:
            ta = pto.async_load(A0, A + k0 + 2 * TILE, NBYTES, rows=TILE, src_stride=K)
        pto.wait(ta1)
        tb = pto.async_load(B_tile, B + (k0 + TILE) * TILE, NBYTES)
        pto.wait(tb)
        pto.mma(C_tile, A1, B_tile, TILE, TILE, TILE)
    pto.store(C, C_tile, NBYTES)


@pto.kernel
def mma_padded(A, B, C, K):
    """As written, with NOP-style padding between the B load and the MMA ("alignment")."""
    A_tile = pto.alloc_local(TILE * TILE)
    B_tile = pto.alloc_local(TILE * TILE)
    C_tile = pto.alloc_local(TILE * TILE)
    pto.fill(C_tile, 0.0, TILE * TILE)
    for k0 in range(0, K, TILE):
        ta = pto.async_load(A_tile, A + k0, NBYTES, rows=TILE, src_stride=K)
        tb = pto.async_load(B_tile, B + k0 * TILE, NBYTES)
        pad = k0 + 1          # three padding instructions, as the table-driven schedule has
        pad = pad + 1
        pad = pad + 1
        pto.wait(ta)
        pto.wait(tb)
        pto.mma(C_tile, A_tile, B_tile, TILE, TILE, TILE)
    pto.store(C, C_tile, NBYTES)


KERNELS = (mma_direct, mma_prefetch_both, mma_prefetch_a, mma_padded)
MODELS = ("table", "fused")


def run(kernel, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, dict[str, pto.Profile]]:
    d_a, d_b, d_c = (pto.alloc_tensor(x.nbytes) for x in (a, b, np.empty((TILE, TILE), "f4")))
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)
    profiles = {model: pto.profile(kernel, grid=1, block=64, args=(d_a, d_b, d_c, K),
                                   model=model) for model in MODELS}
    c = np.empty((TILE, TILE), np.float32)
    pto.memcpy_d2h(c, d_c)  # profiling ran the kernel: C holds the product
    for t in (d_a, d_b, d_c):
        t.free()
    return c, profiles


def change(before: int, after: int) -> str:
    if max(before, after) / min(before, after) < 1.005:
        return f"about the same ({after - before:+d})"
    word = "faster" if after < before else "slower"
    return f"{max(before, after) / min(before, after):.2f}x {word}"


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((TILE, K)).astype(np.float32)
    b = rng.standard_normal((K, TILE)).astype(np.float32)
    results = {kernel.name: run(kernel, a, b) for kernel in KERNELS}
    for name, (c, _) in results.items():
        assert np.allclose(c, a @ b, rtol=1e-4, atol=1e-3), name
    cycles = {name: {m: p[m].total_cycles for m in MODELS} for name, (_, p) in results.items()}
    for model in MODELS:
        print(f"\n== {results['mma_direct'][1][model].header}")
        for name, (_, profiles) in results.items():
            prof = profiles[model]
            print(f"{name}: {prof.total_cycles} cycles")
            for line in str(prof.cycle_breakdown()).splitlines()[1:]:
                if line.split(":")[0] in ("COPY_IN", "ASYNC_LOAD", "MMA", "LOAD_MMA"):
                    print(f"    {line}")

    print("\n1. prefetching both tiles (what the table rewards):")
    for model in MODELS:
        d, both, only_a = (cycles[n][model] for n in ("mma_direct", "mma_prefetch_both",
                                                      "mma_prefetch_a"))
        print(f"prefetch both under '{model}': {d} -> {both} cycles: {change(d, both)}; "
              f"prefetch A only: {d} -> {only_a} cycles: {change(d, only_a)}")
    table_pick = min(("mma_direct", "mma_prefetch_both"), key=lambda n: cycles[n]["table"])
    fused_pick = min(("mma_direct", "mma_prefetch_both"), key=lambda n: cycles[n]["fused"])
    print(f"the table picks {table_pick}, the firmware runs {fused_pick} faster")

    print("\n2. padding between the B load and its MMA:")
    for model in MODELS:
        d, p = cycles["mma_direct"][model], cycles["mma_padded"][model]
        verdict = "costs nothing" if p == d else \
            f"{'saves' if p < d else 'costs'} {abs(p - d)} cycles ({abs(p - d) / d:.0%})"
        print(f"padding under '{model}': {d} -> {p} cycles: {verdict}")
    print("pypto: fusion pitfall reproduced (modelled cycles; measure on hardware with "
          "pto.profile_on_npu when a device backend is available)")


if __name__ == "__main__":
    main()
