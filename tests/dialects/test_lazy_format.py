"""The pto / npu ops compile their declarative assembly format at first use
(pypto.dialects.lazy_format): every format must still be valid, read as declared, and print and
parse exactly as xDSL's eagerly compiled format does; and `import pypto` must stay free of the
machinery it defers (cost model, logging)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def
from xdsl.irdl.operations import PyRDLOpDefinitionError
from xdsl.dialects.builtin import i32
from xdsl.parser import Parser

from pypto.dialects import npu, pto
from pypto.dialects.lazy_format import _LAZY, check_formats, op_definition
from pypto.ir import make_context, print_ir


def test_every_lazy_format_compiles():
    assert len(_LAZY) > 30  # the pto and npu ops with a format
    assert check_formats() == []


@pytest.mark.parametrize("cls", _LAZY, ids=lambda c: c.get_irdl_definition().name)
def test_format_reads_as_declared(cls):
    assert cls.assembly_format
    assert cls.get_irdl_definition().assembly_format == cls.assembly_format


def test_printing_and_parsing_round_trips():
    """A module using many pto ops prints, parses back and prints identically (the exact
    text of each format is checked by tests/filecheck)."""
    import pypto as pto_api
    from tests.kernels.test_reduction import block_sum

    x = pto_api.alloc_tensor(1024 * 4)
    p = pto_api.alloc_tensor(4 * 4)
    compiled = pto_api.compile(block_sum, args=(x, p, 1024, 256, 8), block=256)
    text = compiled.mlir
    assert "pto." in text
    module = Parser(make_context(), text).parse_module()
    assert print_ir(module) == text


def test_a_bad_format_is_reported_at_first_use():
    @op_definition
    class BadOp(IRDLOperation):
        name = "test.bad_lazy_format"
        x = operand_def(i32)
        assembly_format = "$x $x attr-dict"  # the operand twice: not a valid format

    assert "test.bad_lazy_format" in check_formats()
    with pytest.raises(PyRDLOpDefinitionError):
        BadOp._format_program()
    _LAZY.remove(BadOp)
    with pytest.raises(PyRDLOpDefinitionError):  # xDSL rejects the same format eagerly
        @irdl_op_definition
        class BadEagerOp(IRDLOperation):
            name = "test.bad_eager_format"
            x = operand_def(i32)
            assembly_format = "$x $x attr-dict"


def test_format_and_custom_printer_cannot_both_be_defined():
    with pytest.raises(PyRDLOpDefinitionError):
        @op_definition
        class BothOp(IRDLOperation):
            name = "test.both"
            assembly_format = "attr-dict"

            def print(self, printer):  # noqa: A003
                pass


def test_dialect_ops_are_the_lazy_ones():
    assert pto.LoadOp in _LAZY and any(op in _LAZY for op in vars(npu).values())


def test_import_pypto_defers_cost_model_and_logging():
    code = ("import sys, pypto; "
            "deferred = [m for m in ('pypto.backend.cost_model', 'logging') if m in sys.modules]; "
            "assert not deferred, deferred; "
            "from pypto import Profile; assert pypto.Profile is Profile; "
            "assert 'Profile' in dir(pypto); "
            "import pypto.compiler as c; assert c.logger.name == 'pypto'")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr
