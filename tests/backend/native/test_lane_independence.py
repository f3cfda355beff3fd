"""HBM tensors read and written, written by several ops or in loops, compiled natively when the
lane-independence analysis proves (at launch) that no two lanes share an element
(pypto/backend/native/lane_independence.py, docs/native.md#lane-independence): bit for bit
against the interpreter and against NumPy; kernels whose lanes really share elements, and
launches the proof does not pass, are refused (at compile time or at launch), never run wrong.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import NativeUnsupported
from tests.backend.native.helpers import both, same_bits
from tests.kernels import zoo
from tests.kernels.test_saxpy import fused_ref, saxpy_grid_stride
from tests.kernels.test_softmax import BLOCK, emulated_sum, softmax_rows
from tests.kernels.test_stencil import BX, BY, jacobi5, jacobi5_tiled, jacobi_ref
from tests.kernels.test_transpose import ROWS, TILE, transpose
from tests.kernels.test_users_zoo import scale_grid_stride

NEWLY_COMPILED = [
    "saxpy grid-stride", "int_ops (9 integer ops)", "softmax_rows", "layernorm_rows",
    "jacobi5 (HBM)", "jacobi5_tiled (L1)", "transpose (L1 tile)", "axpy masked tail (2^k+77)",
    "scale grid-stride (k*stride)",
]


@pytest.mark.parametrize("name", NEWLY_COMPILED)
def test_zoo_kernel_bit_exact_and_numpy(name):
    """Each zoo kernel the analysis frees: the interpreter's bytes and the zoo's NumPy check."""
    case = next(c for c in zoo.cases("tiny") if c.name == name)
    arrays = case.inputs(np.random.default_rng(11))
    results = []
    for backend in ("interpreter", "native"):
        copies = {k: v.copy() for k, v in arrays.items()}
        pto.launch(case.kernel, case.grid, case.block,
                   (*case.lead, *copies.values(), *case.scalars(copies)), backend=backend)
        results.append(copies)
    assert same_bits(list(results[0].values()), list(results[1].values()))
    case.check(results[1], arrays)


@pytest.mark.parametrize("kernel", [jacobi5, jacobi5_tiled], ids=["hbm", "l1"])
@pytest.mark.parametrize("shape", [(8, 16), (33, 47), (1, 1), (2, 100), (100, 3)])
def test_jacobi_edge_shapes(kernel, shape):
    """Partial edge blocks: `y * w + x` is injective only with the guard `x < w`."""
    h, w = shape
    u = np.random.default_rng(h * 100 + w).random(shape, dtype=np.float32)
    grid = ((w + BX - 1) // BX, (h + BY - 1) // BY)
    interp, native = both(kernel, grid, (BX, BY), [u, np.zeros_like(u)], (h, w))
    assert same_bits(interp, native)
    np.testing.assert_allclose(native[1], jacobi_ref(u), rtol=1e-6)


@pytest.mark.parametrize("shape", [(32, 32), (37, 71), (1, 5), (100, 33), (3, 200)])
def test_transpose_shapes(shape):
    rows, cols = shape
    a = np.random.default_rng(rows + cols).random(shape, dtype=np.float32)
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    interp, native = both(transpose, grid, (TILE, ROWS), [a, np.zeros((cols, rows), a.dtype)],
                          (rows, cols))
    assert same_bits(interp, native)
    np.testing.assert_array_equal(native[1], a.T)


@pytest.mark.parametrize("shape", [(1, 1), (4, 100), (2, 300), (3, 129)])
def test_softmax_rows_shapes(shape):
    rows, ncols = shape
    x = (np.random.default_rng(ncols).standard_normal(shape) * 4).astype(np.float32)
    outs = [np.full(shape, np.nan, np.float32), np.zeros(rows, np.float32),
            np.zeros(rows, np.float32)]
    interp, native = both(softmax_rows, rows, BLOCK, [x, *outs], (ncols,))
    assert same_bits(interp, native)
    e = np.exp((x - x.max(axis=1)[:, None]).astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(native[1], e / emulated_sum(e)[:, None])


def test_grid_stride_loops_several_blocks():
    """`i + k * stride` with stride = all lanes of the launch: each lane's elements are
    {gid + k * stride}, disjoint between lanes; the carried `i = i + stride` too."""
    n = 3000
    rng = np.random.default_rng(5)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    grid, block = 3, 64
    iters = -(-n // (grid * block))
    ys = []
    for backend in ("interpreter", "native"):
        ys.append(y.copy())
        pto.launch(saxpy_grid_stride, grid, block, (1.5, x, ys[-1], n, iters), backend=backend)
    assert same_bits(ys[:1], ys[1:])
    np.testing.assert_array_equal(ys[1], fused_ref(1.5, x, y))
    out_i, out_n = both(scale_grid_stride, grid, block, [x, np.zeros(n, np.float32)],
                        (n, iters, 2.5))
    assert same_bits(out_i, out_n)
    np.testing.assert_array_equal(out_n[1], np.float32(2.5) * x)


def test_one_dimensional_indexing_refused_in_a_2d_launch():
    """saxpy grid-stride indexes by get_global_id(0): in a 2-D grid, lanes of different rows
    of blocks share elements. `native` refuses the launch; `auto` gives the interpreter's bits."""
    n = 500
    rng = np.random.default_rng(6)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    with pytest.raises(NativeUnsupported, match=r"differing only in get_block_id\(1\)"):
        pto.launch(saxpy_grid_stride, (2, 2), 64, (2.0, x, y.copy(), n, 4), backend="native")
    auto, oracle = y.copy(), y.copy()
    pto.launch(saxpy_grid_stride, (2, 2), 64, (2.0, x, auto, n, 4), backend="auto")
    pto.launch(saxpy_grid_stride, (2, 2), 64, (2.0, x, oracle, n, 4), backend="interpreter")
    assert same_bits([auto], [oracle])


