"""The pass registry and the pipeline plumbing shared by `pypto-opt` and `pto.compile()`.

Passes are xDSL `ModulePass`es (`@dataclass(frozen=True)`, kebab-case `name`, options as
dataclass fields), one per file in this package, named after the pass
(`pto-double-buffer` -> `double_buffer.py`). `PASSES` maps each name to a factory that imports
the class on first use, so listing passes or parsing a pipeline never imports them all.

Pipelines use MLIR's textual syntax, `builtin.module(pass-a,pass-b{opt=value other=1})`, or the
short form `pass-a,pass-b{opt=value}`; options are separated by spaces, list values by commas.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import typing
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline as _parse_arg_specs
from xdsl.utils.arg_spec import _convert_arg_to_type  # the checker from_spec uses; pinned xDSL
from xdsl.utils.exceptions import ArgSpecParseError

from pypto.analysis.cache import invalidate
from pypto.errors import CompileError, PtoError, VerificationError
from pypto.diagnostics import attach_op, locate_verify_failure


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    """A registry entry: imports `module` and returns its pass class `cls` when first needed."""

    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(module), cls)

    return load


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "canonicalize": _lazy("pypto.passes.canonicalize", "CanonicalizePass"),
    "cse": _lazy("pypto.passes.cse", "CSEPass"),  # xDSL's, in linear time
    # pypto's own passes, one line each:
    "convert-pto-to-npu": _lazy("pypto.passes.convert_pto_to_npu", "ConvertPtoToNpu"),
    "npu-fuse-load-mma": _lazy("pypto.passes.npu_fuse_load_mma", "NpuFuseLoadMma"),
    "pto-allocate-l1": _lazy("pypto.passes.allocate_l1", "AllocateL1Pass"),
    "pto-double-buffer": _lazy("pypto.passes.double_buffer", "DoubleBufferPass"),
    "pto-insert-barriers": _lazy("pypto.passes.insert_barriers", "InsertBarriersPass"),
    "pto-verify-barriers": _lazy("pypto.passes.verify_barriers", "VerifyBarriersPass"),
    # the native backend's lowering to the llvm dialect (docs/native.md#the-pipeline):
    "pto-simt-to-lanes": _lazy("pypto.backend.native.simt_to_lanes", "SimtToLanesPass"),
    "convert-scf-to-cf": _lazy("pypto.backend.native.scf_to_cf", "ConvertScfToCfPass"),
    "convert-pto-to-llvm": _lazy("pypto.backend.native.to_llvm", "ConvertPtoToLlvmPass"),
}
"""Every pass `pypto-opt -p` and `pto.compile(pipeline=...)` accept, by name."""

LOWERING_PASSES = frozenset({"pto-simt-to-lanes", "convert-scf-to-cf", "convert-pto-to-llvm"})
"""The native backend's passes (docs/native.md#the-pipeline): they lower a kernel out of the pto
level, so `pto.compile(pipeline=...)`, whose result runs on the interpreter, refuses them."""

UNSTRUCTURED_OK = LOWERING_PASSES | {"canonicalize", "cse"}
"""The passes that accept functions whose bodies are blocks and `cf` branches (what
`convert-scf-to-cf` leaves); every other pass reasons over structured `scf` regions and refuses
such a function up front (`require_structured`) instead of failing inside."""

_SUMMARIES: dict[str, str] = {
    # xDSL's docstrings for these are missing or generic; say what they do on pto IR.
    "canonicalize": "Fold constants, apply every op's canonicalization patterns and erase "
                    "dead pure ops.",
}


class PipelineError(PtoError, ValueError):
    """A pass pipeline that cannot be parsed or names an unknown pass or option.

    `pipeline` is the text that was given and `position` the 0-based offset of the offending
    part in it (None when unknown), so a tool can underline it.
    """

    def __init__(self, message: str, pipeline: str, position: int | None = None):
        self.pipeline = pipeline
        self.position = position
        self.bare_message = message
        super().__init__(message)


def _summary(name: str, cls: type[ModulePass]) -> str:
    if name in _SUMMARIES:
        return _SUMMARIES[name]
    doc = cls.__dict__.get("__doc__")  # not inherited: ModulePass's own docstring is no summary
    if not doc or not doc.strip():
        return ""
    return doc.strip().splitlines()[0].strip()


def list_passes() -> list[tuple[str, str]]:
    """Every registered pass as (name, one-line summary), sorted by name."""
    return [(name, _summary(name, PASSES[name]())) for name in sorted(PASSES)]


_MODULE_ANCHOR = re.compile(r"^\s*builtin\.module\s*\((?P<body>.*)\)\s*$", re.DOTALL)
_NESTED_ANCHOR = re.compile(r"(?<![\w.$-])[A-Za-z_][\w.$-]*+\s*+\(")
"""`name(` of a nested anchor; starts only at a name's first character and never backtracks
(without both, a 32k-character name took O(n^2) steps: 48 s)."""


def _strip_module_anchor(text: str) -> tuple[str, int]:
    """Remove an outer `builtin.module(...)`; returns the inner text and its offset in `text`."""
    match = _MODULE_ANCHOR.match(text)
    if match is None:
        if text.lstrip().startswith("builtin.module"):
            raise PipelineError(f"invalid pass pipeline '{text}': expected "
                                f"'builtin.module(pass-a,pass-b)' with balanced parentheses",
                                text, text.find("builtin.module"))
        return text, 0
    return match.group("body"), match.start("body")


def _spec_error_position(err: ArgSpecParseError) -> int | None:
    """The 0-based column of an xDSL pipeline syntax error (xDSL only keeps it in the text)."""
    match = re.search(r"pass-pipeline:\d+:(\d+)", str(err))
    return int(match.group(1)) - 1 if match else None


def _spec_error_reason(err: ArgSpecParseError) -> str:
    """The last line of xDSL's multi-line pipeline syntax error: the reason itself."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[-1] if lines else "syntax error"


