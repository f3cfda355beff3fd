"""Folded constants: across pipeline stages, `after=` lists, recompiling when a module or closure
constant changes.

A regression test for a defect a new user hit (issue 8), kept next to its feature. Expected
values are worked out by hand with exact arithmetic (see each docstring), never taken from the
implementation.
"""

from __future__ import annotations

import numpy as np

import pypto as pto
from tests.conftest import run_kernel


@pto.kernel
def stage_constants(o):
    x = 5.0
    with pto.pipeline() as pl:
        with pl.stage("a"):
            x = x + 1.0
            y = 2.0
        with pl.stage("b", after="a"):
            z = y * 3.0
    pto.store(o, x)
    pto.store(o + 1, z)


def test_constants_cross_pipeline_stages():
    """Item 5: a constant (re)assigned in a stage is visible in later stages and after."""
    out = run_kernel(stage_constants, 1, 1, (np.zeros(2, np.float32),))[-1]
    assert out.tolist() == [6.0, 6.0]


@pto.kernel
def after_list(o):
    with pto.pipeline() as pl:
        with pl.stage("a"):
            x = pto.load(o) + 1.0
        with pl.stage("b"):
            y = pto.load(o + 1) + 2.0
        with pl.stage("c", after=["a", "b"]):
            pto.store(o + 2, x + y)


def test_after_takes_a_list():
    """Item 6: after=[...] is a list of stage names, as the docs say."""
    out = run_kernel(after_list, 1, 1, (np.array([1.0, 2.0, 0.0], np.float32),))[-1]
    assert out.tolist() == [1.0, 2.0, 6.0]


SCALE = 2.0


@pto.kernel
def scaled(o):
    pto.store(o, pto.load(o) * SCALE)


def test_changed_module_constant_recompiles():
    """Item 7: a module-level constant folded into a kernel is part of its cache validity."""
    global SCALE
    try:
        SCALE = 2.0
        assert run_kernel(scaled, 1, 1, (np.array([3.0], np.float32),))[-1][0] == 6.0
        SCALE = 5.0
        assert run_kernel(scaled, 1, 1, (np.array([3.0], np.float32),))[-1][0] == 15.0
    finally:
        SCALE = 2.0


def test_changed_closure_constant_recompiles():
    factor = 3

    @pto.kernel
    def k(o):
        pto.store(o, pto.load(o) * factor)

    assert run_kernel(k, 1, 1, (np.array([2], np.int32),))[-1][0] == 6
    factor = 7  # noqa: F841 - read by the kernel through its closure
    assert run_kernel(k, 1, 1, (np.array([2], np.int32),))[-1][0] == 14
