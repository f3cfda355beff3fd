"""Regression tests for the reliability defects of issue 9 (each failed before its fix) and for
the crashes the fuzzers found (minimised inputs, one test each)."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from pypto.runtime.device import default_device
from pypto.tools.opt import main as opt_main


def _opt(capsys: pytest.CaptureFixture[str], text: str, tmp_path: Path, *argv: str):
    path = tmp_path / "in.mlir"
    path.write_text(text)
    code = opt_main([str(path), *argv])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


# -- 1. the xDSL string lexer -------------------------------------------------------------------

def test_unterminated_string_literal_is_a_quick_located_error(capsys, tmp_path):
    # xDSL 0.74's regex doubled its time per character: 40 characters took hours
    text = ('func.func @k() {\n  %0 = arith.constant 1 : i32 loc("kernel.py:12 <- missing '
            'quote ' + "a" * 40 + ')\n  func.return\n}\n')
    start = time.perf_counter()
    code, _, err = _opt(capsys, text, tmp_path)
    assert time.perf_counter() - start < 5
    assert code == 1
    assert f"{tmp_path / 'in.mlir'}:2:35: error:" in err and "string literal" in err


def test_fuzz_unterminated_string_as_the_first_token(capsys, tmp_path):
    # the parser lexes its first token in its constructor: the fix must be in place before it
    text = '  "pto.wait_all operands, but got ' + "x" * 40 + "\nfunc.func @k() {\n}\n"
    start = time.perf_counter()
    code, _, err = _opt(capsys, text, tmp_path)
    assert time.perf_counter() - start < 5
    assert code == 1 and ":1:3: error:" in err and "string literal" in err


def test_string_literals_with_escapes_still_parse(capsys, tmp_path):
    text = ('func.func @k() {\n  %0 = arith.constant 1 : i32 loc("a\\"b\\0A\\\\")\n'
            '  func.return\n}\n')
    code, out, _ = _opt(capsys, text, tmp_path, "--mlir-print-debuginfo")
    assert code == 0 and 'loc("a\\22b\\0A\\\\")' in out


# -- 2. float constant folding -----------------------------------------------------------------

FOLD = """\
func.func @k() -> (f32, f32, f16) {
  %a = arith.constant 3.0e38 : f32
  %b = arith.mulf %a, %a : f32
  %n = arith.constant -3.0e38 : f32
  %c = arith.addf %n, %n : f32
  %h = arith.constant 60000.0 : f16
  %d = arith.addf %h, %h : f16
  func.return %b, %c, %d : f32, f32, f16
}
"""


def test_canonicalize_folds_float_overflow_to_inf(capsys, tmp_path):
    code, out, _ = _opt(capsys, FOLD, tmp_path, "-p", "canonicalize")
    assert code == 0
    assert "arith.constant 0x7f800000 : f32" in out      # +inf
    assert "arith.constant 0xff800000 : f32" in out      # -inf
    assert "arith.constant 0x7c00 : f16" in out          # f16 +inf


def test_compile_with_canonicalize_agrees_with_the_interpreter():
    @pto.kernel
    def overflow(o):
        x = pto.load(o + 0) * 0.0 + 3.0e38
        pto.store(o + pto.get_global_id(), x * 3.0e38)

    d = pto.alloc_tensor(4 * 4)
    pto.memcpy_h2d(d, np.zeros(4, np.float32))
    for pipeline in ("", "canonicalize"):
        ck = pto.compile(overflow, args=(d,), block=4, pipeline=pipeline)
        ck(1, 4, (d,))
        out = np.empty(4, np.float32)
        pto.memcpy_d2h(out, d)
        assert np.all(np.isposinf(out)), pipeline
        pto.memcpy_h2d(d, np.zeros(4, np.float32))


# -- 3. a per-lane choice between pointers -------------------------------------------------------

@pto.kernel
def _choose_by_lane(a, b, o, n):
    i = pto.get_global_id()
    p = a if i < n else b
    pto.store(o + i, pto.load(p + i))


@pto.kernel
def _choose_by_select(a, b, o, n):
    i = pto.get_global_id()
    p = pto.select(n > 3, a, b)
    pto.store(o + i, pto.load(p + i))


@pto.kernel
def _choose_by_branch(a, b, o, n):
    i = pto.get_global_id()
    p = a + 0
    if i >= n:
        p = b + 0
    pto.store(o + i, pto.load(p + i))


def _pointer_choice(kernel, n):
    a = np.arange(64, dtype=np.float32)
    b = -a - 1
    da, db, do = (pto.alloc_tensor(256) for _ in range(3))
    pto.memcpy_h2d(da, a)
    pto.memcpy_h2d(db, b)
    pto.launch(kernel, grid=1, block=64, args=(da, db, do, n))
    out = np.empty(64, np.float32)
    pto.memcpy_d2h(out, do)
    return a, b, out


@pytest.mark.parametrize("kernel", [_choose_by_lane, _choose_by_branch])
def test_pointer_chosen_uniformly_per_lane_works(kernel):
    a, b, out = _pointer_choice(kernel, 64)
    assert np.array_equal(out, a)
    a, b, out = _pointer_choice(kernel, 0)
    assert np.array_equal(out, b)


def test_pointer_select_on_a_uniform_condition_works():
    a, b, out = _pointer_choice(_choose_by_select, 5)
    assert np.array_equal(out, a)
    a, b, out = _pointer_choice(_choose_by_select, 1)
    assert np.array_equal(out, b)


@pytest.mark.parametrize("kernel, line", [(_choose_by_lane, "p = a if i < n else b"),
                                          (_choose_by_branch, "if i >= n:")])
def test_pointer_diverging_between_buffers_is_a_located_kernel_error(kernel, line):
    with pytest.raises(pto.KernelError) as info:
        _pointer_choice(kernel, 3)
    message = str(info.value)
    assert "on some lanes and '" in message and "' on others" in message
    assert f"{Path(__file__)}:" in message.split(" in kernel")[0]  # file:line:col first
    source_line = int(message.split(":")[1])
    assert line in Path(__file__).read_text().splitlines()[source_line - 1]


# -- 4. frontend internal errors and a hang ------------------------------------------------------

def test_stage_after_its_pipeline_is_a_compile_error():
    @pto.kernel
    def late_stage(o):
        with pto.pipeline() as pl:
            with pl.stage("a"):
                pto.store(o + pto.get_global_id(), 1.0)
        with pl.stage("b"):
            pto.store(o + pto.get_global_id(), 2.0)

    with pytest.raises(pto.CompileError, match=r"test_regressions.py:\d+:\d+: error: 'with "
                       r"pl.stage\(...\)' must be inside its 'with pto.pipeline"):
        pto.compile(late_stage, args=(pto.alloc_tensor(256),), block=64)


def test_stage_nested_in_a_branch_is_a_compile_error():
    @pto.kernel
    def nested_stage(o):
        with pto.pipeline() as pl:
            if pto.get_global_id() < 3:
                with pl.stage("b"):
                    pto.store(o + pto.get_global_id(), 2.0)

    with pytest.raises(pto.CompileError, match="must be directly inside"):
        pto.compile(nested_stage, args=(pto.alloc_tensor(256),), block=64)


def _deep_kernel(terms: int, tmp_path: Path):
    source = textwrap.dedent(f"""\
        import pypto as pto

        @pto.kernel
        def deep(o):
            i = pto.get_global_id()
            x = {' + '.join(['i'] * terms)}
            pto.store(o + i, x)
        """)
    path = tmp_path / f"deep{terms}.py"
    path.write_text(source)
    namespace: dict = {}
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 - a generated test kernel
    return namespace["deep"]


def test_expression_of_hundreds_of_terms_compiles_and_runs(tmp_path):
    deep = _deep_kernel(800, tmp_path)
    o = pto.alloc_tensor(64 * 4, pto.int32)
    pto.launch(deep, grid=1, block=64, args=(o,))
    out = np.empty(64, np.int32)
    pto.memcpy_d2h(out, o)
    assert np.array_equal(out, np.arange(64, dtype=np.int32) * 800)


@pytest.mark.parametrize("expr", ["10 ** 10 ** 8", "1 << 10 ** 10", "(1,) * 10 ** 12"])
def test_huge_constant_fold_is_a_quick_compile_error(expr, tmp_path):
    source = f"import pypto as pto\n@pto.kernel\ndef big(o):\n    x = {expr}\n"
    path = tmp_path / "big.py"
    path.write_text(source)
    namespace: dict = {}
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102
    start = time.perf_counter()
    with pytest.raises(pto.CompileError, match=rf"big.py:4:9: error: constant expression "
                       rf"'{expr.replace('*', '[*]').replace('(', '[(]').replace(')', '[)]')}' "
                       rf"is too large"):
        pto.compile(namespace["big"], args=(pto.alloc_tensor(256),), block=64)
    assert time.perf_counter() - start < 5


# -- 5. launch limits and argument types ---------------------------------------------------------

@pto.kernel
def _one(o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, 1.0)


@pytest.mark.parametrize("grid, block", [(2**31, 1), ((2**16, 2**16, 1), 2), ((2**20, 1, 1), 2**12),
                                         (1, (1, 2**31, 1))])
def test_launch_beyond_int32_lane_ids_is_a_launch_error(grid, block):
    with pytest.raises(pto.LaunchError, match="2\\^31"):
        pto.launch(_one, grid=grid, block=block, args=(pto.alloc_tensor(256), 64))
    assert default_device().default_stream.pending == 0


@pytest.mark.parametrize("scalar", [np.int8(4), np.uint8(4), np.int16(4), np.uint16(4),
                                    np.uint32(4), np.uint64(4), np.longdouble(4), 2**70])
def test_unsupported_scalar_arguments_are_launch_errors(scalar):
    with pytest.raises(pto.LaunchError, match="argument 1"):
        pto.launch(_one, grid=1, block=64, args=(pto.alloc_tensor(256), scalar))
    with pytest.raises(pto.LaunchError, match="argument 'n'"):
        pto.compile(_one, args=(pto.alloc_tensor(256), scalar), block=64)


def test_compile_argument_misuse_is_a_pto_error():
    with pytest.raises(pto.PtoError, match="pipeline must be a string"):
        pto.compile(_one, args=(pto.alloc_tensor(256), 4), pipeline=123)
    with pytest.raises(pto.LaunchError, match="args must be a tuple"):
        pto.compile(_one, args=None)
    with pytest.raises(pto.LaunchError, match="args must be a tuple"):
        pto.launch(_one, grid=1, block=1, args=None)
    with pytest.raises(pto.PtoError, match="@pto.kernel"):
        pto.compile(print, args=())


def test_bad_target_files_are_target_errors(tmp_path):
    with pytest.raises(pto.TargetError, match="cannot read the target file"):
        pto.compile(_one, args=(pto.alloc_tensor(256), 4), target=str(tmp_path / "none.toml"))
    garbage = tmp_path / "garbage.toml"
    garbage.write_text("this is = = not toml")
    with pytest.raises(pto.TargetError, match="not a valid TOML"):
        pto.compile(_one, args=(pto.alloc_tensor(256), 4), target=str(garbage))
    default = (Path(pto.__file__).parent / "backend" / "targets" / "default.toml").read_text()
    zero = tmp_path / "warp0.toml"
    zero.write_text(default.replace("warp_size = 32", "warp_size = 0"))
    with pytest.raises(pto.TargetError, match="'warp_size' must be a positive integer"):
        pto.compile(_one, args=(pto.alloc_tensor(256), 4), target=str(zero))


def test_pass_option_of_5000_digits_is_a_pipeline_error(capsys, tmp_path):
    code, _, err = _opt(capsys, FOLD, tmp_path, "-p",
                        "pto-insert-barriers{block-size=" + "9" * 5000 + "}")
    assert code == 1 and "<pass-pipeline>:1:32: error: option 'block-size' of pass " \
        "'pto-insert-barriers' must be an integer of at most 4300 digits" in err
    with pytest.raises(pto.CompileError, match="must be an integer of at most 4300 digits"):
        pto.compile(_one, args=(pto.alloc_tensor(256), 4),
                    pipeline="pto-insert-barriers{block-size=" + "9" * 5000 + "}")


def test_pipeline_parsing_is_linear_in_whitespace():
    from pypto.passes import parse_pipeline

    start = time.perf_counter()
    assert len(parse_pipeline("cse" + " " * 64_000)) == 1
    assert len(parse_pipeline("cse," + " " * 64_000 + "cse")) == 2
    assert time.perf_counter() - start < 2  # was quadratic: ~8 s


# -- 6. concurrency and loss ---------------------------------------------------------------------

def test_held_kernel_errors_do_not_keep_tensors_charged():
    @pto.kernel
    def past_the_end(o):
        pto.store(o + pto.get_global_id() + 1_000_000, 1.0)

    gc.collect()
    before = default_device().used_bytes
    held = []
    for _ in range(8):
        o = pto.alloc_tensor(1 << 16)
        pto.launch(past_the_end, grid=1, block=64, args=(o,))
        del o
        with pytest.raises(pto.MemoryAccessError) as info:
            pto.sync()
        held.append(info.value)
    gc.collect()
    assert default_device().used_bytes == before
    assert all("out-of-bounds store" in str(e) for e in held)


def test_work_pending_at_exit_runs_and_reports_its_error(tmp_path):
    script = tmp_path / "pending.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np, pypto as pto

        @pto.kernel
        def oob(o):
            pto.store(o + pto.get_global_id() + 100, 1.0)

        @pto.kernel
        def ones(o):
            pto.store(o + pto.get_global_id(), 1.0)

        o = pto.alloc_tensor(64 * 4)
        pto.launch(oob, grid=1, block=64, args=(o,))
        print("exiting")
        """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout == "exiting\n"
    assert "at interpreter exit the queues held 1 operation(s) never synchronised" in done.stderr
    assert "MemoryAccessError" in done.stderr and "pending.py:5:5" in done.stderr
    assert "Traceback" not in done.stderr


