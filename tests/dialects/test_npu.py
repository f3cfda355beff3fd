"""The npu dialect's op facts are traits, declared once per op (like the pto dialect's)."""

from __future__ import annotations

import pytest
from xdsl.traits import OpTrait

from pypto.dialects import npu
from pypto.dialects.traits import (
    IssuesOn,
    is_block_collective,
    is_instruction,
    kind_of,
    memory_accesses,
    pipe_of,
)

PIPES = {
    "npu.load": "VECTOR", "npu.store": "VECTOR", "npu.fma": "VECTOR", "npu.copy_in": "MTE_IN",
    "npu.copy_out": "MTE_OUT", "npu.set_flag": "SCALAR", "npu.wait_flag": "SCALAR",
    "npu.wait_flag_all": "SCALAR", "npu.pipe_barrier": "SCALAR", "npu.warp_barrier": "SCALAR",
    "npu.mma": "CUBE", "npu.load_mma": "CUBE",
}


@pytest.mark.parametrize("op", npu.NPU_OPS, ids=lambda op: op.name)
def test_every_npu_op_declares_its_pipe_as_a_trait(op):
    assert isinstance(op.get_trait(IssuesOn), OpTrait)
    assert pipe_of(op) == PIPES[op.name]
    assert not hasattr(op, "PIPE"), "the pipe has one source: the trait"
    assert is_instruction(op), "every npu op is an instruction, named for profiles"
    assert not hasattr(op, "KIND"), "the kind has one source: the trait"


KINDS = {
    "npu.load": "LOAD", "npu.store": "STORE", "npu.fma": "FMA", "npu.copy_in": "COPY_IN",
    "npu.copy_out": "COPY_OUT", "npu.set_flag": "SET_FLAG", "npu.wait_flag": "WAIT_FLAG",
    "npu.wait_flag_all": "WAIT_FLAG", "npu.pipe_barrier": "BARRIER",
    "npu.warp_barrier": "BARRIER", "npu.mma": "MMA", "npu.load_mma": "LOAD_MMA",
}


def test_npu_instruction_kinds_match_the_firmware_names():
    assert {op.name: kind_of(op) for op in npu.NPU_OPS} == KINDS


def test_block_collectives_are_the_tile_instructions_and_the_pipe_barrier():
    collective = {op.name for op in npu.NPU_OPS if is_block_collective(op)}
    assert collective == {"npu.copy_in", "npu.copy_out", "npu.set_flag", "npu.wait_flag",
                          "npu.wait_flag_all", "npu.pipe_barrier", "npu.mma", "npu.load_mma"}


def test_lane_accesses_are_declared_without_the_private_staging_slot():
    assert [(a.operand, a.kind) for a in memory_accesses(npu.LoadOp)] == [(0, "read")]
    assert [(a.operand, a.kind) for a in memory_accesses(npu.StoreOp)] == [(1, "write")]
    assert [(a.operand, a.kind) for a in memory_accesses(npu.FmaOp)] == [(0, "write")]