def test_index_that_may_wrap_is_refused_at_launch():
    """`i + k * stride` with k up to 2^30 leaves int32: the forms are no longer the kernel's
    wrapping arithmetic, so the proof does not pass."""
    x = np.ones(64, np.float32)
    with pytest.raises(NativeUnsupported, match="wrap around its 32-bit type"):
        pto.launch(scale_grid_stride, 1, 64, (x, x.copy(), 64, 1 << 30, 2.0), backend="native")


@pto.kernel
def shift_up(out, n):
    """Lane i reads out[i] and writes out[i + 1]: lanes really communicate."""
    i = pto.get_global_id()
    if i + 1 < n:
        pto.store(out + i + 1, pto.load(out + i) + 1.0)


def test_lanes_that_communicate_are_refused():
    n = 300
    a = np.arange(n, dtype=np.float32)
    with pytest.raises(NativeUnsupported, match="two lanes may share an element") as err:
        pto.launch(shift_up, 2, 256, (a.copy(), n), backend="native")
    assert "test_lane_independence.py" in str(err.value)
    auto, oracle = a.copy(), a.copy()
    pto.launch(shift_up, 2, 256, (auto, n), backend="auto")
    pto.launch(shift_up, 2, 256, (oracle, n), backend="interpreter")
    assert same_bits([auto], [oracle])
    # lockstep (the interpreter's order): every lane loads before any lane stores
    expect = a.copy()
    expect[1:] = a[:-1] + 1
    np.testing.assert_array_equal(auto, expect)


@pto.kernel
def rows_of(out, s, m):
    """Lane i writes out[i * s + j], j < m, after reading it: independent iff s >= m."""
    i = pto.get_global_id()
    for j in range(m):
        pto.store(out + i * s + j, pto.load(out + i * s + j) * 3 + i * 1000 + j)


def test_run_time_condition_on_scalar_parameters():
    lanes = 64
    m = 5
    base = np.arange(lanes * m + 8, dtype=np.int32)
    # s == m: proven at launch, native, bit for bit and against NumPy
    interp, native = both(rows_of, 1, lanes, [base], (m, m))
    assert same_bits(interp, native)
    expect = base.copy()
    i, j = np.divmod(np.arange(lanes * m), m)
    expect[:lanes * m] = base[:lanes * m] * 3 + i * 1000 + j
    np.testing.assert_array_equal(native[0], expect)
    # s == m - 1: lane i's last element is lane i + 1's first: refused at this launch
    with pytest.raises(NativeUnsupported, match="stride 4 of get_local_id"):
        pto.launch(rows_of, 1, lanes, (base.copy(), m - 1, m), backend="native")
    auto, oracle = base.copy(), base.copy()
    pto.launch(rows_of, 1, lanes, (auto, m - 1, m), backend="auto")
    pto.launch(rows_of, 1, lanes, (oracle, m - 1, m), backend="interpreter")
    assert same_bits([auto], [oracle])
    # and the same compiled kernel is still proven with s == m afterwards
    again = base.copy()
    pto.launch(rows_of, 1, lanes, (again, m, m), backend="native")
    np.testing.assert_array_equal(again, expect)


