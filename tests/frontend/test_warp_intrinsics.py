"""Warp shuffles and votes (docs/language.md#warp-shuffles-and-votes) against a NumPy reference of
CUDA's semantics, written here lane by lane from the CUDA / PTX definitions (never from the
interpreter's code): every value type, whole and partial warps, 1-D and 2-D blocks, uniform and
per-lane lane operands (out of range included), every execution mode (grid, batch / block with
L1, warp schedules); the divergence errors (compile time, with location; run time, naming the
lane); the cost model's per-kind latency from the target file; the debugger; the native
backend's refusal."""

from __future__ import annotations

import inspect
import tomllib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import func

import pypto as pto
import pypto.debug as dbg
from pypto.backend.interpreter import Executable
from pypto.errors import BarrierError, CompileError, DeadlockError
from pypto.ir import make_context
from pypto.tools.parsing import parse_module

WARP = 32
MODES = ("idx", "up", "down", "xor")


# the reference: CUDA's __shfl*_sync / __ballot_sync / __any_sync / __all_sync, lane by lane ------


def warps(n_blocks: int, block_lanes: int):
    """(first launch lane, lane count) of every warp: 32 consecutive linear local ids of a block,
    the last warp of a block partial when its lane count is not a multiple of 32."""
    for b in range(n_blocks):
        for w0 in range(0, block_lanes, WARP):
            yield b * block_lanes + w0, min(WARP, block_lanes - w0)


def ref_shuffle(mode: str, v: np.ndarray, k: np.ndarray, n_blocks: int, block_lanes: int
                ) -> np.ndarray:
    """Lane l of a warp reads lane j of its warp: idx j = k, up l - k, down l + k, xor l ^ k,
    with k's low 5 bits (PTX `shfl`: `b[4:0]`); a lane whose j is not a lane of the warp keeps
    its own value (CUDA: "lanes past the edge are unchanged")."""
    out = v.copy()
    for first, width in warps(n_blocks, block_lanes):
        for lane in range(width):
            kk = int(k[first + lane]) & 31
            j = {"idx": kk, "up": lane - kk, "down": lane + kk, "xor": lane ^ kk}[mode]
            if 0 <= j < width:
                out[first + lane] = v[first + j]
    return out


def ref_votes(p: np.ndarray, n_blocks: int, block_lanes: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ballot = np.zeros(p.size, np.int32)
    any_ = np.zeros(p.size, bool)
    all_ = np.zeros(p.size, bool)
    for first, width in warps(n_blocks, block_lanes):
        bits = sum(1 << lane for lane in range(width) if p[first + lane])
        ballot[first:first + width] = np.uint32(bits).view(np.int32)
        any_[first:first + width] = p[first:first + width].any()
        all_[first:first + width] = p[first:first + width].all()
    return ballot, any_, all_


# the kernels ---------------------------------------------------------------------------------


def _linear() -> int:
    """Not run: documents the linear lane index the kernels compute."""


@pto.kernel
def shuffles(x, k, o_idx, o_up, o_down, o_xor):
    bx = pto.get_block_dim(0)
    lanes = bx * pto.get_block_dim(1)
    i = pto.get_block_id() * lanes + pto.get_local_id(1) * bx + pto.get_local_id(0)
    v = x[i]
    s = k[i]
    o_idx[i] = pto.shfl(v, s)
    o_up[i] = pto.shfl_up(v, s)
    o_down[i] = pto.shfl_down(v, s)
    o_xor[i] = pto.shfl_xor(v, s)


@pto.kernel
def shuffles_by(x, o_idx, o_up, o_down, o_xor, s: pto.constexpr):
    i = pto.get_global_id()
    v = x[i]
    o_idx[i] = pto.shfl(v, s)
    o_up[i] = pto.shfl_up(v, s)
    o_down[i] = pto.shfl_down(v, s)
    o_xor[i] = pto.shfl_xor(v, s)


@pto.kernel
def shuffles_with_l1(x, k, o_idx, o_up, o_down, o_xor):
    buf = pto.alloc_local(1024, dtype=x.dtype)     # L1: batch / block / warp modes
    i = pto.get_global_id()
    t = pto.get_local_id()
    buf[t] = x[i]
    pto.barrier_block()
    v = buf[t]
    s = k[i]
    o_idx[i] = pto.shfl(v, s)
    o_up[i] = pto.shfl_up(v, s)
    o_down[i] = pto.shfl_down(v, s)
    o_xor[i] = pto.shfl_xor(v, s)


@pto.kernel
def votes(x, o_ballot, o_any, o_all):
    i = pto.get_global_id()
    p = x[i] > 0
    o_ballot[i] = pto.ballot(p)
    o_any[i] = pto.cast(pto.vote_any(p), pto.int32)
    o_all[i] = pto.cast(pto.vote_all(p), pto.int32)


DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int32, np.int64]


