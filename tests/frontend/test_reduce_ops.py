"""`pto.reduce`'s prod and bitwise ops and `pto.reduce_arg` (docs/language.md#collectives):
float prod against the documented fixed tree computed with NumPy in the same order and dtype,
ints and arg against plain NumPy; warp and block scope, masked lanes, ties, NaN, and through
every pass level, the debugger and the cost model (tests/frontend/everywhere.py)."""

import importlib.util

import numpy as np
import pytest

import pypto as pto
from tests.frontend.everywhere import run_everywhere

NUMPY = {"prod": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or,
         "xor": np.bitwise_xor}


def identity(op: str, dt: np.dtype):
    return dt.type({"prod": 1, "and": -1, "or": 0, "xor": 0}[op])


def tree(values: np.ndarray, op: str) -> np.generic:
    """docs/language.md: x[i] = x[i] op x[i + s] for s = P/2 .. 1, i < s; result x[0]."""
    x = values.copy()
    s = len(x) // 2
    while s:
        x[:s] = NUMPY[op](x[:s], x[s:2 * s])
        s //= 2
    return x[0]


def reference(values: np.ndarray, op: str, size: int) -> np.generic:
    """The tree over `size` slots (identity past the values) for floats; plain NumPy for ints
    (wrapping int products and bitwise ops do not depend on the order)."""
    if values.dtype.kind == "f":
        padded = np.full(size, identity(op, values.dtype), values.dtype)
        padded[:len(values)] = values
        return tree(padded, op)
    return NUMPY[op].reduce(values, dtype=values.dtype) if len(values) else \
        identity(op, values.dtype)


def data(dtype, n: int, seed: int, op: str = "prod") -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(0.6, 1.6, n).astype(dtype)
    if op == "prod":
        return rng.integers(-7, 8, n).astype(dtype)       # products wrap, as the int type does
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _warp_kernel(op):
    @pto.kernel
    def warp_reduce(x, out, keep):
        i = pto.get_global_id()
        v = pto.load(x + i)
        if pto.load(keep + i) != 0:          # lane-dependent: inactive lanes do not contribute
            pto.store(out + i, pto.reduce(v, op=op))
    return warp_reduce


def _block_kernel(op):
    @pto.kernel
    def block_reduce(x, out):
        i = pto.get_global_id()
        pto.store(out + i, pto.reduce(pto.load(x + i), op=op, scope="block"))
    return block_reduce


OPS = ("prod", "and", "or", "xor")
WARP = {op: _warp_kernel(op) for op in OPS}
BLOCK = {op: _block_kernel(op) for op in OPS}
CASES = [("prod", np.float32), ("prod", np.float16), ("prod", np.int32), ("prod", np.int64)] + \
    [(op, dt) for op in ("and", "or", "xor") for dt in (np.int32, np.int64)]


def _launch(kernel, grid, block, arrays):
    device = [pto.tensor(a) for a in arrays]
    pto.launch(kernel, grid=grid, block=block, args=device)
    out = [np.empty_like(a) for a in arrays]
    for h, d in zip(out, device):
        pto.memcpy_d2h(h, d)
    return out


@pytest.mark.parametrize("op, dtype", CASES)
def test_warp_reduce_over_active_lanes(op, dtype):
    block, grid = 80, 2                  # the last warp of each block is partial
    n = block * grid
    x = data(dtype, n, 3, op)
    keep = (np.random.default_rng(4).random(n) < 0.6).astype(np.int32)
    _, out, _ = _launch(WARP[op], grid, block, [x, np.zeros_like(x), keep])
    with np.errstate(over="ignore"):
        for b in range(grid):
            for w in range(0, block, 32):
                lo, hi = b * block + w, b * block + min(w + 32, block)
                active = keep[lo:hi] != 0
                lanes = np.where(active, x[lo:hi], identity(op, x.dtype))
                want = reference(lanes, op, 32)
                got = out[lo:hi][active]
                assert got.tobytes() == np.full(len(got), want, x.dtype).tobytes(), (b, w)
                assert (out[lo:hi][~active] == 0).all()


