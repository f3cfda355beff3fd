"""Every code block of README.md and docs/*.md runs here, and prints what the page says it prints.

A page's fenced blocks say what they are with their info string, and are checked accordingly:

- ```` ```python ````: run, in page order, as one script per page (a kernel needs a source file;
  later blocks see the names of earlier ones); the working directory is a fresh temporary one,
  and `examples/` is importable (`from vector_add import vector_add`).
- ```` ```text output ````: what the previous `python` or `sh` block prints; compared with
  doctest's rules (`...` matches anything, runs of whitespace are equal).
- ```` ```sh ````: every line is run, in the same temporary directory, by a small shell that
  knows `pypto-opt ARGS` (in-process; `< FILE` too) and `python FILE ARGS` (optionally
  `> FILE`, `2>&1`); a line must exit with 0, or with N when its comment says `exit status N`.
- ```` ```mlir ````: parsed and verified by pypto-opt; a block with `// RUN:` lines is a lit test
  and its `pypto-opt ... | filecheck %s` line runs (a `--verify-diagnostics` or `not` line too).
- ```` ```toml ````: parsed; a target file (`[target]`) is loaded as a target.
- ```` ```pycon ````: doctests, run by tests/debug/test_docs.py (marked `<!-- doctest -->`).
- ```` ```text ````: not code (a layout, a table, an error message as the user sees it).

A block that cannot run here says so visibly: its first line is `# not run: REASON` (or
`// not run: REASON`); the README's two set-up commands, run by `.ci/run` and
tests/test_end_to_end.py, carry `<!-- not run: REASON -->` just above them instead, to keep the
commands clean to copy. A block without an info string fails the test.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.S | re.M)
NOT_RUN = re.compile(r"^\s*(#|//)\s*not run: \S")
NOT_RUN_ABOVE = re.compile(r"<!-- not run: [^>]+-->\s*$")
KINDS = {"python", "pycon", "sh", "mlir", "toml", "text", "text output"}
MARKER = "<<<pypto docs: block {}>>>"


@dataclass
class Block:
    page: Path
    line: int
    info: str
    body: str
    not_run: bool

    @property
    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page.name
        return f"{page}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        indent = m.group("indent")
        body = "".join(line[len(indent):] if line.startswith(indent) else line
                       for line in m.group("body").splitlines(keepends=True))
        first = body.splitlines()[0] if body.strip() else ""
        above = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found.append(Block(page, text[:m.start()].count("\n") + 1, m.group("info").strip(), body,
                           bool(NOT_RUN.match(first)) or bool(NOT_RUN_ABOVE.search(above))))
    return found


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_block_says_what_it_is(page):
    bad = [f"{b.where}: ```{b.info}" for b in blocks(page) if b.info not in KINDS]
    assert not bad, (f"blocks without a known info string ({', '.join(sorted(KINDS))}); see "
                     f"{Path(__file__).name}: {bad}")
    for block in blocks(page):
        if block.info == "pycon":
            text = page.read_text().splitlines()
            assert text[block.line - 2].startswith("<!-- doctest"), \
                f"{block.where}: a pycon block must be a doctest (<!-- doctest --> above it)"


EXAMPLES = {path.stem for path in (ROOT / "examples").glob("*.py")}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_a_block_importing_an_example_says_how_to_run_it(page):
    """`from vector_add import ...` works only with examples/ on the path: the import line
    says so (README's "Documentation" section gives the rule)."""
    bad = []
    for block in blocks(page):
        for line in block.body.splitlines():
            m = re.match(r"\s*(?:from|import)\s+(\w+)", line)
            if m and m.group(1) in EXAMPLES and "PYTHONPATH=examples" not in line:
                bad.append(f"{block.where}: {line.strip()}")
    assert not bad, f"add '# examples/<name>.py (PYTHONPATH=examples)' to: {bad}"


def _expected_outputs(page_blocks: list[Block]) -> dict[int, list[Block]]:
    """Index of a runnable block -> the `text output` blocks that show what it prints."""
    owners: dict[int, list[Block]] = {}
    last = None
    for index, block in enumerate(page_blocks):
        if block.info in ("python", "sh") and not block.not_run:
            last = index
        elif block.info == "text output":
            assert last is not None, f"{block.where}: an output block with no block before it"
            owners.setdefault(last, []).append(block)
    return owners


def _check_output(block: Block, got: str, expected: list[Block]) -> None:
    checker = doctest.OutputChecker()
    want = "".join(e.body for e in expected)
    got = got.rstrip() + "\n"  # a trailing blank line (print of a text ending in one) is noise
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    if not checker.check_output(want, got, flags):
        example = doctest.Example("", want)
        raise AssertionError(f"{block.where}: the block prints something else than "
                             f"{', '.join(e.where for e in expected)} shows:\n" +
                             checker.output_difference(example, got, flags))


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "examples"), str(ROOT),
                                         env.get("PYTHONPATH", "")])
    env.pop("PYPTO_LAUNCH_BLOCKING", None)
    return env


