"""Op facts declared as traits (pypto/dialects/traits.py): every pto op declares them, the
accessors read them, and the xDSL memory effects agree with the declared accesses."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, scf
from xdsl.traits import MemoryEffectKind, get_effects

from pypto.dialects import pto
from pypto.dialects.traits import (
    PIPES,
    Access,
    IssuesOn,
    declared_accesses,
    is_block_collective,
    memory_accesses,
    pipe_of,
    writes_memory,
)
from pypto.ir import make_context
from pypto.tools.parsing import parse_module

OPS = {op.name: op for op in pto.PTO_OPS}

# The machine model (docs/cost-model.md#the-machine-the-engine-models, docs/isa.md), written out by hand: pipe, block collective, accesses as
# (operand name, space, kind).
EXPECTED = {
    "pto.load": ("VECTOR", False, [("ptr", "any", "read")]),
    "pto.store": ("VECTOR", False, [("ptr", "any", "write")]),
    "pto.fma": ("VECTOR", False, [("dst", "any", "write")]),
    "pto.atomic_add": ("VECTOR", False, [("ptr", "any", "read"), ("ptr", "any", "write")]),
    "pto.async_load": ("MTE_IN", True, [("dst", "local", "write"), ("src", "global", "read")]),
    "pto.async_store": ("MTE_OUT", True, [("dst", "global", "write"), ("src", "local", "read")]),
    "pto.tile_store": ("MTE_OUT", True, [("dst", "global", "write"), ("src", "local", "read")]),
    "pto.fill": ("VECTOR", True, [("dst", "local", "write")]),
    "pto.mma": ("CUBE", True, [("a", "local", "read"), ("b", "local", "read"),
                               ("c", "local", "read"), ("c", "local", "write")]),
    "pto.wait": ("SCALAR", True, []),
    "pto.wait_all": ("SCALAR", True, []),
    "pto.barrier_block": ("SCALAR", True, []),
    "pto.barrier": ("SCALAR", False, []),
    "pto.get_global_id": ("SCALAR", False, []),
    "pto.addptr": ("SCALAR", False, []),
    "pto.fmod": ("VECTOR", False, []),
    "pto.alloc_local": ("SCALAR", False, []),
    "pto.shfl_down": ("VECTOR", False, []),
    "pto.ballot": ("VECTOR", False, []),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_declares_its_pipe(name: str) -> None:
    trait = OPS[name].get_trait(IssuesOn)
    assert trait is not None, f"{name} declares no IssuesOn trait"
    assert trait.pipe in PIPES
    assert not hasattr(OPS[name], "PIPE"), "the pipe has one source: the trait"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_declared_facts(name: str) -> None:
    pipe, collective, accesses = EXPECTED[name]
    op = OPS[name]
    assert pipe_of(op) == pipe
    assert is_block_collective(op) is collective
    names = [n for n, _ in op.get_irdl_definition().operands]
    assert [(names[a.operand], a.space, a.kind) for a in declared_accesses(op)] == accesses


def test_foreign_ops_have_a_pipe() -> None:
    assert pipe_of(arith.AddiOp) == "VECTOR"
    assert pipe_of(scf.ForOp) == "SCALAR"
    assert not is_block_collective(scf.IfOp)
    assert memory_accesses(arith.AddiOp) == ()


def test_access_rejects_unknown_space_and_kind() -> None:
    with pytest.raises(ValueError, match="memory space"):
        Access(0, "shared", "read")
    with pytest.raises(ValueError, match="access kind"):
        Access(0, "local", "modify")
    with pytest.raises(ValueError, match="unknown pipe"):
        IssuesOn("DMA")


KERNEL = """
func.func @k(%a: !pto.ptr<f32, global>, %o: !pto.ptr<f32, global>, %v: f32) {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %n = arith.constant 1024 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 256 : i32
  %t = pto.async_load %buf, %a, %n rows %one strides(%len, %len)
      : !pto.l1buf<256xf32>, !pto.ptr<f32, global>
  pto.wait %t
  %x = pto.load %buf : !pto.l1buf<256xf32> -> f32
  %y = pto.load %a : !pto.ptr<f32, global> -> f32
  pto.store %x, %o : f32, !pto.ptr<f32, global>
  %old = pto.atomic_add %buf, %v : !pto.l1buf<256xf32>, f32
  pto.tile_store %o, %buf, %n rows %one strides(%len, %len)
      : !pto.ptr<f32, global>, !pto.l1buf<256xf32>
  func.return
}
"""


def _ops() -> dict[str, list]:
    module, _ = parse_module(make_context(), KERNEL, "<k>")
    found: dict[str, list] = {}
    for op in module.walk():
        found.setdefault(op.name, []).append(op)
    return found


def test_memory_accesses_resolve_any_from_the_operand_type() -> None:
    ops = _ops()
    local_load, global_load = ops["pto.load"]
    assert memory_accesses(local_load) == (Access(0, "local", "read"),)
    assert memory_accesses(global_load) == (Access(0, "global", "read"),)
    assert memory_accesses(ops["pto.store"][0]) == (Access(1, "global", "write"),)
    assert memory_accesses(ops["pto.atomic_add"][0]) == (Access(0, "local", "read"),
                                                        Access(0, "local", "write"))


def test_xdsl_effects_follow_the_declared_accesses() -> None:
    """The bulk copies declare their effects now (they declared none before: unknown)."""
    for name in ("pto.async_load", "pto.tile_store", "pto.load", "pto.store", "pto.atomic_add"):
        for op in _ops()[name]:
            effects = get_effects(op)
            assert effects is not None, name
            want = {(MemoryEffectKind.READ if a.kind == "read" else MemoryEffectKind.WRITE,
                     op.operands[a.operand]) for a in memory_accesses(op)}
            assert {(e.kind, e.value) for e in effects} == want, name
    wait = _ops()["pto.wait"][0]
    assert {e.kind for e in get_effects(wait)} == {MemoryEffectKind.READ, MemoryEffectKind.WRITE}
    assert writes_memory(wait)
    assert not writes_memory(_ops()["pto.load"][0])
    assert writes_memory(_ops()["pto.tile_store"][0])


# The remaining facts, written out by hand from the ISA (docs/isa.md):
# (instruction kind or None for bookkeeping, barrier scope, starts an async copy, copies
# synchronously, waits on, declares a buffer, offsets an address, forwards its region's yield,
# varies per).
FACTS = {
    "pto.get_global_id": (None, None, False, False, None, False, False, False, "lane"),
    "pto.get_local_id": (None, None, False, False, None, False, False, False, "lane"),
    "pto.get_warp_id": (None, None, False, False, None, False, False, False, "lane"),
    "pto.get_lane_id": (None, None, False, False, None, False, False, False, "lane"),
    "pto.get_block_id": (None, None, False, False, None, False, False, False, "block"),
    "pto.get_block_dim": (None, None, False, False, None, False, False, False, None),
    "pto.get_grid_dim": (None, None, False, False, None, False, False, False, None),
    "pto.addptr": (None, None, False, False, None, False, True, False, None),
    "pto.load": ("LOAD", None, False, False, None, False, False, False, None),
    "pto.store": ("STORE", None, False, False, None, False, False, False, None),
    "pto.fma": ("FMA", None, False, False, None, False, False, False, None),
    "pto.atomic_add": ("ATOMIC_ADD", None, False, False, None, False, False, False, None),
    "pto.fmod": ("FMOD", None, False, False, None, False, False, False, None),
    "pto.sigmoid": ("SIGMOID", None, False, False, None, False, False, False, None),
    "pto.loop_step": ("LOOP_STEP", None, False, False, None, False, False, False, None),
    "pto.alloc_local": (None, None, False, False, None, True, False, False, None),
    "pto.async_load": ("ASYNC_LOAD", None, True, False, None, False, False, False, None),
    "pto.async_store": ("ASYNC_STORE", None, True, False, None, False, False, False, None),
    "pto.tile_store": ("TILE_STORE", None, False, True, None, False, False, False, None),
    "pto.wait": ("WAIT", None, False, False, "token", False, False, False, None),
    "pto.wait_all": ("WAIT_ALL", None, False, False, "all", False, False, False, None),
    "pto.fill": ("FILL", None, False, False, None, False, False, False, None),
    "pto.mma": ("MMA", None, False, False, None, False, False, False, None),
    "pto.barrier": ("BARRIER", "warp", False, False, None, False, False, False, None),
    "pto.barrier_block": ("BARRIER_BLOCK", "block", False, False, None, False, False, False,
                          None),
    "pto.pipeline": (None, None, False, False, None, False, False, True, None),
    "pto.stage": (None, None, False, False, None, False, False, True, None),
    "pto.yield": (None, None, False, False, None, False, False, True, None),
    "pto.printf": ("PRINTF", None, False, False, None, False, False, False, None),
    # the warp shuffles and votes: instructions, not barriers (they order no memory)
    "pto.shfl": ("SHFL", None, False, False, None, False, False, False, None),
    "pto.shfl_up": ("SHFL_UP", None, False, False, None, False, False, False, None),
    "pto.shfl_down": ("SHFL_DOWN", None, False, False, None, False, False, False, None),
    "pto.shfl_xor": ("SHFL_XOR", None, False, False, None, False, False, False, None),
    "pto.ballot": ("BALLOT", None, False, False, None, False, False, False, None),
    "pto.vote_any": ("VOTE_ANY", None, False, False, None, False, False, False, None),
    "pto.vote_all": ("VOTE_ALL", None, False, False, None, False, False, False, None),
    # every tile vector instruction: an instruction named by its mnemonic, nothing else
    **{op.name: (op.name.removeprefix("pto.").upper(), None, False, False, None, False,
                 False, False, None) for op in pto.TILE_VECTOR_OPS},
    "npu.copy_in": ("COPY_IN", None, True, False, None, False, False, False, None),
    "npu.copy_out": ("COPY_OUT", None, True, False, None, False, False, False, None),
    "npu.wait_flag": ("WAIT_FLAG", None, False, False, "token", False, False, False, None),
    "npu.wait_flag_all": ("WAIT_FLAG", None, False, False, "all", False, False, False, None),
    "npu.pipe_barrier": ("BARRIER", "block", False, False, None, False, False, False, None),
    "npu.warp_barrier": ("BARRIER", "warp", False, False, None, False, False, False, None),
}


def _all_ops() -> dict[str, type]:
    from pypto.dialects import npu

    return {op.name: op for op in (*pto.PTO_OPS, *npu.NPU_OPS)}


def test_every_pto_op_has_its_facts_written_out() -> None:
    assert set(OPS) <= set(FACTS)


@pytest.mark.parametrize("name", sorted(FACTS))
def test_instruction_barrier_copy_and_wait_facts(name: str) -> None:
    from pypto.dialects.traits import (
        copies_synchronously,
        declares_buffer,
        forwards_yield,
        is_instruction,
        kind_of,
        starts_copy,
        sync_scope,
        varies_per,
        waits_on,
        OffsetsAddress,
    )

    op = _all_ops()[name]
    kind, scope, starts, sync_copy, waits, declares, offsets, forwards, varies = FACTS[name]
    assert is_instruction(op) is (kind is not None)
    if kind is not None:
        assert kind_of(op) == kind
    assert sync_scope(op) == scope
    assert starts_copy(op) is starts
    assert copies_synchronously(op) is sync_copy
    assert waits_on(op) == waits
    assert declares_buffer(op) is declares
    assert (op.get_trait(OffsetsAddress) is not None) is offsets
    assert forwards_yield(op) is forwards
    assert varies_per(op) == varies


def test_kind_of_a_foreign_op_is_its_name() -> None:
    from pypto.dialects.traits import is_instruction, kind_of

    assert kind_of(arith.AddfOp) == "ADDF"
    assert not is_instruction(arith.AddfOp)


def test_trait_parameters_are_checked() -> None:
    from pypto.dialects.traits import LaunchId, Synchronizes, Waits

    with pytest.raises(ValueError, match="barrier scope"):
        Synchronizes("grid")
    with pytest.raises(ValueError, match="wait target"):
        Waits("some")
    with pytest.raises(ValueError, match="launch id"):
        LaunchId("thread_id")


def test_launch_ids_name_what_they_read() -> None:
    from pypto.dialects.traits import launch_id

    assert {op.name: launch_id(op) for op in pto.PTO_OPS if launch_id(op)} == {
        "pto.get_global_id": "global_id", "pto.get_local_id": "local_id",
        "pto.get_block_id": "block_id", "pto.get_block_dim": "block_dim",
        "pto.get_grid_dim": "grid_dim", "pto.get_warp_id": "warp_id",
        "pto.get_lane_id": "lane_id"}


FOOTPRINT_IR = """
func.func @f(%a: !pto.ptr<f16, global>, %o: !pto.ptr<f16, global>, %K: i32) {
  %n = arith.constant 2048 : i32
  %rows = arith.constant 32 : i32
  %c32 = arith.constant 32 : i32
  %count = arith.constant 100 : i32
  %zero = arith.constant 0.0 : f16
  %t = pto.alloc_local : !pto.l1buf<4096xf16>
  %c = pto.alloc_local : !pto.l1buf<4096xf32>
  %tok = pto.async_load %t, %a, %n rows %rows strides(%K, %c32)
      : !pto.l1buf<4096xf16>, !pto.ptr<f16, global>
  pto.wait %tok
  pto.fill %t, %zero, %count : !pto.l1buf<4096xf16>, f16
  pto.mma %c, %t, %t shape(16, 8, 32) : !pto.l1buf<4096xf32>, !pto.l1buf<4096xf16>, !pto.l1buf<4096xf16>
  pto.tile_store %o, %t, %n rows %rows strides(%c32, %K) : !pto.ptr<f16, global>, !pto.l1buf<4096xf16>
  func.return
}
"""


def test_tile_footprints_from_the_operands() -> None:
    """Hand-computed: 2048 bytes of f16 in 32 rows = 32 elements a row."""
    from xdsl.dialects.builtin import IntegerAttr

    from pypto.dialects.traits import Tile, has_tile_footprint, tile_footprint

    module, _ = parse_module(make_context(), FOOTPRINT_IR, "footprint.mlir")
    ops = {op.name: op for op in module.walk()}

    def constant(value):
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None

    known = {**{v: constant(v) for op in module.walk() for v in op.results}}
    load = tile_footprint(ops["pto.async_load"], known.get)
    assert load == {0: Tile(32, 32, 32), 1: None}  # the source stride %K is not known
    assert load[0].extent == 32 * 32 and load[0].elements == 1024
    store = tile_footprint(ops["pto.tile_store"], lambda v: known.get(v) or 64)
    assert store == {0: Tile(32, 32, 64), 1: Tile(32, 32, 32)}
    assert store[0].extent == 31 * 64 + 32
    assert tile_footprint(ops["pto.fill"], known.get) == {0: Tile(1, 100, 100)}
    assert tile_footprint(ops["pto.mma"], known.get) == {
        0: Tile(16, 8, 8), 1: Tile(16, 32, 32), 2: Tile(32, 8, 8)}
    assert tile_footprint(ops["pto.wait"], known.get) is None
    assert not has_tile_footprint(pto.LoadOp)


def test_warp_collectives_are_declared_by_their_trait() -> None:
    """The shuffles give each lane its own value, the votes one value per warp; no other op is
    a warp collective, and none of them is a block collective, a barrier or a memory access."""
    from pypto.dialects.traits import (declared_accesses, is_block_collective, sync_scope,
                                       warp_collective)

    expected = {"pto.shfl": "lane", "pto.shfl_up": "lane", "pto.shfl_down": "lane",
                "pto.shfl_xor": "lane", "pto.ballot": "warp", "pto.vote_any": "warp",
                "pto.vote_all": "warp"}
    assert {name: warp_collective(op) for name, op in OPS.items()
            if warp_collective(op) is not None} == expected
    for name in expected:
        op = OPS[name]
        assert not is_block_collective(op) and sync_scope(op) is None
        assert declared_accesses(op) == ()
