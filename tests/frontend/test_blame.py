"""Errors that blame the right thing (docs/language.md#errors): a type error caused by a launch argument names
the parameter and the argument; no message suggests casting a pointer; NumPy calls, print and
comprehensions name their replacement."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pypto as pto


@pto.kernel
def vector_add(a, b, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.fma(o + i, pto.load(a + i), 1.0, pto.load(b + i))


@pto.kernel
def scale(a, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(a + i) * 2.0)


@pto.kernel
def exp_of(a, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.exp(pto.load(a + i)))


@pto.kernel
def store_two(o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, 2.0)


@pto.kernel
def int_plus_float(a, n):
    x = pto.load(a)
    pto.store(a, x + n)


N = 64


def _f32():
    return pto.alloc_tensor(N * 4)


def _i32():
    return pto.alloc_tensor(N * 4, pto.int32)


def _error(kernel, *args) -> str:
    with pytest.raises(pto.CompileError) as info:
        kernel[1, N](*args)
    text = str(info.value)
    assert not re.search(r"pto\.cast\(x, !pto\.ptr|cast\(x, a pointer", text), text
    return text


def test_float_where_a_pointer_is_used():
    text = _error(vector_add, _f32(), 1.5, _f32(), N)
    assert "parameter 'b' is used as a pointer but launch argument 1 is the float 1.5: pass " \
        "a device tensor" in text
    assert text.splitlines()[0].startswith(__file__)
    assert "pto.load(b" in text.splitlines()[1]  # the caret line: the use that needs a pointer


@pto.kernel
def subscripted(a, b, o, n):
    i = pto.get_global_id()
    if i < n:
        o[i] = a[i] + b[i]


def test_a_scalar_subscripted_as_a_pointer():
    text = _error(subscripted, _f32(), 2, _f32(), N)
    assert "parameter 'b' is used as a pointer but launch argument 1 is the int 2" in text
    assert "b[i]" in text.splitlines()[1]


def test_swapped_arguments_blame_the_pointer_parameter_and_suggest_no_cast():
    text = _error(vector_add, _f32(), _f32(), N, _f32())
    first = text.splitlines()[0]
    assert "parameter 'n' is a pointer to float32 because launch argument 3 was a float32 tensor" \
        in first
    assert "pto.cast" not in first
    assert "check the arguments of the launch of 'vector_add'" in first


def test_int_tensor_to_a_float_kernel_blames_the_tensor_not_the_literal():
    text = _error(scale, _i32(), _f32(), N)
    assert "parameter 'a' is a pointer to int32 because launch argument 0 was an int32 tensor" \
        in text
    text = _error(vector_add, _i32(), _i32(), _f32(), N)
    assert "parameter 'a' is a pointer to int32 because launch argument 0 was an int32 tensor" \
        in text
    text = _error(exp_of, _i32(), _f32(), N)
    assert "pto.exp takes a float value" in text and "parameter 'a'" in text


def test_int_output_tensor_blames_the_output_parameter():
    text = _error(store_two, _i32(), N)
    assert "parameter 'o' is a pointer to int32 because launch argument 0 was an int32 tensor" \
        in text


def test_a_kernel_bug_keeps_the_conversion_hint():
    text = _error(int_plus_float, _f32(), 5)
    assert "parameter 'n' is int32 because launch argument 1 was the int 5" in text
    assert "convert one side explicitly with pto.cast(x, pto.float32)" in text


def test_numpy_scalars_and_compile_arguments_are_described():
    with pytest.raises(pto.CompileError, match="launch argument 1 was the NumPy float16 1.5"):
        pto.compile(vector_add, args=(_f32(), np.float16(1.5), _f32(), N), block=N)


def test_errors_without_parameters_are_unchanged():
    @pto.kernel
    def local_mix(a):
        i = pto.get_global_id()
        pto.store(a + i, pto.cast(i, pto.float32) + i)

    with pytest.raises(pto.CompileError) as info:
        pto.compile(local_mix, args=(_f32(),), block=N)
    text = str(info.value)
    assert "mixes pto.float32 and pto.int32; convert one side explicitly" in text
    assert "parameter" not in text


@pto.kernel
def comprehension(a, n):
    x = [pto.load(a + j) for j in range(4)]


@pto.kernel
def prints(a, n):
    print(n)


@pto.kernel
def numpy_exp(a, n):
    pto.store(a, np.exp(pto.load(a)))


@pto.kernel
def numpy_where(a, n):
    pto.store(a, np.where(n > 0, 1.0, 2.0))


@pto.kernel
def numpy_cast(a, n):
    pto.store(a, np.float32(n))


@pto.kernel
def numpy_other(a, n):
    pto.store(a, np.linalg.norm(n))


@pytest.mark.parametrize("kernel, needle, message", [
    (comprehension, "[pto.load", "list comprehension builds a Python collection"),
    (prints, "print(n)", 'use pto.printf("i=%d x=%f", i, x)'),
    (numpy_exp, "np.exp", "np.exp() is not supported in a kernel: NumPy functions cannot run "
                          "there, a kernel computes one element per lane; use pto.exp(x)"),
    (numpy_where, "np.where", "use pto.select(cond, a, b)"),
    (numpy_cast, "np.float32", "use pto.cast(x, pto.float32)"),
    (numpy_other, "np.linalg", "np.linalg.norm() is not supported in a kernel"),
])
def test_replacements_are_named(kernel, needle, message):
    with pytest.raises(pto.CompileError) as info:
        pto.compile(kernel, args=(_f32(), 3), block=N)
    text = str(info.value)
    assert message in text
    assert needle in text.splitlines()[1]
