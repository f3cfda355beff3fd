"""The lane rule (docs/cost-model.md#the-lane-rule): under `fused`, an L1 lane load that feeds
vector arithmetic is that instruction's operand fetch, and an L1 lane store of its result is
its write to UB; any other use keeps the load an instruction of its own, and `table` keeps
every lane access separate."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.cost_model.facts import FOLD_OPERAND, FOLD_RESULT

MEASURED_TADD_F32_64X64 = 160  # pto-isa's TADD float_64x64 on a 910B3 (bench/calibrate.py)


@pto.kernel
def lane_binary(X, elements, op):
    """c = a op b on L1 tiles, one element a lane (op 1: add, 2: add then multiply, 3: copy a,
    0: nothing after the set-up)."""
    tid = pto.get_local_id()
    a = pto.alloc_local(elements, dtype=X.dtype)
    b = pto.alloc_local(elements, dtype=X.dtype)
    c = pto.alloc_local(elements, dtype=X.dtype)
    pto.fill(a, 1.0, elements)
    pto.fill(b, 2.0, elements)
    pto.barrier_block()
    if op != 0:
        for j in range(0, elements, 1024):
            if op == 1:
                pto.store(c + j + tid, pto.load(a + j + tid) + pto.load(b + j + tid))
            elif op == 2:
                x = pto.load(a + j + tid)
                pto.store(c + j + tid, (x + pto.load(b + j + tid)) * x)
            else:
                pto.store(c + j + tid, pto.load(a + j + tid))
    pto.barrier_block()
    pto.store(X + tid, pto.load(c + tid))


def block_cycles(kernel, args, target=None, model="fused") -> int:
    prof = pto.profile(kernel, grid=1, block=1024, args=args, target=target, model=model)
    return int(prof.launch.block_cycles[0])


def test_the_lane_written_64x64_add_costs_within_2x_of_the_measured_tadd():
    x = pto.alloc_tensor(1024 * 4, dtype=np.float32)
    none = block_cycles(lane_binary, (x, 4096, 0), "ascend910b")
    add = block_cycles(lane_binary, (x, 4096, 1), "ascend910b") - none
    # four 1024-lane adds, each with its operand fetch and its write: four heads
    assert MEASURED_TADD_F32_64X64 / 2 <= add <= 2 * MEASURED_TADD_F32_64X64
    assert np.array_equal(x.numpy(), np.full(1024, 3.0, np.float32))


@pytest.mark.parametrize("target", [None, "ascend910b"])
@pytest.mark.parametrize("model", ["fused", "table"])
def test_an_extra_arithmetic_op_never_lowers_the_total(target, model):
    x = pto.alloc_tensor(1024 * 4, dtype=np.float32)
    copy, add, more = (block_cycles(lane_binary, (x, 4096, op), target, model)
                       for op in (3, 1, 2))
    assert copy <= add <= more
    assert add < more  # the multiply is an instruction of its own


@pytest.mark.parametrize("target", [None, "ascend910b"])
def test_the_table_model_keeps_the_lane_loads_separate(target):
    x = pto.alloc_tensor(1024 * 4, dtype=np.float32)
    fused, table = ((block_cycles(lane_binary, (x, 4096, 1), target, m) -
                     block_cycles(lane_binary, (x, 4096, 0), target, m))
                    for m in ("fused", "table"))
    prof = pto.profile(lane_binary, grid=1, block=1024, args=(x, 4096, 1), model="table")
    on_vector = [prof.facts[s.op_id].kind for s in prof.launch.classes[0].schedule.slices
                 if s.pipe == "VECTOR"]
    assert on_vector.count("LOAD") >= 8 and on_vector.count("STORE") >= 4  # 4 rounds
    assert fused < table


@pto.kernel
def uses(out, flags, kind):
    """A value loaded from L1 used by a store to HBM (kind 0), by a compare that steers an `if`
    (1), or by an add whose result goes to L1 (2)."""
    tid = pto.get_local_id()
    a = pto.alloc_local(1024)
    c = pto.alloc_local(1024)
    pto.store(a + tid, pto.cast(tid, pto.float32))
    pto.barrier_block()
    if kind == 0:
        pto.store(out + tid, pto.load(a + tid))
    elif kind == 1:
        if pto.load(a + tid) > 3.0:
            pto.store(flags + tid, 1.0)
    else:
        pto.store(c + tid, pto.load(a + tid) + 1.0)
        pto.barrier_block()
        pto.store(out + tid, pto.load(c + tid))


def folds(kind: int) -> dict[str, set]:
    out = pto.alloc_tensor(1024 * 4, dtype=np.float32)
    flags = pto.alloc_tensor(1024 * 4, dtype=np.float32)
    pto.memcpy_h2d(flags, np.zeros(1024, np.float32))
    prof = pto.profile(uses, grid=1, block=1024, args=(out, flags, kind))
    got: dict[str, set] = {}
    for f in prof.facts.values():
        if f.kind in ("LOAD", "STORE"):
            got.setdefault(f.kind, set()).add((f.space, f.fold))
    return got, out.numpy(), flags.numpy()


def test_a_load_stored_to_hbm_is_not_folded():
    got, out, _ = folds(0)
    assert got["LOAD"] == {("local", None)}  # the other loads are in branches not taken
    assert ("global", None) in got["STORE"]
    assert np.array_equal(out, np.arange(1024, dtype=np.float32))


def test_a_load_compared_for_control_flow_is_not_folded():
    got, _, flags = folds(1)
    assert got["LOAD"] == {("local", None)}
    assert np.array_equal(flags, (np.arange(1024) > 3).astype(np.float32))


def test_a_load_feeding_an_add_is_its_operand_and_the_store_its_write():
    got, out, _ = folds(2)
    assert ("local", FOLD_OPERAND) in got["LOAD"]
    assert ("local", FOLD_RESULT) in got["STORE"]
    assert np.array_equal(out, np.arange(1024, dtype=np.float32) + 1)