@dataclasses.dataclass(frozen=True)
class PassOption:
    """One option of a pass, as written in a pipeline (`name` is kebab-case)."""

    name: str
    type: str
    default: str | None


def _type_name(hint: object) -> str:
    if isinstance(hint, type):
        return hint.__name__
    return str(hint).replace("typing.", "")


def pass_options(cls: type[ModulePass]) -> list[PassOption]:
    """The options a pass takes: its dataclass fields, with their types and defaults."""
    hints = typing.get_type_hints(cls)
    options: list[PassOption] = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name == "name":
            continue
        default: str | None = None
        if f.default is not dataclasses.MISSING:
            default = str(f.default).lower() if isinstance(f.default, bool) else str(f.default)
        options.append(PassOption(f.name.replace("_", "-"), _type_name(hints.get(f.name)),
                                  default))
    return options


def _describe_options(cls: type[ModulePass]) -> str:
    options = pass_options(cls)
    if not options:
        return "it takes no options"
    return "valid options: " + ", ".join(
        f"{o.name} ({o.type}" + (f", default {o.default})" if o.default is not None else ")")
        for o in options)


def _instantiate(spec: ArgSpec, cls: type[ModulePass], text: str, position: int) -> ModulePass:
    """Build a pass from its spec, with errors that name the pass's valid options."""
    hints = typing.get_type_hints(cls)
    field_names = {f.name for f in dataclasses.fields(cls) if f.init and f.name != "name"}
    for option, values in spec.parameters.items():
        field_name = option.replace("-", "_")
        if field_name not in field_names:
            raise PipelineError(
                f"pass '{spec.name}' has no option '{option}'; {_describe_options(cls)}",
                text, position)
        try:
            _convert_arg_to_type(values, hints[field_name])
        except (ValueError, TypeError):
            shown = ",".join(str(v) for v in values) if values else "(no value)"
            raise PipelineError(
                f"invalid value '{shown}' for option '{option}' of pass '{spec.name}' "
                f"(expected {_type_name(hints[field_name])}); {_describe_options(cls)}",
                text, position) from None
    try:
        return cls.from_spec(spec)
    except (ValueError, TypeError) as err:
        raise PipelineError(
            f"invalid options for pass '{spec.name}': {err}; {_describe_options(cls)}",
            text, position) from None


def _squeeze(body: str) -> tuple[str, list[int]]:
    """Drop the spaces users put around `,` and `{` between passes (`a, b {k=v}`), which xDSL's
    pipeline lexer rejects; spaces inside `{...}` separate options and stay. Returns the
    compact text and, for each of its characters, its offset in `body`."""
    kept: list[tuple[str, int]] = []
    depth = 0
    in_string = False
    # the nearest non-space character after each position (one right-to-left scan: linear)
    following = [""] * (len(body) + 1)
    for index in range(len(body) - 1, -1, -1):
        following[index] = following[index + 1] if body[index].isspace() else body[index]
    before = ""  # the last non-space character seen
    for index, char in enumerate(body):
        if char == '"' and (index == 0 or body[index - 1] != "\\"):
            in_string = not in_string
        elif not in_string and char == "{":
            depth += 1
        elif not in_string and char == "}":
            depth = max(0, depth - 1)
        if char.isspace() and depth == 0 and not in_string:
            if before in ("", ",") or following[index] in ("", ",", "{"):
                continue
        if not char.isspace():
            before = char
        kept.append((char, index))
    return "".join(c for c, _ in kept), [i for _, i in kept]


