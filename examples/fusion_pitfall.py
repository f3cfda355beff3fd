"""The article's first pitfall: optimising against the simulator's latency table.

The simulator's table says an MMA costs 8 cycles and a LOAD 4; the NPU firmware fuses an MMA
with the LOAD that feeds it into one 5-cycle instruction. A kernel author who trusts the table
pads NOPs before the MMA (here: three scalar instructions between the tile load and its MMA) —
under the table they hide in the load's shadow and cost nothing, so the "alignment" looks
harmless. On the firmware they put the load too far from its MMA to be fused, and every k-step
pays for a separate copy, a flag handshake and an unfused MMA.

pypto models both views: `model="table"` (pto level, the table) and `model="fused"` (npu level,
after convert-pto-to-npu and npu-fuse-load-mma). Both kernels compute the same product.

Run:  python examples/fusion_pitfall.py
"""

import numpy as np

import pypto as pto

TILE = 64


@pto.kernel
def mma_direct(A, B, C, K):
    """Each B tile is loaded right before the MMA it feeds: the firmware fuses them."""
    A_tile = pto.alloc_local(TILE * TILE)
    B_tile = pto.alloc_local(TILE * TILE)
    C_tile = pto.alloc_local(TILE * TILE)
    pto.fill(C_tile, 0.0, TILE * TILE)
    for k0 in range(0, K, TILE):
        ta = pto.async_load(A_tile, A + k0, TILE * TILE * 4, rows=TILE, src_stride=K)
        tb = pto.async_load(B_tile, B + k0 * TILE, TILE * TILE * 4)
        pto.wait(ta)
        pto.wait(tb)
        pto.mma(C_tile, A_tile, B_tile, TILE, TILE, TILE)
    pto.store(C, C_tile, TILE * TILE * 4)


@pto.kernel
def mma_padded(A, B, C, K):
    """The same, with NOP-style padding between the B load and the MMA ("alignment")."""
    A_tile = pto.alloc_local(TILE * TILE)
    B_tile = pto.alloc_local(TILE * TILE)
    C_tile = pto.alloc_local(TILE * TILE)
    pto.fill(C_tile, 0.0, TILE * TILE)
    for k0 in range(0, K, TILE):
        ta = pto.async_load(A_tile, A + k0, TILE * TILE * 4, rows=TILE, src_stride=K)
        tb = pto.async_load(B_tile, B + k0 * TILE, TILE * TILE * 4)
        pad = k0 + 1          # three padding instructions, as the table-driven schedule has
        pad = pad + 1
        pad = pad + 1
        pto.wait(ta)
        pto.wait(tb)
        pto.mma(C_tile, A_tile, B_tile, TILE, TILE, TILE)
    pto.store(C, C_tile, TILE * TILE * 4)


def run(kernel, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, dict[str, pto.Profile]]:
    k = a.shape[1]
    d_a, d_b, d_c = pto.tensor(a), pto.tensor(b), pto.empty((TILE, TILE), np.float32)
    profiles = {model: pto.profile(kernel, grid=1, block=64, args=(d_a, d_b, d_c, k),
                                   model=model) for model in ("table", "fused")}
    return d_c.numpy(), profiles  # profiling ran the kernel: C holds the product


def main() -> None:
    rng = np.random.default_rng(0)
    k = 4 * TILE
    a = rng.standard_normal((TILE, k)).astype(np.float32)
    b = rng.standard_normal((k, TILE)).astype(np.float32)
    results = {kernel.name: run(kernel, a, b) for kernel in (mma_direct, mma_padded)}
    for name, (c, _) in results.items():
        assert np.allclose(c, a @ b, rtol=1e-4, atol=1e-3), name
    for model in ("table", "fused"):
        print(f"\n== {results['mma_direct'][1][model].header}")
        for name, (_, profiles) in results.items():
            prof = profiles[model]
            print(f"{name}: {prof.total_cycles} cycles")
            for line in str(prof.cycle_breakdown()).splitlines()[1:]:
                print(f"    {line}")
    direct = {m: results["mma_direct"][1][m].total_cycles for m in ("table", "fused")}
    padded = {m: results["mma_padded"][1][m].total_cycles for m in ("table", "fused")}
    print()
    for model in ("table", "fused"):
        delta = padded[model] - direct[model]
        verdict = ("costs nothing" if delta == 0 else
                   f"{'saves' if delta < 0 else 'costs'} {abs(delta)} cycles "
                   f"({abs(delta) / direct[model]:.0%})")
        print(f"padding under '{model}': {direct[model]} -> {padded[model]} cycles: {verdict}")
    print("pypto: fusion pitfall reproduced (modelled cycles; measure on hardware with "
          "pto.profile_on_npu when a device backend is available)")


if __name__ == "__main__":
    main()
