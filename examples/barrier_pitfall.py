"""The article's third pitfall: `pto.barrier()` synchronises one warp, not the block.

Lanes 0-127 (warps 0-3) write an L1 buffer, `pto.barrier()`, then every lane of the 256-lane block
reads it. Lanes of warps 4-7 read data written by other warps with only a warp barrier between:
a race. On a deterministic simulator running warps in lockstep it silently "works"; pypto
catches it twice:

1. statically: `pto.compile()` runs `pto-verify-barriers` and raises `pto.BarrierError`;
2. dynamically: the interpreter's race detector raises `pto.RaceError` (here the static check is
   skipped with `pipeline=""` to show the runtime report).

Then the fixed kernel (`pto.barrier_block()`) passes both and computes the right answer, under
every warp schedule.

Run:  python examples/barrier_pitfall.py     (--mlir prints the racy kernel's IR, for pypto-opt)
"""

import numpy as np

import pypto as pto

BLOCK = 256


@pto.kernel
def broadcast_racy(src, out):
    shared = pto.alloc_local(128)
    lid = pto.get_local_id()
    if lid < 128:
        pto.store(shared + lid, pto.load(src + lid))
    pto.barrier()  # WRONG: orders only the current warp (32 lanes)
    pto.store(out + lid, pto.load(shared + lid % 128))


@pto.kernel
def broadcast_fixed(src, out):
    shared = pto.alloc_local(128)
    lid = pto.get_local_id()
    if lid < 128:
        pto.store(shared + lid, pto.load(src + lid))
    pto.barrier_block()  # synchronises every warp of the block
    pto.store(out + lid, pto.load(shared + lid % 128))


def main() -> None:
    src = np.arange(128, dtype=np.float32)
    d_src, d_out = pto.alloc_tensor(src.nbytes), pto.alloc_tensor(BLOCK * 4)
    pto.memcpy_h2d(d_src, src)
    args = (d_src, d_out)

    print("1. compile-time check (pto-verify-barriers):")
    try:
        pto.compile(broadcast_racy, args=args, block=BLOCK)
        raise SystemExit("expected a BarrierError")
    except pto.BarrierError as err:
        print(f"   pto.BarrierError: {err}\n")

    print("2. run-time race detector (static check skipped with pipeline=''):")
    racy = pto.compile(broadcast_racy, args=args, block=BLOCK, pipeline="")
    racy(grid=1, block=BLOCK, args=args)
    try:
        pto.sync()
        raise SystemExit("expected a RaceError")
    except pto.RaceError as err:
        print(f"   pto.RaceError: {str(err).splitlines()[0]}\n")

    print("3. the fixed kernel, under every warp schedule:")
    expected = np.tile(src, 2)
    for schedule in (None, "in_order", "reverse", "random:42"):
        fixed = pto.compile(broadcast_fixed, args=args, block=BLOCK, schedule=schedule)
        fixed(grid=1, block=BLOCK, args=args)
        out = np.empty(BLOCK, np.float32)
        pto.memcpy_d2h(out, d_out)
        assert np.array_equal(out, expected)
        print(f"   schedule={schedule or 'lockstep'}: correct")
    print("pypto: barrier_pitfall passed")


def show_mlir() -> None:
    """The racy kernel's IR before any pass (with Python locations), for pypto-opt."""
    d = pto.alloc_tensor(BLOCK * 4)
    racy = pto.compile(broadcast_racy, args=(d, d), block=BLOCK, pipeline="")
    print(racy.as_text(debuginfo=True), end="")


if __name__ == "__main__":
    import sys

    if "--mlir" in sys.argv[1:]:
        show_mlir()
    else:
        main()