# -- 7. messages ---------------------------------------------------------------------------------

def test_fill_out_of_bounds_reports_one_blocks_bounds():
    @pto.kernel
    def fill_past(o):
        buf = pto.alloc_local(64)
        pto.fill(buf + 32, 0.0, 64)
        pto.barrier_block()
        pto.store(o + pto.get_global_id(), pto.load(buf + pto.get_local_id()))

    with pytest.raises(pto.MemoryAccessError) as info:
        pto.launch(fill_past, grid=3, block=64, args=(pto.alloc_tensor(3 * 64 * 4),))
        pto.sync()
    assert "element 95 (valid elements 0..63)" in str(info.value)


def test_float_literal_into_int_pointer_suggests_the_right_cast():
    @pto.kernel
    def store_float(o):
        pto.store(o + pto.get_global_id(), 1.5)

    with pytest.raises(pto.CompileError) as info:
        pto.compile(store_float, args=(pto.alloc_tensor(256, pto.int32),), block=64)
    assert "pto.cast(x, pto.int32)" in str(info.value)
    assert "pto.float32" not in str(info.value)


# -- found by the fuzzers (minimised) ------------------------------------------------------------

USE_BEFORE_DEF = """\
func.func @k(%p: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %v = pto.load %q : !pto.ptr<f32, global> -> f32
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  func.return
}
"""


