"""launch: grid/block normalisation, validation errors, argument checks, compile-at-launch."""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest

from pypto.errors import CompileError, LaunchError, TensorFreedError
from pypto.runtime import Device, Stream, Tensor, alloc_tensor, default_device, launch, sync


def test_kernel_receives_normalised_grid_block_and_args(fakes) -> None:
    k = fakes.kernel("k", 3)
    d = alloc_tensor(16)
    launch(k, grid=(2, 3), block=64, args=(d, 7, 2.5))
    sync()
    assert len(k.calls) == 1
    grid, block, args = k.calls[0]
    assert grid == (2, 3, 1) and block == (64, 1, 1)
    assert args[0] is d and args[1:] == (7, 2.5)


@pytest.mark.parametrize("grid", [0, -1, (1, 0), (2, 2, -3)])
def test_zero_or_negative_grid_is_rejected(fakes, grid: Any) -> None:
    with pytest.raises(LaunchError, match="must be positive"):
        launch(fakes.kernel("k", 0), grid, 32, ())


@pytest.mark.parametrize("block", [0, (32, 0, 1)])
def test_zero_block_is_rejected(fakes, block: Any) -> None:
    with pytest.raises(LaunchError, match=r"block=.*must be positive"):
        launch(fakes.kernel("k", 0), 1, block, ())


@pytest.mark.parametrize("grid", [2.0, "4", True, None, (1, 1.5), (np.bool_(True),)])
def test_non_int_dims_are_rejected(fakes, grid: Any) -> None:
    with pytest.raises(LaunchError, match="must be an int"):
        launch(fakes.kernel("k", 0), grid, 32, ())


@pytest.mark.parametrize("grid", [(), (1, 1, 1, 1)])
def test_dims_need_one_to_three_entries(fakes, grid: Any) -> None:
    with pytest.raises(LaunchError, match="1 to 3 dimensions"):
        launch(fakes.kernel("k", 0), grid, 32, ())


@pytest.mark.parametrize("block", [1025, (32, 32, 2), (2048,)])
def test_block_larger_than_the_target_allows(fakes, block: Any) -> None:
    with pytest.raises(LaunchError) as info:
        launch(fakes.kernel("big", 0), 1, block, ())
    message = str(info.value)
    assert "'big'" in message and "1024 lanes per block" in message and "pto-default" in message


def test_block_limit_is_the_target_parameter(fakes, small_device: Device) -> None:
    d = alloc_tensor(16, device=small_device)  # small_device allows 64 lanes per block
    launch(fakes.kernel("k", 1), 1, 64, (d,))
    with pytest.raises(LaunchError, match="64 lanes per block"):
        launch(fakes.kernel("k", 1), 1, 65, (d,))
    sync()


def test_full_block_is_accepted(fakes) -> None:
    k = fakes.kernel("k", 0)
    launch(k, 1, (32, 32, 1), ())
    sync()
    assert k.calls[0][1] == (32, 32, 1)


def test_wrong_arity_names_kernel_parameters_and_count(fakes) -> None:
    d = alloc_tensor(16)
    with pytest.raises(LaunchError) as info:
        launch(fakes.add("vector_add"), 1, 32, (d, d))
    message = str(info.value)
    assert "'vector_add'" in message
    assert "3 parameter(s) (a, b, o)" in message
    assert "got 2 argument(s)" in message


@pytest.mark.parametrize("bad, type_name", [("x", "str"), ({"a": 1}, "dict"), (None, "NoneType"),
                                            (1 + 2j, "complex")])
def test_unsupported_argument_names_its_position(fakes, bad: Any, type_name: str) -> None:
    d = alloc_tensor(16)
    with pytest.raises(LaunchError, match=f"argument 1 has unsupported type {type_name}"):
        launch(fakes.kernel("k", 2), 1, 32, (d, bad))


def test_host_array_argument_is_staged_in_a_device_tensor(fakes) -> None:
    """A NumPy array argument reaches the kernel as a device tensor of its dtype holding its
    contents (copied back afterwards: tests/runtime/test_host_api.py)."""
    k = fakes.kernel("k", 1)
    host = np.arange(4, dtype=np.float32)
    launch(k, 1, 32, (host,))
    (staged,) = k.calls[0][2]
    assert isinstance(staged, Tensor) and staged.dtype.name == "float32" and staged.size == 4


def test_numpy_scalars_are_accepted_as_given(fakes) -> None:
    k = fakes.kernel("k", 4)
    args = (np.int32(3), np.int64(4), np.float32(1.5), np.float64(2.5))
    launch(k, 1, 32, args)
    sync()
    assert k.calls[0][2] == args


def test_args_must_be_a_tuple(fakes) -> None:
    with pytest.raises(LaunchError, match=r"args=\(x,\)"):
        launch(fakes.kernel("k", 1), 1, 32, alloc_tensor(16))  # type: ignore[arg-type]


def test_list_args_are_accepted(fakes) -> None:
    k = fakes.kernel("k", 1)
    launch(k, 1, 32, [5])
    sync()
    assert k.calls[0][2] == (5,)


def test_freed_tensor_argument_raises_at_launch_and_enqueues_nothing(fakes) -> None:
    a, b = alloc_tensor(16), alloc_tensor(16)
    b.free()
    with pytest.raises(TensorFreedError, match="argument 1"):
        launch(fakes.copy(), 1, 32, (a, b))
    assert default_device().default_stream.pending == 0
    sync()
    assert fakes.log == []


