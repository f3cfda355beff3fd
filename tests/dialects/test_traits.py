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

# The machine model (SPEC §1-§2), written out by hand: pipe, block collective, accesses as
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
