"""Helper functions called from kernels (docs/language.md#helper-functions): plain Python functions and `@pto.func`,
inlined with their own source locations; errors name the helper's line with the call site as
a note; values returned; helpers calling helpers; recursion is a CompileError."""

import numpy as np
import pytest

import pypto as pto
from tests.frontend.helper_mod.device import bad_mix, scaled


def square(x):
    return x * x


@pto.func
def clamp(x, lo=0.0, hi=1.0):
    if x < lo:                 # lane-dependent early returns, as in a kernel
        return lo
    if x > hi:
        return hi
    return x


def sq_clamped(x, hi):
    return clamp(square(x), hi=hi)


def store_pair(o, i, a, b):
    pto.store(o + 2 * i, a)
    pto.store(o + 2 * i + 1, b)


def div_mod(a, b):
    return a // b, a % b


@pto.kernel
def uses_helpers(x, o, q, n):
    i = pto.get_global_id()
    if i < n:
        v = pto.load(x + i)
        store_pair(o, i, sq_clamped(v, 50.0), scaled(v))
        d, m = div_mod(i, 7)
        pto.store(q + i, d * 100 + m)


def test_helpers_inline_return_values_and_call_each_other():
    n = 100
    x = np.linspace(-10, 10, n).astype(np.float32)
    dx, do, dq = pto.alloc_tensor(4 * n), pto.alloc_tensor(8 * n), \
        pto.alloc_tensor(4 * n, dtype=np.int32)
    pto.memcpy_h2d(dx, x)
    pto.launch(uses_helpers, grid=4, block=32, args=(dx, do, dq, n))
    out = np.empty(2 * n, np.float32)
    q = np.empty(n, np.int32)
    pto.memcpy_d2h(out, do)
    pto.memcpy_d2h(q, dq)
    np.testing.assert_array_equal(out[0::2], np.clip(x * x, 0.0, 50.0))
    np.testing.assert_array_equal(out[1::2], x * np.float32(3.0))
    assert q.tolist() == [(i // 7) * 100 + i % 7 for i in range(n)]


def test_helper_ops_keep_the_helpers_own_locations():
    t = pto.alloc_tensor(4 * 64)
    ck = pto.compile(uses_helpers, args=(t, t, pto.alloc_tensor(256, dtype=np.int32), 4),
                     block=32)
    text = ck.mlir_with_locations if hasattr(ck, "mlir_with_locations") else None
    from pypto.backend.interpreter.instruments import location_of
    from pypto.analysis.uniformity import walk
    from xdsl.dialects import arith
    locs = {location_of(op) for op in walk(ck.module.ops) if isinstance(op, arith.MulfOp)}
    square_line = square.__code__.co_firstlineno + 1
    assert any(f"test_helpers.py:{square_line}:" in loc for loc in locs), locs
    assert any("helper_mod/device.py:" in loc for loc in locs), locs


def test_an_error_in_a_helper_names_the_helpers_line_and_the_call_site():
    @pto.kernel
    def caller(x, n):
        v = pto.load(x)
        pto.store(x, bad_mix(v, n))

    with pytest.raises(pto.CompileError, match="mixes pto.float32 and pto.int32") as info:
        pto.compile(caller, args=(pto.alloc_tensor(4), 3), block=32)
    text = str(info.value)
    first, *rest = text.splitlines()
    assert "helper_mod/device.py:" in first and "return v + n" in text
    line = caller.fn.__code__.co_firstlineno + 3
    assert f"test_helpers.py:{line}:" in text and "note: called from here" in text
    assert "pto.store(x, bad_mix(v, n))" in text


def fact(n):
    return n * fact(n - 1)


def ping(n):
    return pong(n)


def pong(n):
    return ping(n)


@pytest.mark.parametrize("helper, chain", [(fact, "fact -> fact"), (ping, "ping -> pong -> ping")])
def test_recursion_is_a_compile_error(helper, chain):
    @pto.kernel
    def k(x, n):
        pto.store(x, helper(n))

    with pytest.raises(pto.CompileError, match="recursive call") as info:
        pto.compile(k, args=(pto.alloc_tensor(4, dtype=np.int32), 3), block=32)
    assert chain in str(info.value)


def test_device_function_called_from_python_is_a_clear_error():
    with pytest.raises(pto.PtoError, match="call it from a @pto.kernel"):
        clamp(1.0)


def test_bad_arguments_name_the_helper():
    @pto.kernel
    def k(x):
        pto.store(x, square(1.0, 2.0))

    with pytest.raises(pto.CompileError, match="call to 'square'"):
        pto.compile(k, args=(pto.alloc_tensor(4),), block=32)


def half_return(x):
    if x > 0.0:
        return x


def test_a_value_returned_on_some_paths_only_is_an_error():
    @pto.kernel
    def k(x):
        pto.store(x, half_return(pto.load(x)))

    with pytest.raises(pto.CompileError, match="some paths"):
        pto.compile(k, args=(pto.alloc_tensor(4),), block=32)


def inner_bad(v, n):
    return v + n


def outer_calls_inner(v, n):
    return inner_bad(v, n) * 2.0


def test_nested_helpers_give_one_note_per_call_site():
    @pto.kernel
    def k(x, n):
        pto.store(x, outer_calls_inner(pto.load(x), n))

    with pytest.raises(pto.CompileError) as info:
        pto.compile(k, args=(pto.alloc_tensor(4), 3), block=32)
    lines = str(info.value).splitlines()
    assert "return v + n" in lines[1]
    notes = [line for line in lines if "note: called from here" in line]
    assert len(notes) == 2
    assert f":{outer_calls_inner.__code__.co_firstlineno + 1}:" in notes[0]
    assert f":{k.fn.__code__.co_firstlineno + 2}:" in notes[1]


def test_lambdas_and_library_functions_are_not_inlined():
    twice = lambda v: v * 2.0  # noqa: E731

    @pto.kernel
    def uses_lambda(x):
        pto.store(x, twice(pto.load(x)))

    @pto.kernel
    def uses_numpy(x):
        pto.store(x, np.clip(pto.load(x), 0.0, 1.0))

    t = pto.alloc_tensor(4)
    with pytest.raises(pto.CompileError, match="is a lambda"):
        pto.compile(uses_lambda, args=(t,), block=32)
    with pytest.raises(pto.CompileError, match="np.clip"):
        pto.compile(uses_numpy, args=(t,), block=32)


def load_next(p, k):
    return p[k + 1]                    # past the end for the last lane


def doubled_next(p, k):
    return load_next(p, k) * 2.0


@pto.kernel
def overruns_in_a_helper(x, o):
    i = pto.get_global_id()
    o[i] = doubled_next(x, i)


def test_a_run_time_error_in_a_helper_adds_every_call_site():
    with pytest.raises(pto.MemoryAccessError) as info:
        overruns_in_a_helper[1, 4](np.arange(4, dtype=np.float32), np.zeros(4, np.float32))
        pto.sync()
    err = info.value
    lines = str(err).splitlines()
    inner = load_next.__code__.co_firstlineno + 1
    middle = doubled_next.__code__.co_firstlineno + 1
    outer = overruns_in_a_helper.fn.__code__.co_firstlineno + 3
    assert lines[0].startswith(f"{__file__}:{inner}:12: in kernel 'overruns_in_a_helper': "
                               f"out-of-bounds load of HBM buffer 'x' at element 4")
    assert lines[1].strip() == "return p[k + 1]                    # past the end for the last lane"
    assert lines[3] == f"{__file__}:{middle}:12: note: called from here"
    assert lines[4].strip() == "return load_next(p, k) * 2.0"
    assert lines[6] == f"{__file__}:{outer}:12: note: called from here"
    assert lines[7].strip() == "o[i] = doubled_next(x, i)"
    assert err.called_from == (f"{__file__}:{middle}:12", f"{__file__}:{outer}:12")
    assert err.lane == (3, 0, 0)


def test_the_ir_records_the_call_site_of_inlined_ops():
    ck = pto.compile(overruns_in_a_helper, args=(pto.tensor(np.zeros(4, np.float32)),
                                                 pto.tensor(np.zeros(4, np.float32))), block=4)
    from pypto.diagnostics import call_sites, source_loc
    from pypto.analysis.uniformity import walk

    loads = [op for op in walk(ck.module.ops) if op.name == "pto.load"]
    assert len(loads) == 1
    assert source_loc(loads[0]).line == load_next.__code__.co_firstlineno + 1
    assert [c.line for c in call_sites(loads[0])] == [
        doubled_next.__code__.co_firstlineno + 1,
        overruns_in_a_helper.fn.__code__.co_firstlineno + 3]
    assert "callsite(" in pto.ir.print_ir(ck.module, debuginfo=True)
