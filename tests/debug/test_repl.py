"""`python -m pypto.debug script.py:kernel`, driven through stdin as a user would type."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pypto.debug.repl import parse_lanes
from pypto.debug.script import capture_launch, parse_target
from pypto.debug.session import DebugError

ROOT = Path(__file__).resolve().parents[2]
PTO_LEVEL = "pto-verify-barriers"

SCRIPT = textwrap.dedent('''\
    import numpy as np
    import pypto as pto

    @pto.kernel
    def helper(o):
        pto.store(o + pto.get_global_id(), 7.0)

    @pto.kernel
    def vadd(a, b, o, n):
        i = pto.get_global_id()
        if i < n:
            x = pto.load(a + i)
            y = pto.load(b + i)
            pto.store(o + i, x + y)

    def main():
        n = 300
        a = np.arange(n, dtype=np.float32)
        b = np.full(n, 0.5, dtype=np.float32)
        d_a, d_b, d_out = (pto.alloc_tensor(n * 4) for _ in range(3))
        pto.memcpy_h2d(d_a, a)
        pto.memcpy_h2d(d_b, b)
        pto.launch(helper, grid=1, block=64, args=(d_out,))
        pto.launch(vadd, grid=(2, 1, 1), block=(256, 1, 1), args=(d_a, d_b, d_out, n))
        raise SystemExit("the debugger must stop the script at the launch")

    if __name__ == "__main__":
        main()
''')


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT)
    return path


def run(args, commands, tmp_path, history=True):
    env = dict(os.environ)
    env["PYPTO_DEBUG_HISTORY"] = str(tmp_path / "history") if history else ""
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "pypto.debug", *args],
                          input="\n".join(commands) + "\n", capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    return proc


def test_a_session_through_stdin(script, tmp_path):
    proc = run([f"{script}:vadd", "--pipeline", PTO_LEVEL],
               ["where", "step", "", "print x 0-3", "print y 254:256", "print i 40",
                "break 14", "break", "continue", "l1 0 4", "timeline", "restart",
                "step 2", "quit"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert proc.stderr == ""
    assert "kernel 'vadd' as launched at" in out and "grid=(2, 1, 1), block=(256, 1, 1)" in out
    assert "paused before LOAD (pto.load" in out
    # the script's own variable names, the script's data
    assert "[Lanes 0-255] LOAD d_a[0..255] -> x (4 bytes each)" in out
    assert "[Lanes 0-255] LOAD d_b[0..255] -> y (4 bytes each)" in out  # the empty line: again
    assert "x = [0] 0  [1] 1  [2] 2  [3] 3" in out
    assert "y = [254-255] 0.5" in out
    assert "i = [40] 40" in out
    assert "breakpoint 1 at line 14" in out
    assert "STORE d_out[0..255]" not in out  # continue prints no trace lines
    assert "no L1 buffer of this kernel covers bytes 0..15" in out
    # a pto-level pipeline is timed by the pto-level model, as pto.profile(model="table")
    assert "(cost model 'table': the cycle each instruction starts on its pipe" in out
    assert re.search(r"\nCycle \d+: Lane 0-255: LOAD +VECTOR .*prog.py:12\n", out)
    assert re.search(r"\nCycle \d+: Lane 0-255: STORE +VECTOR .*prog.py:14\n", out)
    assert "the debugger must stop the script" not in out + proc.stderr
    history = (tmp_path / "history").read_text().split()
    assert history[:3] == ["where", "step", "print"]


def run_here(args, commands, monkeypatch, capsys, tmp_path):
    """The same, in this process (stdin replaced): cheaper than a subprocess."""
    from pypto.debug.__main__ import main

    monkeypatch.setenv("PYPTO_DEBUG_HISTORY", str(tmp_path / "history"))
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(commands) + "\n"))
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_block_and_warp_selection_and_errors_in_commands(script, tmp_path, monkeypatch, capsys):
    code, out, err = run_here(
        [f"{script}:vadd", "--pipeline", PTO_LEVEL, "--block-id", "1"],
        ["step", "block 0 warp 3", "step", "warp all", "print nope", "l1 1", "break 999",
         "frobnicate", "step 0", "print i 300", "continue", "step", "q"],
        monkeypatch, capsys, tmp_path)
    assert code == 0, err
    # block 1: lanes 0..43 have i < 300
    assert "[Lanes 0-43] LOAD d_a[256..299] -> x (4 bytes each)" in out
    assert "[Lanes 96-127] LOAD d_a[96..127] -> x (4 bytes each)" in out
    assert "error: kernel 'vadd' has no variable 'nope'" in out
    assert "error: l1 OFFSET COUNT [DTYPE]" in out
    assert "error: no instruction of kernel 'vadd' is on line 999" in out
    assert "unknown command 'frobnicate'" in out
    assert "error: expected a positive count, got '0'" in out
    assert "error: lane 300 is not executing here" in out
    assert "Kernel finished (block (0, 0, 0))." in out
    assert "has finished" in out
    assert "Traceback" not in out + err


def test_per_lane_lines_at_the_prompt(script, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYPTO_DEBUG_HISTORY", "")
    from pypto.debug.__main__ import main

    monkeypatch.setattr(sys, "stdin", io.StringIO("step\nquit\n"))
    assert main([f"{script}:vadd", "--pipeline", PTO_LEVEL, "--per-lane"]) == 0
    out = capsys.readouterr().out
    assert "[Lane 0] LOAD d_a[0] -> x (4 bytes)\n[Lane 1] LOAD d_a[1] -> x (4 bytes)" in out
    assert not (tmp_path / "history").exists()


def test_bad_targets_are_one_line_errors(script, tmp_path, monkeypatch, capsys):
    for args, message in [
        (["nofile.py:vadd"], "no such script: nofile.py"),
        (["prog.py"], "expected SCRIPT.py:KERNEL"),
        ([f"{script}:nope"], "without launching kernel 'nope' (it launched: helper, vadd"),
    ]:
        code, out, err = run_here(args, ["quit"], monkeypatch, capsys, tmp_path)
        assert code == 1
        assert err.startswith("pypto.debug: error: ") and message in err, err
        assert "Traceback" not in err


def test_the_article_example_under_the_repl(tmp_path):
    proc = run([str(ROOT / "examples" / "vector_add.py") + ":vector_add"],
               ["step", "l1 0 16", "timeline", "continue", "quit"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "grid=(4, 1, 1), block=(256, 1, 1)" in proc.stdout
    assert "[Lanes 0-255] LOAD d_a[0..255] -> " in proc.stdout
    assert "Kernel finished (block (0, 0, 0))." in proc.stdout


def test_capture_launch_takes_the_first_launch_of_the_kernel(script):
    launch = capture_launch(str(script), "vadd")
    assert launch.grid == (2, 1, 1) and launch.block == (256, 1, 1)
    assert launch.args[3] == 300
    assert launch.names == {0: "d_a", 1: "d_b", 2: "d_out"}
    # the queued copies had completed: the tensors hold the script's data
    np.testing.assert_array_equal(launch.args[0].data, np.arange(300, dtype=np.float32))
    # the kernel launched before it ran normally
    assert (launch.args[2].data[:64] == 7.0).all()
    import pypto

    import pypto.compiler
    import pypto.runtime

    # restored
    assert pypto.launch is pypto.compiler.launch and pypto.launch.__module__ == "pypto.compiler"
    assert pypto.runtime.launcher.launch_shaped.__module__ == "pypto.runtime.launcher"


def test_parse_helpers():
    assert parse_target("a/b.py:k") == ("a/b.py", "k")
    with pytest.raises(DebugError):
        parse_target("a/b.py:")
    assert parse_lanes("5") == 5
    assert parse_lanes("0-3") == range(0, 4)
    assert parse_lanes("2:5") == range(2, 5)
    assert parse_lanes("1,4") == [1, 4]
    with pytest.raises(DebugError):
        parse_lanes("x")


class _InterruptOnce(io.StringIO):
    """stdin whose first read is a Ctrl-C."""

    def __init__(self, text):
        super().__init__(text)
        self.interrupted = False

    def readline(self, *args):
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return super().readline(*args)


def test_ctrl_c_at_the_prompt_gives_a_new_prompt(script, tmp_path, monkeypatch, capsys):
    from pypto.debug.__main__ import main

    monkeypatch.setenv("PYPTO_DEBUG_HISTORY", "")
    monkeypatch.setattr(sys, "stdin", _InterruptOnce("step\nquit\n"))
    assert main([f"{script}:vadd", "--pipeline", PTO_LEVEL]) == 0
    out = capsys.readouterr().out
    assert "(interrupted: 'quit' leaves the debugger)" in out
    assert "[Lanes 0-255] LOAD d_a[0..255] -> x (4 bytes each)" in out


def test_the_other_commands(script, tmp_path, monkeypatch, capsys):
    code, out, err = run_here(
        [f"{script}:vadd", "--pipeline", PTO_LEVEL],
        ["help", "next", "si", "list", "b LOAD", "d 1", "b", "p i 3", "timeline all",
         "timeline x", "c", "where", "exit"],
        monkeypatch, capsys, tmp_path)
    assert code == 0, err
    assert "step [N]         [s]   execute N PTO instructions" in out
    assert "-> prog.py:13 LOAD: y = pto.load(b + i)" in out  # next: the following line
    assert "[Lanes 0-255] LOAD d_b[0..255] -> y (4 bytes each)" in out  # si: one op
    assert "   14 ->         pto.store(o + i, x + y)" in out
    assert "    9    def vadd(a, b, o, n):" in out  # list: 5 lines either side
    assert "breakpoint 1 at every LOAD" in out and "no breakpoints" in out
    assert "i = [3] 3" in out
    assert re.search(r"Cycle \d+: Lane 0-255: GET_GLOBAL_ID", out)  # timeline all
    assert "error: timeline [all]" in out
    assert "The kernel has finished (block (0, 0, 0))." in out


def test_capture_launch_through_a_compiled_kernel_call(tmp_path):
    path = tmp_path / "compiled.py"
    path.write_text(SCRIPT.replace(
        "pto.launch(vadd, grid=(2, 1, 1), block=(256, 1, 1), args=(d_a, d_b, d_out, n))",
        "ck = pto.compile(vadd, args=(d_a, d_b, d_out, n), block=256)\n"
        "    ck(grid=(2, 1, 1), block=(256, 1, 1), args=(d_a, d_b, d_out, n))"))
    launch = capture_launch(str(path), "vadd")
    assert launch.grid == (2, 1, 1) and launch.names[2] == "d_out"
    assert launch.kernel.name == "vadd" and not hasattr(launch.kernel, "executable")


def test_hostile_commands_are_error_lines_and_the_session_goes_on(script, tmp_path,
                                                                 monkeypatch, capsys):
    """A NUL byte ended the session with a ValueError traceback (readline's history rejects
    it); `print i 0-N` built all N lanes first (10^9: MemoryError)."""
    code, out, err = run_here(
        [f"{script}:vadd", "--pipeline", PTO_LEVEL],
        ["step", "print x \x00", "\x00", "print i 0-1000000000", "print i 0-" + "9" * 40,
         "l1 0.5 2", "step x", "print i 2", "q"],
        monkeypatch, capsys, tmp_path)
    assert code == 0, err
    assert out.count("error: the command holds a NUL byte") == 2
    assert out.count("error: lane 1000000000 is not executing here") == 1
    assert "error: lane " + "9" * 40 + " is not executing here" in out
    assert "error: l1 OFFSET COUNT [DTYPE]: OFFSET and COUNT are whole numbers" in out
    assert "error: expected a positive count, got 'x'" in out
    assert "i = [2] 2" in out  # the session went on
    assert "Traceback" not in out + err and "internal debugger error" not in out
    history = (tmp_path / "history").read_text()
    assert "\x00" not in history


NUMPY_SCRIPT = '''
import numpy as np
import pypto as pto

@pto.kernel
def add(a, b, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(a + i) + pto.load(b + i))

a = np.arange(64, dtype=np.float32)
b = np.full(64, 0.5, np.float32)
o = np.zeros(64, np.float32)
add[1, 64](a, b, o, 64)
'''


def test_a_script_that_launches_on_numpy_arrays(tmp_path, monkeypatch, capsys):
    """The launch's NumPy arrays reach the debugger as device copies named as in the script."""
    path = tmp_path / "np_prog.py"
    path.write_text(NUMPY_SCRIPT)
    code, out, err = run_here([f"{path}:add", "--pipeline", PTO_LEVEL],
                              ["step", "print i 3", "continue", "q"], monkeypatch, capsys,
                              tmp_path)
    assert code == 0, err
    assert "[Lanes 0-63] LOAD a[0..63]" in out
    assert "i = [3] 3" in out
    assert "Kernel finished (block (0, 0, 0))." in out


