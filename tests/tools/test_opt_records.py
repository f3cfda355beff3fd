"""The IR's record of what ran on it (docs/pypto-opt.md#passes-already-run): `pto.passes`, the
passes every pipeline appended, and `pto.launch`, the launch `pto.compile` specialised for.

`pypto-opt` warns (errors with `--strict`) when a transforming pass runs again on IR it already
went through, and `--emit=cost` takes its sizes from `pto.launch` when no `--arg` is given.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from pypto.ir import make_context, print_ir
from pypto.passes import PASSES, parse_pipeline, pass_text, recorded_passes, rerun_safe
from pypto.tools.opt import EXIT_FAILURE, EXIT_OK, main
from pypto.tools.parsing import parse_module

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402

SIZE, TILE = 128, (64, 64, 32)
GRID, BLOCK = (2, 2), 64


def matmul_args() -> tuple[object, ...]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(SIZE * SIZE).astype(np.float32)
    b = rng.standard_normal(SIZE * SIZE).astype(np.float32)
    return (pto.tensor(a), pto.tensor(b), pto.zeros(SIZE * SIZE), SIZE, SIZE, SIZE, *TILE)


def opt(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, text: str,
        *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    code = main(["-", *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def total_cycles(out: str) -> int:
    return int(next(line for line in out.splitlines()
                    if line.startswith("total_cycles:")).split()[1])


def test_compile_records_its_passes_and_launch():
    ck = pto.compile(matmul_tile, args=matmul_args(), block=BLOCK)
    assert [p.split("{")[0] for p in recorded_passes(ck.module)] == \
        ["pto-double-buffer", "pto-allocate-l1", "pto-verify-barriers"]
    assert "pto.launch = {block = array<i64: 64, 1, 1>, args = {A = 16384 : i64, " \
           "B = 16384 : i64, C = 16384 : i64, M = 128 : i64" in ck.mlir
    # the records round-trip through the custom and the generic form
    for generic in (False, True):
        text = print_ir(ck.module, generic=generic)
        module, _ = parse_module(make_context(), text, "ck.mlir")
        assert print_ir(module) == ck.mlir


def test_recorded_pass_texts_parse_back_as_the_same_passes():
    ck = pto.compile(matmul_tile, args=matmul_args(), block=BLOCK)
    texts = recorded_passes(ck.module)
    assert "block-dims=64,1,1" in texts[0]  # the options pto.compile gave, e.g. the block
    assert [pass_text(p) for p in parse_pipeline(",".join(texts))] == texts


def test_the_recorded_ir_still_computes_the_product():
    args = matmul_args()
    matmul_tile[GRID, BLOCK](*args)
    a, b = args[0].numpy().reshape(SIZE, SIZE), args[1].numpy().reshape(SIZE, SIZE)
    np.testing.assert_allclose(args[2].numpy().reshape(SIZE, SIZE), a @ b, rtol=1e-4, atol=1e-4)


def test_rerunning_double_buffer_warns_and_names_the_fix(capsys, monkeypatch):
    ck = pto.compile(matmul_tile, args=matmul_args(), block=BLOCK)
    code, out, err = opt(capsys, monkeypatch, ck.mlir, "-p", "pto-double-buffer{stages=3}")
    assert code == EXIT_OK
    assert "<stdin>:1:1: warning: pass 'pto-double-buffer' already ran on this IR" in err
    assert 'use pto.compile(..., pipeline="").mlir' in err and "--strict" in err
    # what the warning is about: the second run kept the two slots of the first
    assert "pto.slots = 2" in out and "pto.slots = 3" not in out


def test_the_suggested_fix_gives_three_slots_without_a_warning(capsys, monkeypatch):
    ck = pto.compile(matmul_tile, args=matmul_args(), block=BLOCK, pipeline="")
    assert recorded_passes(ck.module) == []
    code, out, err = opt(capsys, monkeypatch, ck.mlir, "-p", "pto-double-buffer{stages=3}")
    assert code == EXIT_OK
    assert "warning" not in err and "already ran" not in err
    assert "3 slots for 'A_tile'" in err  # the pass's remark
    assert "pto.slots = 3" in out


def test_strict_makes_it_an_error_without_output(capsys, monkeypatch):
    ck = pto.compile(matmul_tile, args=matmul_args(), block=BLOCK)
    code, out, err = opt(capsys, monkeypatch, ck.mlir, "-p", "pto-allocate-l1", "--strict")
    assert code == EXIT_FAILURE and out == ""
    assert "error: pass 'pto-allocate-l1' already ran on this IR" in err
    assert "(--strict makes this an error)" not in err


def test_rerun_safe_passes_do_not_warn_and_are_recorded(capsys, monkeypatch):
    ck = pto.compile(matmul_tile, args=matmul_args(), block=BLOCK)
    code, out, err = opt(capsys, monkeypatch, ck.mlir, "-p",
                         "canonicalize,cse,pto-verify-barriers{block-dims=64}", "--strict")
    assert (code, err) == (EXIT_OK, "")
    module, _ = parse_module(make_context(), out, "out.mlir")
    assert [p.split("{")[0] for p in recorded_passes(module)][-3:] == \
        ["canonicalize", "cse", "pto-verify-barriers"]


def test_which_passes_are_rerun_safe():
    safe = {name for name in PASSES if rerun_safe(PASSES[name]())}
    assert safe == {"canonicalize", "cse", "pto-verify-barriers"}


def test_emit_cost_without_arg_uses_the_recorded_launch(capsys, monkeypatch):
    args = matmul_args()
    # a specialisation cached by an earlier test keeps the schedule pto-double-buffer chose
    # for that test's launch (docs/passes.md#choosing-by-the-cost-model): compile this one
    matmul_tile.clear_cache()
    ck = pto.compile(matmul_tile, args=args, block=BLOCK)
    profiled = pto.profile(matmul_tile, grid=GRID, block=BLOCK, args=args).total_cycles
    grid = ",".join(map(str, GRID))
    code, recorded, err = opt(capsys, monkeypatch, ck.mlir, "--emit=cost", "--grid", grid)
    assert code == EXIT_OK, err
    assert "# from the launch pto.compile recorded (pto.launch): block=64,1,1 A=16384" in recorded
    given = [f"--arg={name}={value}" for name, value in
             zip("A B C M N K tile_m tile_n tile_k".split(),
                 (SIZE * SIZE,) * 3 + (SIZE,) * 3 + TILE)]
    code, explicit, err = opt(capsys, monkeypatch, ck.mlir, "--emit=cost", "--grid", grid,
                              "--block", str(BLOCK), *given)
    assert code == EXIT_OK, err
    assert "pto.launch" not in explicit
    assert total_cycles(recorded) == total_cycles(explicit) == profiled


def test_a_cached_compile_records_the_launch_it_was_asked_for():
    """One specialisation serves every size of the same types: the record follows the call."""
    small = pto.compile(matmul_tile, args=(pto.zeros(64 * 64), pto.zeros(64 * 64),
                                           pto.zeros(64 * 64), 64, 64, 64, *TILE), block=BLOCK)
    assert "A = 4096 : i64" in small.mlir and "M = 64 : i64" in small.mlir
    big = pto.compile(matmul_tile, args=matmul_args(), block=BLOCK)
    assert big is small  # the cached specialisation...
    assert "A = 16384 : i64" in big.mlir and "M = 128 : i64" in big.mlir  # ...this launch's
