"""docs/isa.md is generated from the pto dialect and its examples are real, parsable IR."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.ir import Attribute
from xdsl.utils.exceptions import ParseError

from pypto.dialects import pto
from pypto.dialects.traits import pipe_of
from pypto.ir import make_context, print_ir
from pypto.tools import isa_doc
from pypto.tools.parsing import LocatingParser, parse_module

ISA_MD = Path(__file__).resolve().parents[2] / "docs" / "isa.md"

OPS = {op.name: op for op in pto.PTO_OPS}
EXAMPLES = dict(isa_doc.examples())


def test_isa_md_is_up_to_date() -> None:
    expected = isa_doc.render()
    actual = ISA_MD.read_text() if ISA_MD.exists() else ""
    if actual != expected:
        diff = "".join(list(difflib.unified_diff(
            actual.splitlines(keepends=True), expected.splitlines(keepends=True),
            "docs/isa.md", "render()"))[:40])
        pytest.fail(f"docs/isa.md differs from what the pto dialect generates: regenerate it "
                    f"with\n\n    {isa_doc.REGENERATE}\n\nfirst differences:\n{diff}",
                    pytrace=False)


def test_main_prints_render(capsys: pytest.CaptureFixture[str]) -> None:
    isa_doc.main()
    assert capsys.readouterr().out == isa_doc.render()


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_is_fully_documented(name: str) -> None:
    doc = isa_doc.parse_docstring(OPS[name].__doc__)
    assert doc.summary, f"{name}: no docstring summary line"
    assert doc.syntax, f"{name}: no 'syntax:' line in its docstring"
    assert doc.python, f"{name}: no 'python:' line in its docstring"
    assert doc.example, f"{name}: no 'example:' block in its docstring"
    assert pipe_of(OPS[name]) in ("SCALAR", "VECTOR", "CUBE", "MTE_IN", "MTE_OUT")


@pytest.mark.parametrize("name", sorted(OPS))
def test_example_parses_verifies_and_round_trips(name: str) -> None:
    text = EXAMPLES[name]
    ctx = make_context()
    try:
        module, _ = parse_module(ctx, text, f"<example of {name}>")
        module.verify()
    except ParseError as err:
        pytest.fail(f"the docstring example of {name} does not parse:\n{err}", pytrace=False)
    assert any(op.name == name for op in module.walk()), f"the example of {name} never uses it"

    custom = print_ir(module)
    again, _ = parse_module(make_context(), custom, "<printed>")
    again.verify()
    assert print_ir(again) == custom

    generic, _ = parse_module(make_context(), print_ir(module, generic=True), "<generic>")
    generic.verify()
    assert print_ir(generic) == custom


def _backticked(text: str) -> list[str]:
    return text.split("`")[1::2]


@pytest.mark.parametrize("attr", list(pto.PTO.attributes), ids=lambda a: a.name)
def test_types_are_documented_with_parsable_syntax(attr: type[Attribute]) -> None:
    doc = isa_doc.parse_docstring(attr.__doc__)
    assert doc.summary and doc.semantics and doc.syntax
    spellings = _backticked(doc.syntax)
    assert spellings, f"!{attr.name}: the syntax line holds no `type`"
    for spelling in spellings:
        parsed = LocatingParser(make_context(), spelling).parse_type()
        assert isinstance(parsed, attr)
        assert str(parsed) == spelling


def test_groups_cover_every_op_once() -> None:
    listed = [inst.name for _, _, insts in isa_doc.sections() for inst in insts]
    assert sorted(listed) == sorted(OPS)


def test_a_forgotten_op_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    groups = tuple((t, i, tuple(op for op in ops if op is not pto.FillOp))
                   for t, i, ops in isa_doc.GROUPS)
    monkeypatch.setattr(isa_doc, "GROUPS", groups)
    with pytest.raises(ValueError, match=r"missing \['pto.fill'\]"):
        isa_doc.render()


def test_rendered_section_has_every_part() -> None:
    text = isa_doc.render()
    section = text[text.index("### `pto.mma`"):text.index("## Synchronisation")]
    assert "Matrix multiply-accumulate on L1 tiles" in section
    assert "- **Python:** `pto.mma(C_tile, A_tile, B_tile, 64, 64, 64)`" in section
    assert "- **IR syntax:** `pto.mma %c, %a, %b shape(64, 64, 64)" in section
    assert "- **Pipe:** CUBE" in section
    assert "- **Block collective:** yes" in section
    assert "- **Memory:** reads `a` (L1), reads `b` (L1), reads `c` (L1), writes `c` (L1)" \
        in section
    assert "**Semantics:** row-major tiles in L1" in section
    assert "```mlir\n// One k-step of a tiled GEMM" in section
    load = text[text.index("### `pto.load`"):]
    assert "- **Block collective:** no" in load
    assert "- **Memory:** reads `ptr` (HBM or L1)" in load
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## Types", "## Ids", "## Lane memory", "## Arithmetic",
                        "## L1 and tile instructions", "## Tile vector instructions",
                        "## Synchronisation", "## Warp shuffles and votes", "## Control flow",
                        "## Pipelines", "## Debug"]


def test_parse_docstring_fields() -> None:
    doc = isa_doc.parse_docstring('''Summary line.

    Some prose
    over two lines.
    semantics: what it
    does.
    syntax: `pto.x %a`
    python: `pto.x(a)`
    example:
        func.func @f() {
          func.return
        }
    ''')
    assert doc.summary == "Summary line."
    assert doc.semantics == "Some prose over two lines.\n\nwhat it does."
    assert doc.syntax == "`pto.x %a`"
    assert doc.python == "`pto.x(a)`"
    assert doc.example == "func.func @f() {\n  func.return\n}"


def test_parse_docstring_without_fields() -> None:
    doc = isa_doc.parse_docstring("Just a summary.")
    assert (doc.summary, doc.semantics, doc.syntax, doc.python, doc.example) == (
        "Just a summary.", "", "", "", "")
    assert isa_doc.parse_docstring(None).summary == ""


def test_regenerate_command_writes_the_reference() -> None:
    """The documented command itself (`python -m pypto.tools.isa_doc`) prints render()."""
    done = subprocess.run([sys.executable, "-m", "pypto.tools.isa_doc"], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == isa_doc.render()
