"""The engine against hand-built event lists: exact schedules, stalls and their causes.

Facts come from small parsed kernels; the events (what ran, on how many lanes, which token) are
written by hand, so every expected cycle below follows from the model's rules and the default
target's numbers (table: LOAD 4, FMA 8; fused: LOAD 3, FMA 5; 256 B/cycle of vector width; 128
B/cycle per MTE; copy start-up 20; Cube 4096 MAC/cycle, FP32 at half rate).
"""

from __future__ import annotations

from typing import NamedTuple

import pytest
from xdsl.parser import Parser

from pypto.analysis.uniformity import walk
from pypto.backend.cost_model.engine import simulate_block
from pypto.backend.cost_model.facts import table_facts
from pypto.backend.cost_model.params import ModelError, ModelParams
from pypto.backend.targets import default_target
from pypto.ir import make_context


class Ev(NamedTuple):
    op_id: int
    lanes: int
    token: int | None = None
    kind: str = "exec"


def kernel_facts(body: str, params: str = ""):
    text = f"func.func @k({params}) attributes {{pto.kernel}} {{\n{body}\n  func.return\n}}"
    module = Parser(make_context(), text).parse_module()
    ops = list(walk(list(module.ops)[0].body.block.ops))
    return ops, table_facts(enumerate(ops))


VECTOR_ADD = """
  %pa = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %x = pto.load %pa : !pto.ptr<f32, global> -> f32
  %pb = pto.addptr %b, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %y = pto.load %pb : !pto.ptr<f32, global> -> f32
  %one = arith.constant 1.0 : f32
  pto.fma %pa, %x, %one, %y : !pto.ptr<f32, global>, f32
"""
VA_PARAMS = "%a: !pto.ptr<f32, global>, %b: !pto.ptr<f32, global>, %i: i32"


def params(model: str) -> ModelParams:
    return ModelParams.of(default_target(), model)


@pytest.mark.parametrize("model,load,fma", [("table", 4, 8), ("fused", 3, 5)])
def test_vector_add_block_schedule(model, load, fma):
    ops, facts = kernel_facts(VECTOR_ADD, VA_PARAMS)
    events = [Ev(i, 256) for i in range(len(ops) - 1)]  # all but func.return
    p = params(model)
    s = simulate_block(events, facts, p)
    spans = [(facts[x.op_id].kind, x.pipe, x.start, x.end) for x in s.slices]
    # 256 lanes x 4 B over 256 B/cycle = 4 repeats: latency + 3 cycles on VECTOR; a loaded
    # value is there the HBM latency after its LOAD, and the block ends when its store landed
    l, f, h = load + 3, fma + 3, p.hbm_latency
    assert h > 0
    assert spans == [("ADDPTR", "SCALAR", 0, 1), ("LOAD", "VECTOR", 1, 1 + l),
                     ("ADDPTR", "SCALAR", 2, 3), ("LOAD", "VECTOR", 1 + l, 1 + 2 * l),
                     ("FMA", "VECTOR", 1 + 2 * l + h, 1 + 2 * l + h + f)]
    assert s.cycles == 1 + 2 * l + h + f + h
    # %i is a kernel argument: every lane of a warp on one address moves one 32-byte sector
    assert s.hbm_bytes == 3 * (256 // 32) * 32
    # the first LOAD waited for its address, the FMA for the second LOAD's data
    first, second = s.bubbles
    assert (first.pipe, first.start, first.end) == ("VECTOR", 0, 1)
    assert first.cause.kind == "dependency" and first.cause.detail == "%pa"
    assert (second.pipe, second.start, second.end) == ("VECTOR", 1 + 2 * l, 1 + 2 * l + h)
    assert second.cause.kind == "dependency" and second.cause.detail == "%y"


def test_fewer_active_lanes_take_fewer_repeats():
    ops, facts = kernel_facts(VECTOR_ADD, VA_PARAMS)
    h = params("fused").hbm_latency
    full = simulate_block([Ev(1, 256)], facts, params("fused")).cycles
    few = simulate_block([Ev(1, 32)], facts, params("fused")).cycles
    assert (full, few) == (6 + h, 3 + h)


COPY_THEN_MMA = """
  %ta = pto.alloc_local : !pto.l1buf<4096xf32>
  %tc = pto.alloc_local : !pto.l1buf<4096xf32>
  %n = arith.constant 16384 : i32
  %c64 = arith.constant 64 : i32
  %t = pto.async_load %ta, %a, %n rows %c64 strides(%c64, %c64) : !pto.l1buf<4096xf32>, !pto.ptr<f32, global>
  pto.wait %t
  pto.mma %tc, %ta, %ta shape(64, 64, 64) : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>, !pto.l1buf<4096xf32>
  pto.barrier_block
  pto.fill %tc, %x, %n : !pto.l1buf<4096xf32>, f32
"""


def test_wait_stalls_until_the_copy_completes_and_barrier_drains_every_pipe():
    ops, facts = kernel_facts(COPY_THEN_MMA, "%a: !pto.ptr<f32, global>, %x: f32")
    ids = {op.name: i for i, op in enumerate(ops)}
    events = [Ev(ids["pto.async_load"], 64, token=0, kind="issue"),
              Ev(ids["pto.wait"], 64, token=0, kind="wait"), Ev(ids["pto.mma"], 64),
              Ev(ids["pto.barrier_block"], 64), Ev(ids["pto.fill"], 64)]
    s = simulate_block(events, facts, params("table"))
    copy, mma, fill = s.slices
    # 16384 B at 128 B/cycle = 128 cycles on MTE_IN; after HBM's latency (200, the same a
    # lane load pays) and the copy engine's start-up (20) the last byte lands at
    # 200 + 20 + 128 - 1 = 347 (the next copy's start-up could overlap this transfer)
    assert (copy.pipe, copy.start, copy.end) == ("MTE_IN", 0, 128)
    # FP32 64x64x64 = 262144 MAC at 2048/cycle = 128 repeats, latency 8
    assert (mma.pipe, mma.start, mma.end) == ("CUBE", 347, 347 + 135)
    assert mma.cause.kind == "wait"
    # the barrier waits for the CUBE to drain; the fill (VECTOR) starts after it
    assert fill.start == mma.end and fill.cause.kind == "barrier"
    causes = {b.cause.kind for b in s.bubbles}
    assert causes == {"wait", "barrier"}
    assert s.hbm_bytes == 16384


def test_l1_write_after_read_orders_a_copy_after_the_mma_reading_its_buffer():
    ops, facts = kernel_facts(COPY_THEN_MMA, "%a: !pto.ptr<f32, global>, %x: f32")
    ids = {op.name: i for i, op in enumerate(ops)}
    events = [Ev(ids["pto.async_load"], 64, 0, "issue"), Ev(ids["pto.wait"], 64, 0, "wait"),
              Ev(ids["pto.mma"], 64), Ev(ids["pto.async_load"], 64, 1, "issue")]
    s = simulate_block(events, facts, params("table"))
    first_copy, mma, second_copy = s.slices
    assert second_copy.start == mma.end
    assert second_copy.cause.kind == "l1" and "write after read" in second_copy.cause.detail


def test_unknown_model_and_incomplete_target_are_errors(tmp_path):
    with pytest.raises(ModelError, match="unknown cost model 'fast'"):
        ModelParams.of(default_target(), "fast")
    from pypto.backend.targets import load_target

    path = tmp_path / "t.toml"
    path.write_text("[cost]\ndispatch_width = 0\n")
    with pytest.raises(ModelError, match="dispatch_width must be a positive number"):
        ModelParams.of(load_target(path), "fused")
