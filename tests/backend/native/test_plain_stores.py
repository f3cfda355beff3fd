"""`store(select(c, x, load p), p)` gets a `freeze` on the reloaded value (plain_stores.py,
docs/native.md#speed): only there, and the module still parses, verifies and computes the
same values (the kernels' bits: test_tree_selects.py runs argmin block natively with it)."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from pypto.backend.native.plain_stores import freeze_reloads


def _module() -> ir.Module:
    """`keep(p, q, c)`: p[0] = c ? 7.0 : p[0] (stored back: frozen), q[0] = c ? 7.0 : p[1]
    (stored elsewhere: left alone)."""
    f32, ptr = ir.FloatType(), ir.PointerType()
    module = ir.Module("m")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ir.IntType(1)]), "keep")
    p, q, c = fn.args
    b = ir.IRBuilder(fn.append_basic_block())
    old = b.load(b.gep(p, [ir.Constant(ir.IntType(64), 0)], source_etype=f32), typ=f32)
    b.store(b.select(c, ir.Constant(f32, 7.0), old),
            b.gep(p, [ir.Constant(ir.IntType(64), 0)], source_etype=f32))
    other = b.load(b.gep(p, [ir.Constant(ir.IntType(64), 1)], source_etype=f32), typ=f32)
    b.store(b.select(c, ir.Constant(f32, 7.0), other), q)
    b.ret_void()
    return module


def test_only_the_value_stored_back_is_frozen():
    module = _module()
    assert freeze_reloads(module) == 1
    text = str(module)
    assert text.count("freeze float") == 1
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    parsed = llvm.parse_assembly(text)
    parsed.verify()
    engine = llvm.create_mcjit_compiler(parsed, llvm.Target.from_default_triple()
                                        .create_target_machine())
    engine.finalize_object()
    keep = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_bool)(
        engine.get_function_address("keep"))
    nan = np.frombuffer(np.uint32(0x7FC01234).tobytes(), np.float32)[0]  # (a payload)
    for c in (False, True):
        p = np.array([nan, -0.0], np.float32)
        q = np.zeros(1, np.float32)
        keep(p.ctypes.data, q.ctypes.data, c)
        want_p = np.array([7.0 if c else nan, -0.0], np.float32)
        want_q = np.array([7.0 if c else -0.0], np.float32)
        assert np.array_equal(p.view(np.uint32), want_p.view(np.uint32))
        assert np.array_equal(q.view(np.uint32), want_q.view(np.uint32))