@pytest.mark.parametrize("op, dtype", CASES)
@pytest.mark.parametrize("block", [64, 100])
def test_block_reduce(op, dtype, block):
    grid = 2
    x = data(dtype, grid * block, 5, op)
    _, out = _launch(BLOCK[op], grid, block, [x, np.zeros_like(x)])
    size = 1 << (block - 1).bit_length()
    with np.errstate(over="ignore"):
        for b in range(grid):
            want = reference(x[b * block:(b + 1) * block], op, size)
            got = out[b * block:(b + 1) * block]
            assert got.tobytes() == np.full(block, want, x.dtype).tobytes(), b


def test_float_prod_is_the_tree_not_the_sequential_product():
    # the tree's rounding differs from a left-to-right product on these values: the test
    # would catch a lowering that multiplied in another order
    x = data(np.float16, 64, 12)
    seq = np.float16(1)
    for v in x:
        seq = np.float16(seq * v)
    want = reference(x, "prod", 64)
    assert want != seq
    _, out = _launch(BLOCK["prod"], 1, 64, [x, np.zeros_like(x)])
    assert (out == want).all()


def _arg_warp_kernel(op):
    @pto.kernel
    def warp_arg(x, out, index, keep):
        i = pto.get_global_id()
        v = pto.load(x + i)
        if pto.load(keep + i) != 0:
            r, k = pto.reduce_arg(v, op)
            pto.store(out + i, r)
            pto.store(index + i, k)
    return warp_arg


def _arg_block_kernel(op):
    @pto.kernel
    def block_arg(x, out, index):
        i = pto.get_global_id()
        r, k = pto.reduce_arg(pto.load(x + i), op, scope="block")
        pto.store(out + i, r)
        pto.store(index + i, k)
    return block_arg


ARG_WARP = {op: _arg_warp_kernel(op) for op in ("max", "min")}
ARG_BLOCK = {op: _arg_block_kernel(op) for op in ("max", "min")}
ARG_DTYPES = [np.float32, np.float16, np.int32, np.int64]


def tied(dtype, n: int, seed: int) -> np.ndarray:
    """Few distinct values, so the extreme is held by several lanes (ties)."""
    return np.random.default_rng(seed).integers(-3, 4, n).astype(dtype)


def arg_reference(values: np.ndarray, op: str) -> int:
    return int(np.argmax(values) if op == "max" else np.argmin(values))


@pytest.mark.parametrize("dtype", ARG_DTYPES)
@pytest.mark.parametrize("op", ["max", "min"])
def test_warp_reduce_arg_over_active_lanes_lowest_index_wins(dtype, op):
    block, grid = 80, 2
    n = block * grid
    x = tied(dtype, n, 7)
    keep = (np.random.default_rng(8).random(n) < 0.5).astype(np.int32)
    keep[::32] = 0                                    # lane 0 of each warp never takes part
    _, out, index, _ = _launch(ARG_WARP[op], grid, block,
                               [x, np.zeros_like(x), np.full(n, -1, np.int32), keep])
    for b in range(grid):
        for w in range(0, block, 32):
            lo, hi = b * block + w, b * block + min(w + 32, block)
            active = np.flatnonzero(keep[lo:hi])
            lane = int(active[arg_reference(x[lo:hi][active], op)])   # lane in the warp
            assert (index[lo:hi][active] == lane).all(), (b, w)
            assert (out[lo:hi][active] == x[lo + lane]).all()
            assert (index[lo:hi][keep[lo:hi] == 0] == -1).all()


@pytest.mark.parametrize("dtype", ARG_DTYPES)
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("block", [64, 100])
def test_block_reduce_arg_is_the_linear_local_id(dtype, op, block):
    grid = 2
    x = tied(dtype, grid * block, 9)
    if np.dtype(dtype).kind != "f" and op == "max":
        x[block:] = np.iinfo(dtype).min               # every lane ties at the identity value
    _, out, index = _launch(ARG_BLOCK[op], grid, block,
                            [x, np.zeros_like(x), np.zeros(grid * block, np.int32)])
    for b in range(grid):
        part = x[b * block:(b + 1) * block]
        k = arg_reference(part, op)
        assert (index[b * block:(b + 1) * block] == k).all(), b
        assert (out[b * block:(b + 1) * block] == part[k]).all()


