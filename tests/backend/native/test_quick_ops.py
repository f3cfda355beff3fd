"""quick_ops builds the ops xDSL's checked constructors would build (docs/native.md#compile-time):
the same printed IR, op for op, on the first build (the prototype) and on later ones."""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import ModuleOp, i1, i32, i64
from xdsl.ir import Block, Region

from pypto.backend.native.quick_ops import binary, cmpi, constant_attr, int_constant, quick
from pypto.ir import print_ir


def _text(build) -> str:
    """The ops `build(arguments, target block)` makes, printed in a function."""
    args = Block(arg_types=[i32, i32, i64, i1])
    target = Block()
    fn_blocks = [args, target]
    ops = build(args.args, target)
    for op in ops:
        args.add_op(op)
    target.add_op(llvm.ReturnOp(args.args[0]))
    fn = llvm.FuncOp("f", llvm.LLVMFunctionType([i32, i32, i64, i1], i32), body=Region(fn_blocks))
    return print_ir(ModuleOp([fn]))


def test_quick_ops_print_as_the_constructors():
    def slow(a, target):
        x, y, w, c = a
        k = arith.ConstantOp.from_int_and_width(7, i64)
        return [arith.ConstantOp(constant_attr(-3, i32)), k,
                arith.CmpiOp(x, y, "slt"), arith.CmpiOp(w, k, "sge"), arith.AddiOp(x, y),
                arith.AndIOp(c, c), llvm.CondBrOp(c, target, [], target, [])]

    def fast(a, target):
        x, y, w, c = a
        k = int_constant(7, i64)
        return [int_constant(-3, i32), k, cmpi(x, y, "slt"), cmpi(w, k.result, "sge"),
                binary(arith.AddiOp, x, y), binary(arith.AndIOp, c, c),
                quick(llvm.CondBrOp, (c,), (0,),
                      lambda: llvm.CondBrOp(c, target, [], target, []), (target, target))]

    expected = _text(slow)
    assert _text(fast) == expected  # the prototypes are built here, by the constructors
    assert _text(fast) == expected  # and reused here: created without them
    assert "arith.cmpi slt" in expected and "arith.constant -3 : i32" in expected