@pto.kernel
def bump_at(idx, out, n):
    """out[idx[i]] += 1: the index is loaded, the analysis cannot follow it."""
    i = pto.get_global_id()
    if i < n:
        k = pto.load(idx + i)
        pto.store(out + k, pto.load(out + k) + 1)


def test_index_the_analysis_cannot_follow_makes_the_tensor_shared():
    """A loaded index: sharing is not disproved, so each write is a phase of its own (shared_hbm.py,
    docs/native.md#shared-hbm-elements): lockstep bits in one block, refused across blocks."""
    idx = np.array([0, 1, 1, 2], np.int32)
    out = np.zeros(4, np.int32)
    native = out.copy()
    pto.launch(bump_at, 1, 4, (idx, native, 4), backend="native")
    np.testing.assert_array_equal(native, [1, 1, 1, 0])  # lockstep: lanes 1, 2 store the same 1
    with pytest.raises(NativeUnsupported, match="only in one-block launches"):
        pto.launch(bump_at, 2, 2, (idx, out.copy(), 4), backend="native")
    auto = out.copy()
    pto.launch(bump_at, 2, 2, (idx, auto, 4), backend="auto")
    np.testing.assert_array_equal(auto, [1, 1, 1, 0])  # (the interpreter's vector: 4 lanes)


@pto.kernel
def plane(out, w, h):
    """out[y * w + x] under `y < h` only: rows overlap where x >= w."""
    x = pto.get_global_id(0)
    y = pto.get_global_id(1)
    if y < h:
        pto.store(out + y * w + x, pto.load(out + y * w + x) + 1)


def test_guards_decide_injectivity():
    """Without `x < w` the proof takes x over the whole grid: blocks of 16 columns fill a
    32-wide row, so w = 32 is proven and w = 20 (x up to 31 reaches the next row) refused."""
    h = 4
    proven = np.zeros(32 * h + 64, np.int32)
    interp, native = both(plane, (2, 1), (16, h), [proven], (32, h))
    assert same_bits(interp, native)
    expect = np.zeros_like(proven)
    expect[:32 * h] = 1
    np.testing.assert_array_equal(native[0], expect)
    with pytest.raises(NativeUnsupported, match="share an element"):
        pto.launch(plane, (2, 1), (16, h), (np.zeros(200, np.int32), 20, h), backend="native")


def test_block_level_stores_modelled():
    """The double-buffered softmax stores its rows from the pipelined loop and its epilogue:
    two block-level `tile_store` sites, one row block per block, proven disjoint (the kernel's
    copies in flight are tokens.py's business)."""
    from examples.softmax_tiles import softmax_tiles
    from pypto.backend.native.lane_independence import LaunchCheck, tensor_sites

    x = np.zeros((128, 64), np.float32)
    compiled = pto.compile(softmax_tiles, args=(x, x.copy(), 64, 8, 32), block=64)
    kernel = compiled.func
    y = kernel.body.block.args[1]
    sites = tensor_sites(kernel, y)
    assert len(sites) == 2 and all(s.block_level and s.write for s in sites)
    check = LaunchCheck(kernel, [y])
    assert check.refusal((4, 1, 1), (64, 1, 1), [None, None, 64, 8, 32]) is None


RANDOM_KERNEL = '''
import pypto as pto

@pto.kernel
def gen(out, n, s):
    x = pto.get_global_id(0)
    y = pto.get_global_id(1)
    for j in range({trips}):
        w = {a} * x + {a2} * y + {b} * j + 1500
        r = w + {d}
        if {guard}:
            pto.store(out + w, pto.load(out + r) * 3 + x + 7 * j)
'''