TILE_SCRIPT = textwrap.dedent('''\
    import numpy as np
    import pypto as pto

    @pto.kernel
    def rowmax(x, o):
        t = pto.alloc_tile(4, 8)
        m = pto.alloc_tile(4, 1)
        pto.wait(pto.async_load(t, x, 128))
        pto.trowmax(m, t)
        pto.store(o, m, 16)

    def main():
        x = np.arange(32, dtype=np.float32)
        d_x, d_o = pto.alloc_tensor(128), pto.alloc_tensor(16)
        pto.memcpy_h2d(d_x, x)
        pto.launch(rowmax, grid=1, block=32, args=(d_x, d_o))

    if __name__ == "__main__":
        main()
''')


def test_l1_name_shows_a_tile_as_rows_by_cols(tmp_path, monkeypatch, capsys):
    path = tmp_path / "tiles.py"
    path.write_text(TILE_SCRIPT)
    code, out, err = run_here([f"{path}:rowmax", "--pipeline", PTO_LEVEL],
                              ["step", "step", "step", "l1 m", "l1 t", "l1 nope", "q"],
                              monkeypatch, capsys, tmp_path)
    assert code == 0, err
    assert "TROWMAX" in out
    assert "'m' (4 x 1 float32):" in out
    assert "[[ 7.]\n [15.]\n [23.]\n [31.]]" in out
    assert "'t' (4 x 8 float32):" in out
    assert "error: no L1 buffer named 'nope'; the kernel's: m, t" in out
    assert "Traceback" not in out + err
