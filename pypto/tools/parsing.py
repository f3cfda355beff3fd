"""Parse `.mlir` text while remembering where every op was written.

xDSL's parser keeps no positions on ops, and an op's `loc(...)` is the *Python* source location
the frontend recorded, which must not be overwritten. Tools still need to say "the op at line 7,
column 3 of the .mlir file fails to verify", so `LocatingParser` records, for every op it parses,
the offset of its first token (its result list, or its name when it has no results: where MLIR
puts an op's location).

It also turns a `VerifyException` raised while a type or attribute is being built (e.g.
`!pto.ptr<vector<4xf32>, global>`) into a `ParseError` at that type, instead of a bare exception
that says nothing about where.
"""

from __future__ import annotations

import sys

import re
from collections import defaultdict
from collections.abc import Callable
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

AttrT = TypeVar("AttrT")


_UNREGISTERED = re.compile(r"'(?P<name>[^']+)' is not registered")
_STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')
"""xDSL 0.74's string-literal regex, `"(?:[^"\\\n\v\f]+|\\(...))*"`, nests `+` inside `*`:
on a literal with no closing quote it backtracks through every way of splitting the text, so
each extra character doubles the time (`loc("k.py:12` hangs). The same language, matched
one character at a time with a possessive `*+`, fails in linear time."""

_INT_TYPE = re.compile(r"[su]?i(\d+)")
MAX_INT_WIDTH = (1 << 24) - 1


class _LinearLexer(MLIRLexer):
    """xDSL's lexer with `_STRING_LITERAL` instead of its backtracking string regex."""

    _unescaped_characters_regex = _STRING_LITERAL


_OP_NAME = re.compile(r'\s*(?:%[^=]*=\s*)?"?(?P<name>[A-Za-z_][\w.$-]*)')