def _random_kernel(rng: np.random.Generator, tmp_path, index: int):
    pick = lambda options: options[int(rng.integers(len(options)))]  # noqa: E731
    source = RANDOM_KERNEL.format(
        trips=pick([1, 2, 3, 4]), a=pick(["1", "1", "2", "3", "-1", "-2", "s", "0"]),
        a2=pick(["0", "0", "1", "n", "s", "40", "-40", "512", "n * 8"]),
        b=pick(["0", "1", "2", "n", "s", "64", "128"]),
        d=pick(["0", "0", "0", "1", "-1", "s"]),
        guard=pick(["True", "x < n", "w < n + 1500", "x % 2 == 0", "j * 32 + x < n",
                    "x == 0", "y < 2"]))
    path = tmp_path / f"random_{index}.py"
    path.write_text(source)
    namespace: dict = {}
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102
    return namespace["gen"], source


def test_random_affine_kernels_never_differ(tmp_path):
    """Kernels whose lanes read and write one tensor at random affine indices (lane-private,
    strided, overlapping, 2-D, guarded): whenever the native backend runs one, it gives the
    interpreter's bits; the proof must accept some and refuse others."""
    rng = np.random.default_rng(29)
    ran = refused = 0
    for index in range(60):
        kernel, source = _random_kernel(rng, tmp_path, index)
        grid = (int(rng.integers(1, 4)), int(rng.integers(1, 3)))
        block = (int(rng.choice([8, 16, 32])), 1)
        n, s = int(rng.integers(1, 100)), int(rng.integers(1, 40))
        base = np.random.default_rng(index).integers(-100, 100, 4096).astype(np.int32)
        oracle = base.copy()
        pto.launch(kernel, grid, block, (oracle, n, s), backend="interpreter")
        native = base.copy()
        try:
            pto.launch(kernel, grid, block, (native, n, s), backend="native")
        except NativeUnsupported:
            refused += 1
            continue
        assert same_bits([native], [oracle]), (source, grid, block, n, s)
        ran += 1
    assert ran >= 10 and refused >= 10, (ran, refused)


@pto.kernel
def strided_carry(x, y, last, n, iters):
    """A grid-stride loop counting from 2 in steps of 3, its carried index also read after the
    loop: interchanged, the carried value stays (a spill slot)."""
    g = pto.get_global_id()
    i = g
    stride = pto.get_grid_dim() * pto.get_block_dim()
    for k in range(2, 2 + 3 * iters, 3):
        if i < n:
            pto.store(y + i, pto.load(x + i) * 2 + k)
        i = i + stride
    pto.store(last + g, i)


def test_interchange_keeps_carried_values_and_counts_from_lb():
    from pypto.backend.native.interchange import interchange_strided_loops
    from pypto.backend.native.support import analyse
    from pypto.dialects import pto as dialect

    n, grid, block = 1000, 2, 64
    lanes = grid * block
    iters = -(-n // lanes)
    x = np.arange(n, dtype=np.int32)
    interp, native = both(strided_carry, grid, block,
                          [x, np.zeros(n, np.int32), np.zeros(lanes, np.int32)], (n, iters))
    assert same_bits(interp, native)
    k_of = 2 + 3 * (np.arange(n) // lanes)
    np.testing.assert_array_equal(native[1], x * 2 + k_of)
    np.testing.assert_array_equal(native[2], np.arange(lanes) + iters * lanes)
    compiled = pto.compile(strided_carry, args=(x, x.copy(), x[:lanes].copy(), n, iters),
                           block=block)
    moved = interchange_strided_loops(compiled.func)
    assert moved is not compiled.func
    assert any(isinstance(op, dialect.BarrierBlockOp) for op in moved.walk())
    assert analyse(moved)[0] is None  # (so the launches above ran the interchanged copy)


def test_interchange_leaves_loops_over_nearby_elements_alone():
    """conv1d-like taps `x[i + t]` (counter coefficient 1): each lane's iterations are close
    together, the loop stays inside the lane; and saxpy grid-stride's carried index goes."""
    from pypto.backend.native.interchange import interchange_strided_loops
    from xdsl.dialects import scf

    x = np.zeros(4096, np.float32)
    taps = pto.compile(taps_sum, args=(x, x.copy(), 4000), block=256)
    assert interchange_strided_loops(taps.func) is taps.func
    gs = pto.compile(saxpy_grid_stride, args=(1.5, x, x.copy(), 4096, 2), block=256)
    moved = interchange_strided_loops(gs.func)
    loops = [op for op in moved.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 1 and not loops[0].iter_args and not loops[0].results


@pto.kernel
def taps_sum(x, y, n):
    i = pto.get_global_id()
    acc = 0.0
    for t in range(5):
        acc = acc + pto.load(x + i + t)
    pto.store(y + i, acc)
