"""Warp and lane ids in fast phases (docs/native.md#fast-phases): `warp_id` / `lane_id` are the
linear lane id `// 32` and `% 32`, taken by the range check as coordinates of their own, so
`red + warp * 32 + lane` under `lane < s` is proven in range and the phase runs unchecked
vector loops. Bit for bit against the interpreter (the oracle) and a NumPy model."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import llvm_ir
from pypto.errors import MemoryAccessError
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import warp_sync_sum


def _model(x: np.ndarray, block: int, warps: int) -> np.ndarray:
    """The kernel's order of additions in NumPy (float32 each step): per block a buffer of
    `warps * 32` holding the block's values (0 past n), each warp's tree `v[l] += v[l + s]`
    for l < s (a partial warp reading the zeros the launch's L1 holds), then the warp sums
    added in order."""
    nb = -(-len(x) // block)
    out = np.zeros(nb, np.float32)
    for b in range(nb):
        red = np.zeros(warps * 32, np.float32)
        chunk = x[b * block:(b + 1) * block]
        red[:len(chunk)] = chunk
        r = red.reshape(warps, 32)
        s = 16
        while s:
            r[:, :s] = r[:, :s] + r[:, s:2 * s]
            s //= 2
        acc = np.float32(0)
        for w in range(-(-block // 32)):
            acc = np.float32(acc + r[w, 0])
        out[b] = acc
    return out


@pytest.mark.parametrize("block", [32, 64, 256])
def test_warp_sync_sum_exact(block):
    warps = block // 32
    n = 4 * block - 5
    x = np.random.default_rng(block).random(n, dtype=np.float32)
    nb = -(-n // block)
    interp, native = both(warp_sync_sum, nb, block, [x, np.zeros(nb, np.float32)], (n, warps))
    assert same_bits(interp, native)
    assert same_bits([native[1]], [_model(x, block, warps)])


@pto.kernel
def warp_tree(x, out, n, WARPS: pto.constexpr):
    """warp_sync_sum's warp trees on a block that may end in a partial warp, the results
    stored per lane (every lane of `red` written first, so none reads an unwritten slot)."""
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    red = pto.alloc_local(WARPS * 32)
    i = pto.get_global_id()
    t = pto.get_local_id()
    for k in range(WARPS):
        if t == 0:
            for j in range(32):
                pto.store(red + k * 32 + j, 0.0)
    pto.barrier_block()
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(red + warp * 32 + lane, v)
    pto.barrier()
    s = 16
    for _ in range(5):
        if lane < s:
            pto.store(red + warp * 32 + lane,
                      pto.load(red + warp * 32 + lane) + pto.load(red + warp * 32 + lane + s))
        pto.barrier()
        s = s // 2
    if i < n:
        pto.store(out + i, pto.load(red + warp * 32 + lane))


def _tree_model(x: np.ndarray, block: int, warps: int) -> np.ndarray:
    out = np.empty_like(x)
    for b in range(-(-len(x) // block)):
        red = np.zeros(warps * 32, np.float32)
        chunk = x[b * block:(b + 1) * block]
        red[:len(chunk)] = chunk
        r = red.reshape(warps, 32)
        s = 16
        while s:
            r[:, :s] = r[:, :s] + r[:, s:2 * s]
            s //= 2
        out[b * block:b * block + len(chunk)] = red[:len(chunk)]
    return out


@pytest.mark.parametrize("block", [48, 100, 33])
def test_partial_warp_exact(block):
    warps = -(-block // 32)
    n = 3 * block + 7
    x = np.random.default_rng(block).random(n, dtype=np.float32)
    nb = -(-n // block)
    interp, native = both(warp_tree, nb, block, [x, np.zeros(n, np.float32)], (n, warps))
    assert same_bits(interp, native)
    assert same_bits([native[1]], [_tree_model(x, block, warps)])


@pto.kernel
def some_warps(x, out, FIRST: pto.constexpr, LAST: pto.constexpr):
    """Only warps FIRST..LAST-1 (a guard on the warp id) post their doubled values, shifted
    down FIRST warps: `warp - FIRST` is in range only under the guard."""
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    red = pto.alloc_local(128)
    i = pto.get_global_id()
    pto.store(red + warp * 32 + lane, pto.load(x + i))
    pto.barrier_block()
    if warp >= FIRST:
        if warp < LAST:
            pto.store(out + pto.get_block_id() * 128 + (warp - FIRST) * 32 + lane,
                      pto.load(red + warp * 32 + lane) * 2.0)


@pytest.mark.parametrize("first,last", [(1, 3), (2, 4), (3, 3)])
def test_guard_on_some_warps_exact(first, last):
    x = np.random.default_rng(first).random(256, dtype=np.float32)
    interp, native = both(some_warps, 2, 128, [x, np.zeros(256, np.float32)], (first, last))
    assert same_bits(interp, native)
    want = np.zeros((2, 4, 32), np.float32)
    want[:, :last - first] = x.reshape(2, 4, 32)[:, first:last] * np.float32(2)
    assert same_bits([native[1]], [want.reshape(-1)])


@pto.kernel
def warp_overrun(x, out):
    """`lane + s` past the warp's buffer when the guard lets the whole warp in: the range check
    must refuse it, and the checked loop raise the interpreter's error."""
    warp = pto.get_warp_id()
    lane = pto.get_lane_id()
    red = pto.alloc_local(64)
    pto.store(red + warp * 32 + lane, 1.0)
    pto.barrier_block()
    if lane < 32:
        pto.store(out + warp * 32 + lane, pto.load(red + warp * 32 + lane + 16))


def test_out_of_range_split_still_raises():
    with pytest.raises(MemoryAccessError):
        pto.launch(warp_overrun, 1, 64, (np.zeros(64, np.float32), np.zeros(64, np.float32)),
                   backend="interpreter")
    with pytest.raises(MemoryAccessError):
        pto.launch(warp_overrun, 1, 64, (np.zeros(64, np.float32), np.zeros(64, np.float32)),
                   backend="native")


def _functions(ir: str, prefix: str) -> dict[str, str]:
    """The bodies of the LLVM functions whose names start with `prefix`."""
    bodies = {}
    for chunk in ir.split("\ndefine ")[1:]:
        name = chunk.split("@\"", 1)[1].split("\"", 1)[0]
        if name.startswith(prefix):
            bodies[name] = chunk.split("\n}", 1)[0]
    return bodies


def test_warp_phases_unchecked_and_vectorised():
    """Every phase using the lane id: its fast lane function has no bounds check left (it only returns 0), and
    LLVM's optimised module has float vectors."""
    import llvmlite.binding as llvm

    from pypto.backend.native.jit import _target, llvm_module

    x = np.zeros(1024, np.float32)
    compiled = pto.compile(warp_sync_sum, args=(x, np.zeros(4, np.float32), 1024, 8), block=256)
    fast = _functions(llvm_ir(compiled.func), "warp_sync_sum.p")
    fast = {k: v for k, v in fast.items() if k.endswith(".fast.lane") and "urem i32" in v}
    assert len(fast) >= 3  # the phases using the lane id
    for name, body in fast.items():
        returns = [line.strip() for line in body.splitlines() if line.strip().startswith("ret ")]
        assert returns == ["ret i32 0"], name
    machine, _ = _target()
    mod = llvm.parse_assembly(str(llvm_module(compiled.func)))
    mod.triple, mod.data_layout = machine.triple, str(machine.target_data)
    options = llvm.PipelineTuningOptions(speed_level=3)
    options.loop_vectorization = True
    with options, llvm.create_pass_builder(machine, options) as builder, \
            builder.getModulePassManager() as manager:
        manager.run(mod, builder)
    assert " x float>" in str(mod)


@pto.kernel
def lanes_2d(x, out, S: pto.constexpr):
    """A lane-id guard in a 2-D block of 48 x 2: the linear lane id is x + 48 y, so row 1's
    warp boundary is at x = 16 and `lane < S` admits lanes no 1-D warp loop would visit (the
    warp-by-warp loop must fall back to whole rows)."""
    lane = pto.get_lane_id()
    warp = pto.get_warp_id()
    red = pto.alloc_local(96)
    t = pto.get_local_id(0) + 48 * pto.get_local_id(1)
    pto.store(red + warp * 32 + lane, pto.load(x + t))
    pto.barrier_block()
    red2 = pto.alloc_local(96)
    if lane < S:
        pto.store(red2 + warp * 32 + lane, pto.load(red + warp * 32 + 31 - lane) + 1.0)
    pto.barrier_block()
    if lane < S:
        pto.store(out + t, pto.load(red2 + warp * 32 + lane))


@pytest.mark.parametrize("s", [1, 8, 20, 32])
def test_lane_guard_in_a_2d_block_exact(s):
    x = np.random.default_rng(s).random(96, dtype=np.float32)
    interp, native = both(lanes_2d, 1, (48, 2), [x, np.zeros(96, np.float32)], (s,))
    assert same_bits(interp, native)
    want = np.zeros(96, np.float32)
    for t in range(96):
        w, lane = divmod(t, 32)
        if lane < s:
            want[t] = x[w * 32 + 31 - lane] + np.float32(1)
    assert same_bits([native[1]], [want])
