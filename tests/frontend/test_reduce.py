"""`pto.reduce` (docs/language.md#collectives): the documented fixed tree, computed with NumPy in the
same order and dtype, for f32 / f16 / int32, warp and block scope, with partial activity."""

import numpy as np
import pytest

import pypto as pto

IDENTITY = {"sum": lambda dt: dt.type(-0.0) if dt.kind == "f" else dt.type(0),
            "max": lambda dt: dt.type(-np.inf) if dt.kind == "f" else np.iinfo(dt).min,
            "min": lambda dt: dt.type(np.inf) if dt.kind == "f" else np.iinfo(dt).max}


def tree(values: np.ndarray, op: str) -> np.generic:
    """docs/language.md: x[i] = x[i] op x[i + s] for s = P/2 .. 1, i < s; result x[0]."""
    x = values.copy()
    s = len(x) // 2
    while s:
        a, b = x[:s], x[s:2 * s]
        if op == "sum":
            x[:s] = a + b
        elif op == "max":
            x[:s] = np.maximum(a, b)
        else:
            x[:s] = np.minimum(a, b)
        s //= 2
    return x[0]


def padded(values: np.ndarray, active: np.ndarray, size: int, op: str) -> np.ndarray:
    out = np.full(size, IDENTITY[op](values.dtype), dtype=values.dtype)
    out[:len(values)][active] = values[active]
    return out


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
        r = pto.reduce(pto.load(x + i), op=op, scope="block")
        pto.store(out + i, r)
    return block_reduce


WARP = {op: _warp_kernel(op) for op in ("sum", "max", "min")}
BLOCK = {op: _block_kernel(op) for op in ("sum", "max", "min")}


def _data(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(n) * 100).astype(dtype)
    return rng.integers(-2**30, 2**30, n).astype(dtype)   # sums wrap, as int32 does


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_warp_reduce_is_the_documented_tree_over_active_lanes(dtype, op):
    block, grid = 80, 2                  # the last warp of each block is partial
    n = block * grid
    x = _data(dtype, n, 3)
    keep = (np.random.default_rng(4).random(n) < 0.6).astype(np.int32)
    dx, dout, dkeep = (pto.alloc_tensor(a.nbytes, dtype=a.dtype) for a in
                       (x, np.zeros_like(x), keep))
    pto.memcpy_h2d(dx, x)
    pto.memcpy_h2d(dout, np.zeros_like(x))
    pto.memcpy_h2d(dkeep, keep)
    pto.launch(WARP[op], grid=grid, block=block, args=(dx, dout, dkeep))
    out = np.empty_like(x)
    pto.memcpy_d2h(out, dout)
    with np.errstate(over="ignore"):
        for b in range(grid):
            for w in range(0, block, 32):
                lo, hi = b * block + w, b * block + min(w + 32, block)
                active = keep[lo:hi] != 0
                want = tree(padded(x[lo:hi], active, 32, op), op)
                got = out[lo:hi][active]
                assert (got.view(np.uint8).reshape(len(got), -1) ==
                        np.array([want] * len(got), dtype=x.dtype).view(np.uint8)
                        .reshape(len(got), -1)).all(), (b, w, got, want)
                assert (out[lo:hi][~active] == 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("block", [64, 100])
def test_block_reduce_is_the_documented_tree(dtype, op, block):
    grid = 2
    n = grid * block
    x = _data(dtype, n, 5)
    dx, dout = pto.alloc_tensor(x.nbytes, dtype=x.dtype), pto.alloc_tensor(x.nbytes, dtype=x.dtype)
    pto.memcpy_h2d(dx, x)
    pto.launch(BLOCK[op], grid=grid, block=block, args=(dx, dout))
    out = np.empty_like(x)
    pto.memcpy_d2h(out, dout)
    size = 1 << (block - 1).bit_length()
    with np.errstate(over="ignore"):
        for b in range(grid):
            part = x[b * block:(b + 1) * block]
            want = tree(padded(part, np.ones(block, bool), size, op), op)
            np.testing.assert_array_equal(out[b * block:(b + 1) * block],
                                          np.full(block, want, dtype=x.dtype))


def test_reduce_in_every_schedule_and_pass_pipeline():
    from tests.frontend.test_simt_loops import FULL_PIPELINE

    x = _data(np.float32, 128, 9)
    want_block = tree(padded(x[:128], np.ones(128, bool), 128, "sum"), "sum")
    for options in ({"schedule": "reverse", "check_uninitialized": True},
                    {"schedule": "random:3", "race_check": True},
                    {"pipeline": FULL_PIPELINE, "validate": True}):
        dx, dout = pto.alloc_tensor(x.nbytes), pto.alloc_tensor(x.nbytes)
        pto.memcpy_h2d(dx, x)
        ck = pto.compile(BLOCK["sum"], args=(dx, dout), block=128, **options)
        ck(grid=1, block=128, args=(dx, dout))
        out = np.empty_like(x)
        pto.memcpy_d2h(out, dout)
        assert (out == want_block).all(), options


def test_reduce_lowers_to_ordinary_pto_ops():
    x = pto.alloc_tensor(64 * 4)
    ck = pto.compile(BLOCK["max"], args=(x, x), block=64)
    text = ck.mlir
    assert "pto.alloc_local" in text and "pto.fill" in text
    assert text.count("pto.barrier_block") == 8       # store, 6 tree levels, final read
    assert "arith.maximumf" in text


def test_block_reduce_under_divergent_control_is_a_barrier_error():
    @pto.kernel
    def bad(x, out):
        i = pto.get_global_id()
        if i < 10:
            pto.store(out + i, pto.reduce(pto.load(x + i), scope="block"))

    t = pto.alloc_tensor(64 * 4)
    with pytest.raises(pto.BarrierError, match="lane-dependent control flow") as info:
        pto.compile(bad, args=(t, t), block=64)
    assert "pto.reduce" in str(info.value)


@pytest.mark.parametrize("call, message", [
    ("pto.reduce(v, op='mean')", "op must be one of"),
    ("pto.reduce(v, scope='grid')", "scope must be 'warp' or 'block'"),
    ("pto.reduce(v > 0.0)", "reduces a number"),
])
def test_reduce_argument_errors(call, message, tmp_path):
    src = tmp_path / "k.py"
    src.write_text("import pypto as pto\n\n@pto.kernel\ndef k(x):\n    v = pto.load(x)\n"
                   f"    pto.store(x, {call})\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("k_reduce_errors", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(pto.CompileError, match=message) as info:
        pto.compile(mod.k, args=(pto.alloc_tensor(4),), block=32)
    assert "k.py:6:" in str(info.value)


@pto.kernel
def reduce_in_a_divergent_loop(out):
    lane = pto.get_lane_id()
    k = 0
    acc = 0
    while k < lane % 5:              # lanes leave after lane % 5 iterations
        acc += pto.reduce(lane + k, scope="warp")   # only the lanes still in the loop count
        k += 1
    pto.store(out + pto.get_global_id(), acc)


def test_warp_reduce_in_a_loop_whose_lanes_leave_early():
    (out,) = [np.zeros(64, np.int32)]
    d = pto.alloc_tensor(out.nbytes, dtype=np.int32)
    pto.launch(reduce_in_a_divergent_loop, grid=1, block=64, args=(d,))
    pto.memcpy_d2h(out, d)
    want = []
    for g in range(64):
        lane = g % 32
        acc = 0
        for k in range(lane % 5):
            acc += sum(l + k for l in range(32) if k < l % 5)
        want.append(acc)
    assert out.tolist() == want
