"""The article's first program: element-wise vector addition, run exactly on the CPU.

Run:  python examples/vector_add.py          (--mlir prints the compiled IR, for pypto-opt)
"""

import numpy as np

import pypto as pto


@pto.kernel
def vector_add(a, b, o, n):
    # SPMD: every lane runs this function; 256 lanes per block.
    i = pto.get_global_id()

    # bounds check, as `if (i < n)` in CUDA: lanes past the end are masked off
    if i < n:
        # LOAD: one element per lane from HBM
        a_val = pto.load(a + i)
        b_val = pto.load(b + i)

        # FMA with fused store: o[i] = a_val * 1.0 + b_val in one instruction.
        # (pto.fma is a true multiply-add; the article's fma(o+i, a_val, b_val, 0.0) would
        # compute a*b.)
        pto.fma(o + i, a_val, 1.0, b_val)


def main(n: int = 1024) -> None:
    a = np.random.rand(n).astype(np.float32)
    b = np.random.rand(n).astype(np.float32)

    # device tensors: copies of a and b, and an output of n float32 elements
    d_a, d_b, d_o = pto.tensor(a), pto.tensor(b), pto.empty(n, np.float32)

    # launch, like CUDA's <<<grid, block>>>: 256 lanes per block, 1024 elements -> 4 blocks.
    # Asynchronous: errors inside the kernel surface at the next synchronising call.
    block = 256
    grid = (n + block - 1) // block
    vector_add[grid, block](d_a, d_b, d_o, n)

    o = d_o.numpy()  # waits for the kernel, then copies the result to a new host array
    assert np.array_equal(o, a + b)
    print(f"pypto: vector_add {n} elements passed")


def show_mlir(n: int = 1024) -> None:
    """The kernel's IR with its Python locations: a file pypto-opt can read."""
    d = pto.empty(n, np.float32)
    print(pto.compile(vector_add, args=(d, d, d, n), block=256).as_text(debuginfo=True), end="")


if __name__ == "__main__":
    import sys

    if "--mlir" in sys.argv[1:]:
        show_mlir()
    else:
        main()