RUNNABLE_PAGES = [p for p in PAGES if any(b.info in ("python", "sh", "mlir", "toml")
                                          for b in blocks(p))]


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=page_id)
def test_code_blocks_run_and_print_what_the_page_shows(page, tmp_path):
    page_blocks = blocks(page)
    outputs = _expected_outputs(page_blocks)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    python = [(i, b) for i, b in enumerate(page_blocks) if b.info == "python" and not b.not_run]
    printed: dict[int, str] = {}
    if python:
        script = tmp_path / f"{page.stem.replace('-', '_')}_blocks.py"
        lines = []
        for index, block in python:
            lines.append(f"print({MARKER.format(index)!r}, flush=True)\n")
            lines.append(f"# --- {block.where}\n")
            lines.append(block.body)
        script.write_text("".join(lines))
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_environment(),
                              capture_output=True, text=True, timeout=600)
        parts = re.split(r"<<<pypto docs: block (\d+)>>>\n", done.stdout)
        for number, text in zip(parts[1::2], parts[2::2]):
            printed[int(number)] = text
        if done.returncode != 0:
            failed = python[-1][1] if not parts[1::2] else page_blocks[int(parts[-2])]
            pytest.fail(f"{failed.where}: the python block fails:\n{done.stderr[-4000:]}")
    for index, block in enumerate(page_blocks):
        if block.not_run:
            continue
        if block.info == "sh":
            printed[index] = _run_sh(block, tmp_path)
        elif block.info == "mlir":
            _run_mlir(block, tmp_path)
        elif block.info == "toml":
            _run_toml(block, tmp_path)
        if index in outputs:
            _check_output(block, printed.get(index, ""), outputs[index])


# -- sh ---------------------------------------------------------------------------------------


EXPECTED_STATUS = re.compile(r"#.*\bexit status (\d+)")
"""A line whose comment says `exit status N` must exit with N (0 otherwise)."""


def _run_sh(block: Block, cwd: Path) -> str:
    out = io.StringIO()
    for raw in block.body.splitlines():
        words = shlex.split(raw, comments=True)
        if not words:
            continue
        status, text = _run_command(words, cwd, block)
        out.write(text)
        said = EXPECTED_STATUS.search(raw)
        expected = int(said.group(1)) if said else 0
        assert status == expected, f"{block.where}: `{raw.strip()}` exits with {status}:\n{text}"
    return out.getvalue()


