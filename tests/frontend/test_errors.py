"""Frontend diagnostics: every unsupported construct is a CompileError at file:line:col."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pypto as pto

HERE = __file__


def _compile(kernel, *args):
    t = pto.alloc_tensor(64 * 4)
    real = tuple(t if a == "t" else a for a in args)
    return pto.compile(kernel, args=real, block=32)


def _line_of(fn, needle: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn.fn)
    for k, text in enumerate(lines):
        if needle in text:
            return start + k
    raise AssertionError(needle)


@pto.kernel
def uses_while(a, n):
    i = pto.get_global_id()
    while i < n:
        i = i + 1
    else:
        i = 0


@pto.kernel
def uses_try(a, n):
    try:
        pto.load(a)
    except Exception:
        pass


@pto.kernel
def calls_unknown(a, n):
    x = np.sin(n)


@pto.kernel
def undefined_name(a, n):
    pto.store(a, undefined_thing)  # noqa: F821


@pto.kernel
def int_plus_float(a, n):
    x = pto.load(a)
    pto.store(a, x + n)


@pto.kernel
def one_branch(a, n):
    i = pto.get_global_id()
    if i < n:
        y = pto.load(a + i)
    pto.store(a + i, y)


@pto.kernel
def returns_value(a, n):
    return n


@pto.kernel
def store_wrong_type(a, n):
    pto.store(a, n)


@pto.kernel
def load_non_pointer(a, n):
    pto.load(n)


@pto.kernel
def bad_arity(a, n):
    pto.fma(a, 1.0, 2.0)


@pto.kernel
def float_literal_int(a, n):
    pto.store(a, n + 1.5)


@pto.kernel
def class_in_kernel(a, n):
    class X:
        pass


@pytest.mark.parametrize("kernel, needle, message", [
    (uses_while, "while i < n", "'while ... else' is not supported"),
    (uses_try, "try:", "try statement"),
    (calls_unknown, "np.sin", "not supported in a kernel"),
    (undefined_name, "undefined_thing", "name 'undefined_thing' is not defined"),
    (int_plus_float, "x + n", "mixes pto.float32 and pto.int32"),
    (one_branch, "pto.store(a + i, y)", "assigned only on some paths"),
    (returns_value, "return n", "cannot return a value"),
    (store_wrong_type, "pto.store(a, n)", "pto.int32 but the pointer holds pto.float32"),
    (load_non_pointer, "pto.load(n)", "parameter 'n' is used as a pointer but launch argument 1 is the int 5"),
    (bad_arity, "pto.fma(a, 1.0, 2.0)", "missing required argument 'c'"),
    (float_literal_int, "n + 1.5", "float literal 1.5 cannot take the integer type"),
    (class_in_kernel, "class X", "class definition"),
])
def test_compile_errors_name_file_line_col_and_show_caret(kernel, needle, message):
    with pytest.raises(pto.CompileError) as info:
        _compile(kernel, "t", 5)
    text = str(info.value)
    line = _line_of(kernel, needle)
    head = text.splitlines()[0]
    m = re.match(r"(.+):(\d+):(\d+): error: (.*)", head)
    assert m, text
    assert m.group(1) == HERE
    assert int(m.group(2)) == line
    assert message in text
    # the source line and a caret under the reported column
    lines = text.splitlines()
    assert lines[1].strip() == open(HERE).read().splitlines()[line - 1].strip()
    caret_col = lines[2].index("^") - 4
    assert caret_col == int(m.group(3)) - 1


def test_compile_error_is_pto_error_subclass():
    assert issubclass(pto.CompileError, pto.PtoError)
    with pytest.raises(pto.PtoError):
        _compile(uses_while, "t", 5)


def test_kernel_side_functions_outside_a_kernel_raise():
    with pytest.raises(pto.PtoError, match="only be used inside a @pto.kernel"):
        pto.get_global_id()
    with pytest.raises(pto.PtoError, match="only be used inside a @pto.kernel"):
        pto.load(None)


def test_calling_a_kernel_directly_says_how_to_launch():
    with pytest.raises(pto.PtoError, match="pto.launch"):
        uses_while(1, 2)


def test_a_0d_host_array_argument_is_rejected_with_a_fix():
    # (arrays of one dimension or more are tensors: tests/runtime/test_host_arrays.py)
    with pytest.raises(pto.LaunchError, match=r"0-d NumPy array; pass a scalar \(a\.item\(\)\)"):
        pto.compile(uses_while, args=(np.array(4.0, np.float32), 3))


def test_wrong_argument_count():
    with pytest.raises(pto.LaunchError, match="takes 2 arguments"):
        pto.compile(uses_while, args=(1,))


@pto.kernel
def casts_huge_float(a, n):
    pto.store(a + pto.get_global_id(), pto.cast(1e39, pto.int32))


@pto.kernel
def casts_huge_float_under_a_branch(a, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(a + i, pto.cast(-1e400, pto.int64))


@pto.kernel
def casts_huge_ints(a, n):
    i = pto.get_global_id()
    pto.store(a + i, pto.cast(2**70 + 5, pto.int32) + pto.cast(-(2**31) - 1, pto.int32))


@pto.kernel
def mma_with_huge_shape(a, n):
    c = pto.alloc_local(16)
    pto.mma(c, c, c, 2**64, 4, 4)


@pto.kernel
def alloc_with_huge_count(a, n):
    c = pto.alloc_local(10**5000)
    pto.store(c, 1.0)


def test_cast_of_an_out_of_range_float_literal_is_a_compile_error_at_the_call():
    """It was an OverflowError from the frontend (also under a branch)."""
    for kernel, shown, line in ((casts_huge_float, "1e+39", "pto.cast(1e39"),
                                (casts_huge_float_under_a_branch, "-inf", "pto.cast(-1e400")):
        with pytest.raises(pto.CompileError) as info:
            _compile(kernel, "t", 8)
        assert f":{_line_of(kernel, line)}:" in str(info.value)
        assert f"pto.cast({shown}, int" in str(info.value) and "outside the range" in str(
            info.value)


def test_cast_of_an_int_literal_wraps_as_documented(run):
    (out,) = run(casts_huge_ints, 1, 32, (np.zeros(32, np.int32), 32))[:1]
    # (2**70 + 5) mod 2**32 = 5; -(2**31) - 1 wraps to 2**31 - 1; their int32 sum wraps too
    expected = (5 + 2**31 - 1 + 2**31) % 2**32 - 2**31
    assert expected == -(2**31) + 4 and (out == expected).all()


def test_builtin_int_arguments_beyond_int64_are_compile_errors():
    """`pto.mma(C, A, B, 2**64, 4, 4)` let an xDSL VerifyException escape."""
    with pytest.raises(pto.CompileError, match="mma's m is 18446744073709551616, outside the "
                                               "int64 range"):
        _compile(mma_with_huge_shape, "t", 8)
    with pytest.raises(pto.CompileError, match="an integer of ~5001 digits"):
        _compile(alloc_with_huge_count, "t", 8)