def test_plain_function_is_told_to_use_the_decorator() -> None:
    def vector_add(a, b):  # noqa: ANN001, ANN202
        pass
    with pytest.raises(LaunchError, match=r"@pto.kernel"):
        launch(vector_add, 1, 32, (1, 2))


def test_launch_returns_none_and_is_asynchronous(fakes) -> None:
    k = fakes.kernel("k", 0)
    assert launch(k, 1, 32, ()) is None
    assert k.calls == []
    sync()
    assert len(k.calls) == 1


def test_tensors_from_another_device_are_rejected(fakes, small_device: Device) -> None:
    here, there = alloc_tensor(16), alloc_tensor(16, device=small_device)
    with pytest.raises(LaunchError, match="different devices"):
        launch(fakes.copy(), 1, 32, (here, there))
    with pytest.raises(LaunchError, match="stream belongs to device 'pto-default'"):
        launch(fakes.kernel("k", 1), 1, 32, (there,), stream=Stream())


def test_launch_on_a_device_uses_that_device_s_default_stream(fakes, small_device: Device) -> None:
    d = alloc_tensor(16, device=small_device)
    launch(fakes.kernel("k", 1), 1, 32, (d,))
    assert small_device.default_stream.pending == 1
    assert default_device().default_stream.pending == 0
    sync()
    assert small_device.default_stream.pending == 0


# -- @pto.kernel objects are compiled at launch time ---------------------------------------------

class FrontendKernel:
    """What `@pto.kernel` produces, as far as launch cares: a name and a parameter count."""

    def __init__(self, name: str, params: list[str]) -> None:
        self.name = name
        self.params = params

    @property
    def num_params(self) -> int:
        return len(self.params)


@pytest.fixture
def fake_compiler(fakes) -> Any:
    """A stand-in `compile` that records its calls; `launch(..., compile=...)` takes it (the
    runtime does not import the compiler). Its `.calls` are the calls made."""
    calls: list[dict[str, Any]] = []

    def compile(kernel: Any, *, args: Any, block: Any = 256, pipeline: Any = None,
                target: Any = None) -> Any:
        calls.append({"kernel": kernel, "args": args, "block": block, "target": target})
        if kernel.name == "broken":
            raise CompileError("unknown call 'foo'", filename="k.py", line=3, col=4)
        return fakes.add(kernel.name)

    compile.calls = calls  # type: ignore[attr-defined]
    return compile


def test_frontend_kernel_is_compiled_at_launch_and_run_at_sync(fakes, fake_compiler) -> None:
    a, b, o = alloc_tensor(16), alloc_tensor(16), alloc_tensor(16)
    a.data[:] = [1, 2, 3, 4]
    b.data[:] = 10
    kern = FrontendKernel("vector_add", ["a", "b", "o"])
    launch(kern, grid=(1,), block=(4,), args=(a, b, o), compile=fake_compiler)
    assert len(fake_compiler.calls) == 1
    call = fake_compiler.calls[0]
    assert call["kernel"] is kern and call["args"] == (a, b, o)
    assert call["block"] == (4, 1, 1)
    assert call["target"] is default_device().target
    assert fakes.log == []
    sync()
    assert fakes.log == ["vector_add"]
    np.testing.assert_array_equal(o.data, [11, 12, 13, 14])


def test_compile_error_propagates_from_launch_immediately(fakes, fake_compiler) -> None:
    with pytest.raises(CompileError, match=r"k.py:3:5: error: unknown call"):
        launch(FrontendKernel("broken", ["x"]), 1, 32, (1,), compile=fake_compiler)
    assert default_device().default_stream.pending == 0


def test_frontend_kernel_arity_is_checked_before_compiling(fake_compiler) -> None:
    with pytest.raises(LaunchError, match=r"2 parameter\(s\) \(x, y\) but got 1"):
        launch(FrontendKernel("k", ["x", "y"]), 1, 32, (1,), compile=fake_compiler)
    assert fake_compiler.calls == []


def test_an_uncompiled_kernel_needs_a_compile_function() -> None:
    """The runtime does not import the compiler: without `compile=` it says what to do."""
    with pytest.raises(LaunchError, match=r"not compiled; launch it with pto.launch"):
        launch(FrontendKernel("k", ["x"]), 1, 32, (1,))


def test_a_bad_scalar_argument_names_the_parameter():
    import pypto as pto
    """The message said "argument 1" only (issue 22)."""
    import numpy as np

    @pto.kernel
    def takes_n(o, n):
        pto.store(o + pto.get_global_id(), 1.0)

    o = pto.alloc_tensor(256)
    compiled = pto.compile(takes_n, args=(o, 3), block=64)
    for kernel in (takes_n, compiled):
        for bad, why in ((np.int8(3), "NumPy int8 scalar"), (np.uint32(3), "NumPy uint32"),
                         (2**64, "does not fit in int64"), ("x", "unsupported type str")):
            with pytest.raises(pto.LaunchError, match=f"argument 1 \\(parameter .n.\\) .*{why}"):
                pto.launch(kernel, grid=1, block=64, args=(o, bad))
    o.free()
