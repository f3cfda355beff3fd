"""Async copies in flight across loop iterations, compiled natively (docs/native.md#collectives,
pypto/backend/native/tokens.py): the article's pipelined matmul with and without
`pto-double-buffer`'s slots, ping-pong buffers chosen by the iteration's parity, a slot index
computed from the counter — bit for bit against the interpreter and against NumPy. A kernel
that really touches a copy in flight is refused natively ("auto" runs the interpreter, which
raises its RaceError), never run to a wrong answer."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import NativeUnsupported
from tests.backend.native.helpers import same_bits
from tests.kernels.test_double_buffer import scale_double_buffered

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402

T = 256
NO_DOUBLE_BUFFER = "pto-allocate-l1,pto-verify-barriers"


def _tiled_reference(a: np.ndarray, b: np.ndarray, tile: tuple[int, int, int]) -> np.ndarray:
    """C = A @ B as the kernel sums it: per C tile, `C += A_k @ B_k` over the k tiles in
    float32 (docs/isa.md#ptomma: f16 operands widened), each product one NumPy matmul."""
    tm, tn, tk = tile
    (m, k), n = a.shape, b.shape[1]
    c = np.zeros((m, n), np.float32)
    for i in range(0, m, tm):
        for j in range(0, n, tn):
            acc = np.zeros((tm, tn), np.float32)
            for s in range(0, k, tk):
                acc = acc + (np.ascontiguousarray(a[i:i + tm, s:s + tk]).astype(np.float32) @
                             np.ascontiguousarray(b[s:s + tk, j:j + tn]).astype(np.float32))
            c[i:i + tm, j:j + tn] = acc
    return c


def _matmul(backend: str, a: np.ndarray, b: np.ndarray, tile: tuple[int, int, int],
            pipeline: str | None) -> np.ndarray:
    (m, k), n = a.shape, b.shape[1]
    tm, tn, tk = tile
    c = np.zeros((m, n), np.float32)
    args = (a, b, c, m, n, k, tm, tn, tk)
    options = {} if pipeline is None else {"pipeline": pipeline}
    compiled = pto.compile(matmul_tile, args=args, block=64, **options)
    pto.launch(compiled, (n // tn, m // tm), 64, args, backend=backend)
    return c


@pytest.mark.parametrize("pipeline", [None, NO_DOUBLE_BUFFER], ids=["double-buffered", "plain"])
@pytest.mark.parametrize("size,dtype,tile", [
    (128, np.float32, (64, 64, 32)),
    (128, np.float16, (32, 32, 32)),
    (256, np.float32, (64, 64, 64)),
    (256, np.float16, (64, 32, 32)),
    (512, np.float32, (64, 64, 64)),
    (512, np.float16, (128, 64, 32)),
])
def test_pipelined_matmul_natively_bit_exact(size, dtype, tile, pipeline):
    rng = np.random.default_rng(size + tile[2])
    a = rng.standard_normal((size, size)).astype(dtype)
    b = rng.standard_normal((size, size)).astype(dtype)
    interp = _matmul("interpreter", a, b, tile, pipeline)
    native = _matmul("native", a, b, tile, pipeline)
    assert same_bits([interp], [native])
    np.testing.assert_array_equal(native, _tiled_reference(a, b, tile))
    np.testing.assert_allclose(native, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-3, atol=1e-3)


def test_the_double_buffered_matmul_really_has_slots():
    """The case above compiles `pto-double-buffer`'s rewrite (two slots per tile, tokens carried
    by the loop), not a plain loop."""
    d = np.zeros((128, 128), np.float32)
    compiled = pto.compile(matmul_tile, args=(d, d, d, 128, 128, 128, 64, 64, 32), block=64)
    slotted = [op for op in compiled.func.walk() if op.name == "pto.alloc_local"
               and "pto.slots" in op.attributes]
    assert len(slotted) == 2


@pytest.mark.parametrize("ntiles,blocks", [(1, 1), (2, 3), (5, 2), (6, 1)])
def test_ping_pong_by_parity_natively_bit_exact(ntiles, blocks):
    x = np.random.default_rng(ntiles).standard_normal(blocks * ntiles * T).astype(np.float32)
    outs = []
    for backend in ("interpreter", "native"):
        y = np.zeros_like(x)
        pto.launch(scale_double_buffered, blocks, T, (x, y, ntiles, True), backend=backend)
        outs.append([y])
    assert same_bits(*outs)
    np.testing.assert_array_equal(outs[1][0], x * np.float32(3))


@pto.kernel
def slotted_copy(x, y, ntiles, WRONG: pto.constexpr):
    """Tile k+1 loads into slot (k + 1) % 2 of one buffer while slot k % 2 (waited for) is
    stored; WRONG stores the slot still loading instead."""
    base = pto.get_block_id() * ntiles * T
    buf = pto.alloc_local(2 * T)
    tok = pto.async_load(buf, x + base, T * 4)
    for k in range(ntiles):
        nxt = tok
        if k + 1 < ntiles:
            nxt = pto.async_load(buf + ((k + 1) % 2) * T, x + base + (k + 1) * T, T * 4)
        pto.wait(tok)
        slot = (k + 1) % 2 if WRONG else k % 2
        pto.store(y + base + k * T, buf + slot * T, T * 4)
        tok = nxt
    pto.wait_all()


@pytest.mark.parametrize("ntiles,blocks", [(1, 2), (4, 3), (7, 1)])
def test_slot_from_the_counter_natively_bit_exact(ntiles, blocks):
    x = np.random.default_rng(7).standard_normal(blocks * ntiles * T).astype(np.float32)
    outs = []
    for backend in ("interpreter", "native"):
        y = np.zeros_like(x)
        pto.launch(slotted_copy, blocks, 64, (x, y, ntiles, False), backend=backend)
        outs.append([y])
    assert same_bits(*outs)
    np.testing.assert_array_equal(outs[1][0], x)


def test_storing_the_slot_still_loading_raises_the_interpreters_error_natively(monkeypatch):
    """Compiled without the static verifier, the wrong slot reaches both backends: the proof
    sees the copy in flight, so the native backend compiles the check
    (pypto/backend/native/inflight.py) and raises the interpreter's RaceError — the same
    message, detected by compiled code itself with the replay off."""
    from pypto.backend.native import replay

    x = np.ones(3 * T, np.float32)
    args = (x, np.zeros_like(x), 3, True)
    compiled = pto.compile(slotted_copy, args=args, block=64, pipeline="pto-allocate-l1")
    messages = []
    for backend, replayed in (("interpreter", True), ("native", True), ("native", False),
                              ("auto", True)):
        monkeypatch.setattr(replay, "ENABLED", replayed)
        with pytest.raises(pto.RaceError, match="still in flight") as err:
            pto.launch(compiled, 1, 64, args, backend=backend)
        messages.append(str(err.value))
    assert len(set(messages)) == 1


@pto.kernel
def gather_while_loading(x, idx, y):
    """Each lane reads `buf[idx[tid]]` while the copy into the second half of `buf` is in
    flight: which element is data-dependent (the static verifier defers it to run time, and
    tokens.py's proof cannot clear it), a hazard exactly when some `idx[tid] >= T`."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(2 * T)
    first = pto.async_load(buf, x, T * 4)
    pto.wait(first)
    second = pto.async_load(buf + T, x + T, T * 4)
    v = pto.load(buf + pto.load(idx + tid))
    pto.wait(second)
    pto.store(y + tid, v + pto.load(buf + T + tid))


@pytest.fixture(scope="module")
def gather_kernel():
    x = np.arange(2 * T, dtype=np.float32)
    args = (x, np.zeros(T, np.int32), np.zeros(T, np.float32))
    return pto.compile(gather_while_loading, args=args, block=T, pipeline="pto-allocate-l1")


def test_a_data_dependent_read_of_a_copy_in_flight_is_checked_at_run_time(gather_kernel,
                                                                           monkeypatch):
    """The proof fails, so the check is compiled (pypto/backend/native/inflight.py): indices
    below T run natively bit for bit (against the interpreter and NumPy); one index at T
    raises the interpreter's RaceError — its message and location — detected by compiled
    code itself (replay off) and, replayed, the interpreter's own."""
    from pypto.backend.native import replay
    from pypto.backend.native.inflight import instrument

    assert instrument(gather_kernel.func) is not gather_kernel.func  # (hooks: proof fails)
    x = np.arange(2 * T, dtype=np.float32) * 0.5
    idx = np.random.default_rng(3).integers(0, T, T).astype(np.int32)
    outs = []
    for backend in ("interpreter", "native"):
        y = np.zeros(T, np.float32)
        pto.launch(gather_kernel, 1, T, (x, idx, y), backend=backend)
        outs.append([y])
    assert same_bits(*outs)
    np.testing.assert_array_equal(outs[1][0], x[idx] + x[T:])
    bad = idx.copy()
    bad[200] = T + 7
    messages = []
    for backend, replayed in (("interpreter", True), ("native", True), ("native", False)):
        monkeypatch.setattr(replay, "ENABLED", replayed)
        with pytest.raises(pto.RaceError) as err:
            pto.launch(gather_kernel, 1, T, (x, bad, np.zeros(T, np.float32)), backend=backend)
        messages.append(str(err.value))
    assert messages[0] == messages[1] == messages[2]
    assert "hazard: read of L1 buffer 'buf' while the pto.async_load at " in messages[0]
    assert "still in flight" in messages[0]


def test_lanes_reading_a_slot_while_the_other_loads_bit_exact_and_bounded_by_the_block():
    """tests/kernels/pipelined.py's pipelined_sum after `pto-double-buffer`: each lane reads
    `slot + tid` while the other slot loads — apart only while `tid` stays below the slot's
    256 elements. Proven for blocks of at most 256 lanes (bit for bit, against NumPy's sums);
    a wider block is refused at launch, and there the interpreter's in-flight check fires."""
    from tests.kernels.pipelined import PIPELINED

    for trips in (0, 1, 4):
        case = PIPELINED["pipelined_sum"](trips)
        outs = []
        for backend in ("interpreter", "native"):
            args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
            pto.launch(case.kernel, case.grid, case.block, tuple(args), backend=backend)
            outs.append([args[case.output]])
        assert same_bits(*outs)
        np.testing.assert_array_equal(outs[1][0], case.reference)
    case = PIPELINED["pipelined_sum"](2, blocks=1)
    x, y, ntiles = case.args
    wide = (np.concatenate([x, x]), np.zeros(2 * y.size, np.float32), ntiles)
    # (compiled without pto-verify-barriers, which proves that hazard for this block)
    compiled = pto.compile(case.kernel, args=wide, block=2 * T,
                           pipeline="pto-double-buffer,pto-allocate-l1")
    with pytest.raises(NativeUnsupported, match="at most 256 lanes"):
        pto.launch(compiled, 1, 2 * T, wide, backend="native")
    with pytest.raises(pto.RaceError, match="still in flight"):
        pto.launch(compiled, 1, 2 * T, wide, backend="auto")


def test_softmax_tiles_copies_are_proven():
    """examples/softmax_tiles.py's double-buffered row blocks: the load of block i + 1 into
    the other slot while the tile instructions read slot i — proven free of in-flight hazards
    for any block (what keeps it on the interpreter is its Y, stored by two ops)."""
    from pypto.backend.native.inline_stages import inline_pipelines
    from pypto.backend.native.tokens import lane_limit
    from softmax_tiles import softmax_tiles

    x = np.zeros((256, 128), np.float32)
    for pipeline in (None, NO_DOUBLE_BUFFER):
        options = {} if pipeline is None else {"pipeline": pipeline}
        compiled = pto.compile(softmax_tiles, args=(x, np.zeros_like(x), 128, 16, 64), block=64,
                               **options)
        slotted = any("pto.slots" in op.attributes for op in compiled.func.walk())
        assert slotted == (pipeline is None)
        assert lane_limit(inline_pipelines(compiled.func)) is None


def test_auto_keeps_looped_copies_on_the_interpreter(monkeypatch):
    """With its `mma` a callback per block and iteration (mma_calls.ENABLED off; its copies
    are memcpy loops: copy_loops.py), the pipelined matmul runs on the interpreter's batch
    mode under "auto" (docs/native.md#choosing-a-backend); `backend="native"` still runs it
    natively. (With the BLAS call, "auto" runs it natively: test_mma_calls.py.)"""
    from pypto.backend.interpreter.executor import Executable
    from pypto.backend.native import mma_calls

    monkeypatch.setattr(mma_calls, "ENABLED", False)
    a = np.random.default_rng(1).standard_normal((128, 128)).astype(np.float32)
    args = (a, a, np.zeros((128, 128), np.float32), 128, 128, 128, 64, 64, 32)
    compiled = pto.compile(pto.kernel(matmul_tile.fn), args=args, block=64)
    interpreted = []
    real = Executable.run
    monkeypatch.setattr(Executable, "run", lambda self, *args, **kw: (
        interpreted.append(1), real(self, *args, **kw))[1])
    outs = []
    for backend in ("auto", "native"):
        c = np.zeros((128, 128), np.float32)
        pto.launch(compiled, (2, 2), 64, (*args[:2], c, *args[3:]), backend=backend)
        outs.append([c])
        assert interpreted == [1]  # auto: the interpreter; native: not again
    assert same_bits(*outs)


@pto.kernel
def slot_variant(x, y, ntiles, NSLOT: pto.constexpr, LOAD: pto.constexpr, READ: pto.constexpr,
                 WAIT: pto.constexpr):
    """Tile k+1 loads into slot (k + LOAD) % NSLOT, tile k is stored from slot
    (k + READ) % NSLOT; the carried token is waited for before the store (WAIT 0), after it
    (1), or only by the final wait_all (2)."""
    base = pto.get_block_id() * ntiles * T
    buf = pto.alloc_local(NSLOT * T)
    tok = pto.async_load(buf, x + base, T * 4)
    for k in range(ntiles):
        nxt = tok
        if k + 1 < ntiles:
            nxt = pto.async_load(buf + ((k + LOAD) % NSLOT) * T, x + base + (k + 1) * T, T * 4)
        if WAIT == 0:
            pto.wait(tok)
        pto.store(y + base + k * T, buf + ((k + READ) % NSLOT) * T, T * 4)
        if WAIT == 1:
            pto.wait(tok)
        tok = nxt
    pto.wait_all()


def test_slot_variants_never_a_wrong_answer(monkeypatch):
    """Every combination of load slot, read slot, wait placement and slot count, compiled
    without the static verifier: when the interpreter raises its in-flight RaceError, the
    native launch raises the same (its message and location; compiled code detects it itself
    where tokens.py's proof fails: pypto/backend/native/inflight.py, checked with the replay
    off too); when the interpreter runs it, the native backend gives its bits. The correct
    double and triple buffering compile; none is refused."""
    from pypto.backend.native import replay

    compiled, raced, refused = [], [], []
    for nslot in (2, 3):
        for load in range(nslot):
            for read in range(nslot):
                for wait in (0, 1, 2):
                    for ntiles in (1, 3, 4):
                        x = np.random.default_rng(ntiles).standard_normal(2 * ntiles * T) \
                            .astype(np.float32)
                        args = (x, np.zeros_like(x), ntiles, nslot, load, read, wait)
                        kernel = pto.compile(slot_variant, args=args, block=32,
                                             pipeline="pto-allocate-l1")
                        outs, errors = [], []
                        for backend in ("interpreter", "native", "compiled"):
                            y = np.zeros_like(x)
                            monkeypatch.setattr(replay, "ENABLED", backend != "compiled")
                            try:
                                pto.launch(kernel, 2, 32, (x, y, *args[2:]),
                                           backend="native" if backend == "compiled"
                                           else backend)
                            except pto.RaceError as err:
                                errors.append(str(err))
                                continue
                            except NativeUnsupported:
                                refused.append((nslot, load, read, wait, ntiles))
                                break
                            outs.append([y])
                        else:
                            variant = (nslot, load, read, wait, ntiles)
                            if errors:
                                assert len(errors) == 3 and not outs, variant
                                assert errors[0] == errors[1], variant
                                assert "still in flight" in errors[2], variant
                                raced.append(variant)
                            else:
                                assert same_bits(outs[0], outs[1]), variant
                                assert same_bits(outs[0], outs[2]), variant
                                compiled.append(variant)
    assert (2, 1, 0, 0, 4) in compiled and (3, 1, 0, 0, 4) in compiled
    assert (3, 2, 0, 0, 3) in compiled  # (load two slots ahead: still apart from the read)
    assert (2, 0, 0, 0, 3) in raced  # (loading into the slot being stored: a RaceError)
    assert not refused and len(raced) + len(compiled) == 117  # (wait 2: every access hooked)



@pto.kernel
def scatter_while_loading(x, idx, y):
    """Each lane writes `buf[idx[tid]]` while the copy into the second half of `buf` is in
    flight (then all read their own element back): a hazard when some `idx[tid] >= T`."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(2 * T)
    second = pto.async_load(buf + T, x + T, T * 4)
    pto.store(buf + pto.load(idx + tid), pto.load(x + tid))
    pto.wait(second)
    pto.barrier_block()
    pto.store(y + tid, pto.load(buf + tid) + pto.load(buf + T + tid))


def test_an_l1_write_while_loading_is_checked_at_run_time(monkeypatch):
    """The guard of a lane's L1 write: any copy in flight over its byte (a permutation below
    T runs bit for bit; one index at T + 3 is the interpreter's RaceError, compiled too)."""
    from pypto.backend.native import replay

    x = np.arange(2 * T, dtype=np.float32) * 0.25
    perm = np.random.default_rng(4).permutation(T).astype(np.int32)
    compiled = pto.compile(scatter_while_loading, args=(x, perm, np.zeros(T, np.float32)),
                           block=T, pipeline="pto-allocate-l1", race_check=False)
    outs = []
    for backend in ("interpreter", "native"):
        y = np.zeros(T, np.float32)
        pto.launch(compiled, 1, T, (x, perm, y), backend=backend)
        outs.append([y])
    assert same_bits(*outs)
    first = np.empty(T, np.float32)
    first[perm] = x[:T]
    np.testing.assert_array_equal(outs[1][0], first + x[T:])
    bad = perm.copy()
    bad[9] = T + 3
    messages = []
    for backend, replayed in (("interpreter", True), ("native", True), ("native", False)):
        monkeypatch.setattr(replay, "ENABLED", replayed)
        with pytest.raises(pto.RaceError) as err:
            pto.launch(compiled, 1, T, (x, bad, np.zeros(T, np.float32)), backend=backend)
        messages.append(str(err.value))
    assert messages[0] == messages[1] == messages[2]
    assert "hazard: write of L1 buffer 'buf'" in messages[0]
