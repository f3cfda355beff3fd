"""pypto's `cse` pass makes exactly xDSL's decisions (same output IR), in linear time.

The reference is xDSL's own `CommonSubexpressionElimination` run on a copy of the same module:
the docstring examples of every op, the random kernels of the barrier cross-validation, the
lit inputs and the generated module of `bench/opt.py`, each as written and after canonicalize.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.printer import Printer
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from pypto.ir import make_context
from pypto.passes import PASSES
from pypto.passes.cse import CSEPass
from pypto.tools import isa_doc
from pypto.tools.parsing import parse_module
from tests.passes.big_module import module_text
from tests.passes.random_kernels import generate

ROOT = Path(__file__).resolve().parents[2]

INPUTS: dict[str, str] = {f"example:{name}": text for name, text in isa_doc.examples()}
INPUTS.update({f"random:{seed}": generate(seed) for seed in range(40)})
INPUTS["bench:40"] = module_text(40)
for path in sorted((ROOT / "tests" / "filecheck").rglob("*.mlir")):
    text = path.read_text()
    if "// -----" not in text and "expected-error" not in text:
        INPUTS[f"lit:{path.name}"] = text


def _printed(module) -> str:
    import io

    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def _run(text: str, canonicalize: bool, cse) -> str:
    ctx = make_context()
    module, _ = parse_module(ctx, text, "<cse test>")
    if canonicalize:
        CanonicalizePass().apply(ctx, module)
    cse.apply(ctx, module)
    module.verify()
    return _printed(module)


def test_cse_is_pyptos_pass() -> None:
    assert PASSES["cse"]() is CSEPass


@pytest.mark.parametrize("canonicalize", [False, True])
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_same_output_as_xdsl_cse(name: str, canonicalize: bool) -> None:
    text = INPUTS[name]
    try:
        parse_module(make_context(), text, name)[0].verify()
    except (ParseError, VerifyException, DiagnosticException) as exc:
        # an input meant to be rejected is no CSE input; any other exception is a parser or
        # verifier crash, and fails the test
        pytest.skip(f"input does not verify: {exc}")
    ours = _run(text, canonicalize, CSEPass())
    theirs = _run(text, canonicalize, CommonSubexpressionElimination())
    assert ours == theirs


def test_bench_module_really_merges() -> None:
    """The comparison above is not vacuous: CSE changes the generated module a lot."""
    text = module_text(40)
    ctx = make_context()
    module, _ = parse_module(ctx, text, "<bench>")
    n_before = sum(1 for _ in module.walk())
    CSEPass().apply(ctx, module)
    n_after = sum(1 for _ in module.walk())
    assert n_after < n_before * 0.6
    loads = [op for op in module.walk() if op.name == "pto.load"]
    # 40 steps, no store until the end: one load each of a + i + 4, %a and %b remain at the
    # top level, and the load of %a inside each step's `scf.if` (each if its own block).
    assert len(loads) == 3 + 40