def _run_command(words: list[str], cwd: Path, block: Block) -> tuple[int, str]:
    target = None
    merge = False
    if "2>&1" in words:
        words = [w for w in words if w != "2>&1"]
        merge = True
    if ">" in words:
        at = words.index(">")
        words, target = words[:at], words[at + 1]
    source = None
    if "<" in words:
        at = words.index("<")
        words, source = words[:at] + words[at + 2:], words[at + 1]
    tool, args = words[0], words[1:]
    if tool == "pypto-opt":
        saved = sys.stdin
        sys.stdin = io.StringIO((cwd / source).read_text() if source else "")
        try:
            status, out, err = _in_process(cwd, lambda: _opt(args))
        finally:
            sys.stdin = saved
    elif tool in ("python", "python3"):
        done = subprocess.run([sys.executable, *args], cwd=cwd, env=_environment(),
                              capture_output=True, text=True, timeout=600)
        status, out, err = done.returncode, done.stdout, done.stderr
    else:
        raise AssertionError(f"{block.where}: `{shlex.join(words)}`: this shell knows pypto-opt "
                             f"and python only; mark the block `# not run: REASON`")
    if target is not None:
        (cwd / target).write_text(out)
        out = ""
    return status, out + (err if merge or status else "")


def _opt(args: list[str]) -> int:
    from pypto.tools.opt import main

    return main(args)


def _in_process(cwd: Path, run) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = run()
    finally:
        os.chdir(here)
    return int(status or 0), out.getvalue(), err.getvalue()


# -- mlir and toml ----------------------------------------------------------------------------


def _run_mlir(block: Block, cwd: Path) -> None:
    path = cwd / f"block{block.line}.mlir"
    path.write_text(block.body)
    runs = re.findall(r"//\s*RUN:\s*(.*)", block.body)
    if not runs:
        status, out, err = _in_process(cwd, lambda: _opt([str(path)]))
        assert status == 0, f"{block.where}: pypto-opt rejects the block:\n{err}"
        return
    for run in runs:
        stages = [shlex.split(s.replace("%s", str(path))) for s in run.split("|")]
        expect_failure = stages[0][0] == "not"
        opt = stages[0][1:] if expect_failure else stages[0]
        assert opt[0] == "pypto-opt", f"{block.where}: RUN line `{run}` must start with pypto-opt"
        merge = "2>&1" in opt
        args = [a for a in opt[1:] if a != "2>&1"]
        status, out, err = _in_process(cwd, lambda: _opt(args))
        assert (status != 0) == expect_failure, f"{block.where}: `{run}` exits with {status}:\n{err}"
        for stage in stages[1:]:
            assert stage[0] == "filecheck", f"{block.where}: `{run}`: only filecheck may follow"
            _filecheck(block, stage[1:], out + (err if merge else ""))


def _filecheck(block: Block, args: list[str], text: str) -> None:
    from filecheck.main import main

    saved = sys.stdin
    sys.stdin = io.StringIO(text)
    try:
        status, _, err = _in_process(Path.cwd(), lambda: _exit_status(main, ["filecheck", *args]))
    finally:
        sys.stdin = saved
    assert status == 0, f"{block.where}: filecheck fails:\n{err}\non:\n{text}"


def _exit_status(fn, argv) -> int:
    try:
        fn(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


def _run_toml(block: Block, cwd: Path) -> None:
    """Parsed; a target file (its first line `# NAME.toml`) is also loaded as a target, and
    written as NAME.toml for the blocks after it."""
    tomllib.loads(block.body)
    named = re.match(r"#\s*(\S+\.toml)\s*$", block.body.splitlines()[0])
    if named:
        from pypto.backend.targets import resolve_target

        path = cwd / named.group(1)
        path.write_text(block.body)
        resolve_target(str(path))


# -- the README's commands ---------------------------------------------------------------------


def test_ci_runs_exactly_the_readme_test_command():
    readme = [b for b in blocks(ROOT / "README.md") if b.info == "sh"]
    command = readme[1].body.strip()
    assert "pytest" in command and "lit" in command
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == command


def test_the_runner_fails_on_a_wrong_output(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nprint(1 + 1)\n```\n\n```text output\n3\n```\n")
    page_blocks = blocks(page)
    with pytest.raises(AssertionError, match="prints something else"):
        _check_output(page_blocks[0], "2\n", [page_blocks[1]])
    _check_output(page_blocks[0], "2\n", [Block(page, 9, "text output", "...\n", False)])
