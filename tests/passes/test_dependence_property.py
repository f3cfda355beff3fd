"""Generated pipelined kernels *with dependences*, every pipeline against `pipeline=""`.

The earlier generators built independent tiles and found none of issue 17's miscompiles. These
kernels make the passes' dependence logic matter: HBM recurrences (the compute stage writes
tiles that later iterations load, at distance -1 .. 2, through the same or another parameter,
and the same tensor passed for two parameters), conditional and looped copies before an MMA,
and copies into overlapping parts of one L1 buffer. Each is run with no pass at all (the
reference) and under the default pipeline, three stages, the npu level, load/mma fusion (the
default target and one that fuses across 8 instructions) and a random warp schedule, and must
give the same bits.

`PYPTO_PROPERTY_LONG=1` runs the long profile (its count is in the issue-17 closing note).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto as pto
from pypto.compiler import DEFAULT_PIPELINE
from tests.kernels.conftest import same_bits
from tests.profiles import LONG as TEST_LONG

LONG = os.environ.get("PYPTO_PROPERTY_LONG") == "1" or TEST_LONG  # PYPTO_TEST_LONG=1 too
EXAMPLES = int(os.environ.get("PYPTO_PROPERTY_EXAMPLES", 1500 if LONG else 8))
_COUNTER = itertools.count()

FUSED = f"{DEFAULT_PIPELINE},convert-pto-to-npu,npu-fuse-load-mma"
PIPELINES = [None, "pto-double-buffer{stages=3},pto-allocate-l1,pto-verify-barriers",
             f"{DEFAULT_PIPELINE},convert-pto-to-npu", FUSED]

RECURRENCE = '''\
import pypto as pto


@pto.kernel
def gen(x, y, ntiles, n):
    tid = pto.get_local_id()
    for k in range(ntiles):
        with pto.pipeline() as pl:
            with pl.stage("load"):
                ta = pto.alloc_local({T})
                tok_a = pto.async_load(ta, x + ({load_a}), {T} * 4)
{second_load}
            with pl.stage("compute", after="load"):
                pto.wait(tok_a)
{wait_b}
                v = pto.load(ta + tid){use_b}
{compute}
'''

SECOND_LOAD = '''\
            with pl.stage("load_b", after="load"):
                tb = pto.alloc_local({T})
                tok_b = pto.async_load(tb, {src_b} + ({load_b}), {T} * 4)'''

MMA = '''\
import pypto as pto


@pto.kernel
def gen(x, y, ntiles, n):
    C = pto.alloc_local(16)
    pto.fill(C, 0.0, 16)
    B = pto.alloc_local(16)
    pto.fill(B, 1.0, 16)
    with pto.pipeline() as pl:
        with pl.stage("ld"):
            A = pto.alloc_local(24)
            pto.fill(A, 2.0, 24)
{copies}
        with pl.stage("mm", after="ld"):
            pto.mma(C, A, B, 4, 4, 4)
    pto.store(y, C, 16 * 4)
'''


def _indent(lines: list[str], depth: int) -> str:
    return "\n".join("    " * depth + line for line in lines)


@st.composite
def recurrences(draw):
    T = draw(st.sampled_from([32, 64]))
    stride = draw(st.sampled_from([T // 2, T, 2 * T]))
    shift = draw(st.sampled_from([0, 8, T]))
    load_a = f"k * {stride} + {shift}"
    has_b = draw(st.booleans())
    second = ""
    wait_b = ""
    use_b = ""
    if has_b:
        src_b = draw(st.sampled_from(["x", "y"]))
        load_b = draw(st.sampled_from([f"k * {stride}", f"(k + 1) * {stride}", f"{T} + k * {T}"]))
        second = SECOND_LOAD.format(T=T, src_b=src_b, load_b=load_b)
        wait_b = "                pto.wait(tok_b)"
        use_b = " + pto.load(tb + tid) * 0.5"
    dst = draw(st.sampled_from(["x", "y"]))
    dist = draw(st.sampled_from([-1, 0, 1, 2]))
    form = draw(st.sampled_from(["plain", "parens", "masked", "atomic", "tile", "runtime"]))
    # dist -1: the start of this iteration's span, just below what its load read (no shift)
    at = f"(k + {dist}) * {stride} + {shift}" if dist >= 0 else f"k * {stride}"
    if form == "parens":
        at = f"{stride} * k + ({max(dist, 0) * stride + shift})"
    if form == "runtime":
        at = f"(k + n) * {stride} + {shift}"
    lines: list[str] = []
    if form == "masked":
        lines += [f"if tid < {T // 2}:", f"    pto.store({dst} + ({at}) + tid, v * 2.0 + 1.0)"]
    elif form == "atomic":
        lines += [f"pto.atomic_add({dst} + ({at}) + tid, v)"]
    elif form == "tile":
        lines += [f"out = pto.alloc_local({T})",
                  "pto.store(out + tid, v * 2.0 + 1.0)",
                  "pto.barrier_block()",
                  f"t2 = pto.async_store({dst} + ({at}), out, {T} * 4)",
                  "pto.wait(t2)"]
    else:
        lines += [f"pto.store({dst} + ({at}) + tid, v * 2.0 + 1.0)"]
    source = RECURRENCE.format(T=T, load_a=load_a, second_load=second, wait_b=wait_b,
                               use_b=use_b, compute=_indent(lines, 4))
    ntiles = draw(st.integers(0, 4))
    n = draw(st.sampled_from([0, 1, 2]))
    same = draw(st.booleans())  # pass one tensor as both x and y
    size = (ntiles + 4) * stride + shift + 2 * T
    return source, T, ntiles, n, same, size


@st.composite
def mma_copies(draw):
    lines: list[str] = []
    for i in range(draw(st.integers(1, 3))):
        off = draw(st.sampled_from([0, 4, 8, 12, 16]))
        count = draw(st.sampled_from([8, 16])) if off <= 8 else 8
        kind = draw(st.sampled_from(["plain", "if", "for"]))
        body = [f"t{i} = pto.async_load(A + {off}, x + {i * 16}, {count} * 4)", f"pto.wait(t{i})"]
        if kind == "if":
            lines += [f"if n > {draw(st.integers(0, 2))}:"] + ["    " + b for b in body]
        elif kind == "for":
            lines += [f"for j{i} in range(n):"] + ["    " + b for b in body]
        else:
            lines += body
    source = MMA.format(copies=_indent(lines, 3))
    return source, 64, 0, draw(st.integers(0, 2)), False, 64


def _load(tmp: Path, source: str):
    path = tmp / f"dep_{next(_COUNTER)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module.gen


def _outcome(kernel, block, host, same, **options):
    """The bytes of x and y after the kernel (or the error's type and first line)."""
    dx = pto.alloc_tensor(host[0].nbytes)
    pto.memcpy_h2d(dx, host[0])
    dy = dx if same else pto.alloc_tensor(host[1].nbytes)
    if not same:
        pto.memcpy_h2d(dy, host[1])
    args = (dx, dy, *host[2:])
    try:
        ck = pto.compile(kernel, args=args, block=block, **options)
        pto.launch(ck, grid=1, block=block, args=args)
        out = [np.empty_like(host[0]), np.empty_like(host[1])]
        pto.memcpy_d2h(out[0], dx)
        pto.memcpy_d2h(out[1], dy)
        return [o.tobytes() for o in out]
    except pto.PtoError as exc:
        return (type(exc).__name__, str(exc).splitlines()[0].split(": ", 1)[-1])


@pytest.fixture(scope="module")
def far_target(tmp_path_factory):
    path = tmp_path_factory.mktemp("targets") / "far.toml"
    path.write_text('[fusion]\npairs = [["npu.copy_in", "npu.mma"]]\nmax_distance = 8\n')
    return str(path)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=st.one_of(recurrences(), mma_copies()), seed=st.integers(0, 99))
def test_every_pipeline_keeps_the_results(case, seed, tmp_path, far_target):
    source, T, ntiles, n, same, size = case
    kernel = _load(tmp_path, source)
    rng = np.random.default_rng(seed)
    host = [rng.integers(-8, 8, size).astype(np.float32),
            rng.integers(-8, 8, size).astype(np.float32), ntiles, n]
    reference = _outcome(kernel, T, host, same, pipeline="")
    assert isinstance(reference, list), (reference, source)
    for pipeline in PIPELINES:
        got = _outcome(kernel, T, host, same, pipeline=pipeline)
        assert got == reference, (pipeline, source)
    got = _outcome(kernel, T, host, same, pipeline=FUSED, target=far_target)
    assert got == reference, ("far fusion", source)
    got = _outcome(kernel, T, host, same, schedule=f"random:{seed}")
    assert got == reference, ("schedule", source)
