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


def _no_crashes(crashes: list) -> None:
    """Fail with every crash in full (an assertion's repr is cut short by pytest)."""
    if crashes:
        pytest.fail("\n\n".join(f"{c.kind} (input {c.index}, {c.argv}):\n{c.detail[-3000:]}\n"
                                  f"--- input:\n{c.reproducer[:3000]}" for c in crashes[:5]),
                    pytrace=False)


def _count(target: str) -> int:
    return COUNT if LONG not in ("", "0") else SHORT.get(target, COUNT)


@pytest.fixture(scope="module")
def seeds():
    return fuzz.mlir_seeds()


def test_mlir_through_every_registered_pass(tmp_path, seeds):
    crashes = [c for i in range(_count("mlir"))
               if (c := fuzz.run_one("mlir", SEED, i, tmp_path, seeds)) is not None]
    _no_crashes(crashes)


def test_generated_kernels_compile_launch_and_match_numpy(tmp_path):
    crashes = [c for i in range(_count("kernels"))
               if (c := fuzz.run_one("kernels", SEED, i, tmp_path)) is not None]
    _no_crashes(crashes)


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
    _no_crashes(crashes)


def test_extreme_literals_in_every_builtin_argument_position(tmp_path):
    crashes = [c for i in range(_count("literals"))
               if (c := fuzz.run_one("literals", SEED, i, tmp_path)) is not None]
    _no_crashes(crashes)


def test_every_builtin_call_shape_is_drawn():
    import random

    drawn = {random.Random(f"literals:{SEED}:{i}").choice(fuzz.BUILTIN_CALLS)[0]
             for i in range(2000)}
    assert len(drawn) == len(fuzz.BUILTIN_CALLS)


def test_emit_outputs_are_json_and_svg(tmp_path, seeds):
    crashes = [c for i in range(_count("emit"))
               if (c := fuzz.run_one("emit", SEED, i, tmp_path, seeds)) is not None]
    _no_crashes(crashes)


def test_debugger_commands_through_stdin(tmp_path):
    crashes = [c for i in range(_count("debugger"))
               if (c := fuzz.run_one("debugger", SEED, i, tmp_path)) is not None]
    _no_crashes(crashes)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
def test_fork_and_sigint_at_random_moments(tmp_path):
    crashes = [c for i in range(_count("forksignal"))
               if (c := fuzz.run_one("forksignal", SEED, i, tmp_path)) is not None]
    _no_crashes(crashes)


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


def test_every_available_generator_unit_is_drawn():
    """A unit that is never drawn fuzzes nothing (tests/fuzz/kernels.py): over 300 cases every
    unit this pypto supports appears, and so do the deliberately wrong kernels."""
    from tests.fuzz import kernels

    drawn = {unit for k in range(300) for unit in kernels.kernel_case(SEED, k).units}
    assert {u.name for u in kernels.available_units()} | {"bad"} <= drawn


def test_a_new_generator_unit_is_drawn_and_checked(monkeypatch, tmp_path):
    """Adding a language form to the fuzzer is one registered unit: here `t = x * 2 - x`, with
    its NumPy step; it is drawn, and a wrong reference step is caught as a wrong answer."""
    from tests.fuzz import kernels

    monkeypatch.setattr(kernels, "UNITS", list(kernels.UNITS))

    @kernels.generator_unit("zz_double_minus", weight=50)
    def _(d):
        x, t = d.names[-1], d.new_name()
        d.body.append(f"{t} = {x} * 2 - {x}")
        d.assign_step(t, f"{x} + {x} + {x}" if WRONG else f"{x} * 2 - {x}")
        d.names.append(t)

    WRONG = False
    cases = [kernels.kernel_case(SEED, k) for k in range(12)]
    good = [c for c in cases if "zz_double_minus" in c.units and c.reference is not None]
    assert good
    assert all(kernels.run_kernel_case(c, tmp_path, k) is None for k, c in enumerate(good[:3]))
    WRONG = True  # the same kernels, with the unit's reference step now wrong
    cases = [kernels.kernel_case(SEED, k) for k in range(12)]
    case = next(c for c in cases if "zz_double_minus" in c.units and c.reference is not None)
    found = kernels.run_kernel_case(case, tmp_path, 0)
    assert found is not None and found[0] == "wrong answer"


