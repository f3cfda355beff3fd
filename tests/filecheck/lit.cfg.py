"""lit configuration of pypto's FileCheck suite: `lit -v tests/filecheck` from the repo root.

RUN lines may use:
  pypto-opt   the pypto-opt of the Python environment running lit
  filecheck   the `filecheck` PyPI package (a Python clone of LLVM's FileCheck)
  %python     the Python interpreter running lit (for `.py` tests: `%python %s | filecheck %s`)
  not         lit's built-in: succeeds when the command fails

Tools are looked up next to `sys.executable` first, so `.venv/bin/lit` works without activating
the virtual environment, and the tests always run the pypto of that environment.

The three are served by forkserver.py (one warm process importing pypto once, forking per
command) so that a RUN line does not pay an interpreter start and a pypto import per command;
`PYPTO_LIT_FORKSERVER=0` runs each command in its own interpreter instead.
"""

# ruff: noqa: F821 - `config` and `lit_config` are injected by lit.

import atexit
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile

import lit.formats

config.name = "pypto"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "forkserver.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)

_bin_dir = os.path.dirname(sys.executable)


def _tool(name: str, module: str) -> str:
    """The command to run tool `name`: its script in this environment, else `python -m`."""
    candidate = os.path.join(_bin_dir, name)
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return shlex.quote(candidate)
    found = shutil.which(name)
    if found is not None:
        return shlex.quote(found)
    return f"{shlex.quote(sys.executable)} -m {module}"


def _word(name: str) -> str:
    """A substitution pattern matching `name` only as a whole command word, never inside a path
    (`%s` of tests/filecheck/tools/pypto-opt/x.mlir) or a longer name (`--check-prefix=...`)."""
    return r"(?<![\w/.=-])" + name.replace("-", r"\-") + r"(?![\w/.-])"


def _start_fork_server() -> str | None:
    """Start forkserver.py (one warm pypto process that forks per command) for this lit run;
    the socket's path, or None where it cannot run (no fork / Unix sockets, or
    PYPTO_LIT_FORKSERVER=0: then every command starts its own interpreter)."""
    if os.environ.get("PYPTO_LIT_FORKSERVER", "1") == "0" or not hasattr(os, "fork") or \
            not hasattr(socket, "AF_UNIX"):
        return None
    path = os.path.join(tempfile.mkdtemp(prefix="pypto-lit-"), "server.sock")
    server = subprocess.Popen([sys.executable, _FORKSERVER, "serve", path],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    if server.stdout.readline().strip() != b"ready":  # it could not import pypto: no server
        server.kill()
        return None

    def stop() -> None:
        server.terminate()
        server.wait()
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)

    atexit.register(stop)
    return path


_FORKSERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forkserver.py")
# lit may load this file again in its worker processes: they share the first server
_SOCKET = os.environ.get("PYPTO_LIT_SOCKET") or _start_fork_server()
if _SOCKET:
    os.environ["PYPTO_LIT_SOCKET"] = _SOCKET
    _client = f"{shlex.quote(sys.executable)} -S {shlex.quote(_FORKSERVER)} run " \
              f"{shlex.quote(_SOCKET)}"
    config.substitutions.append(("%python", f"{_client} python"))
    config.substitutions.append((_word("pypto-opt"), f"{_client} pypto-opt"))
    config.substitutions.append((_word("filecheck"), f"{_client} filecheck"))
else:
    config.substitutions.append(("%python", shlex.quote(sys.executable)))
    config.substitutions.append((_word("pypto-opt"), _tool("pypto-opt", "pypto.tools.opt")))
    config.substitutions.append((_word("filecheck"), _tool("filecheck", "filecheck")))

# Tests must not depend on the user's terminal or locale; keep PATH so `not`, `cat` etc. work,
# with this environment's bin directory first.
config.environment["PATH"] = _bin_dir + os.pathsep + os.environ.get("PATH", "")
for _var in ("HOME", "PYTHONPATH", "TMPDIR"):
    if _var in os.environ:
        config.environment[_var] = os.environ[_var]
config.environment["PYTHONIOENCODING"] = "utf-8"
config.environment["NO_COLOR"] = "1"
