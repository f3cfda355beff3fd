"""Calibration: single instructions measured on a 910B3 beside pypto's modelled figures.

pto-isa's system tests (hw-native-sys/pto-isa, tests/costmodel/st/testcase/*/main.cpp) publish
the cycles one instruction took on a 910B3 (the `profiling` argument of each test). pypto
models each as the difference between two kernels that differ only by that instruction
(`model="fused"`, one block), on the shipped targets side by side:

  calibrate <instruction> <shape> measured <cycles>  ascend910b <cycles>  default <cycles>

pypto has no int8 / int16 / uint8 tensors: int16 rows use float16 (same bytes), 8-bit rows are
left out. A pypto lane instruction covers at most one block (1024 lanes), so a 4096-element
vector instruction is four pypto instructions (four heads; under `fused` the lane loads and
the store are the add's operand fetch and result write, docs/cost-model.md#the-lane-rule);
the same rows written as tile
vector instructions (`pto.tadd`, `pto.tmul`) are one instruction each. docs/cost-model.md,
"Calibration",
is this script's output.
Run:  python bench/calibrate.py
"""

from __future__ import annotations

import numpy as np

import pypto as pto

# (instruction, shape, measured cycles on a 910B3, pto-isa test)
MMA = [("TMATMUL f16", (40, 60, 50), 54.0, "tmatmul half_40x50x60"),
       ("TMATMUL f32", (120, 50, 110), 902.0, "tmatmul float_120x110x50"),
       ("TMATMUL_ACC f16", (128, 64, 128), 262.0, "tmatmul split_k_half_128x128x64_reps5")]
LOADS = [("TLOAD f32", (128, 128), 776.0, np.float32, "tload c01_nd_float_128x128"),
         ("TLOAD f32", (128, 127), 773.0, np.float32, "tload c03_nd_float_128x127_padmax"),
         ("TLOAD i16", (128, 127), 519.0, np.float16, "tload c04_nd_int16_128x127_padmax")]
VECTOR = [("TADD f32", (64, 64), 160.0, np.float32, "tadd float_64x64"),
          ("TADD f16", (16, 256), 92.0, np.float16, "tadd half_16x256"),
          ("TMUL f32", (64, 64), 168.0, np.float32, "tmul float_64x64"),
          ("TMUL f16", (16, 256), 96.0, np.float16, "tmul half_16x256")]
TARGETS = ("ascend910b", None)


@pto.kernel
def mma_chain(X, m, n, k, count):
    """Up to 5 MMAs accumulating into one C tile (the operands filled first); the kernels
    for `count` and `count - 1` differ only by one MMA (the loop and its test run in both)."""
    A = pto.alloc_local(m * k, dtype=X.dtype)
    B = pto.alloc_local(k * n, dtype=X.dtype)
    C = pto.alloc_local(m * n)
    pto.fill(A, 0.0, m * k)
    pto.fill(B, 0.0, k * n)
    pto.fill(C, 0.0, m * n)
    for i in range(5):
        if i < count:
            pto.mma(C, A, B, m, n, k)


@pto.kernel
def tile_loads(src, rows: pto.constexpr, cols: pto.constexpr, count):
    """A rows x cols tile copied in (row stride 128) when `count` is 1: the kernels for 1 and
    0 differ only by the copy and its wait."""
    buf = pto.alloc_local(rows * 128, dtype=src.dtype)
    if count == 1:
        tok = pto.async_load(buf, src, rows * cols * src.itemsize, rows=rows, src_stride=128,
                             dst_stride=128)
        pto.wait(tok)


