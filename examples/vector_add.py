"""The article's first program: element-wise vector addition, run exactly on the CPU.

Run:  python examples/vector_add.py
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
    o = np.zeros(n, dtype=np.float32)

    d_a = pto.alloc_tensor(n * 4)
    d_b = pto.alloc_tensor(n * 4)
    d_o = pto.alloc_tensor(n * 4)

    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)

    # launch: like CUDA's <<<grid, block>>>; 256 lanes per block, 1024 elements -> 4 blocks
    block = 256
    grid = (n + block - 1) // block
    pto.launch(vector_add, grid=(grid, 1, 1), block=(block, 1, 1), args=(d_a, d_b, d_o, n))

    pto.memcpy_d2h(o, d_o)

    assert np.array_equal(o, a + b)
    print(f"pypto: vector_add {n} elements passed")


if __name__ == "__main__":
    main()
