"""Integer `arith` ops in hand-written IR run in the interpreter with C/LLVM semantics.

`pypto.dialects.arith_semantics` defines them once; here each op runs in a parsed kernel through
`Executable` (per-lane operands from memory, and uniform operands passed as kernel scalars) and
is compared with an exact reference on Python integers, including negative operands, INT_MIN,
INT_MAX, out-of-range shift amounts, and division by zero (a KernelError naming the lane, unless
the lane is inactive). The analysis evaluates the same functions (last test).
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

import pypto as pto
from pypto.backend.interpreter import Executable
from pypto.dialects.arith_semantics import DIVISIONS, INT_BINARY
from pypto.ir import make_context


def _wrap(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >= 1 << (w - 1) else v


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def reference(name: str, a: int, b: int, w: int) -> int:
    """C / LLVM semantics on Python integers (exact), wrapped to w bits."""
    ua, ub = a % (1 << w), b % (1 << w)
    r = {
        "divsi": lambda: _tdiv(a, b),
        "remsi": lambda: a - _tdiv(a, b) * b,
        "floordivsi": lambda: a // b,
        "ceildivsi": lambda: -((-a) // b),
        "divui": lambda: ua // ub,
        "remui": lambda: ua % ub,
        "ceildivui": lambda: -((-ua) // ub),
        "minui": lambda: a if ua <= ub else b,
        "maxui": lambda: a if ua >= ub else b,
        "shli": lambda: a << b if 0 <= b < w else 0,
        "shrsi": lambda: a >> b if 0 <= b < w else (-1 if a < 0 else 0),
        "shrui": lambda: ua >> b if 0 <= b < w else 0,
        "addi": lambda: a + b,
        "muli": lambda: a * b,
    }[name]()
    return _wrap(r, w)


OPS = ["divsi", "remsi", "floordivsi", "ceildivsi", "divui", "remui", "ceildivui", "minui",
       "maxui", "shli", "shrsi", "shrui"]

LANES_KERNEL = """
func.func @k(%a: !pto.ptr<{t}, global>, %b: !pto.ptr<{t}, global>, %o: !pto.ptr<{t}, global>,
             %n: i32) attributes {{pto.kernel}} {{
  %i = pto.get_global_id 0 : i32
  %in = arith.cmpi slt, %i, %n : i32
  scf.if %in {{
    %pa = pto.addptr %a, %i : !pto.ptr<{t}, global>, i32 -> !pto.ptr<{t}, global>
    %pb = pto.addptr %b, %i : !pto.ptr<{t}, global>, i32 -> !pto.ptr<{t}, global>
    %x = pto.load %pa : !pto.ptr<{t}, global> -> {t}
    %y = pto.load %pb : !pto.ptr<{t}, global> -> {t}
    %r = arith.{op} %x, %y : {t}
    %po = pto.addptr %o, %i : !pto.ptr<{t}, global>, i32 -> !pto.ptr<{t}, global>
    pto.store %r, %po : {t}, !pto.ptr<{t}, global>
  }}
  func.return
}}
"""

UNIFORM_KERNEL = """
func.func @k(%x: {t}, %y: {t}, %o: !pto.ptr<{t}, global>) attributes {{pto.kernel}} {{
  %r = arith.{op} %x, %y : {t}
  pto.store %r, %o : {t}, !pto.ptr<{t}, global>
  func.return
}}
"""


def _executable(template: str, op: str, t: str) -> Executable:
    module = Parser(make_context(), template.format(op=op, t=t)).parse_module()
    module.verify()
    return Executable(next(iter(module.ops)))


def _operands(name: str, w: int, dtype: np.dtype, n: int) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(w + len(name))
    edges = np.array([info.min, info.max, -1, 0, 1, -7, 7, 2, -2], dtype=dtype)
    a = np.concatenate([edges.repeat(len(edges)),
                        rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True),
                        rng.integers(-100, 100, n, dtype=dtype)])
    b = np.concatenate([np.tile(edges, len(edges)),
                        rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True),
                        rng.integers(-9, 9, n, dtype=dtype)])
    if name.startswith("sh"):
        b = (np.abs(b.astype(np.int64)) % (w + 8) - 4).astype(dtype)  # -4 .. w+3
    if f"arith.{name}" in DIVISIONS:
        b[b == 0] = 3
    return a, b


def _device(array: np.ndarray) -> pto.Tensor:
    t = pto.alloc_tensor(array.nbytes, dtype=array.dtype)
    pto.memcpy_h2d(t, array)
    pto.sync()  # the copy is asynchronous; Executable.run does not wait for the stream
    return t


@pytest.mark.parametrize("t, dtype", [("i32", np.int32), ("i64", np.int64)])
@pytest.mark.parametrize("name", OPS)
def test_lane_values(name: str, t: str, dtype: type) -> None:
    w = np.dtype(dtype).itemsize * 8
    a, b = _operands(name, w, np.dtype(dtype), 200)
    n = len(a)
    exe = _executable(LANES_KERNEL, name, t)
    out = pto.alloc_tensor(n * np.dtype(dtype).itemsize, dtype=dtype)
    exe.run((1, 1, 1), (512, 1, 1), (_device(a), _device(b), out, n))
    got = np.empty(n, dtype=dtype)
    pto.memcpy_d2h(got, out)
    want = np.array([reference(name, int(x), int(y), w) for x, y in zip(a, b)], dtype=dtype)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (f"arith.{name} {t}: {a[bad[0]]} op {b[bad[0]]} gave {got[bad[0]]}, "
                           f"want {want[bad[0]]}")


@pytest.mark.parametrize("name", OPS)
def test_uniform_values(name: str) -> None:
    """Kernel scalars stay NumPy scalars in generated code: the same semantics on them."""
    cases = [(-7, 2), (7, -2), (-2**31, -1), (2**31 - 1, -3), (-1, 5), (-8, 40), (-8, -1)]
    for x, y in cases:
        if f"arith.{name}" in DIVISIONS and y == 0:
            continue
        exe = _executable(UNIFORM_KERNEL, name, "i32")
        out = pto.alloc_tensor(4, dtype=np.int32)
        exe.run((1, 1, 1), (1, 1, 1), (x, y, out))
        got = np.empty(1, dtype=np.int32)
        pto.memcpy_d2h(got, out)
        assert int(got[0]) == reference(name, x, y, 32), (name, x, y)


def test_c_semantics_of_divsi_and_remsi_match_numpy_trunc_and_fmod() -> None:
    """The C rule, cross-checked with NumPy: quotient truncated, remainder signed like a."""
    a = np.array([-7, 7, -7, 7, -1, 0], dtype=np.int32)
    b = np.array([2, -2, -2, 2, 3, -5], dtype=np.int32)
    q = INT_BINARY["arith.divsi"](a, b)
    r = INT_BINARY["arith.remsi"](a, b)
    assert q.tolist() == np.trunc(a / b).astype(np.int32).tolist() == [-3, -3, 3, 3, 0, 0]
    assert r.tolist() == np.fmod(a, b).tolist() == [-1, 1, -1, 1, -1, 0]
    assert (q * b + r == a).all()


@pytest.mark.parametrize("name", sorted(n.removeprefix("arith.") for n in DIVISIONS))
def test_division_by_zero_names_the_lane(name: str) -> None:
    a = np.arange(64, dtype=np.int32) - 32
    b = np.ones(64, dtype=np.int32)
    b[37] = 0
    exe = _executable(LANES_KERNEL, name, "i32")
    out = pto.alloc_tensor(64 * 4, dtype=np.int32)
    with pytest.raises(pto.KernelError, match=r"integer division by zero in block \(0, 0, 0\), "
                                              r"lane \(37, 0, 0\)"):
        exe.run((1, 1, 1), (64, 1, 1), (_device(a), _device(b), out, 64))
    # The lane with the zero divisor inactive (i < n masks it off): no error.
    exe.run((1, 1, 1), (64, 1, 1), (_device(a), _device(b), out, 37))
    got = np.empty(64, dtype=np.int32)
    pto.memcpy_d2h(got, out)
    want = [reference(name, int(x), int(y), 32) for x, y in zip(a[:37], b[:37])]
    assert got[:37].tolist() == want


def test_uniform_division_by_zero() -> None:
    exe = _executable(UNIFORM_KERNEL, "divsi", "i32")
    with pytest.raises(pto.KernelError, match="integer division by zero"):
        exe.run((1, 1, 1), (1, 1, 1), (5, 0, pto.alloc_tensor(4, dtype=np.int32)))


def test_the_analysis_evaluates_the_same_functions() -> None:
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import i32

    from pypto.analysis.lane_values import _binary

    a = np.array([-7, 7, -2**31, 5, -8], dtype=np.int64)
    b = np.array([2, -2, -1, 0, 33], dtype=np.int64)
    x = arith.ConstantOp.from_int_and_width(0, i32)
    for name in OPS:
        op_type = next(o for o in arith.Arith.operations if o.name == f"arith.{name}")
        op = op_type(x, x)
        got = _binary(op, a, b, 32)
        assert got is not None, name
        want = [0 if y == 0 and f"arith.{name}" in DIVISIONS else reference(name, int(v), int(y), 32)
                for v, y in zip(a, b)]
        assert got.tolist() == want, name


FLOAT_KERNEL = """
func.func @k(%a: !pto.ptr<f32, global>, %b: !pto.ptr<f32, global>, %o: !pto.ptr<f32, global>)
    attributes {{pto.kernel}} {{
  %i = pto.get_global_id 0 : i32
  %pa = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %pb = pto.addptr %b, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %x = pto.load %pa : !pto.ptr<f32, global> -> f32
  %y = pto.load %pb : !pto.ptr<f32, global> -> f32
  %r = {expr} : f32
  %po = pto.addptr %o, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  pto.store %r, %po : f32, !pto.ptr<f32, global>
  func.return
}}
"""

FLOAT_OPS = {
    "math.tan": np.tan, "math.sinh": np.sinh, "math.cosh": np.cosh, "math.asin": np.arcsin,
    "math.acos": np.arccos, "math.atan": np.arctan, "math.asinh": np.arcsinh,
    "math.acosh": np.arccosh, "math.atanh": np.arctanh, "math.expm1": np.expm1,
    "math.log10": np.log10, "math.log1p": np.log1p, "math.trunc": np.trunc,
    "math.roundeven": np.rint, "math.cbrt": np.cbrt,
    "math.atan2": np.arctan2, "arith.minnumf": np.fmin, "arith.maxnumf": np.fmax,
}
BINARY_FLOAT = {"math.atan2", "arith.minnumf", "arith.maxnumf"}


@pytest.mark.parametrize("name", sorted(FLOAT_OPS))
def test_float_ops(name: str) -> None:
    """NumPy's function is the definition (NaN operands included)."""
    rng = np.random.default_rng(7)
    a = np.concatenate([rng.uniform(-3, 3, 120), [0.5, 1.5, 2.5, -0.5, -2.5, np.nan, 0.0, -0.0]])
    b = np.concatenate([rng.uniform(-3, 3, 120), [np.nan, 1.0, -1.0, 2.0, np.nan, 3.0, -0.0, 0.0]])
    a, b = a.astype(np.float32), b.astype(np.float32)
    expr = f"{name} %x, %y" if name in BINARY_FLOAT else f"{name} %x"
    module = Parser(make_context(), FLOAT_KERNEL.format(expr=expr)).parse_module()
    module.verify()
    n = len(a)
    out = pto.alloc_tensor(n * 4, dtype=np.float32)
    Executable(next(iter(module.ops))).run((1, 1, 1), (n, 1, 1), (_device(a), _device(b), out))
    got = np.empty(n, dtype=np.float32)
    pto.memcpy_d2h(got, out)
    # Transcendentals are evaluated in float64 and rounded once (pypto.exact.via_f64), so
    # the reference is NumPy's float64 function rounded to float32; trunc, rint, fmin and
    # fmax are exact in any type.
    wide = [a.astype(np.float64), b.astype(np.float64)]
    with np.errstate(all="ignore"):
        want = (FLOAT_OPS[name](*wide) if name in BINARY_FLOAT
                else FLOAT_OPS[name](wide[0])).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_an_op_the_interpreter_lacks_is_named_with_its_location() -> None:
    text = FLOAT_KERNEL.format(expr="math.erf %x")
    module = Parser(make_context(), text).parse_module()
    exe = Executable(next(iter(module.ops)))
    with pytest.raises(Exception, match="cannot execute 'math.erf'"):
        exe.run((1, 1, 1), (4, 1, 1), (pto.alloc_tensor(16), pto.alloc_tensor(16),
                                       pto.alloc_tensor(16)))