def values(dtype, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-2**31, 2**31, n).astype(dtype)
    v = (rng.standard_normal(n) * 100).astype(dtype)
    v[:: 7] = np.array(np.nan, dtype)  # special values move bit for bit
    v[1:: 11] = np.array(-0.0, dtype)
    v[2:: 13] = np.array(np.inf, dtype)
    return v


def operands(n: int, seed: int) -> np.ndarray:
    """Per-lane source lanes / deltas / masks, out of range included (negative, >= 32)."""
    return np.random.default_rng(seed).integers(-40, 70, n).astype(np.int32)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("grid, block", [(2, 64), (3, 48), (2, 20), (2, (16, 3)), (1, (8, 8))])
def test_shuffles_match_cuda_for_every_dtype_and_partial_warps(dtype, grid, block):
    bl = int(np.prod(block))
    n = grid * bl
    x, k = values(dtype, n, 1), operands(n, 2)
    outs = [np.zeros(n, dtype) for _ in MODES]
    shuffles[grid, block](x, k, *outs)
    pto.sync()
    for mode, out in zip(MODES, outs):
        assert np.array_equal(bits(out), bits(ref_shuffle(mode, x, k, grid, bl))), mode


@pytest.mark.parametrize("s", [0, 1, 3, 16, 31, 32, 33, -1, 100])
@pytest.mark.parametrize("block", [64, 48])
def test_uniform_lane_operand_taken_modulo_32(s, block):
    n = 2 * block
    x = values(np.float32, n, 3)
    outs = [np.zeros(n, np.float32) for _ in MODES]
    shuffles_by[2, block](x, *outs, s)
    pto.sync()
    k = np.full(n, s, np.int32)
    for mode, out in zip(MODES, outs):
        assert np.array_equal(bits(out), bits(ref_shuffle(mode, x, k, 2, block))), mode


@pytest.mark.parametrize("schedule", [None, "reverse"])
@pytest.mark.parametrize("block", [256, 96, 40])
def test_shuffles_in_block_batch_and_warp_modes(schedule, block):
    n = 4 * block
    x, k = values(np.int32, n, 4), operands(n, 5)
    outs = [np.zeros(n, np.int32) for _ in MODES]
    ck = pto.compile(shuffles_with_l1, args=(x, k, *outs), block=block, schedule=schedule)
    ck(4, block, (x, k, *outs))
    pto.sync()
    for mode, out in zip(MODES, outs):
        assert np.array_equal(out, ref_shuffle(mode, x, k, 4, block)), mode


def test_shuffle_of_bools():
    @pto.kernel
    def flags(x, o):
        i = pto.get_global_id()
        o[i] = pto.cast(pto.shfl_xor(x[i] > 0, 5), pto.int32)

    x = values(np.int32, 96, 6)
    o = np.zeros(96, np.int32)
    flags[1, 96](x, o)
    pto.sync()
    assert np.array_equal(o, ref_shuffle("xor", x > 0, np.full(96, 5), 1, 96).astype(np.int32))


@pytest.mark.parametrize("grid, block", [(2, 64), (3, 48), (1, 7), (2, 33)])
def test_votes_match_cuda_with_partial_warps(grid, block):
    n = grid * block
    x = values(np.int32, n, 7)
    x[:32] = 1  # a warp where every lane votes yes: ballot -1, all true
    if n > 64:
        x[32:64] = -1  # and one where none does
    outs = [np.zeros(n, np.int32) for _ in range(3)]
    votes[grid, block](x, *outs)
    pto.sync()
    ballot, any_, all_ = ref_votes(x > 0, grid, block)
    assert np.array_equal(outs[0], ballot)
    assert np.array_equal(outs[1], any_.astype(np.int32))
    assert np.array_equal(outs[2], all_.astype(np.int32))