def _huge_number_error(text: str, body: str, offset: int, err: ValueError) -> PipelineError:
    """The error for an option value Python will not convert (more than 4,300 digits), at the
    value, naming the option and the range the pass accepts (what it says of a value just
    below the limit)."""
    found = re.search(r"([A-Za-z_][\w-]*)\s*=\s*(?:[-+\d]+,)*\s*([-+]?)(\d{4301,})", body)
    if found is None:
        return PipelineError(f"invalid pass pipeline: an option value is not a usable number "
                             f"({str(err).split(';')[0]})", text, None)
    option, sign, digits = found.group(1), found.group(2), found.group(3)
    opened = body.rfind("{", 0, found.start())
    owner = re.search(r"([\w.-]+)\s*$", body[:max(opened, 0)]) if opened >= 0 else None
    name = owner.group(1) if owner is not None else None
    bound = ""
    if name in PASSES:
        cls = PASSES[name]()
        field_name = option.replace("-", "_")
        if field_name in {f.name for f in dataclasses.fields(cls)}:
            try:  # what the pass says of a value with as many digits as Python converts
                cls(**{field_name: int(sign + "9" * 4300)})
            except (ValueError, TypeError) as limit:
                bound = f"; pass '{name}' says: {_clip(str(limit))}"
    where = f" of pass '{name}'" if name else ""
    return PipelineError(f"option '{option}'{where} must be an integer of at most 4300 digits, "
                         f"got one of {len(digits)} digits{bound}", text,
                         offset + found.start(3) - len(sign))


