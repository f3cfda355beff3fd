"""pypto.backend.interpreter.malloc: glibc's thresholds fixed once per process, unless the
user opts out or tuned malloc themselves (checked in fresh interpreter processes)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = """
import numpy as np, pypto as pto
from pypto.backend.interpreter import malloc

@pto.kernel
def add_one(x):
    i = pto.get_global_id()
    pto.store(x + i, pto.load(x + i) + 1.0)

t = pto.alloc_tensor(64 * 4)
pto.memcpy_h2d(t, np.zeros(64, np.float32))
pto.launch(add_one, grid=1, block=64, args=(t,))
out = np.empty(64, np.float32)
pto.memcpy_d2h(out, t)
assert (out == 1).all()
print(malloc._state.get("applied"))
"""


def run(env_extra: dict[str, str], tmp_path) -> str:
    script = tmp_path / "tune.py"  # kernels need a source file
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k not in ("GLIBC_TUNABLES", "PYPTO_MALLOC_TUNING")}
    env.update(env_extra)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def glibc() -> bool:
    import ctypes
    try:
        ctypes.CDLL(None).gnu_get_libc_version  # noqa: B018
    except (OSError, AttributeError):
        return False
    return sys.platform.startswith("linux")


@pytest.mark.skipif(not glibc(), reason="mallopt is glibc's")
def test_thresholds_are_set_at_the_first_executable(tmp_path):
    assert run({}, tmp_path) == "True"


def test_opt_out_and_user_settings_leave_malloc_alone(tmp_path):
    assert run({"PYPTO_MALLOC_TUNING": "0"}, tmp_path) == "False"
    assert run({"MALLOC_TRIM_THRESHOLD_": "1000000"}, tmp_path) == "False"
