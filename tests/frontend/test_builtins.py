"""The kernel language's builtins are derived from the dialect: names, signatures, docstrings
(pypto.frontend.builtins), the exports of `pypto`, and the type stub builtins.pyi, which cannot
drift from them. And `pto.sigmoid`, the op added by docs/adding-an-op.md, end to end."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import pypto as pto
from pypto.dialects import pto as dialect
from pypto.dialects.op_docs import parse_docstring
from pypto.dialects.traits import kernel_function
from pypto.frontend import builtins
from pypto.tools import stubs

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "pypto" / "frontend" / "builtins.pyi"


def test_stub_is_up_to_date() -> None:
    assert STUB.read_text() == stubs.render(), (
        f"pypto/frontend/builtins.pyi is stale: regenerate it with\n\n    {stubs.REGENERATE}")


def _stub_functions() -> dict[str, ast.FunctionDef]:
    tree = ast.parse(STUB.read_text())
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)
            and node.name in set(builtins.__all__)}


def test_the_stub_declares_what_the_module_defines() -> None:
    stubbed = _stub_functions()
    exported = ast.literal_eval(next(
        node.value for node in ast.parse(STUB.read_text()).body if isinstance(node, ast.Assign)
        and any(getattr(t, "id", "") == "__all__" for t in node.targets)))
    assert exported == builtins.__all__
    # every builtin, and static_range (an ordinary function, recognised by the frontend)
    assert set(stubbed) == set(builtins.BUILTINS.values()) | {"static_range"}
    for fn, name in builtins.BUILTINS.items():
        stub = stubbed[name]
        params = [a.arg for a in (*stub.args.args, *stub.args.kwonlyargs)]
        if stub.args.vararg is not None:
            params.insert(len(stub.args.args), stub.args.vararg.arg)
        assert params == list(inspect.signature(fn).parameters), name
        assert " ".join(ast.get_docstring(stub).split()) == " ".join(fn.__doc__.split()), name


def test_every_kernel_function_of_the_dialect_is_a_builtin_with_its_docs() -> None:
    for op in dialect.PTO_OPS:
        trait = kernel_function(op)
        if trait is None:
            continue
        fn = getattr(pto, trait.name)
        assert fn in builtins.BUILTINS
        assert str(inspect.signature(fn)) == trait.signature.replace("float32", "pto.float32")
        assert parse_docstring(op.__doc__).summary in fn.__doc__
        assert trait.name in pto.__all__


def test_exports_are_the_builtins_plus_the_host_api() -> None:
    assert set(builtins.__all__) <= set(pto.__all__)
    assert all(hasattr(pto, name) for name in pto.__all__)


def test_py_typed_ships() -> None:
    assert (ROOT / "pypto" / "py.typed").exists()
    assert '"pypto" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()


def test_a_builtin_called_outside_a_kernel_says_so() -> None:
    with pytest.raises(pto.PtoError, match=r"pto.sigmoid\(\) is a kernel-side instruction"):
        pto.sigmoid(1.0)


# -- pto.sigmoid against NumPy ------------------------------------------------------------------


def _sigmoid_ref(x: np.ndarray) -> np.ndarray:
    """NumPy: in float64, rounded once to the dtype (the documented semantics)."""
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


@pto.kernel
def _sigmoid_kernel(x, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.sigmoid(pto.load(x + i)))


@pto.kernel
def _silu_in_a_branch(x, o, n):
    # a branch on the local id: batch mode runs it on a window of each block's lanes
    i = pto.get_global_id()
    t = pto.get_local_id()
    v = pto.load(x + i)
    if t < 100:
        v = v * pto.sigmoid(v)
    pto.store(o + i, v)


def _run(kernel, x: np.ndarray, grid: int, block: int) -> np.ndarray:
    dx = pto.alloc_tensor(x.nbytes, dtype=x.dtype)
    pto.memcpy_h2d(dx, x)
    do = pto.alloc_tensor(x.nbytes, dtype=x.dtype)
    pto.launch(kernel, grid=grid, block=block, args=(dx, do, x.size))
    out = np.empty_like(x)
    pto.memcpy_d2h(out, do)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16],
                         ids=["float32", "float16", "bfloat16"])
def test_sigmoid_matches_numpy_bit_for_bit(dtype) -> None:
    x = (np.random.default_rng(1).standard_normal(1000) * 10).astype(dtype)
    x[:6] = [np.inf, -np.inf, np.nan, -200.0, 0.0, -0.0]
    out = _run(_sigmoid_kernel, x, 4, 256)
    np.testing.assert_array_equal(out, _sigmoid_ref(x))
    assert out[0] == 1 and out[1] == 0 and np.isnan(out[2]) and out[4] == 0.5


def test_sigmoid_in_a_windowed_branch() -> None:
    x = np.random.default_rng(2).standard_normal(1024).astype(np.float32)
    out = _run(_silu_in_a_branch, x, 4, 256)
    local = np.arange(1024) % 256
    ref = np.where(local < 100, (x * _sigmoid_ref(x)).astype(np.float32), x)
    np.testing.assert_array_equal(out, ref)


def test_sigmoid_of_a_literal_folds_and_ints_are_rejected() -> None:
    @pto.kernel
    def folded(o):
        pto.store(o + pto.get_global_id(), pto.sigmoid(2.0) + 0.0 * pto.load(o))

    ck = pto.compile(folded, block=32, args=(pto.alloc_tensor(128),))
    assert "pto.sigmoid" not in ck.mlir

    @pto.kernel
    def on_int(o):
        pto.store(o, pto.cast(pto.sigmoid(pto.get_global_id()), pto.float32))

    with pytest.raises(pto.CompileError, match="pto.sigmoid takes a float value"):
        pto.compile(on_int, block=32, args=(pto.alloc_tensor(128),))


def test_sigmoid_has_the_same_result_at_the_npu_level() -> None:
    x = np.random.default_rng(3).standard_normal(512).astype(np.float32)
    dx = pto.alloc_tensor(x.nbytes)
    pto.memcpy_h2d(dx, x)
    do = pto.alloc_tensor(x.nbytes)
    ck = pto.compile(_sigmoid_kernel, block=256, args=(dx, do, 512),
                     pipeline="pto-verify-barriers,convert-pto-to-npu")
    assert "pto.sigmoid" in ck.mlir and "npu.load" in ck.mlir
    ck(2, 256, (dx, do, 512))
    out = np.empty_like(x)
    pto.memcpy_d2h(out, do)
    np.testing.assert_array_equal(out, _sigmoid_ref(x))