WARP_SUM_SOURCE = """the CUDA tutorial's warp reduction"""


@pto.kernel
def warp_sum(x, out):
    v = x[pto.get_global_id()]
    for off in (16, 8, 4, 2, 1):                    # __shfl_down_sync(0xffffffff, v, off)
        v += pto.shfl_down(v, off)
    if pto.get_lane_id() == 0:
        out[pto.get_global_id() // 32] = v


def test_warp_reduction_with_shfl_down_is_the_tree_sum():
    x = np.random.default_rng(8).integers(-100, 100, 256).astype(np.float32)
    out = np.zeros(8, np.float32)
    warp_sum[2, 128](x, out)
    pto.sync()
    # lane 0 after the five steps: the exact integer sum (values small: no rounding)
    assert np.array_equal(out, x.reshape(8, 32).sum(axis=1))


# divergence ---------------------------------------------------------------------------------


def _line_of(fn, marker: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    return first + next(k for k, text in enumerate(lines) if marker in text)


@pto.kernel
def under_tail_test(x, o, n):
    i = pto.get_global_id()
    if i < n:
        v = x[i]
        o[i] = v + pto.shfl_down(v, 1)  # divergent


@pto.kernel
def in_divergent_loop(x, o):
    i = pto.get_global_id()
    v = x[i]
    while v > 1.0:
        v = pto.shfl_xor(v, 1) * 0.5  # divergent
    o[i] = v


@pto.kernel
def vote_under_data(x, o):
    i = pto.get_global_id()
    if x[i] > 0:
        o[i] = pto.ballot(True)  # divergent


@pytest.mark.parametrize("kernel, cond_marker", [
    (under_tail_test, "if i < n"), (in_divergent_loop, "while v > 1.0"),
    (vote_under_data, "if x[i] > 0")])
def test_warp_collective_under_warp_divergent_control_flow_is_a_compile_error(kernel,
                                                                              cond_marker):
    x = np.ones(64, np.float32)
    args = (x, np.zeros(64, np.int32 if kernel is vote_under_data else np.float32))
    if kernel is under_tail_test:
        args += (60,)
    with pytest.raises(BarrierError, match="warp divergence: pto.") as info:
        pto.compile(kernel, args=args, block=64)
    err = info.value
    assert err.line == _line_of(kernel, "# divergent")
    assert f":{_line_of(kernel, cond_marker)}:" in str(err)
    assert "compute the value under the condition" in str(err)


@pto.kernel
def warp_uniform_conditions(x, o, n):
    i = pto.get_global_id()
    v = x[i]
    if pto.get_warp_id() == 0:                       # the warp id: uniform in a warp
        v += pto.shfl_down(v, 16)
    if pto.get_block_id() < n:                       # block ids, parameters
        v += pto.shfl_xor(v, 1)
    if pto.vote_any(v > 100.0):                      # a vote's result
        v = pto.shfl(v, 0)
    o[i] = v


def test_warp_uniform_conditions_are_accepted():
    x = np.arange(128, dtype=np.float32)
    o = np.zeros(128, np.float32)
    warp_uniform_conditions[2, 64](x, o, 1)
    pto.sync()
    ref = x.copy()
    w0 = np.concatenate([np.arange(b * 64, b * 64 + 32) for b in range(2)])
    ref[w0] = ref_shuffle("down", ref, np.full(128, 16), 2, 64)[w0] + ref[w0]
    first = np.arange(64)
    ref[first] = ref[first] + ref_shuffle("xor", ref, np.full(128, 1), 2, 64)[first]
    for w in range(4):
        seg = slice(32 * w, 32 * w + 32)
        if (ref[seg] > 100.0).any():
            ref[seg] = ref[32 * w]
    assert np.array_equal(o, ref)


@pto.kernel
def on_warp_boundaries(x, o):
    t = pto.get_local_id()
    i = pto.get_global_id()
    v = x[i]
    if t < 32:                                       # warp 0 of a 1-D block
        v += pto.shfl_down(v, 1)
    if t >= 64:
        v += pto.shfl_up(v, 2)
    if t // 32 == 1:                                 # t // 32 is the warp id
        v = pto.shfl(v, 3)
    if (t >> 5) == 2:
        v = pto.shfl_xor(v, 4)
    if i <= 95:                                      # the global id: blocks of whole warps
        v = v + pto.cast(pto.ballot(v > 50.0), pto.float32)
    o[i] = v


def test_comparisons_of_the_local_id_on_warp_boundaries_are_warp_uniform():
    n = 256
    x = np.arange(n, dtype=np.float32)
    o = np.zeros(n, np.float32)
    on_warp_boundaries[2, 128](x, o)
    pto.sync()
    t, i = np.arange(n) % 128, np.arange(n)
    ref = x.copy()
    for cond, mode, k in ((t < 32, "down", 1), (t >= 64, "up", 2), (t // 32 == 1, "idx", 3),
                          ((t >> 5) == 2, "xor", 4)):
        moved = ref_shuffle(mode, ref, np.full(n, k), 2, 128)
        ref = np.where(cond, moved + ref if mode in ("down", "up") else moved, ref)
    ballot, _, _ = ref_votes(ref > 50.0, 2, 128)
    ref = np.where(i <= 95, ref + ballot.astype(np.float32), ref)
    assert np.array_equal(o, ref)


@pto.kernel
def splits_a_warp(x, o):
    t = pto.get_local_id()
    v = x[t]
    if t < 40:                                       # lanes 32..39 of warp 1 only
        v += pto.shfl_down(v, 1)  # divergent
    o[t] = v


@pytest.mark.parametrize("block", [64, (32, 2)])
def test_comparisons_that_split_a_warp_or_a_2d_block_are_rejected(block):
    x = np.zeros(64, np.float32)
    with pytest.raises(BarrierError, match="warp divergence") as info:
        pto.compile(splits_a_warp, args=(x, x.copy()), block=block)
    assert info.value.line == _line_of(splits_a_warp, "# divergent")


DIVERGENT_IR = """
func.func @k(%x: !pto.ptr<f32, global>, %o: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %p = pto.addptr %x, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %p : !pto.ptr<f32, global> -> f32
  %c5 = arith.constant 5 : i32
  %lane = pto.get_lane_id : i32
  %c = arith.cmpi slt, %lane, %c5 : i32
  scf.if %c {
    %one = arith.constant 1 : i32
    %d = pto.shfl_down %v, %one : f32
    %q = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    pto.store %d, %q : f32, !pto.ptr<f32, global>
  }
  func.return
}
"""


def test_divergent_shuffle_at_run_time_is_a_deadlock_naming_the_lane():
    """The interpreter's own check, for IR that skipped the static one."""
    module, _ = parse_module(make_context(), DIVERGENT_IR, "divergent.mlir")
    kernel = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    exe = Executable(kernel)
    x = pto.tensor(np.arange(64, dtype=np.float32))
    o = pto.tensor(np.zeros(64, np.float32))
    with pytest.raises(DeadlockError, match=r"pto.shfl_down is a warp collective but lane "
                                            r"\(5, 0, 0\) of block \(0, 0, 0\) did not reach it"):
        exe.run((1, 1, 1), (64, 1, 1), [x, o])


# frontend errors ----------------------------------------------------------------------------


@pto.kernel
def shuffles_a_pointer(x, o):
    i = pto.get_global_id()
    o[i] = pto.shfl(x, 1)


@pto.kernel
def float_delta(x, o):
    i = pto.get_global_id()
    o[i] = pto.shfl_down(x[i], 1.5)


@pto.kernel
def int64_mask(x, o):
    i = pto.get_global_id()
    o[i] = pto.shfl_xor(x[i], pto.cast(i, pto.int64))


@pto.kernel
def ballot_of_a_pointer(x, o):
    i = pto.get_global_id()
    o[i] = pto.cast(pto.ballot(x), pto.float32)


@pytest.mark.parametrize("kernel, message", [
    (shuffles_a_pointer, "pto.shfl moves a number or a bool"),
    (float_delta, "pto.shfl_down's delta must be an int32"),
    (int64_mask, "pto.shfl_xor's mask must be an int32.*pto.cast"),
    (ballot_of_a_pointer, "pto.ballot takes a condition"),
])
def test_frontend_errors(kernel, message):
    with pytest.raises(CompileError, match=message) as info:
        pto.compile(kernel, args=(np.zeros(64, np.float32), np.zeros(64, np.float32)), block=64)
    assert info.value.line == _line_of(kernel, "o[i] =")


# the cost model, the debugger, the native backend -------------------------------------------


TARGETS = Path(pto.__file__).parent / "backend" / "targets"


def _latency(target_file: str, model: str, kind: str) -> int:
    """The file's figure (the 910B file sits over the default one)."""
    files = ["default.toml"] + ([target_file] if target_file != "default.toml" else [])
    value = None
    for name in files:
        table = tomllib.loads((TARGETS / name).read_text())["cost"][model].get("latency", {})
        value = table.get(kind, value)
    assert value is not None
    return value


@pytest.mark.parametrize("model", ["table", "fused"])
@pytest.mark.parametrize("target, file", [(None, "default.toml"), ("ascend910b",
                                                                     "ascend910b.toml")])
def test_cost_per_kind_comes_from_the_target_file(model, target, file):
    x = np.arange(128, dtype=np.float32)
    prof = pto.profile(warp_sum, grid=1, block=128, args=(x, np.zeros(4, np.float32)),
                       model=model, target=target)
    breakdown = {k.kind: k for k in prof.cycle_breakdown()}
    assert breakdown["SHFL_DOWN"].latency == _latency(file, model, "SHFL_DOWN")
    assert breakdown["SHFL_DOWN"].count == 5  # the five steps, once per block
    assert breakdown["SHFL_DOWN"].pipe == "VECTOR"


def test_cost_follows_a_user_target_file(tmp_path):
    path = tmp_path / "slow_shuffles.toml"
    path.write_text('name = "slow-shuffles"\n[cost.table.latency]\nSHFL_DOWN = 50\n')
    x = np.arange(64, dtype=np.float32)
    prof = pto.profile(warp_sum, grid=1, block=64, args=(x, np.zeros(2, np.float32)),
                       model="table", target=str(path))
    assert prof.cycle_breakdown().latency("SHFL_DOWN") == 50


def test_debugger_steps_through_shuffles_and_votes(capsys):
    @pto.kernel
    def shown(x, o):
        i = pto.get_global_id()
        v = x[i]
        s = pto.shfl_down(v, 16)
        b = pto.ballot(v > 3.0)
        o[i] = s + pto.cast(b, pto.float32)

    x = np.arange(64, dtype=np.float32)
    ctx = dbg.debug_kernel(shown, args=(pto.tensor(x), pto.tensor(np.zeros(64, np.float32))),
                           block=64)
    ctx.step()
    capsys.readouterr()
    ctx.step()
    assert capsys.readouterr().out.startswith("[Lanes 0-63] SHFL_DOWN v, 16 -> s = [16, 17,")
    np.testing.assert_array_equal(ctx.value("s"), ref_shuffle("down", x, np.full(64, 16), 1, 64))
    ctx.step()
    assert "BALLOT v > 3.0 -> b" in capsys.readouterr().out
    ballot, _, _ = ref_votes(x > 3.0, 1, 64)
    np.testing.assert_array_equal(ctx.value("b"), ballot)


def test_native_backend_exchanges_warp_collectives_through_l1(tmp_path, monkeypatch):
    """docs/native.md#warp-shuffles-and-votes: the interpreter's bits."""
    monkeypatch.setenv("PYPTO_NATIVE_CACHE", str(tmp_path))
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    outs = []
    for backend in ("interpreter", "native"):
        out = np.zeros(2, np.float32)
        pto.launch(warp_sum, 1, 64, (x, out), backend=backend)
        pto.sync()
        outs.append(out)
    assert np.array_equal(outs[0].view(np.uint32), outs[1].view(np.uint32))
    np.testing.assert_allclose(outs[1], x.reshape(2, 32).sum(axis=1), rtol=1e-5)