def test_fuzz_use_before_definition_is_a_located_error(capsys, tmp_path):
    # verified by xDSL (no dominance check), then UnboundLocalError in the interpreter (exit 70)
    code, _, err = _opt(capsys, USE_BEFORE_DEF, tmp_path, "-p", "cse", "--validate")
    assert code == 1
    assert ":3:3: error: 'pto.load' op %q is used before it is defined" in err


def test_fuzz_use_before_definition_inside_a_region(capsys, tmp_path):
    text = USE_BEFORE_DEF.replace(
        "  %v = pto.load %q : !pto.ptr<f32, global> -> f32\n",
        "  %c = arith.constant true\n  scf.if %c {\n"
        "    %v = pto.load %q : !pto.ptr<f32, global> -> f32\n  }\n")
    code, _, err = _opt(capsys, text, tmp_path)
    assert code == 1 and "'pto.load' op %q is used before it is defined" in err


def test_fuzz_huge_warp_size_option_is_a_pipeline_error(capsys, tmp_path):
    # a 25-digit warp-size overflowed NumPy in the lane analysis (exit 70)
    code, _, err = _opt(capsys, USE_BEFORE_DEF.replace("%v = pto.load %q", "%v = pto.load %p")
                        .replace("  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> "
                                 "!pto.ptr<f32, global>\n", ""), tmp_path,
                        "-p", "pto-insert-barriers{warp-size=9999999999999999999999999}")
    assert code == 1 and "warp-size and max-block-lanes must be at most" in err


