"""tests/filecheck/forkserver.py: the lit suite's commands through one warm process give what the
tools give on their own (output, stdin, exit status), and run without the server too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "filecheck" / "forkserver.py"

MLIR = """\
func.func @k(%p: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %q : !pto.ptr<f32, global> -> f32
  pto.store %v, %q : f32, !pto.ptr<f32, global>
  func.return
}
"""

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the fork server needs fork()")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("forkserver") / "s.sock")
    proc = subprocess.Popen([sys.executable, str(SERVER), "serve", path],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready"
    yield path
    proc.terminate()
    proc.wait()


def _client(path: str, *args: str, stdin: str = "", cwd: Path | None = None):
    return subprocess.run([sys.executable, "-S", str(SERVER), "run", path, *args], input=stdin,
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_pypto_opt_through_the_server_matches_the_tool(server, tmp_path, capsys):
    from pypto.tools.opt import main

    source = tmp_path / "k.mlir"
    source.write_text(MLIR)
    served = _client(server, "pypto-opt", str(source), "-p", "cse")
    assert main([str(source), "-p", "cse"]) == 0
    assert served.returncode == 0
    assert served.stdout == capsys.readouterr().out and "pto.load" in served.stdout


def test_stdin_exit_status_and_stderr_are_the_commands(server, tmp_path):
    bad = _client(server, "pypto-opt", "-", stdin="func.func @k( {\n")
    assert bad.returncode == 1 and "<stdin>:1:" in bad.stderr and "Traceback" not in bad.stderr
    checked = _client(server, "filecheck", str(tmp_path / "c.txt"), stdin="hello world\n")
    assert checked.returncode != 0  # no such check file: filecheck's own failure
    (tmp_path / "c.txt").write_text("// CHECK: hello\n")
    assert _client(server, "filecheck", str(tmp_path / "c.txt"), stdin="hello world\n") \
        .returncode == 0


def test_python_scripts_run_as_main_with_their_arguments(server, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import sys, os\nprint(__name__, sys.argv[1:], os.getcwd())\n"
                      "sys.exit(3)\n")
    done = _client(server, "python", str(script), "a", "b", cwd=tmp_path)
    assert done.returncode == 3
    assert done.stdout == f"__main__ ['a', 'b'] {tmp_path}\n"
    script.write_text("raise ValueError('boom')\n")
    failed = _client(server, "python", str(script))
    assert failed.returncode == 1 and "ValueError: boom" in failed.stderr


def test_without_a_server_the_client_runs_the_tool_itself(tmp_path):
    source = tmp_path / "k.mlir"
    source.write_text(MLIR)
    done = _client(str(tmp_path / "no-server.sock"), "pypto-opt", str(source))
    assert done.returncode == 0 and "pto.load" in done.stdout