def _other_backend(name, corrupt=False, refuse=None):
    """A second backend for the tests: the interpreter again (`corrupt`: with the lowest bit
    of element 0 of the output flipped afterwards; `refuse`: raising that exception)."""
    import numpy as np

    import pypto as pto
    from tests.fuzz import kernels

    def launch(compiled, grid, block, args):
        if refuse is not None:
            raise refuse("not compiled by this backend")
        pto.launch(compiled, grid=grid, block=block, args=args)
        if corrupt:
            out = args[2]
            data = out.numpy()
            data.view(np.uint32)[0] ^= 1
            pto.memcpy_h2d(out, data)

    return kernels.KernelBackend(name, launch, (refuse,) if refuse else ())


def test_every_kernel_runs_on_every_selected_backend_bit_for_bit(tmp_path):
    """The backend hook (docs/reliability.md#the-kernel-generator-units-and-backends-testsfuzzkernelspy): a second backend that agrees
    passes; one that differs in a single bit is a crash ("backends differ" when NumPy cannot
    tell, as for a float NaN payload, else "wrong answer"); a kernel a backend refuses as
    unsupported is counted, not a crash."""
    from tests.fuzz import kernels

    interpreter = kernels.backends()[0]
    assert interpreter.name == "interpreter"  # the default: the interpreter alone
    cases = [(k, c) for k in range(20) if (c := kernels.kernel_case(SEED, k)).reference]
    for k, case in cases[:4]:
        assert kernels.run_kernel_case(case, tmp_path, k,
                                       [interpreter, _other_backend("twin")]) is None
    k, case = cases[0]
    found = kernels.run_kernel_case(case, tmp_path, k,
                                    [interpreter, _other_backend("flips", corrupt=True)])
    assert found is not None and found[0] in ("wrong answer", "backends differ")
    assert "flips" in found[1]

    class Unsupported(Exception):
        pass

    before = kernels.UNSUPPORTED.get("picky", 0)
    assert kernels.run_kernel_case(case, tmp_path, k,
                                   [interpreter, _other_backend("picky", refuse=Unsupported)]) \
        is None
    assert kernels.UNSUPPORTED["picky"] == before + 1


def test_backends_differing_only_where_numpy_cannot_tell(tmp_path):
    """Two backends that both match NumPy (NaN equals NaN) but not each other bit for bit."""
    import numpy as np

    import pypto as pto
    from tests.fuzz import kernels

    case = kernels.KernelCase(
        "import pypto as pto\n\n@pto.kernel\ndef gen(x, y, o, n):\n"
        "    i = pto.get_global_id()\n    if i < n:\n        pto.store(o + i, pto.load(x + i) * 0.0 / 0.0)\n",
        lambda xs, ys, n: np.full(n, np.nan, np.float32), np.float32, 8, 32, None)

    def other_nan(compiled, grid, block, args):
        pto.launch(compiled, grid=grid, block=block, args=args)
        data = args[2].numpy()
        data[:8] = np.uint32(0x7FC00001).view(np.float32)  # another quiet NaN
        pto.memcpy_h2d(args[2], data)

    found = kernels.run_kernel_case(case, tmp_path, 0, [kernels.backends()[0],
                                                         kernels.KernelBackend("nan", other_nan)])
    assert found is not None and found[0] == "backends differ", found


def test_backend_selection(monkeypatch):
    from tests.fuzz import kernels

    monkeypatch.setenv(kernels.BACKENDS_ENV, "interpreter")
    assert [b.name for b in kernels.backends()] == ["interpreter"]
    with pytest.raises(ValueError, match="unknown fuzz backend.*nope.*known: interpreter"):
        kernels.backends("interpreter,nope")
    try:
        import pypto.backend.native  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="no native backend"):
            kernels.backends("interpreter,native")
    else:
        assert [b.name for b in kernels.backends("interpreter,native")] == \
            ["interpreter", "native"]


def test_a_hang_counts_only_if_a_longer_second_try_hangs_too(monkeypatch, tmp_path):
    limits: list[float] = []

    def slow_once(target, seed, index, workdir, seeds=None):
        limits.append(fuzz.TIME_LIMIT)
        if len(limits) == 1 or index == 1:
            return fuzz.Crash(target, seed, index, "hang", "no result after 20.0 s", "x")
        return None

    monkeypatch.setattr(fuzz, "_run_one", slow_once)
    assert fuzz.run_one("kernels", 1, 0, tmp_path) is None  # slow once, then fine: no crash
    assert limits == [fuzz.TIME_LIMIT, fuzz.TIME_LIMIT * fuzz.HANG_CONFIRM_FACTOR]
    crash = fuzz.run_one("kernels", 1, 1, tmp_path)  # hangs both times: a hang
    assert crash is not None and crash.kind == "hang"
    assert limits[-1] == fuzz.TIME_LIMIT * fuzz.HANG_CONFIRM_FACTOR and fuzz.TIME_LIMIT == 20.0
