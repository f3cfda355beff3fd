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


def print_ir(op: Operation, *, debuginfo: bool = False, generic: bool = False) -> str:
    """Print an op (usually a module) to a string, as `pypto-opt` would."""
    stream = io.StringIO()
    printer = Printer(stream=stream, print_debuginfo=debuginfo, print_generic_format=generic)
    printer.print_op(op)
    stream.write("\n")
    return stream.getvalue()
