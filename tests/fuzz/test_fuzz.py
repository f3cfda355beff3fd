"""The fixed-seed part of the fuzz suite (tests/fuzz/fuzz.py), run in CI: a few dozen inputs per
target, every one of which must not crash (no traceback, no non-PtoError, no exit status other
than 0/1, no hang, no wrong answer, no leaked device memory). The long mode is documented in
docs/reliability.md (`python -m tests.fuzz.fuzz --count 10000 --jobs 2`)."""

from __future__ import annotations

import gc
import os

import pytest

from tests.fuzz import fuzz

LONG = os.environ.get("PYPTO_FUZZ_LONG", "").strip()
"""`PYPTO_FUZZ_LONG=N` (N > 1; `1` means 10,000) runs N inputs per target instead of the CI
profile's few (a few seconds per target). The parallel driver `python -m tests.fuzz.fuzz` is
the faster way to run many; this runs them under pytest, one process."""
COUNT = (10_000 if LONG == "1" else int(LONG)) if LONG not in ("", "0") else 30
SEED = 7
SHORT = {"literals": 40, "emit": 20, "debugger": 10, "forksignal": 20}
"""CI inputs of the newer targets (each runs in a few seconds)."""


def _count(target: str) -> int:
    return COUNT if LONG not in ("", "0") else SHORT.get(target, COUNT)


@pytest.fixture(scope="module")
def seeds():
    return fuzz.mlir_seeds()


def test_mlir_through_every_registered_pass(tmp_path, seeds):
    crashes = [c for i in range(_count("mlir"))
               if (c := fuzz.run_one("mlir", SEED, i, tmp_path, seeds)) is not None]
    assert not crashes, [(c.kind, c.detail[-500:], c.argv) for c in crashes]


def test_generated_kernels_compile_launch_and_match_numpy(tmp_path):
    crashes = [c for i in range(_count("kernels"))
               if (c := fuzz.run_one("kernels", SEED, i, tmp_path)) is not None]
    assert not crashes, [(c.kind, c.detail[-500:], c.reproducer) for c in crashes]


def test_host_api_misuse_then_a_good_launch(tmp_path):
    # Each input runs gc.collect() to account device memory exactly; in a test worker that has
    # run many tests before, a full collection walks a large heap (seconds each). Freezing what
    # exists now keeps the collections to this test's own objects (its tensors included).
    gc.collect()
    gc.freeze()
    try:
        crashes = [c for i in range(_count("misuse"))
                   if (c := fuzz.run_one("misuse", SEED, i, tmp_path)) is not None]
    finally:
        gc.unfreeze()
    assert not crashes, [(c.kind, c.detail[-500:], c.reproducer) for c in crashes]


def test_extreme_literals_in_every_builtin_argument_position(tmp_path):
    crashes = [c for i in range(_count("literals"))
               if (c := fuzz.run_one("literals", SEED, i, tmp_path)) is not None]
    assert not crashes, [(c.kind, c.detail[-500:], c.reproducer) for c in crashes]


def test_every_builtin_call_shape_is_drawn():
    import random

    drawn = {random.Random(f"literals:{SEED}:{i}").choice(fuzz.BUILTIN_CALLS)[0]
             for i in range(2000)}
    assert len(drawn) == len(fuzz.BUILTIN_CALLS)


def test_emit_outputs_are_json_and_svg(tmp_path, seeds):
    crashes = [c for i in range(_count("emit"))
               if (c := fuzz.run_one("emit", SEED, i, tmp_path, seeds)) is not None]
    assert not crashes, [(c.kind, c.detail[-500:], c.argv) for c in crashes]


def test_debugger_commands_through_stdin(tmp_path):
    crashes = [c for i in range(_count("debugger"))
               if (c := fuzz.run_one("debugger", SEED, i, tmp_path)) is not None]
    assert not crashes, [(c.kind, c.detail[-500:], c.reproducer, c.argv) for c in crashes]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
def test_fork_and_sigint_at_random_moments(tmp_path):
    crashes = [c for i in range(_count("forksignal"))
               if (c := fuzz.run_one("forksignal", SEED, i, tmp_path)) is not None]
    assert not crashes, [(c.kind, c.detail[-500:], c.reproducer) for c in crashes]


def test_the_new_oracles_fire(tmp_path):
    """printf on stdout, a non-JSON trace, an invalid SVG; a debugger bug; a torn result."""
    assert fuzz.check_emit_output("trace", '[block 0 lane 0] hi\n{"a": 1}') is not None
    assert fuzz.check_emit_output("trace", '{"traceEvents": []}\n') is None
    assert fuzz.check_emit_output("l1-map-svg", "<svg><rect></svg>") is not None
    assert fuzz.check_emit_output("l1-map-svg", '<svg xmlns="http://www.w3.org/2000/svg">'
                                                "<rect/></svg>\n") is None
    assert fuzz.check_emit_output("cost", "[block (0, 0, 0) lane (0, 0, 0)] x\n") is not None
    found = fuzz.run_literal_case("import pypto as pto\n\n@pto.kernel\ndef lit(x, xi, o, oi, "
                                  "n):\n    raise_it = 1\n", tmp_path, 0)
    assert found is None  # a kernel that compiles and runs is fine
    from pypto.debug import repl

    def broken(self, arg):  # noqa: ANN001
        raise KeyError("bug")

    original = repl.DebuggerShell.do_where
    repl.DebuggerShell.do_where = broken
    try:
        found = fuzz.run_debugger(["where", "quit"], {"grid": 1, "block": 32, "pipeline": None,
                                                      "block_id": 0, "warp": None}, tmp_path)
    finally:
        repl.DebuggerShell.do_where = original
    assert found is not None and found[0] == "internal debugger error"


def test_the_fuzzer_detects_crashes(tmp_path, monkeypatch):
    """The oracles can fail: a pass that raises, a kernel whose answer is wrong, a leak."""
    from pypto import passes as registry

    class Boom(Exception):
        pass

    def crashing_pass():
        from dataclasses import dataclass

        from xdsl.passes import ModulePass

        @dataclass(frozen=True)
        class Crashing(ModulePass):
            """Raises a non-pypto exception."""

            name = "test-crashing"

            def apply(self, ctx, module):  # noqa: ANN001
                raise Boom("pass bug")

        return Crashing

    monkeypatch.setitem(registry.PASSES, "test-crashing", crashing_pass)
    found = fuzz.run_mlir("func.func @k() {\n  func.return\n}\n", ["-p", "test-crashing"],
                          tmp_path)
    assert found is not None and found[0] == "exit 70"

    case = fuzz.kernel_case(SEED, 0)
    assert case.reference is not None
    right = case.reference
    case.reference = lambda xs, ys, n: right(xs, ys, n) + 1
    found = fuzz.run_kernel_case(case, tmp_path, 0)
    assert found is not None and found[0] == "wrong answer"

    found = fuzz.run_misuse(["import gc; gc.leak = pto.alloc_tensor(64)"])
    assert found is not None and found[0] == "leak"
    import gc
    del gc.leak


def test_new_passes_are_fuzzed_from_the_registry(monkeypatch):
    from pypto import passes as registry

    monkeypatch.setitem(registry.PASSES, "zz-new-pass", registry.PASSES["cse"])
    import random

    drawn = {fuzz.random_pipeline(random.Random(k)) for k in range(300)}
    assert any("zz-new-pass" in p for p in drawn)