class LocatingParser(Parser):
    """An xDSL `Parser` that records the text offset of every op it parses (`op_offsets`)."""

    def __init__(self, ctx: Context, text: str, name: str = "<unknown>"):
        # Parser.__init__ with its lexer swapped for _LinearLexer (it lexes the first token in
        # the constructor, so replacing the regex afterwards is too late for a leading string)
        super(Parser, self).__init__(ParserState(_LinearLexer(Input(text, name))), ctx)
        self.ssa_values = {}
        self.blocks = {}
        self.forward_block_references = defaultdict(list)
        self.forward_ssa_references = {}
        self.op_offsets: dict[Operation, int] = {}

    def _error_here(self, start: int, message: str, *, underline: bool) -> ParseError:
        """A parse error at `start`, underlining what was consumed since (or just a caret)."""
        length = 1
        if underline:
            consumed = self.lexer.input.content[start:max(start + 1, self.pos)]
            length = max(1, len(str(consumed).rstrip()))
        return ParseError(Span(start, start + length, self.lexer.input), message)

    def _op_name_at(self, start: int) -> str:
        match = _OP_NAME.match(str(self.lexer.input.content), start)
        return match.group("name") if match else "operation"

    def parse_operation(self) -> Operation:
        start = self.pos
        try:
            op = super().parse_operation()
        except ParseError:
            raise
        except RecursionError:
            raise self._error_here(start, _too_deep(self._op_name_at(start)),
                                   underline=False) from None
        except VerifyException as err:
            # e.g. a custom format that checks a type constraint while parsing: an op error
            message = " ".join(str(err).split())
            raise self._error_here(start, f"'{self._op_name_at(start)}' op {message}",
                                   underline=False) from None
        except Exception as err:  # noqa: BLE001 - an op's parser choked on malformed text
            raise self._error_here(
                start, f"'{self._op_name_at(start)}' op could not be parsed: {err} "
                f"({type(err).__name__})", underline=False) from None
        self.op_offsets[op] = start
        return op

    def _get_op_by_name(self, name: str) -> type[Operation]:
        # xDSL reports an unknown op at the token *after* its name; point at the name itself
        # and say whether the dialect or just the op is unknown.
        try:
            return super()._get_op_by_name(name)
        except ParseError:
            content = str(self.lexer.input.content)
            at = content.rfind(name, 0, self.pos)
            at = at - 1 if at > 0 and content[at - 1] == '"' else at
            dialect = name.split(".", 1)[0]
            known = sorted(d.name for d in self.ctx.loaded_dialects)
            if dialect in known:
                message = f"'{name}' is not an operation of the {dialect} dialect"
            else:
                message = (f"unknown operation '{name}': dialect '{dialect}' is not loaded "
                           f"(pypto loads {', '.join(known)}; --allow-unregistered-dialect "
                           f"accepts any op)")
            raise ParseError(Span(max(at, 0), max(at, 0) + len(name), self.lexer.input),
                             message) from None

    def _guarded(self, parse: Callable[[], AttrT], what: str) -> AttrT:
        start = self.pos
        try:
            return parse()
        except ParseError as err:
            raise self._unregistered_at_name(err, start, what) from None
        except RecursionError:
            raise self._error_here(start, _too_deep(what), underline=False) from None
        except VerifyException as err:
            raise self._error_here(start, " ".join(str(err).split()), underline=True) from None
        except Exception as err:  # noqa: BLE001 - e.g. wrong number of type parameters
            raise self._error_here(start, f"malformed {what}: {err} ({type(err).__name__})",
                                   underline=True) from None

    def _unregistered_at_name(self, err: ParseError, start: int, what: str) -> ParseError:
        """xDSL reports an unknown `!dialect.name` at the token *after* it (often the next
        line); point at the name itself."""
        match = _UNREGISTERED.fullmatch(err.msg)
        if match is None or err.span.start < start:
            return err
        name = match.group("name")
        content = str(self.lexer.input.content)
        at = content.rfind(name, start, err.span.start)
        if at < 0:
            return err
        sigil = "!" if what == "type" else "#"
        if at > 0 and content[at - 1] in "!#":
            sigil, at = content[at - 1], at - 1
        dialect = name.split(".", 1)[0]
        known = sorted(d.name for d in self.ctx.loaded_dialects)
        hint = (f"the {dialect} dialect has no such {what}" if dialect in known else
                f"dialect '{dialect}' is not loaded (pypto loads {', '.join(known)})")
        return ParseError(Span(at, at + len(name) + 1, self.lexer.input),
                          f"unknown {what} '{sigil}{name.removeprefix(sigil)}': {hint}")

    def _parse_optional_builtin_type(self):  # noqa: ANN202 - the base class's signature
        # `i2147483648` made xDSL compute 2**(2**31) (a hang, found by the fuzzer); MLIR caps
        # integer widths at 2^24 - 1 bits
        token = self._current_token
        match = _INT_TYPE.fullmatch(token.text)
        if match is not None and int(match.group(1)) > MAX_INT_WIDTH:
            raise ParseError(token.span, f"integer type {token.text} is wider than "
                             f"{MAX_INT_WIDTH} bits (MLIR's limit)")
        return super()._parse_optional_builtin_type()

    def parse_optional_type(self):  # noqa: ANN201 - same signature as the base class
        return self._guarded(super().parse_optional_type, "type")

    def parse_optional_attribute(self) -> Attribute | None:
        return self._guarded(super().parse_optional_attribute, "attribute")


def parse_module(ctx: Context, text: str, name: str) -> tuple[ModuleOp, dict[Operation, int]]:
    """Parse `text` into a module; returns it with the text offset of each parsed op.

    Input without any op (empty, or only comments) is an empty module, as in mlir-opt: a
    `--split-input-file` chunk after a trailing `// -----` is not an error. Raises xDSL's
    `ParseError` (with a span) for malformed input.
    """
    parser = LocatingParser(ctx, text, name)
    if parser.pos >= len(text):  # nothing but whitespace and comments
        return ModuleOp([]), {}
    module = parser.parse_module()
    return module, parser.op_offsets


def op_offset(op: Operation, offsets: dict[Operation, int]) -> int | None:
    """Where `op` was written, or where its closest parsed ancestor was (for ops made by passes).

    None when neither the op nor any ancestor came from the text (e.g. an implicit module).
    """
    current: Operation | None = op
    while current is not None:
        if current in offsets:
            return offsets[current]
        current = current.parent_op()
    return None


def _too_deep(what: str) -> str:
    return (f"'{what}' op is nested too deeply to parse: regions inside regions more than about "
            f"{sys.getrecursionlimit() // 10} levels deep exceed Python's recursion limit; "
            f"flatten the nesting (e.g. combine nested scf.if conditions)")
