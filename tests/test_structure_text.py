"""`pypto.ir.structure_text`, the native disk cache's key text (docs/native.md#the-cache): the
same for the same kernel compiled twice, different whenever anything the printer with debug info
shows differs (an op, an operand's order, a constant, a type, a location, a block shape), so
two kernels never share a cache entry."""

from __future__ import annotations

import numpy as np

import pypto as pto
from pypto.ir import make_context, print_ir, structure_text
from pypto.tools.parsing import parse_module


def _func(kernel, x, n=8):
    return pto.compile(kernel, args=(x, np.zeros_like(x), n), block=8).func


@pto.kernel
def scale(x, y, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.load(x + i) * 2.0)


@pto.kernel
def scale3(x, y, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.load(x + i) * 3.0)


@pto.kernel
def scale_moved(x, y, n):

    i = pto.get_global_id()
    if i < n:
        pto.store(y + i, pto.load(x + i) * 2.0)


@pto.kernel
def swapped(x, y, n):
    i = pto.get_global_id()
    if n > i:
        pto.store(y + i, 2.0 * pto.load(x + i))


def test_same_kernel_same_text():
    x = np.ones(8, np.float32)
    assert structure_text(_func(scale, x)) == structure_text(_func(scale, x.copy()))


def test_any_difference_changes_the_text():
    x = np.ones(8, np.float32)
    base = structure_text(_func(scale, x))
    assert structure_text(_func(scale3, x)) != base  # a constant
    assert structure_text(_func(scale_moved, x)) != base  # only the locations
    assert structure_text(_func(swapped, x)) != base  # operand order, predicate
    assert structure_text(_func(scale, x.astype(np.float64))) != base  # types


def test_two_parses_of_one_text_give_one_structure_text():
    """The text depends on what the IR holds, not on the objects (no ids, no hashes): two
    kernels parsed from one printed text have one structure text, another text another."""
    func = _func(scale, np.ones(8, np.float32))
    texts = []
    for printed in (print_ir(func, debuginfo=True), print_ir(func, debuginfo=True),
                    print_ir(_func(scale3, np.ones(8, np.float32)), debuginfo=True)):
        module, _ = parse_module(make_context(), printed, "kernel.mlir")
        (parsed,) = [op for op in module.walk() if op.name == "func.func"]
        texts.append(structure_text(parsed))
    assert texts[0] == texts[1] != texts[2]
