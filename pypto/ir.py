"""IR plumbing shared by the compiler, the interpreter and pypto-opt: the context of dialects
pypto understands, and printing helpers."""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, scf
from xdsl.ir import Operation
from xdsl.printer import Printer

from pypto.dialects.npu import NPU
from pypto.dialects.pto import PTO


def make_context() -> Context:
    """A fresh xDSL context with `pto`, `npu` and the upstream dialects their IR uses."""
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, math.Math, scf.Scf, PTO, NPU):
        ctx.load_dialect(dialect)
    return ctx


class _Printer(Printer):
    """xDSL 0.74's printer, with op locations only where the parser reads them back.

    With `print_debuginfo`, xDSL prints `loc(...)` inside `print_operation_type`, which is right
    for the generic format (the type ends the op) but wrong when a custom format calls it in the
    middle of the op: `scf.while (...) : (i32) -> i32 loc(...) {` does not parse ("Expected
    region!"). Custom formats already get their location after the whole op (`print_op`)."""

    _generic_depth: int = 0

    def print_op_with_default_format(self, op: Operation) -> None:
        self._generic_depth += 1
        try:
            super().print_op_with_default_format(op)
        finally:
            self._generic_depth -= 1

    def print_operation_type(self, op: Operation) -> None:
        if self._generic_depth:
            super().print_operation_type(op)
        else:
            self.print_function_type(op.operand_types, op.result_types)


def print_ir(op: Operation, *, debuginfo: bool = False, generic: bool = False) -> str:
    """Print an op (usually a module) to a string, as `pypto-opt` would."""
    stream = io.StringIO()
    printer = _Printer(stream=stream, print_debuginfo=debuginfo, print_generic_format=generic)
    printer.print_op(op)
    stream.write("\n")
    return stream.getvalue()


LAUNCH_ATTR = "pto.launch"
"""The module attribute where `pto.compile` records the launch it specialised the kernel for:
`{block = array<i64: X, Y, Z>, args = {name = value, ...}}`, a pointer parameter's value being
its tensor's element count and a scalar's its value. `pypto-opt --emit=cost` takes the sizes
it needs from it when no `--arg` / `--block` is given (docs/pypto-opt.md#the-recorded-launch).
Discardable: the interpreter and the passes never read it."""


def record_launch(module: builtin.ModuleOp, block: tuple[int, int, int],
                  args: dict[str, int | float]) -> None:
    """Write the `pto.launch` record of a compile's launch (see `LAUNCH_ATTR`)."""
    values: dict[str, builtin.IntegerAttr | builtin.FloatAttr] = {}
    for name, value in args.items():
        values[name] = (builtin.FloatAttr(float(value), builtin.f64) if isinstance(value, float)
                        else builtin.IntegerAttr(int(value), builtin.i64))
    module.attributes[LAUNCH_ATTR] = builtin.DictionaryAttr({
        "block": builtin.DenseArrayBase.from_list(builtin.i64, list(block)),
        "args": builtin.DictionaryAttr(values)})


def recorded_launch(module: builtin.ModuleOp) -> tuple[tuple[int, ...], dict[str, str]] | None:
    """The block and the `--arg`-style values (`name -> text`) of the module's `pto.launch`
    record, or None when it has none (or not in the form `record_launch` writes)."""
    record = module.attributes.get(LAUNCH_ATTR)
    if not isinstance(record, builtin.DictionaryAttr):
        return None
    block = record.data.get("block")
    args = record.data.get("args")
    if not isinstance(block, builtin.DenseArrayBase) or \
            not isinstance(args, builtin.DictionaryAttr):
        return None
    values: dict[str, str] = {}
    for name, attr in args.data.items():
        if isinstance(attr, builtin.IntegerAttr):
            values[name] = str(attr.value.data)
        elif isinstance(attr, builtin.FloatAttr):
            values[name] = repr(attr.value.data)
    return tuple(int(x) for x in block.get_values()), values
