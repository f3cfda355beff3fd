"""lit configuration of pypto's FileCheck suite: `lit -v tests/filecheck` from the repo root.

RUN lines may use:
  pypto-opt   the pypto-opt of the Python environment running lit
  filecheck   the `filecheck` PyPI package (a Python clone of LLVM's FileCheck)
  %python     the Python interpreter running lit (for `.py` tests: `%python %s | filecheck %s`)
  not         lit's built-in: succeeds when the command fails

Tools are looked up next to `sys.executable` first, so `.venv/bin/lit` works without activating
the virtual environment, and the tests always run the pypto of that environment.
"""

# ruff: noqa: F821 - `config` and `lit_config` are injected by lit.

import os
import shlex
import shutil
import sys

import lit.formats

config.name = "pypto"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "Inputs"]
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
