"""The examples, the kernel zoo and the issue-19 probes re-profiled: modelled cycles before and
after issue 19's cost model, side by side, one line per figure (default target).

*Before* is a commit of main before issue 19's merges (default: 6a9c3f7, main just before the
first issue-19 branch merged); *after* is this checkout. The before tree is extracted with
`git archive` into a temporary directory and measured by this checkout's
bench/cost_figures.py with `--root` (its own pypto, examples and kernels; zoo cases the old tree
lacks come from this one, compiled by the old pypto). A figure whose kernel source differs
between the trees says `(kernel rewritten)`; `n/a`: the tree has no such kernel.

  before-after <figure>  table <before> -> <after>  fused <before> -> <after>

Run:  python bench/cost_before_after.py [--before REV] [--zoo tiny|quick|full] [--quick] [--markdown]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BEFORE = "6a9c3f7"
LINE = re.compile(r"^cost (.*?)\s+(default/table .*)$")
CELL = re.compile(r"default/(table|fused) (n/a|\d+(?: \(HBM\))?)")
SOURCE = re.compile(r"src ([0-9a-f]{8})")


def figures(root: Path, zoo: str, quick: bool) -> dict[str, tuple[dict[str, str], str]]:
    """figure -> ({model: cycles text}, source hash) from cost_figures.py run on `root`."""
    cmd = [sys.executable, str(HERE / "bench" / "cost_figures.py"), "--root", str(root),
           "--targets", "default", "--zoo", zoo] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=root).stdout
    found = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            cells = dict(CELL.findall(m.group(2)))
            src = SOURCE.search(m.group(2))
            found[m.group(1).strip()] = (cells, src.group(1) if src else "")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help=f"the before commit (default {BEFORE})")
    parser.add_argument("--zoo", default="quick", help="zoo scale: tiny, quick or full")
    parser.add_argument("--quick", action="store_true", help="skip the 1024^3 matmul")
    parser.add_argument("--markdown", action="store_true",
                        help="a Markdown table (docs/cost-model.md) instead of lines")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pypto-before-") as tmp:
        archive = subprocess.run(["git", "-C", str(HERE), "archive", options.before],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        before = figures(Path(tmp), options.zoo, options.quick)
    after = figures(HERE, options.zoo, options.quick)
    print(f"# before: {options.before}; after: this checkout "
          f"({subprocess.run(['git', '-C', str(HERE), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()}); "
          "modelled cycles, default target")
    if options.markdown:
        print("| figure | table before | table after | fused before | fused after |")
        print("|---|---|---|---|---|")
    for name, (cells, src) in after.items():
        old, old_src = before.get(name, ({}, ""))
        note = "  (kernel rewritten)" if src and old_src and src != old_src else ""
        if options.markdown:
            row = [name + note.replace("  ", " ")]
            for model in ("table", "fused"):
                row += [old.get(model, "n/a"), cells.get(model, "n/a")]
            print("| " + " | ".join(row) + " |")
            continue
        parts = [f"{model} {old.get(model, 'n/a')} -> {cells.get(model, 'n/a')}"
                 for model in ("table", "fused")]
        print(f"before-after {name:<52} " + "  ".join(parts) + note, flush=True)


if __name__ == "__main__":
    main()
