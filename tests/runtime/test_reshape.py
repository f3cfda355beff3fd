"""`Tensor.reshape` (docs/runtime.md#tensors): a view of the same device memory with another
shape, as NumPy's reshape of a contiguous array. Writes through either are seen by both; work
using either is ordered as work on one tensor; a tensor and its view passed to one launch may
alias; sizes that differ are a UsageError; the view owns no memory."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto


@pto.kernel
def add_rows(m, out, cols: pto.constexpr):
    r = pto.get_block_id()
    c = pto.get_local_id()
    m[r, c] += out[r * cols + c]


def test_a_view_shares_memory_both_ways():
    base = pto.tensor(np.arange(12, dtype=np.float32))
    view = base.reshape(3, 4)
    assert view.shape == (3, 4) and view.base is base and base.base is None
    assert view.storage is base and view.size == 12 and view.dtype == base.dtype
    ones = pto.tensor(np.ones(12, np.float32))
    add_rows[3, 4](view, ones, 4)                  # a kernel writes through the view
    np.testing.assert_array_equal(base.numpy(), np.arange(12) + 1)  # the base sees it
    pto.memcpy_h2d(base, np.full(12, 5, np.float32))   # a copy into the base
    np.testing.assert_array_equal(view.numpy(), np.full((3, 4), 5, np.float32))
    assert view.numpy().shape == (3, 4) and base.numpy().shape == (12,)


def test_two_index_subscripts_take_the_view_shape():
    base = pto.tensor(np.zeros(12, np.float32))
    ones = pto.tensor(np.arange(12, dtype=np.float32))
    add_rows[2, 6](base.reshape(2, 6), ones, 6)
    add_rows[6, 2](base.reshape((6, -1)), ones, 2)
    np.testing.assert_array_equal(base.numpy(), 2 * np.arange(12, dtype=np.float32))


def test_work_on_a_view_is_ordered_with_work_on_its_base():
    base = pto.tensor(np.zeros(8, np.float32))
    view = base.reshape(2, 4)
    stream = pto.Stream()
    ones = pto.tensor(np.ones(8, np.float32))
    pto.launch(add_rows, grid=2, block=4, args=(view, ones, 4), stream=stream)
    # the base's own copy and the launch through its view
    assert pto.runtime.stream.pending_uses(base) == 2
    np.testing.assert_array_equal(base.numpy(), np.ones(8, np.float32))  # waits for it


def test_a_tensor_and_its_view_in_one_launch_may_alias():
    @pto.kernel
    def copy(a, b):
        i = pto.get_global_id()
        b[i] = a[i] + 1.0

    base = pto.tensor(np.zeros(4, np.float32))
    view = base.reshape(2, 2)
    ir = pto.compile(copy, args=(base, view), block=4).mlir
    assert "pto.noalias" not in ir          # as one tensor passed twice
    other = pto.tensor(np.zeros(4, np.float32))
    assert "pto.noalias" in pto.compile(copy, args=(base, other), block=4).mlir


def test_reshape_errors_are_numpy_s():
    t = pto.tensor(np.zeros(12, np.float32))
    with pytest.raises(pto.UsageError, match=r"cannot reshape a tensor of 12 elements \(shape "
                       r"\(12,\)\) into shape \(5, 3\) \(15 elements\)"):
        t.reshape(5, 3)
    with pytest.raises(pto.UsageError, match="12 is not a multiple of 5"):
        t.reshape(5, -1)
    with pytest.raises(pto.UsageError, match="may have one -1"):
        t.reshape(-1, -1)
    with pytest.raises(pto.UsageError, match="must be ints or one tuple of ints"):
        t.reshape(2.0, 6)
    np.testing.assert_array_equal(np.zeros(12).reshape(-1, 4).shape, t.reshape(-1, 4).shape)


def test_a_view_owns_no_memory():
    device = pto.runtime.default_device()
    base = pto.tensor(np.arange(6, dtype=np.int32))
    used = device.used_bytes
    view = base.reshape(2, 3)
    assert device.used_bytes == used      # no new device memory
    view.free()                             # frees nothing: the view is unusable, the base not
    assert view.freed and not base.freed and device.used_bytes == used
    np.testing.assert_array_equal(base.numpy(), np.arange(6))
    again = base.reshape(3, 2)
    base.free()                             # the memory goes, and every view with it
    assert again.freed and device.used_bytes == used - 24
    with pytest.raises(pto.TensorFreedError):
        again.numpy()
    with pytest.raises(pto.TensorFreedError):
        base.reshape(6)
