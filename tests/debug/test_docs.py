"""docs/debugging.md shows real output: its `pycon` blocks marked `<!-- doctest -->` run here and
must print exactly what the page shows (`<!-- doctest: npu -->` blocks run at the npu level)."""

from __future__ import annotations

import doctest
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "debugging.md"
BLOCK = re.compile(r"<!-- doctest(?P<npu>: npu)? -->\n```pycon\n(?P<body>.*?)```", re.S)


def blocks():
    return [(m.group("npu") is not None, m.group("body"), DOC.read_text()[:m.start()].count("\n"))
            for m in BLOCK.finditer(DOC.read_text())]


def test_the_page_has_doctest_blocks():
    found = blocks()
    assert len(found) >= 3 and any(npu for npu, _, _ in found)


@pytest.mark.parametrize("level", ["npu", "pto"])
def test_debugging_md_examples_print_what_the_page_shows(level, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    globs: dict = {}
    ran = 0
    for npu, body, line in blocks():
        if npu != (level == "npu"):
            continue
        test = parser.get_doctest(body, globs, f"debugging.md:{line}", str(DOC), line)
        result = runner.run(test, out=sys.stdout.write, clear_globs=False)
        globs.update(test.globs)  # DocTest copies its globals: carry them to the next block
        assert result.failed == 0, f"docs/debugging.md block at line {line} differs (above)"
        ran += result.attempted
    assert ran > 10
