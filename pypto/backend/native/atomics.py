"""The atomics besides `atomic_add` in the llvm dialect (`convert-pto-to-llvm`).

The lanes of a block run one after another in compiled code, so an atomic is a plain load,
combine and store: the interpreter's documented order (docs/language.md#atomics: lanes on one
address one at a time, lowest lane first) whenever the support check (support.py) has made sure
the order is the interpreter's or cannot show. The combination is the interpreter's
(pypto/backend/interpreter/atomic_rmw.py): float `max` / `min` are IEEE `maximum` / `minimum`
(`llvm.maximum`: a NaN wins, +0 > -0), integer ones signed; `exch` stores the operand bit for bit;
`cas` stores the operand when the old value equals `compare` exactly (integers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, IntegerType, i64
from xdsl.ir import Operation, SSAValue

from pypto.backend.native.quick_ops import extreme_ops
from pypto.dialects import pto
from pypto.dialects.traits import atomic_update

if TYPE_CHECKING:
    from pypto.backend.native.to_llvm import _FunctionLowering

_INT_BITWISE = {"and": llvm.AndOp, "or": llvm.OrOp, "xor": llvm.XOrOp}
_INT_MINMAX = {"max": "sgt", "min": "slt"}
_FLOAT_MINMAX = {"max": "maximum", "min": "minimum"}


def is_rmw_atomic(op: Operation) -> bool:
    """An atomic lowered here (every `AtomicUpdate` op but `pto.atomic_add`)."""
    update = atomic_update(op)
    return update is not None and update.kind != "add"


def lower_atomic(lowering: _FunctionLowering, op: Operation) -> None:
    """`old = *p; *p = combine(old, v)` before `op`, its result replaced by `old`."""
    update = atomic_update(op)
    assert update is not None
    kind = update.kind
    value = op.operands[-1]
    t = value.type
    address = lowering._checked_address(op, op.operands[0], t)
    old = llvm.LoadOp(address, t)
    new: list[Operation] = [old]
    a = old.results[0]
    result: SSAValue
    if kind == "exch":
        result = value
    elif kind == "cas":
        assert isinstance(op, pto.AtomicCasOp)
        same = llvm.ICmpOp(a, op.compare, IntegerAttr(0, i64))  # eq
        pick = llvm.SelectOp(same.results[0], value, a)
        new += [same, pick]
        result = pick.results[0]
    elif kind in _INT_BITWISE:
        combine = _INT_BITWISE[kind](a, value)
        new.append(combine)
        result = combine.results[0]
    elif isinstance(t, IntegerType):
        pred = llvm.ICmpPredicateFlag(_INT_MINMAX[kind]).to_int()
        cmp = llvm.ICmpOp(a, value, IntegerAttr(pred, i64))
        pick = llvm.SelectOp(cmp.results[0], a, value)
        new += [cmp, pick]
        result = pick.results[0]
    else:
        ops = extreme_ops(_FLOAT_MINMAX[kind], t, a, value)  # (of NaNs: the old one first)
        new += ops
        result = ops[-1].results[0]
    new.append(llvm.StoreOp(result, address))
    lowering._replace(op, *new, result=a)