@pto.kernel
def lane_binary(X, elements, op):
    """elements / 1024 rounds of c = a op b on L1 tiles, one element a lane (op 1: add, 2:
    multiply, 0: no rounds): the kernels differ only by the lane-written instruction, its
    operand loads and its store (a TADD's UB operands and UB result)."""
    tid = pto.get_local_id()
    a = pto.alloc_local(elements, dtype=X.dtype)
    b = pto.alloc_local(elements, dtype=X.dtype)
    c = pto.alloc_local(elements, dtype=X.dtype)
    pto.fill(a, 1.0, elements)
    pto.fill(b, 2.0, elements)
    pto.barrier_block()
    if op != 0:
        for j in range(0, elements, 1024):
            x = pto.load(a + j + tid)
            y = pto.load(b + j + tid)
            if op == 1:
                pto.store(c + j + tid, x + y)
            else:
                pto.store(c + j + tid, x * y)


@pto.kernel
def tile_binary(X, rows: pto.constexpr, cols: pto.constexpr, op):
    """One tile vector instruction c = a op b on rows x cols L1 tiles (op 1: pto.tadd, 2:
    pto.tmul, 0: none): the kernels differ only by that instruction."""
    a = pto.alloc_tile(rows, cols, dtype=X.dtype)
    b = pto.alloc_tile(rows, cols, dtype=X.dtype)
    c = pto.alloc_tile(rows, cols, dtype=X.dtype)
    pto.fill(a, 1.0, rows * cols)
    pto.fill(b, 2.0, rows * cols)
    if op == 1:
        pto.tadd(c, a, b)
    elif op == 2:
        pto.tmul(c, a, b)


def cycles(kernel, args, target, block=64) -> int:
    prof = pto.profile(kernel, grid=1, block=block, args=args, target=target)
    return int(prof.launch.block_cycles[0])


def mma_rows():
    for name, (m, n, k), measured, test in MMA:
        dtype = np.float16 if "f16" in name else np.float32
        x = pto.alloc_tensor(64 * np.dtype(dtype).itemsize, dtype=dtype)
        last = 5 if "ACC" in name else 1
        figures = [cycles(mma_chain, (x, m, n, k, last), t) -
                   cycles(mma_chain, (x, m, n, k, last - 1), t) for t in TARGETS]
        yield name, f"{m}x{n}x{k}", measured, figures, test


def load_rows():
    for name, (rows, cols), measured, dtype, test in LOADS:
        src = pto.alloc_tensor(rows * 128 * np.dtype(dtype).itemsize, dtype=dtype)
        figures = [cycles(tile_loads, (src, rows, cols, 1), t) -
                   cycles(tile_loads, (src, rows, cols, 0), t) for t in TARGETS]
        yield name, f"{rows}x{cols}", measured, figures, test


def vector_rows():
    for name, (rows, cols), measured, dtype, test in VECTOR:
        x = pto.alloc_tensor(1024 * np.dtype(dtype).itemsize, dtype=dtype)
        op = 1 if "ADD" in name else 2
        figures = [cycles(lane_binary, (x, rows * cols, op), t, block=1024) -
                   cycles(lane_binary, (x, rows * cols, 0), t, block=1024) for t in TARGETS]
        yield name, f"{rows}x{cols}", measured, figures, test


def tile_rows():
    """The same instructions as tile vector instructions (`pto.tadd` / `pto.tmul` on whole
    tiles): one instruction, one head, 256-byte repeats (docs/cost-model.md)."""
    for name, (rows, cols), measured, dtype, test in VECTOR:
        x = pto.alloc_tensor(64 * np.dtype(dtype).itemsize, dtype=dtype)
        op = 1 if "ADD" in name else 2
        figures = [cycles(tile_binary, (x, rows, cols, op), t) -
                   cycles(tile_binary, (x, rows, cols, 0), t) for t in TARGETS]
        yield f"{name} (pto.t{'add' if op == 1 else 'mul'})", f"{rows}x{cols}", measured, \
            figures, test


def rows():
    yield from mma_rows()
    yield from load_rows()
    yield from vector_rows()
    yield from tile_rows()


def main() -> None:
    for name, shape, measured, (b910, default), test in rows():
        print(f"calibrate {name} {shape} measured {measured:.0f}  ascend910b {b910}  "
              f"default {default}  ({test})")


if __name__ == "__main__":
    main()
