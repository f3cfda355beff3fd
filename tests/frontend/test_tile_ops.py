"""Tile vector instructions through the whole stack: the frontend (pto.alloc_tile, the
builtins, their errors), every pipeline level, batch and warp execution, lane code addressing a
tile as a pointer, translation validation, the debugger and the profile. Results are checked
against NumPy (docs/language.md#tile-vector-instructions)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
import pypto.debug as dbg
from tests.conftest import run_kernel


@pto.kernel
def row_softmax(X, Y, cols: pto.constexpr, rows: pto.constexpr):
    x = pto.alloc_tile(rows, cols)
    m = pto.alloc_tile(rows, 1)
    b = pto.get_block_id()
    pto.wait(pto.async_load(x, X + b * rows * cols, rows * cols * 4))
    pto.trowmax(m, x)
    pto.trowexpandexpdif(x, x, m)
    pto.trowsum(m, x)
    pto.trowexpanddiv(x, x, m)
    pto.store(Y + b * rows * cols, x, rows * cols * 4)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("pipeline", [None, "canonicalize,cse", "convert-pto-to-npu"])
def test_softmax_rows_on_many_blocks_matches_numpy(pipeline):
    x = np.random.default_rng(0).standard_normal((8 * 16, 64)).astype(np.float32) * 3
    y = np.zeros_like(x)
    options = {} if pipeline is None else {"pipeline": pipeline}
    out = run_kernel(row_softmax, 8, 64, (x, y, 64, 16), **options)[1]
    np.testing.assert_allclose(out, _softmax(x), rtol=2e-6, atol=1e-7)


def test_warp_schedule_and_validation_give_the_same_bits():
    x = np.random.default_rng(1).standard_normal((2 * 8, 32)).astype(np.float32)
    plain = run_kernel(row_softmax, 2, 64, (x, np.zeros_like(x), 32, 8))[1]
    warp = run_kernel(row_softmax, 2, 64, (x, np.zeros_like(x), 32, 8), schedule="random:3")[1]
    valid = run_kernel(row_softmax, 2, 64, (x, np.zeros_like(x), 32, 8), validate=True)[1]
    assert np.array_equal(plain, warp) and np.array_equal(plain, valid)
    np.testing.assert_allclose(plain, _softmax(x), rtol=2e-6, atol=1e-7)


@pto.kernel
def lanes_and_tiles(Y):
    t = pto.alloc_tile(4, 8)
    u = pto.alloc_tile(8, 4)
    i = pto.get_local_id()
    pto.store(t + (i // 8) * 8 + i % 8, pto.cast(i, pto.float32))   # lanes address the tile
    pto.barrier_block()                                              # before the vector unit
    pto.ttrans(u, t)
    pto.tmuls(u, u, 2.0)
    pto.barrier_block()
    pto.store(Y + i, pto.load(u + i))                                # and read it back


def test_lane_code_addresses_a_tile_as_a_pointer():
    y = run_kernel(lanes_and_tiles, 1, 32, (np.zeros(32, np.float32),))[0]
    want = (np.arange(32, dtype=np.float32).reshape(4, 8).T * 2).reshape(-1)
    assert np.array_equal(y, want)


@pto.kernel
def tiles_in_a_uniform_branch(Y, n, flag):
    a = pto.alloc_tile(4, 8, dtype=pto.int32)
    if flag > 0:                          # uniform: every lane takes the same way
        pto.tci(a, n)
    else:
        pto.texpands(a, n)
    pto.store(Y, a, 4 * 8 * 4)


def test_tile_ops_in_uniform_control_flow_and_integers():
    y = run_kernel(tiles_in_a_uniform_branch, 1, 32, (np.zeros(32, np.int32), 5, 1))[0]
    assert np.array_equal(y, np.arange(5, 37, dtype=np.int32))
    y = run_kernel(tiles_in_a_uniform_branch, 1, 32, (np.zeros(32, np.int32), 5, 0))[0]
    assert np.array_equal(y, np.full(32, 5, np.int32))


@pto.kernel
def tile_mma_and_copy(A, C):
    a = pto.alloc_tile(16, 16)
    c = pto.alloc_tile(16, 16)
    pto.wait(pto.async_load(a, A, 16 * 16 * 4))
    pto.texpands(c, 0.0)
    pto.mma(c, a, a, 16, 16, 16)          # mma and copies accept tiles
    pto.trelu(c, c)
    pto.store(C, c, 16 * 16 * 4)


def test_copies_and_mma_accept_tiles():
    a = np.random.default_rng(2).standard_normal((16, 16)).astype(np.float32)
    c = run_kernel(tile_mma_and_copy, 1, 32, (a, np.zeros((16, 16), np.float32)))[1]
    np.testing.assert_allclose(c, np.maximum(a @ a, 0), rtol=1e-5, atol=1e-5)


def _compile_error(src_kernel, *args):
    with pytest.raises(pto.CompileError) as info:
        run_kernel(src_kernel, 1, 32, args)
    return str(info.value)


@pto.kernel
def not_a_tile(Y):
    buf = pto.alloc_local(32)
    t = pto.alloc_tile(4, 8)
    pto.tadd(t, buf, t)


@pto.kernel
def wrong_shape(Y):
    t = pto.alloc_tile(4, 8)
    s = pto.alloc_tile(8, 1)
    pto.trowsum(s, t)


@pto.kernel
def wrong_dtype(Y):
    t = pto.alloc_tile(4, 8, dtype=pto.int32)
    pto.texp(t, t)


@pto.kernel
def lane_write_then_tile_read(Y):
    t = pto.alloc_tile(4, 8)
    i = pto.get_local_id()
    pto.store(t + i, 1.0)
    pto.tadds(t, t, 1.0)


def test_errors_say_what_where_and_the_fix():
    msg = _compile_error(not_a_tile, np.zeros(1, np.float32))
    assert "pto.tadd's 'a' must be a tile of pto.alloc_tile(rows, cols, dtype)" in msg
    assert "test_tile_ops.py" in msg
    msg = _compile_error(wrong_shape, np.zeros(1, np.float32))
    assert "pto.trowsum's 'dst' is a 8 x 1 tile, but this instruction on a 4 x 8 tile needs " \
           "4 x 1" in msg
    msg = _compile_error(wrong_dtype, np.zeros(1, np.float32))
    assert "pto.texp works on f32, f16, bf16 tiles, got i32" in msg
    with pytest.raises(pto.PtoError) as info:
        run_kernel(lane_write_then_tile_read, 1, 32, (np.zeros(1, np.float32),))
    assert "put pto.barrier_block() between them" in str(info.value)


def test_debugger_steps_tile_instructions_and_shows_a_tile_as_a_matrix(capsys):
    x = np.arange(8 * 32, dtype=np.float32).reshape(8, 32) / 64
    d_x, d_y = pto.tensor(x), pto.empty(x.shape, np.float32)
    ctx = dbg.debug_kernel(row_softmax, args=(d_x, d_y, 32, 8), grid=1, block=32,
                           pipeline="canonicalize,cse")
    kinds = []
    while not ctx.finished:
        kinds.append(ctx.kind if hasattr(ctx, "kind") else None)
        ctx.step()
        if "TROWMAX" in capsys.readouterr().out:
            m = ctx.inspect_tile("m")
            assert m.shape == (8, 1)
            np.testing.assert_array_equal(m[:, 0], x.max(axis=1))
            t = ctx.inspect_tile("x")
            assert t.shape == (8, 32)
            np.testing.assert_array_equal(t, x)
            break
    else:
        pytest.fail("the debugger never stepped over TROWMAX")


def test_profile_costs_each_tile_instruction_per_repeat_from_the_target():
    """head + cycles_per_repeat x ceil(bytes / 256) - 1 of the instruction's class, the
    numbers read from the target file (docs/cost-model.md#tile-vector-instructions)."""
    from pypto.backend.cost_model.params import ModelParams
    from pypto.backend.targets import resolve_target

    params = ModelParams.of(resolve_target("ascend910b"), "fused")
    x = np.zeros((16, 64), np.float32)
    d_x, d_y = pto.tensor(x), pto.empty(x.shape, np.float32)
    prof = pto.profile(row_softmax, grid=(1, 1, 1), block=(64, 1, 1), args=(d_x, d_y, 64, 16),
                       target="ascend910b")
    costs = {k.kind: k for k in prof.cycle_breakdown()}
    repeats = -(-16 * 64 * 4 // params.vector_repeat_bytes)
    for kind, cls in (("TROWMAX", "reduction"), ("TROWSUM", "reduction"),
                      ("TROWEXPANDEXPDIF", "transcendental"),
                      ("TROWEXPANDDIV", "transcendental")):
        head, slope = params.vector_classes[cls]
        assert costs[kind].pipe == "VECTOR"
        assert costs[kind].busy == head + slope * repeats - 1, kind
    kinds = {e.inst: e for e in prof.timeline}
    assert {"TROWMAX", "TROWSUM"} <= set(kinds)
    assert kinds["TROWSUM"].end - kinds["TROWSUM"].cycle == costs["TROWSUM"].busy
    assert "test_tile_ops.py" in kinds["TROWSUM"].source


@pto.kernel
def reads_an_unwritten_tile(Y):
    t = pto.alloc_tile(4, 8)
    u = pto.alloc_tile(4, 8)
    pto.tneg(u, t)
    pto.store(Y, u, 128)


@pto.kernel
def reads_a_tile_in_flight(X, Y):
    t = pto.alloc_tile(4, 8)
    tok = pto.async_load(t, X, 128)
    pto.tneg(t, t)                          # the copy may still be writing t
    pto.wait(tok)
    pto.store(Y, t, 128)


def test_run_time_checks_of_tile_operands():
    with pytest.raises(pto.PtoError, match="uninitialised L1"):
        run_kernel(reads_an_unwritten_tile, 2, 32, (np.zeros(32, np.float32),),
                   check_uninitialized=True)
    with pytest.raises(pto.PtoError, match="pto.wait"):
        run_kernel(reads_a_tile_in_flight, 1, 32,
                   (np.zeros(32, np.float32), np.zeros(32, np.float32)))
