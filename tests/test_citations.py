"""The repository stands alone: code, tests and docs cite the project's own docs
(`docs/language.md#types-literals-and-promotion`), never documents that are not in it (the
product spec's or the house rules' sections, which a reader of the repository cannot open),
and every `docs/NAME.md#anchor` they cite is a heading of that file (GitHub's anchors)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["pypto", "tests", "bench", "examples", "docs", "README.md"]
SUFFIXES = {".py", ".pyi", ".md", ".mlir", ".toml", ".cfg", ".txt"}
OUTSIDE = re.compile(r"\b(SPEC|CRAFT)\b")
"""How the documents outside the repository were cited (`SPEC §6`, `CRAFT.md`)."""
CITATION = re.compile(r"docs/([\w-]+\.md)(?:#([\w-]+))?")
LOCAL_LINK = re.compile(r"\]\(#([\w-]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces -> '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    """The anchors of `doc`'s headings (outside code fences), with GitHub's -1, -2 suffixes,
    and its explicit `<a id="...">` anchors (a place inside a section, e.g. runtime.md#numpy-arrays)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            base = slug(line.lstrip("#"))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        if not fenced:
            found.update(re.findall(r'<a id="([^"]+)"></a>', line))
    return found


def files() -> list[Path]:
    out = []
    for name in SCANNED:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        out += [p for p in candidates if p.is_file() and p.suffix in SUFFIXES
                and "__pycache__" not in p.parts and p != Path(__file__)]
    return out


def test_slug_follows_github():
    assert slug(" Two models (the article's pitfall 1)") == "two-models-the-articles-pitfall-1"
    assert slug(" The firmware level (`npu` dialect)") == "the-firmware-level-npu-dialect"
    assert slug(" `pto-double-buffer{stages=N}`") == "pto-double-bufferstagesn"


def test_no_citation_of_documents_outside_the_repository():
    found = []
    for path in files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "cite the project's docs (docs/NAME.md#anchor) instead:\n" + \
        "\n".join(found)


def test_every_cited_docs_anchor_exists():
    docs = {p.name: anchors(p) for p in (ROOT / "docs").glob("*.md")}
    missing = []
    for path in files():
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            for name, anchor in CITATION.findall(line):
                if name not in docs:
                    missing.append(f"{path.relative_to(ROOT)}:{number}: docs/{name} does not exist")
                elif anchor and anchor not in docs[name]:
                    missing.append(f"{path.relative_to(ROOT)}:{number}: docs/{name} has no "
                                   f"heading '#{anchor}'")
            if path.parent == ROOT / "docs" and path.suffix == ".md":
                for anchor in LOCAL_LINK.findall(line):
                    if anchor not in docs[path.name]:
                        missing.append(f"{path.relative_to(ROOT)}:{number}: no heading "
                                       f"'#{anchor}' in this file")
    assert not missing, "\n".join(missing)