def test_fuzz_validate_skips_functions_a_launch_cannot_call(capsys, tmp_path):
    # --validate generated inputs for a !pto.token parameter: TypeError (exit 70)
    text = ('func.func @wait(%t: !pto.token) {\n  pto.wait %t\n  func.return\n}\n'
            'func.func @ids() -> i32 {\n  %0 = pto.get_global_id 0 : i32\n'
            '  func.return %0 : i32\n}\n')
    code, out, err = _opt(capsys, text, tmp_path, "-p", "canonicalize", "--validate")
    assert code == 0 and "func.func @wait" in out
    assert "--validate could not check kernel wait: it has a parameter of type !pto.token" in err
    assert "--validate could not check kernel ids: it returns values" in err


def test_fuzz_huge_integer_width_is_a_quick_parse_error(capsys, tmp_path):
    # `i2147483648` made xDSL build 2**(2**31) while parsing (a hang)
    text = "func.func @k() {\n  %0 = arith.constant 1 : i2147483648\n  func.return\n}\n"
    start = time.perf_counter()
    code, _, err = _opt(capsys, text, tmp_path)
    assert time.perf_counter() - start < 5
    assert code == 1 and ":2:27: error: integer type i2147483648 is wider than" in err


def test_fuzz_validate_skips_pointers_to_types_pypto_has_no_dtype_for(capsys, tmp_path):
    # an i16 parameter reached dtypes.from_mlir's table lookup: KeyError (exit 70)
    text = ("func.func @k(%n: i16) attributes {pto.kernel} {\n"
            "  func.return\n}\n")
    code, _, err = _opt(capsys, text, tmp_path, "-p", "cse", "--validate")
    assert code == 0 and "which a launch cannot pass" in err
