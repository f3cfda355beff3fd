"""Ops built without xDSL's checked constructors, for the lowering's most frequent ops.

xDSL's op constructors check and convert their arguments (types, attributes built and verified
from Python values) each time: 15-50 us per op, most of the lowering's op creation. Here the
checked constructor runs once per op kind, static arguments and operand types, and every
later op of that key is created from the first one's result types, properties and attributes
(immutable: ops share them) on its own operands. The op is the one the constructor would have
built: same printed IR, same LLVM IR (docs/native.md#compile-time).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Block, Operation, SSAValue

_CONSTANTS: dict[tuple[Attribute, object], Attribute] = {}


def constant_attr(value: int | float, t: Attribute) -> Attribute:
    """The value attribute of a constant of type `t`, built once per value and type
    (attributes are immutable: ops share them; building one verifies and normalises it).
    Floats are keyed by their bits (-0.0 is not 0.0; a NaN keeps its payload)."""
    if isinstance(value, float):
        key: tuple[Attribute, object] = (t, struct.pack("<d", value))
    elif type(value) is int:
        key = (t, value)
    else:  # (bool, NumPy scalars: built each time, as given)
        return IntegerAttr(value, t) if isinstance(t, IntegerType) else FloatAttr(value, t)
    attr = _CONSTANTS.get(key)
    if attr is None:
        attr = IntegerAttr(value, t) if isinstance(t, IntegerType) else FloatAttr(value, t)
        _CONSTANTS[key] = attr
    return attr


_PROTOTYPES: dict[tuple[object, ...], tuple[list[Attribute], dict[str, Attribute],
                                          dict[str, Attribute]]] = {}


def quick(cls: type[Operation], operands: tuple[SSAValue, ...], static: tuple[object, ...],
          make: Callable[[], Operation], successors: tuple[Block, ...] = ()) -> Operation:
    """`make()` (which builds a `cls` op on `operands` and `successors` from `static`
    arguments besides them), built faster: `make()` runs once per op kind, static arguments
    and operand types, then ops are created with the same result types, properties and
    attributes on the new operands and successors. The op is the one `make()` would build."""
    key = (cls, static, *(v.type for v in operands))
    proto = _PROTOTYPES.get(key)
    if proto is None:
        op = make()
        _PROTOTYPES[key] = ([r.type for r in op.results], dict(op.properties),
                            dict(op.attributes))
        return op
    types, properties, attributes = proto
    return cls.create(operands=operands, result_types=types, properties=properties,
                      attributes=attributes, successors=successors)


def int_constant(value: int, t: IntegerType) -> arith.ConstantOp:
    """`arith.constant value : t` (as `arith.ConstantOp(IntegerAttr(value, t))`)."""
    return arith.ConstantOp.create(properties={"value": constant_attr(value, t)},
                                   result_types=[t])


def cmpi(a: SSAValue, b: SSAValue, predicate: str) -> arith.CmpiOp:
    """`arith.cmpi predicate, a, b` (as `arith.CmpiOp(a, b, predicate)`)."""
    return quick(arith.CmpiOp, (a, b), (predicate,),  # type: ignore[return-value]
                 lambda: arith.CmpiOp(a, b, predicate))


def binary(cls: type[Operation], a: SSAValue, b: SSAValue) -> Operation:
    """`cls(a, b)` for an `arith` binary op (`arith.AddiOp`, `arith.AndIOp`, ...)."""
    return quick(cls, (a, b), (), lambda: cls(a, b))  # type: ignore[call-arg]


def append(block: Block, op: Operation) -> SSAValue:
    """Add `op` at the end of `block` and return its first result (the lowering's builders
    append op after op)."""
    block.add_op(op)
    return op.results[0]


def i32_constant(block: Block, value: int) -> SSAValue:
    """An i32 constant appended to `block` (a lane id, bound or stride)."""
    return append(block, int_constant(value, IntegerType(32)))


KEEP_LOOP_MARKER = "llvm.donothing"
"""The intrinsic call marking the body of a loop LLVM must not unroll, until
pair_runs.keep_run_loops puts `llvm.loop.unroll.disable` on the innermost loop around it and
removes it (a sorting network's runs of pairs, pair_runs.py; full lanes' rows,
fast_blocks.KEEP_X_LOOPS)."""


def keep_loop_marker() -> Operation:
    from xdsl.dialects import llvm

    return llvm.CallIntrinsicOp(KEEP_LOOP_MARKER, [], [])


ANY_NAN_ATTR = "pto.native_any_nan"
"""On an `arith.maximumf` / `minimumf`: which NaN it returns does not matter (a tile
reduction recomputes a line holding a NaN, tile_loops.py), so it lowers to the bare
intrinsic, which LLVM vectorises as a reduction, not to `extreme_ops`."""


def extreme_ops(name: str, t: Attribute, x: SSAValue, y: SSAValue) -> list[Operation]:
    """LLVM ops computing float `name` ("maximum" or "minimum", suffix of the intrinsic's
    type `t`) of `x` and `y` as the interpreter does (pypto/exact.py, NumPy's choice): IEEE
    for numbers (-0 < +0); of NaNs the first operand if it is one, else the second, bits
    unchanged (`llvm.maximum` returns *a* NaN). The last op's result is the value."""
    from xdsl.dialects import llvm

    m = llvm.CallIntrinsicOp(f"llvm.{name}.{t}", [x, y], [t])
    y_nan = llvm.FCmpOp(y, y, "uno")
    pick_y = llvm.SelectOp(y_nan.results[0], y, m.results[0])
    x_nan = llvm.FCmpOp(x, x, "uno")
    return [m, y_nan, pick_y, x_nan, llvm.SelectOp(x_nan.results[0], x, pick_y.results[0])]
