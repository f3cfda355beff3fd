"""The article's first pitfall: optimising against the simulator's latency table.

The simulator's table knows one latency per PTO instruction (LOAD 4, MMA 8). The NPU firmware
fuses an MMA with the tile load that feeds it (a LOAD_MMA: the copy streams into the Cube while
it multiplies, with no flag handshake in between) when the load sits right before the MMA. A
schedule tuned against the table does not know that, and this example shows two ways it goes
wrong, both modelled by pypto (`model="table"`: pto level, the table; `model="fused"`: npu level
after convert-pto-to-npu and npu-fuse-load-mma). Every kernel computes the same
C = sum over k of A @ B_k (one 64 x 64 A tile, eight B tiles loaded one per k-step) and does some
vector work per k-step.

1. The table *recommends* a schedule that the firmware runs slower. Hoisting each B tile's
   load above the k-step's vector work (`mma_hoisted`) lets the copy overlap that work: the
   table rewards the move. On the firmware the work now sits between the load and its MMA, the
   pair is no longer fused, and every k-step pays a copy, a flag handshake that stalls the
   front end, and an MMA after it: the hoisted kernel is much slower than the one as written
   (`mma_direct`), whose LOAD_MMA streams the B tile into the Cube as it lands: the front end
   still waits for the copy (the wait the fusion absorbed), but the MMA overlaps the transfer.
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
WORK = 16     # vector instructions per k-step (a stand-in for an epilogue, a scale, ...)


@pto.kernel
def mma_direct(A, B, C, K):
    """As written: the k-step's vector work, then the B tile's load right before its MMA."""
    A_tile = pto.alloc_local(TILE * TILE)
    B_tile = pto.alloc_local(TILE * TILE)
    C_tile = pto.alloc_local(TILE * TILE)
    scratch = pto.alloc_local(TILE)
    tid = pto.get_local_id()
    pto.fill(C_tile, 0.0, TILE * TILE)
    pto.fill(scratch, 1.0, TILE)
    pto.wait(pto.async_load(A_tile, A, NBYTES))
    for k0 in range(0, K, TILE):
        for _ in range(WORK):
            pto.store(scratch + tid, pto.load(scratch + tid) * 0.5)
        tb = pto.async_load(B_tile, B + k0 * TILE, NBYTES)
        pto.wait(tb)
        pto.mma(C_tile, A_tile, B_tile, TILE, TILE, TILE)
    pto.store(C, C_tile, NBYTES)


@pto.kernel
def mma_hoisted(A, B, C, K):
    """What the table rewards: the B load issued first, so that it overlaps the vector work."""
    A_tile = pto.alloc_local(TILE * TILE)
    B_tile = pto.alloc_local(TILE * TILE)
    C_tile = pto.alloc_local(TILE * TILE)
    scratch = pto.alloc_local(TILE)
    tid = pto.get_local_id()
    pto.fill(C_tile, 0.0, TILE * TILE)
    pto.fill(scratch, 1.0, TILE)
    pto.wait(pto.async_load(A_tile, A, NBYTES))
    for k0 in range(0, K, TILE):
        tb = pto.async_load(B_tile, B + k0 * TILE, NBYTES)
        for _ in range(WORK):
            pto.store(scratch + tid, pto.load(scratch + tid) * 0.5)
        pto.wait(tb)
        pto.mma(C_tile, A_tile, B_tile, TILE, TILE, TILE)
    pto.store(C, C_tile, NBYTES)


@pto.kernel
def mma_padded(A, B, C, K):
    """As written, with NOP-style padding between the B load and the MMA ("alignment")."""
    A_tile = pto.alloc_local(TILE * TILE)
    B_tile = pto.alloc_local(TILE * TILE)
    C_tile = pto.alloc_local(TILE * TILE)
    scratch = pto.alloc_local(TILE)
    tid = pto.get_local_id()
    pto.fill(C_tile, 0.0, TILE * TILE)
    pto.fill(scratch, 1.0, TILE)
    pto.wait(pto.async_load(A_tile, A, NBYTES))
    for k0 in range(0, K, TILE):
        for _ in range(WORK):
            pto.store(scratch + tid, pto.load(scratch + tid) * 0.5)
        tb = pto.async_load(B_tile, B + k0 * TILE, NBYTES)
        pad = k0 + 1          # three padding instructions, as the table-driven schedule has
        pad = pad + 1
        pad = pad + 1
        pto.wait(tb)
        pto.mma(C_tile, A_tile, B_tile, TILE, TILE, TILE)
    pto.store(C, C_tile, NBYTES)


KERNELS = (mma_direct, mma_hoisted, mma_padded)
MODELS = ("table", "fused")


def run(kernel, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, dict[str, pto.Profile]]:
    d_a, d_b, d_c = pto.tensor(a), pto.tensor(b), pto.empty((TILE, TILE), np.float32)
    profiles = {model: pto.profile(kernel, grid=1, block=64, args=(d_a, d_b, d_c, K),
                                   model=model) for model in MODELS}
    return d_c.numpy(), profiles  # profiling ran the kernel: C holds the product


def change(before: int, after: int) -> str:
    if max(before, after) / min(before, after) < 1.005:
        return f"about the same ({after - before:+d})"
    word = "faster" if after < before else "slower"
    return f"{max(before, after) / min(before, after):.2f}x {word}"


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((TILE, TILE)).astype(np.float32)
    b = rng.standard_normal((K, TILE)).astype(np.float32)
    results = {kernel.name: run(kernel, a, b) for kernel in KERNELS}
    for name, (c, _) in results.items():
        ref = a @ b.reshape(K // TILE, TILE, TILE).sum(axis=0)  # the same A tile every k-step
        assert np.allclose(c, ref, rtol=1e-4, atol=1e-3), name
    cycles = {name: {m: p[m].total_cycles for m in MODELS} for name, (_, p) in results.items()}
    for model in MODELS:
        print(f"\n== {results['mma_direct'][1][model].header}")
        for name, (_, profiles) in results.items():
            prof = profiles[model]
            print(f"{name}: {prof.total_cycles} cycles")
            for line in str(prof.cycle_breakdown()).splitlines()[1:]:
                if line.split(":")[0] in ("COPY_IN", "ASYNC_LOAD", "MMA", "LOAD_MMA", "WAIT"):
                    print(f"    {line}")

    print("\n1. hoisting the B load above the vector work (what the table rewards):")
    for model in MODELS:
        d, h = cycles["mma_direct"][model], cycles["mma_hoisted"][model]
        print(f"hoisting under '{model}': {d} -> {h} cycles: {change(d, h)}")
    table_pick = min(("mma_direct", "mma_hoisted"), key=lambda n: cycles[n]["table"])
    fused_pick = min(("mma_direct", "mma_hoisted"), key=lambda n: cycles[n]["fused"])
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
