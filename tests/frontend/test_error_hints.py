"""Errors for constructs a CUDA / Triton author reaches for first (`x[i, j]` on a pointer, a slice,
`break`, `continue`):
located at the construct, and saying what to write instead."""

from __future__ import annotations

import pytest

import pypto as pto


@pto.kernel
def reads_subscript(x, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(x + i, x[i, 0] * 2.0)


@pto.kernel
def writes_subscript(x, n):
    i = pto.get_global_id()
    x[0:i] = 1.0


@pto.kernel
def uses_break(x, n):
    for k in range(n):
        with pto.pipeline() as pl:
            with pl.stage("s"):
                if k > 2:
                    break


@pto.kernel
def uses_continue(x, n):
    for k in range(n):
        with pto.pipeline() as pl:
            with pl.stage("s"):
                if k > 2:
                    continue


@pytest.mark.parametrize("kernel,source,hint", [
    (reads_subscript, "x[i, 0]", "'x' was launched with shape (64,) (1 index) (a tensor "
                                 "allocated in bytes is flat: launch a shaped one, "
                                 "pto.tensor(array) or pto.empty(shape)): index it with one "
                                 "flat offset, x[i * STRIDE0 + 0]"),
    (writes_subscript, "x[0:i] = 1.0", "slices are not supported in kernels"),
    (uses_break, "break", "not inside a pipeline stage"),
    (uses_continue, "continue", "not inside a pipeline stage"),
])
def test_error_names_the_construct_and_the_alternative(kernel, source, hint):
    t = pto.alloc_tensor(64 * 4)
    with pytest.raises(pto.CompileError) as info:
        pto.compile(kernel, args=(t, 64), block=32)
    message = str(info.value)
    assert hint in message
    first = message.splitlines()[0]
    assert first.startswith(f"{__file__}:")
    assert "error:" in first
    # the source line and a caret under the construct follow
    lines = message.splitlines()
    src = next(k for k, line in enumerate(lines) if source in line and "error" not in line)
    caret = lines[src + 1]
    assert caret.strip() == "^"
    assert lines[src][caret.index("^"):].startswith(source.split(" ")[0])
