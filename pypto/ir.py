"""IR plumbing shared by the compiler, the interpreter and pypto-opt: the context of dialects
pypto understands, and printing helpers."""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, scf
from xdsl.ir import Attribute, Block, Operation, SSAValue
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


def structure_text(op: Operation) -> str:
    """A deterministic text holding everything about `op` the printer with debug info would:
    each nested op's name, operands (values numbered in order of definition), result types,
    properties, attributes and location, its regions' blocks (argument types, successors by
    number) and ops. Not parseable: a key for caches (the native backend's disk cache,
    docs/native.md#the-cache), about 6x faster than `print_ir(op, debuginfo=True)` because each
    distinct attribute is turned into text once."""
    values: dict[SSAValue, int] = {}
    blocks: dict[Block, int] = {}
    texts: dict[Attribute, str] = {}
    out: list[str] = []

    def text(a: Attribute) -> str:
        found = texts.get(a)
        if found is None:
            found = texts[a] = str(a)
        return found

    def visit(o: Operation) -> None:
        out.append(o.name)
        out.append(" ".join(str(values[v]) if v in values else "?" for v in o.operands))
        for r in o.results:
            values[r] = len(values)
            out.append(text(r.type))
        for k in sorted(o.properties):
            out.append(f"{k}={text(o.properties[k])}")
        for k in sorted(o.attributes):
            out.append(f"{k}:{text(o.attributes[k])}")
        out.append(text(o.location))
        out.append(" ".join(str(blocks.get(b, "?")) for b in o.successors))
        for region in o.regions:
            for b in region.blocks:
                blocks[b] = len(blocks)
            out.append("{")
            for b in region.blocks:
                out.append(f"^{blocks[b]}")
                for a in b.args:
                    values[a] = len(values)
                    out.append(text(a.type))
                for inner in b.ops:
                    visit(inner)
            out.append("}")

    visit(op)
    return "\n".join(out)


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
