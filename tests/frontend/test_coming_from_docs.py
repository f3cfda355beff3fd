"""docs/coming-from.md's Python blocks are complete programs: each runs here, as a file of its
own, and checks its results against NumPy with `assert`s. The new blocks of docs/language.md
(SIMT loops, helper functions) are kernel definitions: they are run the same way, with
`import pypto as pto` in front, and each kernel they define is launched on small arguments."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
import pytest

import pypto as pto

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(?P<body>.*?)```", re.S)


def python_blocks(page: str, section: str | None = None) -> list[tuple[int, str]]:
    text = (ROOT / "docs" / page).read_text()
    out = []
    for m in BLOCK.finditer(text):
        line = text[:m.start()].count("\n") + 1
        if section is not None:
            headings = re.findall(r"^##+ .*$", text[:m.start()], re.M)
            if not headings or section not in headings[-1]:
                continue
        out.append((line, m.group("body")))
    return out


COMING_FROM = python_blocks("coming-from.md")


def test_the_page_has_runnable_examples():
    assert len(COMING_FROM) >= 5


@pytest.mark.parametrize("line, body", COMING_FROM, ids=[f"line{n}" for n, _ in COMING_FROM])
def test_coming_from_example_runs_and_checks_itself(line, body, tmp_path):
    path = tmp_path / f"coming_from_{line}.py"
    path.write_text(body)
    runpy.run_path(str(path), run_name="__main__")


LANGUAGE = [b for section in ("Loops are SIMT loops", "Helper functions")
            for b in python_blocks("language.md", section)]


@pytest.mark.parametrize("line, body", LANGUAGE, ids=[f"line{n}" for n, _ in LANGUAGE])
def test_language_md_examples_compile_and_run(line, body, tmp_path):
    path = tmp_path / f"language_{line}.py"
    path.write_text("import pypto as pto\n" + body)
    names = runpy.run_path(str(path))
    kernels = [k for k in names.values() if isinstance(k, pto.Kernel)]
    assert kernels
    n = 64
    for kernel in kernels:
        x = np.linspace(-3, 3, n).astype(np.float32)
        args = []
        for param in kernel.params:
            if param == "n":
                args.append(n)
            else:
                t = pto.alloc_tensor(x.nbytes)
                pto.memcpy_h2d(t, x)
                args.append(t)
        pto.launch(kernel, grid=2, block=32, args=tuple(args))
        pto.sync()
