"""Errors shown to the user end at the user's line (docs/runtime.md#errors): pypto's frames are hidden from a
PtoError's traceback unless PYPTO_FULL_TRACEBACK=1, and run-time KernelErrors show the source
line with a caret, as compile errors do."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback

import numpy as np
import pytest

import pypto as pto

PYPTO_DIR = os.path.dirname(pto.__file__)


@pto.kernel
def oob(a, n):
    i = pto.get_global_id()
    pto.store(a + i + n, 1.0)


@pto.kernel
def ill_typed(a, n):
    pto.store(a, n + 1.5)


def _frames(exc: BaseException) -> list[str]:
    return [f.filename for f in traceback.extract_tb(exc.__traceback__)]


def _assert_user_frames_only(exc: BaseException) -> None:
    frames = _frames(exc)
    assert frames, "the traceback keeps the user's frames"
    assert all(not f.startswith(PYPTO_DIR) and not f.startswith("<pto ") for f in frames), frames
    assert frames[-1] == __file__


@pytest.fixture
def short_tracebacks(monkeypatch):
    monkeypatch.delenv("PYPTO_FULL_TRACEBACK", raising=False)


def test_kernel_error_at_sync_has_no_pypto_frames(short_tracebacks):
    t = pto.alloc_tensor(64 * 4)
    pto.launch(oob, 1, 64, (t, 8))
    with pytest.raises(pto.MemoryAccessError) as info:
        pto.sync()
    _assert_user_frames_only(info.value)


@pytest.mark.parametrize("call", [
    lambda: pto.launch(ill_typed, 1, 32, (pto.alloc_tensor(128), 3)),
    lambda: pto.compile(ill_typed, args=(pto.alloc_tensor(128), 3)),
    lambda: ill_typed[1, 32](pto.alloc_tensor(128), 3),
    lambda: pto.launch(ill_typed, 0, 32, (pto.alloc_tensor(128), 3)),
    lambda: pto.alloc_tensor(-4),
    lambda: pto.memcpy_h2d(pto.alloc_tensor(128), np.zeros(3, np.float32)),
    lambda: pto.empty((0,)),
    lambda: ill_typed(1, 2),
])
def test_host_api_errors_have_no_pypto_frames(short_tracebacks, call):
    with pytest.raises(pto.PtoError) as info:
        call()
    _assert_user_frames_only(info.value)


def test_full_traceback_keeps_the_frames(monkeypatch):
    monkeypatch.setenv("PYPTO_FULL_TRACEBACK", "1")
    with pytest.raises(pto.CompileError) as info:
        pto.compile(ill_typed, args=(pto.alloc_tensor(128), 3))
    assert any(f.startswith(PYPTO_DIR) for f in _frames(info.value))


def test_user_callbacks_stay_in_the_traceback(short_tracebacks):
    def grid(meta):
        return pto.launch(ill_typed, 0, 32, (meta["a"], 3))  # a LaunchError inside user code

    with pytest.raises(pto.LaunchError) as info:
        ill_typed[grid, 32](pto.alloc_tensor(128), 3)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert [f.name for f in frames][-2:] == ["test_user_callbacks_stay_in_the_traceback", "grid"]


def test_kernel_error_shows_source_line_and_caret():
    t = pto.alloc_tensor(64 * 4)
    with pytest.raises(pto.MemoryAccessError) as info:
        oob[1, 64](t, 8)
        pto.sync()
    lines = str(info.value).splitlines()
    head = lines[0]
    location = head.split(": in kernel")[0]
    path, line, col = location.rsplit(":", 2)
    assert path == __file__
    source = open(__file__).read().splitlines()[int(line) - 1]
    assert lines[1] == "    " + source
    assert lines[2] == "    " + " " * (int(col) - 1) + "^"
    assert source[int(col) - 1:].startswith("pto.store(a + i + n")


def test_script_traceback_is_short(tmp_path):
    """An uncaught error in a script: the printed traceback names only the script's lines."""
    script = tmp_path / "user.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import pypto as pto

        @pto.kernel
        def vector_add(a, b, o, n):
            i = pto.get_global_id()
            if i < n:
                pto.fma(o + i, pto.load(a + i), 1.0, pto.load(b + i))

        d = pto.zeros(64)
        vector_add[1, 64](d, 1.5, d, 64)
    """))
    env = {k: v for k, v in os.environ.items() if k != "PYPTO_FULL_TRACEBACK"}
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=env)
    err = result.stderr
    assert result.returncode == 1
    assert "parameter 'b' is used as a pointer but launch argument 1 is the float 1.5" in err
    assert PYPTO_DIR not in err, err
    assert len(err.splitlines()) <= 8, err
