"""The fixed-seed part of the fuzz suite (tests/fuzz/fuzz.py), run in CI: a few dozen inputs per
target, every one of which must not crash (no traceback, no non-PtoError, no exit status other
than 0/1, no hang, no wrong answer, no leaked device memory). The long mode is documented in
docs/reliability.md (`python -m tests.fuzz.fuzz --count 10000 --jobs 2`)."""

from __future__ import annotations

import gc

import pytest

from tests.fuzz import fuzz

COUNT = 30
SEED = 7


@pytest.fixture(scope="module")
def seeds():
    return fuzz.mlir_seeds()


def test_mlir_through_every_registered_pass(tmp_path, seeds):
    crashes = [c for i in range(COUNT)
               if (c := fuzz.run_one("mlir", SEED, i, tmp_path, seeds)) is not None]
    assert not crashes, [(c.kind, c.detail[-500:], c.argv) for c in crashes]


def test_generated_kernels_compile_launch_and_match_numpy(tmp_path):
    crashes = [c for i in range(COUNT)
               if (c := fuzz.run_one("kernels", SEED, i, tmp_path)) is not None]
    assert not crashes, [(c.kind, c.detail[-500:], c.reproducer) for c in crashes]


def test_host_api_misuse_then_a_good_launch(tmp_path):
    # Each input runs gc.collect() to account device memory exactly; in a test worker that has
    # run many tests before, a full collection walks a large heap (seconds each). Freezing what
    # exists now keeps the collections to this test's own objects (its tensors included).
    gc.collect()
    gc.freeze()
    try:
        crashes = [c for i in range(COUNT)
                   if (c := fuzz.run_one("misuse", SEED, i, tmp_path)) is not None]
    finally:
        gc.unfreeze()
    assert not crashes, [(c.kind, c.detail[-500:], c.reproducer) for c in crashes]


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
