# GENERATED from the pto dialect by `python -m pypto.tools.stubs > pypto/frontend/builtins.pyi`. Do not edit by hand.
"""Kernel-side functions of the PTO language (see pypto/frontend/builtins.py)."""

from typing import Any

from pypto.dtypes import float32

BUILTINS: dict[Any, str]
LANGUAGE_FUNCTIONS: dict[str, tuple[str, str]]
ELEMENTWISE: dict[str, Any]

def declared() -> dict[str, tuple[str, str]]: ...
def op_doc(op: Any) -> str: ...

class constexpr:
    """Annotation forcing a kernel parameter to be a compile-time constant."""

STATIC_LOOP_LIMIT: int

def static_range(*args: int) -> range:
    """`range(a, b, s)` over compile-time integers, unrolled by the frontend."""


def get_global_id(dim: Any=0) -> Any:
    """Global lane index along a dimension: `block_id * block_dim + local_id`.

    Semantics: the dimension is 0 (x), 1 (y) or 2 (z); the result is int32.

    Python: `i = pto.get_global_id(0)`

    Lowers to `pto.get_global_id` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def get_local_id(dim: Any=0) -> Any:
    """Index of the lane within its block along a dimension.

    Semantics: `0 <= local_id < block_dim` along the same dimension.

    Python: `t = pto.get_local_id(0)`

    Lowers to `pto.get_local_id` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def get_block_id(dim: Any=0) -> Any:
    """Index of the block within the grid along a dimension.

    Semantics: the same for every lane of a block; `0 <= block_id < grid_dim`.

    Python: `b = pto.get_block_id(0)`

    Lowers to `pto.get_block_id` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def get_block_dim(dim: Any=0) -> Any:
    """Number of lanes of a block along a dimension.

    Semantics: the launch's `block=(bx, by, bz)` entry of that dimension, for every lane.

    Python: `n = pto.get_block_dim(0)`

    Lowers to `pto.get_block_dim` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def get_grid_dim(dim: Any=0) -> Any:
    """Number of blocks of the grid along a dimension.

    Semantics: the launch's `grid=(gx, gy, gz)` entry of that dimension, for every lane.

    Python: `g = pto.get_grid_dim(0)`

    Lowers to `pto.get_grid_dim` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def get_warp_id() -> Any:
    """Index of the lane's warp within its block: `linear_local_id // 32`.

    Semantics: `linear_local_id = x + bx * (y + by * z)` over the local ids; a warp is 32
    consecutive lanes (`pto.WARP_SIZE`).

    Python: `w = pto.get_warp_id()`

    Lowers to `pto.get_warp_id` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def get_lane_id() -> Any:
    """Index of the lane within its warp: `linear_local_id % 32`.

    Python: `l = pto.get_lane_id()`

    Lowers to `pto.get_lane_id` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def load(ptr: Any) -> Any:
    """Load one element per lane from HBM or L1.

    Semantics: `v = *ptr` for every active lane; the result type is the address's element type.
    An address outside the pointed-to buffer is a `MemoryAccessError`; reading L1 that an async
    copy is still writing (before its `pto.wait`) is a hazard.

    Python: `v = pto.load(a + i)`

    Lowers to `pto.load` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def store(ptr: Any, value: Any, nbytes: Any=None, rows: Any=1, src_stride: Any=None, dst_stride: Any=None) -> Any:
    """Store one element per lane to HBM or L1.

    Semantics: `*ptr = value` for every active lane; the value's type is the address's element
    type (no implicit conversion: write a `pto.cast`).

    Python: `pto.store(o + i, v)`

    Lowers to `pto.store` (docs/isa.md).

    Synchronous L1 -> HBM tile copy (the three-argument `pto.store`).

    Semantics: as `pto.async_store`, but complete when the instruction retires.

    Python: `pto.store(C + offset_c, C_tile, 64 * 64 * 4, rows=64, dst_stride=N)`

    Lowers to `pto.tile_store` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def fma(dst: Any, a: Any, b: Any, c: Any) -> Any:
    """Fused multiply-add with fused store: `*dst = a * b + c`.

    Semantics: a true fused multiply-add: the exact `a * b + c` is rounded once to the
    destination's float type (nearest, ties to even). For integers the arithmetic wraps; i1 is
    rejected. To add two values write `pto.fma(dst, a, 1.0, b)`.

    Python: `pto.fma(o + i, a, 1.0, b)`

    Lowers to `pto.fma` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def atomic_add(ptr: Any, value: Any) -> Any:
    """Atomically add to one element per lane and return the value it held before.

    Semantics: `old = *ptr; *ptr = old + value` as one indivisible step per lane. Lanes that hit
    the same address are serialised in lane order (lowest lane first), so each sees the sum of
    the lower lanes' contributions in `old`. Integer addition wraps; float addition rounds once
    per lane, in lane order. Not defined on i1.

    Python: `old = pto.atomic_add(hist + bucket, 1)`

    Lowers to `pto.atomic_add` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def sigmoid(x: Any) -> Any:
    """Logistic sigmoid per lane: `1 / (1 + exp(-x))`.

    Semantics: on floats (f16, bf16, f32), with the operand's type: evaluated in float64 and
    rounded once to it, as `pto.exp` (within 1 ulp, the same on every machine); `sigmoid(-inf) =
    0`, `sigmoid(inf) = 1`, NaN stays NaN. Integers are rejected: `pto.cast` them first.

    Python: `y = pto.sigmoid(x)`

    Lowers to `pto.sigmoid` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def alloc_local(count: Any, dtype: Any=float32) -> Any:
    """Allocate a block-shared L1 buffer.

    Semantics: `count` elements of L1, shared by every lane of the block, alive until the kernel
    ends. A declaration, like CUDA's `__shared__`: the allocation is static (one buffer per
    `alloc_local` per block), so it is not a synchronisation point and may sit anywhere, even
    after a lane-dependent `return`. Its contents are undefined until written: the interpreter
    fills it with NaN (floats) or a poison pattern (ints), and `check_uninitialized=True` makes
    reading them an error. The element count is a compile-time value, part of the result type.

    Python: `buf = pto.alloc_local(256, dtype=pto.float32)`, `t = pto.alloc_tile(64, 64,
    dtype=pto.float32)`

    Lowers to `pto.alloc_local` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def async_load(dst: Any, src: Any, nbytes: Any, rows: Any=1, src_stride: Any=None, dst_stride: Any=None) -> Any:
    """Start an asynchronous HBM -> L1 copy; returns a token to wait on.

    Semantics: copies `nbytes` from `src` (HBM) to `dst` (L1) as `rows` rows of `nbytes / rows`
    bytes; row r reads at element `r * src_stride` and writes at element `r * dst_stride`
    (strides in elements, defaulting to the row length), as Ascend C's DataCopyParams. Source
    and destination have one element type. The copy completes at the `pto.wait` of its token (or
    `pto.wait_all`); reading the destination before that is a hazard.

    Python: `tok = pto.async_load(A_tile, A + row0 * K + k0, 64 * 64 * 4, rows=64,
    src_stride=K)`

    Lowers to `pto.async_load` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def async_store(dst: Any, src: Any, nbytes: Any, rows: Any=1, src_stride: Any=None, dst_stride: Any=None) -> Any:
    """Start an asynchronous L1 -> HBM copy; returns a token to wait on.

    Semantics: as `pto.async_load` in the other direction. Until its `wait`, writing the L1
    source or reading the HBM destination is a hazard. Copies not waited for complete when the
    kernel ends.

    Python: `tok = pto.async_store(C + row0 * N + n0, C_tile, 64 * 64 * 4, rows=64,
    dst_stride=N)`

    Lowers to `pto.async_store` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def wait(token: Any) -> Any:
    """Wait until the asynchronous copy of a token has completed.

    Semantics: after it, the copy's destination holds the data and its source may be reused.
    Waiting on a token whose copy was never issued is a `DeadlockError`.

    Python: `pto.wait(tok)`

    Lowers to `pto.wait` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def wait_all() -> Any:
    """Wait for every outstanding asynchronous copy of the block.

    Semantics: as a `pto.wait` on every token the block has issued and not yet waited for.

    Python: `pto.wait_all()`

    Lowers to `pto.wait_all` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def fill(dst: Any, value: Any, count: Any) -> Any:
    """Fill `count` elements of L1 with one value.

    Semantics: `dst[0:count] = value`; `dst` is in L1, `value` has its element type and must be
    uniform across the block.

    Python: `pto.fill(C_tile, 0.0, 64 * 64)`

    Lowers to `pto.fill` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def mma(C: Any, A: Any, B: Any, m: Any, n: Any, k: Any) -> Any:
    """Matrix multiply-accumulate on L1 tiles: `C[m x n] += A[m x k] @ B[k x n]`.

    Semantics: row-major tiles in L1; a `!pto.l1buf` operand must hold at least its tile's
    elements. A and B share one element type; supported accumulations are f32 += f32/f16/bf16,
    f16 += f16 and i32 += i32. Products of the inputs are exact in the accumulator type and
    summed in it (f16/bf16 inputs accumulate in f32); the summation order is NumPy's matmul's,
    so results can differ from another order in the last bits. `m, n, k` are positive
    compile-time values.

    Python: `pto.mma(C_tile, A_tile, B_tile, 64, 64, 64)`

    Lowers to `pto.mma` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def barrier() -> Any:
    """Synchronise the 32 lanes of the current warp (only the warp, not the block).

    Semantics: every lane of the warp reaches the barrier before any continues; L1 writes of the
    warp before it are visible to the warp after it. Lanes of other warps are *not* ordered: to
    exchange data between warps use `pto.barrier_block`.

    Python: `pto.barrier()`

    Lowers to `pto.barrier` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def barrier_block() -> Any:
    """Synchronise every lane of the block and make prior L1 writes visible to all lanes.

    Semantics: as CUDA's `__syncthreads()`; every lane of the block must reach it (a
    `barrier_block` under lane-dependent control flow is a deadlock).

    Python: `pto.barrier_block()`

    Lowers to `pto.barrier_block` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def shfl(v: Any, src_lane: Any) -> Any:
    """Read a value from a given lane of the warp (CUDA's `__shfl_sync`).

    Semantics: lane `l` of a warp gets `value` of lane `j = src_lane mod 32` of the same warp (a
    source lane outside 0..31 wraps, as CUDA's `srcLane % width`); when lane `j` does not exist
    (past the end of a partial warp) lane `l` keeps its own value. Every lane of the warp must
    execute it together (control flow uniform across the warp; a warp collective, not a barrier:
    it orders no memory).

    Python: `r = pto.shfl(v, src_lane)`

    Lowers to `pto.shfl` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def shfl_up(v: Any, delta: Any) -> Any:
    """Read a value from the lane `delta` below in the warp (CUDA's `__shfl_up_sync`).

    Semantics: lane `l` gets `value` of lane `l - d`, `d = delta mod 32`; lanes `l < d` keep
    their own value (the source is past the warp's lower edge). A warp collective: every lane of
    the warp executes it together.

    Python: `r = pto.shfl_up(v, delta)`

    Lowers to `pto.shfl_up` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def shfl_down(v: Any, delta: Any) -> Any:
    """Read a value from the lane `delta` above in the warp (CUDA's `__shfl_down_sync`).

    Semantics: lane `l` gets `value` of lane `l + d`, `d = delta mod 32`; a lane whose source `l
    + d` is past the warp's edge (31, or the last lane of a partial warp) keeps its own value. A
    warp collective: every lane of the warp executes it together.

    Python: `r = pto.shfl_down(v, delta)`

    Lowers to `pto.shfl_down` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def shfl_xor(v: Any, mask: Any) -> Any:
    """Exchange values between lanes whose ids differ by a mask (CUDA's `__shfl_xor_sync`).

    Semantics: lane `l` gets `value` of lane `l ^ m`, `m = mask mod 32` (a butterfly); when that
    lane does not exist (past the end of a partial warp) lane `l` keeps its own value. A warp
    collective: every lane of the warp executes it together.

    Python: `r = pto.shfl_xor(v, mask)`

    Lowers to `pto.shfl_xor` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def ballot(pred: Any) -> Any:
    """The warp's predicates as a bitmask (CUDA's `__ballot_sync`).

    Semantics: every lane of the warp gets the same int32 whose bit `k` is set when lane `k` of
    the warp exists and its `pred` is true (bit 31 is the sign bit: a full warp of `true` is
    `-1`). A warp collective: every lane of the warp executes it together.

    Python: `m = pto.ballot(pred)`

    Lowers to `pto.ballot` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def vote_any(pred: Any) -> Any:
    """Whether `pred` holds on some lane of the warp (CUDA's `__any_sync`).

    Semantics: every lane of the warp gets `true` when `pred` is true on at least one lane of
    the warp. Named `vote_any` (PTX's `vote.any`) so that Python's `any` keeps its meaning in
    `from pypto import *`. A warp collective: every lane of the warp executes it together.

    Python: `r = pto.vote_any(pred)`

    Lowers to `pto.vote_any` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def vote_all(pred: Any) -> Any:
    """Whether `pred` holds on every lane of the warp (CUDA's `__all_sync`).

    Semantics: every lane of the warp gets `true` when `pred` is true on all lanes of the warp
    (the lanes that exist, in a partial warp). Named `vote_all` (PTX's `vote.all`) so that
    Python's `all` keeps its meaning. A warp collective: every lane of the warp executes it
    together.

    Python: `r = pto.vote_all(pred)`

    Lowers to `pto.vote_all` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def pipeline() -> Any:
    """A software pipeline: a sequence of named `pto.stage`s with a dependency DAG.

    Semantics: without optimisation the stages run in program order, so the kernel means the
    same with or without `pto-double-buffer`, which overlaps the stages of successive loop
    iterations. Stage names are unique; `after` names earlier stages only (no unknown names, no
    cycles). Values a stage yields are visible to the later stages; values the pipeline yields
    (its region ends with `pto.yield`) are visible after it.

    Python: `with pto.pipeline() as pl:` then `with pl.stage("load_a"): ...`

    Lowers to `pto.pipeline` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def printf(fmt: Any, *values: Any) -> Any:
    """Print a formatted line per active lane, prefixed with its block and lane.

    Semantics: Python `%`-style formatting (`%d`, `%f`, `%.3f`, `%x`, ...) of the lane's scalar
    values; the format must take exactly one value per conversion (`%%` prints a `%`). Each line
    starts with `[block (x, y, z) lane (x, y, z)] `. Lines are printed in block order, then lane
    order, to standard output.

    Python: `pto.printf("i=%d v=%f", i, v)`

    Lowers to `pto.printf` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tadd(dst: Any, a: Any, b: Any) -> Any:
    """`dst = a + b` per element, rounded once.

    Semantics: `dst = a + b` per element, rounded once. Element types: f32, f16, bf16, i32, i64.
    Executed once per block on the vector pipe, in uniform control flow; operands are L1 tiles
    of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tadd(dst, a, b)`

    Lowers to `pto.tadd` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tsub(dst: Any, a: Any, b: Any) -> Any:
    """`dst = a - b` per element, rounded once.

    Semantics: `dst = a - b` per element, rounded once. Element types: f32, f16, bf16, i32, i64.
    Executed once per block on the vector pipe, in uniform control flow; operands are L1 tiles
    of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tsub(dst, a, b)`

    Lowers to `pto.tsub` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tmul(dst: Any, a: Any, b: Any) -> Any:
    """`dst = a * b` per element, rounded once.

    Semantics: `dst = a * b` per element, rounded once. Element types: f32, f16, bf16, i32, i64.
    Executed once per block on the vector pipe, in uniform control flow; operands are L1 tiles
    of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tmul(dst, a, b)`

    Lowers to `pto.tmul` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tdiv(dst: Any, a: Any, b: Any) -> Any:
    """`dst = a / b` per element, correctly rounded (IEEE division).

    Semantics: `dst = a / b` per element, correctly rounded (IEEE division). Element types: f32,
    f16, bf16. Executed once per block on the vector pipe, in uniform control flow; operands are
    L1 tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tdiv(dst, a, b)`

    Lowers to `pto.tdiv` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tmin(dst: Any, a: Any, b: Any) -> Any:
    """`dst = min(a, b)` per element.

    Semantics: `dst = min(a, b)` per element; floats as `arith.minimumf` (NaN if either is NaN,
    -0 < +0). Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector
    pipe, in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tmin(dst, a, b)`

    Lowers to `pto.tmin` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tmax(dst: Any, a: Any, b: Any) -> Any:
    """`dst = max(a, b)` per element.

    Semantics: `dst = max(a, b)` per element; floats as `arith.maximumf` (NaN if either is NaN,
    +0 > -0). Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector
    pipe, in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tmax(dst, a, b)`

    Lowers to `pto.tmax` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tand(dst: Any, a: Any, b: Any) -> Any:
    """`dst = a & b` per element (bitwise).

    Semantics: `dst = a & b` per element (bitwise). Element types: i32, i64. Executed once per
    block on the vector pipe, in uniform control flow; operands are L1 tiles of the op's static
    shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tand(dst, a, b)`

    Lowers to `pto.tand` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tor(dst: Any, a: Any, b: Any) -> Any:
    """`dst = a | b` per element (bitwise).

    Semantics: `dst = a | b` per element (bitwise). Element types: i32, i64. Executed once per
    block on the vector pipe, in uniform control flow; operands are L1 tiles of the op's static
    shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tor(dst, a, b)`

    Lowers to `pto.tor` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def txor(dst: Any, a: Any, b: Any) -> Any:
    """`dst = a ^ b` per element (bitwise).

    Semantics: `dst = a ^ b` per element (bitwise). Element types: i32, i64. Executed once per
    block on the vector pipe, in uniform control flow; operands are L1 tiles of the op's static
    shape (docs/language.md#tile-vector-instructions).

    Python: `pto.txor(dst, a, b)`

    Lowers to `pto.txor` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tshl(dst: Any, a: Any, b: Any) -> Any:
    """`dst = a << b` per element (`arith.shli`).

    Semantics: `dst = a << b` per element (`arith.shli`). Element types: i32, i64. Executed once
    per block on the vector pipe, in uniform control flow; operands are L1 tiles of the op's
    static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tshl(dst, a, b)`

    Lowers to `pto.tshl` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tshr(dst: Any, a: Any, b: Any) -> Any:
    """`dst = a >> b` per element, arithmetic (`arith.shrsi`).

    Semantics: `dst = a >> b` per element, arithmetic (`arith.shrsi`). Element types: i32, i64.
    Executed once per block on the vector pipe, in uniform control flow; operands are L1 tiles
    of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tshr(dst, a, b)`

    Lowers to `pto.tshr` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tabs(dst: Any, a: Any) -> Any:
    """`dst = |a|` per element.

    Semantics: `dst = |a|` per element. Element types: f32, f16, bf16, i32, i64. Executed once
    per block on the vector pipe, in uniform control flow; operands are L1 tiles of the op's
    static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tabs(dst, a)`

    Lowers to `pto.tabs` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tneg(dst: Any, a: Any) -> Any:
    """`dst = -a` per element.

    Semantics: `dst = -a` per element. Element types: f32, f16, bf16, i32, i64. Executed once
    per block on the vector pipe, in uniform control flow; operands are L1 tiles of the op's
    static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tneg(dst, a)`

    Lowers to `pto.tneg` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tnot(dst: Any, a: Any) -> Any:
    """`dst = ~a` per element (bitwise).

    Semantics: `dst = ~a` per element (bitwise). Element types: i32, i64. Executed once per
    block on the vector pipe, in uniform control flow; operands are L1 tiles of the op's static
    shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tnot(dst, a)`

    Lowers to `pto.tnot` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def texp(dst: Any, a: Any) -> Any:
    """`dst = exp(a)` per element, evaluated in float64 and rounded once (as `pto.exp`).

    Semantics: `dst = exp(a)` per element, evaluated in float64 and rounded once (as `pto.exp`).
    Element types: f32, f16, bf16. Executed once per block on the vector pipe, in uniform
    control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.texp(dst, a)`

    Lowers to `pto.texp` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tlog(dst: Any, a: Any) -> Any:
    """`dst = log(a)` per element, evaluated in float64 and rounded once (as `pto.log`).

    Semantics: `dst = log(a)` per element, evaluated in float64 and rounded once (as `pto.log`).
    Element types: f32, f16, bf16. Executed once per block on the vector pipe, in uniform
    control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tlog(dst, a)`

    Lowers to `pto.tlog` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tsqrt(dst: Any, a: Any) -> Any:
    """`dst = sqrt(a)` per element, correctly rounded.

    Semantics: `dst = sqrt(a)` per element, correctly rounded. Element types: f32, f16, bf16.
    Executed once per block on the vector pipe, in uniform control flow; operands are L1 tiles
    of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tsqrt(dst, a)`

    Lowers to `pto.tsqrt` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trsqrt(dst: Any, a: Any) -> Any:
    """`dst = 1 / sqrt(a)` per element, evaluated in float64 and rounded once (as `pto.rsqrt`).

    Semantics: `dst = 1 / sqrt(a)` per element, evaluated in float64 and rounded once (as
    `pto.rsqrt`). Element types: f32, f16, bf16. Executed once per block on the vector pipe, in
    uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trsqrt(dst, a)`

    Lowers to `pto.trsqrt` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trecip(dst: Any, a: Any) -> Any:
    """`dst = 1 / a` per element, correctly rounded.

    Semantics: `dst = 1 / a` per element, correctly rounded. Element types: f32, f16, bf16.
    Executed once per block on the vector pipe, in uniform control flow; operands are L1 tiles
    of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.trecip(dst, a)`

    Lowers to `pto.trecip` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trelu(dst: Any, a: Any) -> Any:
    """`dst = max(a, 0)` per element (NaN stays NaN, -0 gives +0 for floats).

    Semantics: `dst = max(a, 0)` per element (NaN stays NaN, -0 gives +0 for floats). Element
    types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe, in uniform
    control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trelu(dst, a)`

    Lowers to `pto.trelu` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tadds(dst: Any, a: Any, s: Any) -> Any:
    """`dst = a + s` per element, `s` a uniform value of the tile's type.

    Semantics: `dst = a + s` per element, `s` a uniform value of the tile's type. Element types:
    f32, f16, bf16, i32, i64. Executed once per block on the vector pipe, in uniform control
    flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tadds(dst, a, s)`

    Lowers to `pto.tadds` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tsubs(dst: Any, a: Any, s: Any) -> Any:
    """`dst = a - s` per element, `s` a uniform value.

    Semantics: `dst = a - s` per element, `s` a uniform value. Element types: f32, f16, bf16,
    i32, i64. Executed once per block on the vector pipe, in uniform control flow; operands are
    L1 tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tsubs(dst, a, s)`

    Lowers to `pto.tsubs` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tmuls(dst: Any, a: Any, s: Any) -> Any:
    """`dst = a * s` per element, `s` a uniform value.

    Semantics: `dst = a * s` per element, `s` a uniform value. Element types: f32, f16, bf16,
    i32, i64. Executed once per block on the vector pipe, in uniform control flow; operands are
    L1 tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tmuls(dst, a, s)`

    Lowers to `pto.tmuls` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tdivs(dst: Any, a: Any, s: Any) -> Any:
    """`dst = a / s` per element, correctly rounded, `s` a uniform value.

    Semantics: `dst = a / s` per element, correctly rounded, `s` a uniform value. Element types:
    f32, f16, bf16. Executed once per block on the vector pipe, in uniform control flow;
    operands are L1 tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tdivs(dst, a, s)`

    Lowers to `pto.tdivs` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tmins(dst: Any, a: Any, s: Any) -> Any:
    """`dst = min(a, s)` per element, as `tmin`.

    Semantics: `dst = min(a, s)` per element, as `tmin`. Element types: f32, f16, bf16, i32,
    i64. Executed once per block on the vector pipe, in uniform control flow; operands are L1
    tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tmins(dst, a, s)`

    Lowers to `pto.tmins` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tmaxs(dst: Any, a: Any, s: Any) -> Any:
    """`dst = max(a, s)` per element, as `tmax`.

    Semantics: `dst = max(a, s)` per element, as `tmax`. Element types: f32, f16, bf16, i32,
    i64. Executed once per block on the vector pipe, in uniform control flow; operands are L1
    tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tmaxs(dst, a, s)`

    Lowers to `pto.tmaxs` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def taxpy(dst: Any, a: Any, s: Any) -> Any:
    """`dst = s * a + dst` per element.

    Semantics: `dst = s * a + dst` per element; floats as `pto.fma` (rounded once). Element
    types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe, in uniform
    control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.taxpy(dst, a, s)`

    Lowers to `pto.taxpy` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def texpands(dst: Any, s: Any) -> Any:
    """`dst = s` for every element (a fill with a uniform value).

    Semantics: `dst = s` for every element (a fill with a uniform value). Element types: f32,
    f16, bf16, i32, i64. Executed once per block on the vector pipe, in uniform control flow;
    operands are L1 tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.texpands(dst, s)`

    Lowers to `pto.texpands` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcmp(mask: Any, a: Any, b: Any, op: Any) -> Any:
    """`mask = a op b` per element, 1 where it holds, else 0.

    Semantics: `mask = a op b` per element, 1 where it holds, else 0; `op` is one of eq ne lt le
    gt ge (floats: ordered, so NaN compares false except with ne). Element types: f32, f16,
    bf16, i32, i64. Executed once per block on the vector pipe, in uniform control flow;
    operands are L1 tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tcmp(mask, a, b, "lt")`

    Lowers to `pto.tcmp` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcmps(mask: Any, a: Any, s: Any, op: Any) -> Any:
    """`mask = a op s` per element against a uniform value, as `tcmp`.

    Semantics: `mask = a op s` per element against a uniform value, as `tcmp`. Element types:
    f32, f16, bf16, i32, i64. Executed once per block on the vector pipe, in uniform control
    flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcmps(mask, a, s, "lt")`

    Lowers to `pto.tcmps` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tsel(dst: Any, mask: Any, a: Any, b: Any) -> Any:
    """`dst = mask != 0 ? a : b` per element.

    Semantics: `dst = mask != 0 ? a : b` per element. Element types: f32, f16, bf16, i32, i64.
    Executed once per block on the vector pipe, in uniform control flow; operands are L1 tiles
    of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tsel(dst, mask, a, b)`

    Lowers to `pto.tsel` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcvt(dst: Any, a: Any, rounding: Any='rne') -> Any:
    """`dst = convert(a)` per element to the destination's element type, rounded once with
    `rounding`: rne (nearest even), rz (toward zero), rp (toward +inf), rm (toward -inf).

    Semantics: `dst = convert(a)` per element to the destination's element type, rounded once
    with `rounding`: rne (nearest even), rz (toward zero), rp (toward +inf), rm (toward -inf);
    float to int saturates to the int's range (NaN gives 0). Element types: f32, f16, bf16, i32,
    i64. Executed once per block on the vector pipe, in uniform control flow; operands are L1
    tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tcvt(dst, a, rounding="rz")`

    Lowers to `pto.tcvt` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowsum(dst: Any, a: Any) -> Any:
    """`dst[r] = ` the sum, accumulated in the tile's type in a fixed order (pairwise:
    docs/language.md#tile-vector-instructions) of row r of `a`.

    Semantics: `dst[r] = ` the sum, accumulated in the tile's type in a fixed order (pairwise:
    docs/language.md#tile-vector-instructions) of row r of `a`; `dst` is a rows x 1 tile.
    Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe, in
    uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trowsum(dst, a)`

    Lowers to `pto.trowsum` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolsum(dst: Any, a: Any) -> Any:
    """`dst[c] = ` the sum, accumulated in the tile's type in a fixed order (pairwise:
    docs/language.md#tile-vector-instructions) of column c of `a`.

    Semantics: `dst[c] = ` the sum, accumulated in the tile's type in a fixed order (pairwise:
    docs/language.md#tile-vector-instructions) of column c of `a`; `dst` is a 1 x cols tile.
    Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe, in
    uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolsum(dst, a)`

    Lowers to `pto.tcolsum` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowmax(dst: Any, a: Any) -> Any:
    """`dst[r] = ` the maximum (as `tmax`: NaN if any is NaN) of row r of `a`.

    Semantics: `dst[r] = ` the maximum (as `tmax`: NaN if any is NaN) of row r of `a`; `dst` is
    a rows x 1 tile. Element types: f32, f16, bf16, i32, i64. Executed once per block on the
    vector pipe, in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trowmax(dst, a)`

    Lowers to `pto.trowmax` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolmax(dst: Any, a: Any) -> Any:
    """`dst[c] = ` the maximum (as `tmax`: NaN if any is NaN) of column c of `a`.

    Semantics: `dst[c] = ` the maximum (as `tmax`: NaN if any is NaN) of column c of `a`; `dst`
    is a 1 x cols tile. Element types: f32, f16, bf16, i32, i64. Executed once per block on the
    vector pipe, in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolmax(dst, a)`

    Lowers to `pto.tcolmax` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowmin(dst: Any, a: Any) -> Any:
    """`dst[r] = ` the minimum (as `tmin`: NaN if any is NaN) of row r of `a`.

    Semantics: `dst[r] = ` the minimum (as `tmin`: NaN if any is NaN) of row r of `a`; `dst` is
    a rows x 1 tile. Element types: f32, f16, bf16, i32, i64. Executed once per block on the
    vector pipe, in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trowmin(dst, a)`

    Lowers to `pto.trowmin` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolmin(dst: Any, a: Any) -> Any:
    """`dst[c] = ` the minimum (as `tmin`: NaN if any is NaN) of column c of `a`.

    Semantics: `dst[c] = ` the minimum (as `tmin`: NaN if any is NaN) of column c of `a`; `dst`
    is a 1 x cols tile. Element types: f32, f16, bf16, i32, i64. Executed once per block on the
    vector pipe, in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolmin(dst, a)`

    Lowers to `pto.tcolmin` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowargmax(dst: Any, a: Any) -> Any:
    """`dst[r] = ` the index (int32) of the first maximum (NaN counts as the maximum) of row r of
    `a`.

    Semantics: `dst[r] = ` the index (int32) of the first maximum (NaN counts as the maximum) of
    row r of `a`; `dst` is a rows x 1 tile. Element types: f32, f16, bf16, i32, i64. Executed
    once per block on the vector pipe, in uniform control flow; operands are L1 tiles of the
    op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.trowargmax(dst, a)`

    Lowers to `pto.trowargmax` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolargmax(dst: Any, a: Any) -> Any:
    """`dst[c] = ` the index (int32) of the first maximum (NaN counts as the maximum) of column c
    of `a`.

    Semantics: `dst[c] = ` the index (int32) of the first maximum (NaN counts as the maximum) of
    column c of `a`; `dst` is a 1 x cols tile. Element types: f32, f16, bf16, i32, i64. Executed
    once per block on the vector pipe, in uniform control flow; operands are L1 tiles of the
    op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolargmax(dst, a)`

    Lowers to `pto.tcolargmax` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowargmin(dst: Any, a: Any) -> Any:
    """`dst[r] = ` the index (int32) of the first minimum (NaN counts as the minimum) of row r of
    `a`.

    Semantics: `dst[r] = ` the index (int32) of the first minimum (NaN counts as the minimum) of
    row r of `a`; `dst` is a rows x 1 tile. Element types: f32, f16, bf16, i32, i64. Executed
    once per block on the vector pipe, in uniform control flow; operands are L1 tiles of the
    op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.trowargmin(dst, a)`

    Lowers to `pto.trowargmin` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolargmin(dst: Any, a: Any) -> Any:
    """`dst[c] = ` the index (int32) of the first minimum (NaN counts as the minimum) of column c
    of `a`.

    Semantics: `dst[c] = ` the index (int32) of the first minimum (NaN counts as the minimum) of
    column c of `a`; `dst` is a 1 x cols tile. Element types: f32, f16, bf16, i32, i64. Executed
    once per block on the vector pipe, in uniform control flow; operands are L1 tiles of the
    op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolargmin(dst, a)`

    Lowers to `pto.tcolargmin` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowexpand(dst: Any, v: Any) -> Any:
    """`dst[r, c] = v[r]`: a rows x 1 tile broadcast along each row.

    Semantics: `dst[r, c] = v[r]`: a rows x 1 tile broadcast along each row. Element types: f32,
    f16, bf16, i32, i64. Executed once per block on the vector pipe, in uniform control flow;
    operands are L1 tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.trowexpand(dst, v)`

    Lowers to `pto.trowexpand` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolexpand(dst: Any, v: Any) -> Any:
    """`dst[r, c] = v[c]`: a 1 x cols tile broadcast down each column.

    Semantics: `dst[r, c] = v[c]`: a 1 x cols tile broadcast down each column. Element types:
    f32, f16, bf16, i32, i64. Executed once per block on the vector pipe, in uniform control
    flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolexpand(dst, v)`

    Lowers to `pto.tcolexpand` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowexpandadd(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = a + v[r]`, rounded once: `v` a rows x 1 tile broadcast along each row.

    Semantics: `dst[r, c] = a + v[r]`, rounded once: `v` a rows x 1 tile broadcast along each
    row. Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe, in
    uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trowexpandadd(dst, a, v)`

    Lowers to `pto.trowexpandadd` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolexpandadd(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = a + v[c]`, rounded once: `v` a 1 x cols tile broadcast down each column.

    Semantics: `dst[r, c] = a + v[c]`, rounded once: `v` a 1 x cols tile broadcast down each
    column. Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe,
    in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolexpandadd(dst, a, v)`

    Lowers to `pto.tcolexpandadd` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowexpandsub(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = a - v[r]`, rounded once: `v` a rows x 1 tile broadcast along each row.

    Semantics: `dst[r, c] = a - v[r]`, rounded once: `v` a rows x 1 tile broadcast along each
    row. Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe, in
    uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trowexpandsub(dst, a, v)`

    Lowers to `pto.trowexpandsub` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolexpandsub(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = a - v[c]`, rounded once: `v` a 1 x cols tile broadcast down each column.

    Semantics: `dst[r, c] = a - v[c]`, rounded once: `v` a 1 x cols tile broadcast down each
    column. Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe,
    in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolexpandsub(dst, a, v)`

    Lowers to `pto.tcolexpandsub` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowexpandmul(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = a * v[r]`, rounded once: `v` a rows x 1 tile broadcast along each row.

    Semantics: `dst[r, c] = a * v[r]`, rounded once: `v` a rows x 1 tile broadcast along each
    row. Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe, in
    uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trowexpandmul(dst, a, v)`

    Lowers to `pto.trowexpandmul` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolexpandmul(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = a * v[c]`, rounded once: `v` a 1 x cols tile broadcast down each column.

    Semantics: `dst[r, c] = a * v[c]`, rounded once: `v` a 1 x cols tile broadcast down each
    column. Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe,
    in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolexpandmul(dst, a, v)`

    Lowers to `pto.tcolexpandmul` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowexpanddiv(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = a / v[r]`, rounded once: `v` a rows x 1 tile broadcast along each row.

    Semantics: `dst[r, c] = a / v[r]`, rounded once: `v` a rows x 1 tile broadcast along each
    row. Element types: f32, f16, bf16. Executed once per block on the vector pipe, in uniform
    control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trowexpanddiv(dst, a, v)`

    Lowers to `pto.trowexpanddiv` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolexpanddiv(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = a / v[c]`, rounded once: `v` a 1 x cols tile broadcast down each column.

    Semantics: `dst[r, c] = a / v[c]`, rounded once: `v` a 1 x cols tile broadcast down each
    column. Element types: f32, f16, bf16. Executed once per block on the vector pipe, in
    uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolexpanddiv(dst, a, v)`

    Lowers to `pto.tcolexpanddiv` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowexpandmax(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = max(a, v[r])`, rounded once: `v` a rows x 1 tile broadcast along each row.

    Semantics: `dst[r, c] = max(a, v[r])`, rounded once: `v` a rows x 1 tile broadcast along
    each row. Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector
    pipe, in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trowexpandmax(dst, a, v)`

    Lowers to `pto.trowexpandmax` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolexpandmax(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = max(a, v[c])`, rounded once: `v` a 1 x cols tile broadcast down each column.

    Semantics: `dst[r, c] = max(a, v[c])`, rounded once: `v` a 1 x cols tile broadcast down each
    column. Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe,
    in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolexpandmax(dst, a, v)`

    Lowers to `pto.tcolexpandmax` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowexpandmin(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = min(a, v[r])`, rounded once: `v` a rows x 1 tile broadcast along each row.

    Semantics: `dst[r, c] = min(a, v[r])`, rounded once: `v` a rows x 1 tile broadcast along
    each row. Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector
    pipe, in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trowexpandmin(dst, a, v)`

    Lowers to `pto.trowexpandmin` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolexpandmin(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = min(a, v[c])`, rounded once: `v` a 1 x cols tile broadcast down each column.

    Semantics: `dst[r, c] = min(a, v[c])`, rounded once: `v` a 1 x cols tile broadcast down each
    column. Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe,
    in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolexpandmin(dst, a, v)`

    Lowers to `pto.tcolexpandmin` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def trowexpandexpdif(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = exp(a - v[r])` (`a - v` rounded to the tile's type, then exp evaluated in
    float64 and rounded once): `v` a rows x 1 tile broadcast along each row.

    Semantics: `dst[r, c] = exp(a - v[r])` (`a - v` rounded to the tile's type, then exp
    evaluated in float64 and rounded once): `v` a rows x 1 tile broadcast along each row.
    Element types: f32, f16, bf16. Executed once per block on the vector pipe, in uniform
    control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.trowexpandexpdif(dst, a, v)`

    Lowers to `pto.trowexpandexpdif` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tcolexpandexpdif(dst: Any, a: Any, v: Any) -> Any:
    """`dst[r, c] = exp(a - v[c])` (`a - v` rounded to the tile's type, then exp evaluated in
    float64 and rounded once): `v` a 1 x cols tile broadcast down each column.

    Semantics: `dst[r, c] = exp(a - v[c])` (`a - v` rounded to the tile's type, then exp
    evaluated in float64 and rounded once): `v` a 1 x cols tile broadcast down each column.
    Element types: f32, f16, bf16. Executed once per block on the vector pipe, in uniform
    control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.tcolexpandexpdif(dst, a, v)`

    Lowers to `pto.tcolexpandexpdif` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def tci(dst: Any, start: Any) -> Any:
    """`dst[i] = start + i` over the row-major flattened tile (integers wrap).

    Semantics: `dst[i] = start + i` over the row-major flattened tile (integers wrap). Element
    types: i32, i64. Executed once per block on the vector pipe, in uniform control flow;
    operands are L1 tiles of the op's static shape (docs/language.md#tile-vector-instructions).

    Python: `pto.tci(dst, start)`

    Lowers to `pto.tci` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def ttrans(dst: Any, a: Any) -> Any:
    """`dst[c, r] = a[r, c]`: `dst` is the cols x rows transpose (it must not overlap `a`).

    Semantics: `dst[c, r] = a[r, c]`: `dst` is the cols x rows transpose (it must not overlap
    `a`). Element types: f32, f16, bf16, i32, i64. Executed once per block on the vector pipe,
    in uniform control flow; operands are L1 tiles of the op's static shape
    (docs/language.md#tile-vector-instructions).

    Python: `pto.ttrans(dst, a)`

    Lowers to `pto.ttrans` (docs/isa.md).

    Only valid inside a @pto.kernel function.
    """
    ...

def exp(x: Any) -> Any:
    """Exponential per lane (`math.exp`): floats, evaluated in float64 and rounded once to the
    operand type (within 1 ulp).

    Only valid inside a @pto.kernel function.
    """
    ...

def log(x: Any) -> Any:
    """Natural logarithm per lane (`math.log`): floats, evaluated in float64 and rounded once
    (within 1 ulp).

    Only valid inside a @pto.kernel function.
    """
    ...

def sqrt(x: Any) -> Any:
    """Square root per lane (`math.sqrt`): floats, correctly rounded; a negative operand gives NaN.

    Only valid inside a @pto.kernel function.
    """
    ...

def rsqrt(x: Any) -> Any:
    """Reciprocal square root `1 / sqrt(x)` per lane (`math.rsqrt`): floats, evaluated in float64
    and rounded once (within 1 ulp).

    Only valid inside a @pto.kernel function.
    """
    ...

def tanh(x: Any) -> Any:
    """Hyperbolic tangent per lane (`math.tanh`): floats, evaluated in float64 and rounded once
    (within 1 ulp).

    Only valid inside a @pto.kernel function.
    """
    ...

def select(cond: Any, a: Any, b: Any) -> Any:
    """`a` where `cond` holds, else `b`, per lane (`arith.select`); Python numbers take the other
    operand's type.

    Only valid inside a @pto.kernel function.
    """
    ...

def cast(x: Any, dtype: Any) -> Any:
    """Convert `x` to `dtype` per lane (`arith` casts): floats round to nearest even, float to int
    truncates toward zero.

    Only valid inside a @pto.kernel function.
    """
    ...

def reduce(v: Any, op: Any='sum', scope: Any='warp') -> Any:
    """Reduce `v` across the lanes of a warp or of a block (`op`: "sum", "prod", "max", "min", or
    for ints "and", "or", "xor"; `scope`: "warp" or "block") in a documented fixed tree, lowered
    to ordinary loads, stores and barriers on a scratch buffer (pypto/frontend/collectives.py);
    every lane gets the result.

    Only valid inside a @pto.kernel function.
    """
    ...

def reduce_arg(v: Any, op: Any, scope: Any='warp') -> Any:
    """`(value, index)` of the largest (`op="max"`) or smallest ("min") `v` across the lanes of a
    warp or block, to every lane: the index is the lane in the warp (`scope="warp"`) or the
    linear local id (`"block"`), int32; ties go to the lowest index, a NaN wins (as np.argmax);
    inactive lanes never win (docs/language.md#collectives).

    Only valid inside a @pto.kernel function.
    """
    ...

def alloc_tile(rows: Any, cols: Any, dtype: Any=float32) -> Any:
    """Allocate a block-shared L1 tile of `rows x cols` elements, row-major: a `pto.alloc_local` of
    `rows * cols` elements with `shape(rows, cols)` (docs/isa.md), which the tile vector
    instructions (`pto.tadd`, `pto.trowsum`, ...) take their shape from; copies, `mma` and lane
    code use it as any L1 buffer (`t + r * cols + c`).

    Only valid inside a @pto.kernel function.
    """
    ...

__all__ = ['get_global_id', 'get_local_id', 'get_block_id', 'get_block_dim', 'get_grid_dim', 'get_warp_id', 'get_lane_id', 'load', 'store', 'fma', 'atomic_add', 'sigmoid', 'alloc_local', 'async_load', 'async_store', 'wait', 'wait_all', 'fill', 'mma', 'barrier', 'barrier_block', 'shfl', 'shfl_up', 'shfl_down', 'shfl_xor', 'ballot', 'vote_any', 'vote_all', 'pipeline', 'printf', 'tadd', 'tsub', 'tmul', 'tdiv', 'tmin', 'tmax', 'tand', 'tor', 'txor', 'tshl', 'tshr', 'tabs', 'tneg', 'tnot', 'texp', 'tlog', 'tsqrt', 'trsqrt', 'trecip', 'trelu', 'tadds', 'tsubs', 'tmuls', 'tdivs', 'tmins', 'tmaxs', 'taxpy', 'texpands', 'tcmp', 'tcmps', 'tsel', 'tcvt', 'trowsum', 'tcolsum', 'trowmax', 'tcolmax', 'trowmin', 'tcolmin', 'trowargmax', 'tcolargmax', 'trowargmin', 'tcolargmin', 'trowexpand', 'tcolexpand', 'trowexpandadd', 'tcolexpandadd', 'trowexpandsub', 'tcolexpandsub', 'trowexpandmul', 'tcolexpandmul', 'trowexpanddiv', 'tcolexpanddiv', 'trowexpandmax', 'tcolexpandmax', 'trowexpandmin', 'tcolexpandmin', 'trowexpandexpdif', 'tcolexpandexpdif', 'tci', 'ttrans', 'exp', 'log', 'sqrt', 'rsqrt', 'tanh', 'select', 'cast', 'reduce', 'reduce_arg', 'alloc_tile', 'constexpr', 'static_range']
