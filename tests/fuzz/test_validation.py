"""Per-pass translation validation (`compile(validate=True)`, `pypto-opt --validate`): it names
a deliberately wrong pass with the element and the op, passes correct pipelines, and runs over
the whole kernel zoo (tests/kernels) with the rewriting passes in front of every pipeline."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import arith
from xdsl.passes import ModulePass

import pypto as pto
from pypto import passes as registry
from tests.profiles import LONG
from pypto.backend.validation import TranslationValidationError
from pypto.tools.opt import main as opt_main

ROOT = Path(__file__).resolve().parents[2]
ZOO_PASSES = "canonicalize,cse"
"""Run (and validated) in front of every zoo kernel's own pipeline, whose default is
pto-double-buffer,pto-allocate-l1,pto-verify-barriers (validated too)."""


@dataclass(frozen=True)
class AddToSub(ModulePass):
    """A deliberately wrong pass: every arith.addf becomes arith.subf."""

    name = "test-add-to-sub"

    def apply(self, ctx, module) -> None:  # noqa: ANN001 - ModulePass signature
        for op in list(module.walk()):
            if isinstance(op, arith.AddfOp):
                new = arith.SubfOp(op.lhs, op.rhs)
                new.location = op.location
                op.parent_block().insert_op_before(new, op)
                op.results[0].replace_all_uses_with(new.results[0])
                op.detach()
                op.erase()


@pytest.fixture
def wrong_pass(monkeypatch):
    monkeypatch.setitem(registry.PASSES, AddToSub.name, lambda: AddToSub)


@pto.kernel
def axpb(x, o, a, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, a * pto.load(x + i) + 2.0 * 3.0)


def _args():
    return (pto.alloc_tensor(1024 * 4), pto.alloc_tensor(1024 * 4), 2.0, 1024)


def test_compile_validate_names_the_wrong_pass_element_and_op(wrong_pass):
    with pytest.raises(TranslationValidationError) as info:
        pto.compile(axpb, args=_args(), block=128, validate=True,
                    pipeline="canonicalize,test-add-to-sub,cse")
    message = str(info.value)
    assert info.value.pass_name == "test-add-to-sub" and info.value.kernel == "axpb"
    assert "pass 'test-add-to-sub' (#2 of the pipeline)" in message
    assert "tensor 'o' element 0:" in message
    assert "arith.subf" in message and "test_validation.py:" in message
    assert isinstance(info.value, pto.PtoError)


def test_compile_validate_accepts_correct_passes_and_computes_the_same():
    ck = pto.compile(axpb, args=_args(), block=128, validate=True,
                     pipeline="canonicalize,cse,pto-insert-barriers,pto-verify-barriers")
    x, o = pto.alloc_tensor(256 * 4), pto.alloc_tensor(256 * 4)
    host = np.linspace(-1, 1, 256, dtype=np.float32)
    pto.memcpy_h2d(x, host)
    pto.launch(ck, grid=2, block=128, args=(x, o, 2.0, 256))
    out = np.empty(256, np.float32)
    pto.memcpy_d2h(out, o)
    assert np.array_equal(out, np.float32(2.0) * host + np.float32(6.0))


MLIR = """\
func.func @k(%p: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %q : !pto.ptr<f32, global> -> f32 loc("k.py":7:8)
  %c = arith.constant 2.0 : f32
  %w = arith.addf %v, %c : f32 loc("k.py":8:8)
  pto.store %w, %q : f32, !pto.ptr<f32, global>
  func.return
}
"""


def test_opt_validate(tmp_path, capsys, wrong_pass):
    path = tmp_path / "k.mlir"
    path.write_text(MLIR)
    assert opt_main([str(path), "-p", "canonicalize,cse", "--validate"]) == 0
    capsys.readouterr()
    assert opt_main([str(path), "-p", "cse,test-add-to-sub", "--validate"]) == 1
    err = capsys.readouterr().err
    assert "error: translation validation: pass 'test-add-to-sub' (#2 of the pipeline)" in err
    assert "tensor 'p' element 0:" in err and "(Python source k.py:8:8)" in err
    assert "Traceback" not in err


ZOO_SHORT = ("test_double_buffer.py test_pipelined.py test_transpose.py",
             "test_matmul.py test_reduction.py")
"""The zoo files validated by default, in two similar halves (one test each, so that two
workers share them): the kernels with L1, pipelines and barriers, which every pass of
ZOO_PASSES and the default pipeline transforms. PYPTO_TEST_LONG=1 validates the whole zoo."""


@pytest.mark.parametrize("part", ["all"] if LONG else ZOO_SHORT)
def test_validation_over_the_kernel_zoo(tmp_path, part):
    """Every zoo kernel (a representative part by default, see ZOO_SHORT; one file per test so
    that parallel workers share them) compiled with ZOO_PASSES in front of its pipeline,
    validated after each pass, and still checked against NumPy by the zoo's own assertions."""
    log = tmp_path / "validate.log"
    env = dict(os.environ, PYPTO_VALIDATE=ZOO_PASSES, PYPTO_VALIDATE_LOG=str(log))
    zoo = ROOT / "tests" / "kernels"
    files = [str(zoo)] if part == "all" else [str(zoo / name) for name in part.split()]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           "-p", "no:xdist", *files], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = log.read_text().splitlines()
    checked = {line.split(":")[0] for line in lines if line.startswith("checked ")}
    skipped = {line.split(":")[0] for line in lines if line.startswith("skipped ")}
    assert len(checked) >= (35 if part == "all" else 1), sorted(checked)
    # only the deliberately racy kernels (in-flight copy hazards) cannot run on any input
    assert skipped - checked <= {"skipped matmul_no_wait", "skipped matmul_token_waits",
                                 "skipped scale_double_buffered"}, sorted(skipped)