def _clip(text: str, limit: int = 80) -> str:
    """`text` for a message: long ones cut, saying how long they were (the source line under
    the diagnostic shows them anyway)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def parse_pipeline(text: str) -> list[ModulePass]:
    """Parse a textual pipeline into pass instances (raises `PipelineError`).

    Accepts `builtin.module(a,b{k=v})` and the short form `a,b{k=v}`; an empty pipeline is
    valid and means "no passes". Only whole-module pipelines exist in pypto: a nested anchor
    such as `func.func(cse)` is rejected with a message saying so.
    """
    body, offset = _strip_module_anchor(text)
    unquoted = re.sub(r'"(?:\\.|[^"\\])*"', lambda m: " " * len(m.group(0)), body)
    nested = _NESTED_ANCHOR.search(unquoted)
    if nested is not None:
        raise PipelineError(
            f"nested pass pipelines ('{nested.group(0).strip()}...)') are not supported: pypto "
            f"passes run on the whole module; write 'builtin.module(a,b)' or 'a,b'",
            text, offset + nested.start())
    compact, origin = _squeeze(body)
    try:
        specs = list(_parse_arg_specs(compact))
    except ValueError as err:  # e.g. an option value of more than 4,300 digits
        raise _huge_number_error(text, body, offset, err) from None
    except ArgSpecParseError as err:
        column = _spec_error_position(err)
        if column is not None:
            column = origin[column] if column < len(origin) else len(body)
        raise PipelineError(
            f"invalid pass pipeline '{text}': {_spec_error_reason(err)}", text,
            None if column is None else offset + column) from None

    passes: list[ModulePass] = []
    search_from = offset
    for spec in specs:
        position = text.find(spec.name, search_from)
        position = offset if position < 0 else position
        search_from = position + len(spec.name)
        if spec.name not in PASSES:
            raise PipelineError(
                f"unknown pass '{_clip(spec.name)}'; valid passes: {', '.join(sorted(PASSES))}",
                text, position)
        passes.append(_instantiate(spec, PASSES[spec.name](), text, position))
    return passes


PASSES_ATTR = "pto.passes"
"""The module attribute listing, in order, every pass `run_pipeline` applied to the IR, as
pipeline text (`["pto-double-buffer{stages=2 ...}", ...]`): `pypto-opt` reads it to warn when a
pass runs again on IR it already transformed (docs/pypto-opt.md#passes-already-run). It is a
discardable attribute: the interpreter and the cost model never look at it."""


def pass_text(module_pass: ModulePass) -> str:
    """`module_pass` as pipeline text with every option (`name{opt-name=value ...}`), as
    `parse_pipeline` reads it back."""
    spec = module_pass.pipeline_pass_spec()
    text = str(spec)
    for key in spec.parameters:
        text = text.replace(f"{key}=", f"{key.replace('_', '-')}=", 1)
    return text


def rerun_safe(module_pass: ModulePass) -> bool:
    """Whether running `module_pass` again on IR it already ran on is harmless (a cleanup such
    as canonicalize or cse, or a check): the pass class says so with `rerun_safe = True`. The
    others transform the IR so that a second run does not do what its options say (a second
    `pto-double-buffer{stages=3}` finds the loops already pipelined and keeps 2 slots)."""
    return bool(getattr(module_pass, "rerun_safe", False))


def recorded_passes(module: ModuleOp) -> list[str]:
    """The passes the module's `pto.passes` attribute says already ran on it (pipeline text)."""
    attr = module.attributes.get(PASSES_ATTR)
    if not isinstance(attr, ArrayAttr):
        return []
    return [item.data for item in attr.data if isinstance(item, StringAttr)]


def record_pass(module: ModuleOp, module_pass: ModulePass) -> None:
    """Append `module_pass` to the module's `pto.passes` record."""
    done = [StringAttr(text) for text in recorded_passes(module)]
    module.attributes[PASSES_ATTR] = ArrayAttr([*done, StringAttr(pass_text(module_pass))])


def passes_run_again(module: ModuleOp,
                     passes: Sequence[ModulePass]) -> list[tuple[ModulePass, str]]:
    """The passes of `passes` (not `rerun_safe`) that already ran on `module` by its record, or
    earlier in `passes`, each with the text of the earlier run."""
    earlier: dict[str, str] = {}
    for text in recorded_passes(module):
        earlier.setdefault(text.split("{", 1)[0].strip(), text)
    again: list[tuple[ModulePass, str]] = []
    for module_pass in passes:
        if not rerun_safe(module_pass) and module_pass.name in earlier:
            again.append((module_pass, earlier[module_pass.name]))
        earlier.setdefault(module_pass.name, pass_text(module_pass))
    return again


AfterPassCallback = Callable[[ModulePass, ModuleOp], None]


def run_pipeline(module: ModuleOp, passes: Sequence[ModulePass], ctx: Context, *,
                 after_pass: AfterPassCallback | None = None) -> None:
    """Apply `passes` in order to `module`, verifying the module after each one.

    A pass that leaves invalid IR is a pass bug: it raises `VerificationError` naming the pass
    and the failing op (attached as `error.op`, see `pypto.diagnostics`). Errors a pass
    raises on purpose (e.g. `BarrierError`) propagate unchanged. `after_pass(pass, module)` is
    called after each pass has run and verified (`--print-ir-after-all`). Analyses cached
    on the module (`pypto.analysis.cache`) are dropped after every pass that does not declare
    `preserves_analyses = True`. Each pass is appended to the module's `pto.passes` record
    (`PASSES_ATTR`) before the IR is verified and shown.
    """
    for module_pass in passes:
        if module_pass.name not in UNSTRUCTURED_OK:
            require_structured(module, module_pass)
        module_pass.apply(ctx, module)
        record_pass(module, module_pass)
        if not getattr(module_pass, "preserves_analyses", False):
            invalidate(module)  # the pass may have changed the IR: cached analyses are stale
        verify_after(module, module_pass)
        if after_pass is not None:
            after_pass(module_pass, module)


def require_structured(module: ModuleOp, module_pass: ModulePass) -> None:
    """Refuse a function lowered to blocks and branches before a pass that needs `scf` regions."""
    from xdsl.dialects import func

    from pypto.analysis.ir_utils import structured_body

    for fn in module.walk():
        if isinstance(fn, func.FuncOp) and fn.body.blocks:
            structured_body(fn, f"pass '{module_pass.name}'")


def verify_after(module: ModuleOp, module_pass: ModulePass) -> None:
    """Verify `module` after `module_pass` ran; a failure is a `VerificationError` naming it."""
    from pypto.analysis.dominance import first_dominance_violation

    try:
        module.verify()
        found = first_dominance_violation(module)
        if found is None:
            return
    except Exception:  # noqa: BLE001 - any verifier failure is reported the same way
        found = locate_verify_failure(module)
        if found is None:
            raise
    op, message = found
    raise attach_op(VerificationError(
        f"'{op.name}' op {message} (the IR produced by pass '{module_pass.name}' does "
        f"not verify)"), op) from None


__all__ = ["PASSES", "PASSES_ATTR", "PassOption", "PipelineError", "list_passes",
           "parse_pipeline", "pass_options", "pass_text", "passes_run_again", "record_pass",
           "recorded_passes", "rerun_safe", "run_pipeline", "verify_after"]