@pytest.mark.parametrize("op", ["max", "min"])
def test_reduce_arg_nan_wins_as_in_numpy_and_infinities_tie_to_active_lanes(op):
    x = np.full(64, np.inf if op == "min" else -np.inf, np.float32)
    x[40], x[50] = np.nan, np.nan
    _, out, index = _launch(ARG_BLOCK[op], 1, 64, [x, np.zeros_like(x), np.zeros(64, np.int32)])
    assert (index == arg_reference(x, op)).all() and arg_reference(x, op) == 40
    assert np.isnan(out).all()
    x[40] = x[50] = x[0]
    _, out, index = _launch(ARG_BLOCK[op], 1, 48, [x[:48], np.zeros(48, np.float32),
                                                   np.zeros(48, np.int32)])
    assert (index == 0).all() and (out == x[0]).all()   # padded slots 48..63 never win


@pto.kernel
def everything(x, prod_out, arg_out, index_out, xor_out):
    i = pto.get_global_id()
    v = pto.load(x + i)
    if i % 3 != 1:
        pto.store(prod_out + i, pto.reduce(v, op="prod"))
    m, k = pto.reduce_arg(v, "max", scope="block")
    pto.store(arg_out + i, m)
    pto.store(index_out + i, k)
    pto.store(xor_out + i, pto.reduce(pto.cast(v * 4.0, pto.int32), op="xor", scope="block"))


def test_reduce_and_reduce_arg_everywhere():
    n = 96
    x = np.round(data(np.float32, n, 13) * 4) / 4                     # ties for the max
    outs = run_everywhere(everything, n, (x, np.zeros(n, np.float32), np.zeros(n, np.float32),
                                          np.zeros(n, np.int32), np.zeros(n, np.int32)))
    _, prod, arg, index, xor = outs
    for w in range(0, n, 32):
        lanes = np.arange(w, w + 32)
        active = lanes % 3 != 1
        want = reference(np.where(active, x[w:w + 32], np.float32(1)), "prod", 32)
        assert (prod[w:w + 32][active] == want).all()
        assert (prod[w:w + 32][~active] == 0).all()
    k = int(np.argmax(x))
    assert (index == k).all() and (arg == x[k]).all()
    assert (xor == np.bitwise_xor.reduce((x * 4).astype(np.int32))).all()


def test_reduce_arg_lowers_to_ordinary_pto_ops():
    t = pto.tensor(np.zeros(64, np.float32))
    ti = pto.tensor(np.zeros(64, np.int32))
    text = pto.compile(ARG_BLOCK["min"], args=(t, t, ti), block=64).mlir
    assert text.count("pto.alloc_local") == 2 and "pto.fill" in text
    assert text.count("pto.barrier_block") == 8       # store, 6 tree levels, final read
    assert "arith.select" in text


def _compile_error(call: str, tmp_path):
    src = tmp_path / "k.py"
    src.write_text("import numpy as np\nimport pypto as pto\n@pto.kernel\ndef k(x):\n    v = pto.load(x)\n"
                   f"    r = {call}\n")
    spec = importlib.util.spec_from_file_location("k_reduce_ops_errors", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(pto.CompileError) as info:
        pto.compile(mod.k, args=(pto.tensor(np.zeros(1, np.float32)),), block=32)
    assert "k.py:6:" in str(info.value)
    return str(info.value)


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise_reduce_of_a_float_names_the_fix(op, tmp_path):
    message = _compile_error(f"pto.reduce(v, op='{op}')", tmp_path)
    assert f"op '{op}' is bitwise" in message and "float32" in message
    assert "pto.cast(v, pto.int32)" in message


@pytest.mark.parametrize("call, expected", [
    ("pto.reduce_arg(v, 'sum')", "op must be 'max' or 'min'"),
    ("pto.reduce_arg(v, 'max', scope='grid')", "scope must be 'warp' or 'block'"),
    ("pto.reduce_arg(v > 0.0, 'max')", "reduces a number"),
])
def test_reduce_arg_argument_errors(call, expected, tmp_path):
    assert expected in _compile_error(call, tmp_path)


def test_numpy_argmax_and_sum_in_a_kernel_point_to_the_reductions(tmp_path):
    assert 'pto.reduce_arg(v, "max", scope="block")' in _compile_error("np.argmax(v)", tmp_path)
    assert 'pto.reduce(v, "sum", scope="block")' in _compile_error("np.sum(v)", tmp_path)
