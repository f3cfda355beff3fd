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

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span


class LocatingParser(Parser):
    """An xDSL `Parser` that records the text offset of every op it parses (`op_offsets`)."""

    def __init__(self, ctx: Context, text: str, name: str = "<unknown>"):
        super().__init__(ctx, text, name)
        self.op_offsets: dict[Operation, int] = {}

    def _verify_error_here(self, start: int, err: VerifyException) -> ParseError:
        end = max(start + 1, self.pos)
        text = self.lexer.input.content[start:end].rstrip()
        return ParseError(Span(start, start + max(1, len(text)), self.lexer.input), str(err))

    def parse_operation(self) -> Operation:
        start = self.pos
        try:
            op = super().parse_operation()
        except VerifyException as err:
            raise self._verify_error_here(start, err) from None
        self.op_offsets[op] = start
        return op

    def parse_optional_type(self):  # noqa: ANN201 - same signature as the base class
        start = self.pos
        try:
            return super().parse_optional_type()
        except VerifyException as err:
            raise self._verify_error_here(start, err) from None

    def parse_optional_attribute(self) -> Attribute | None:
        start = self.pos
        try:
            return super().parse_optional_attribute()
        except VerifyException as err:
            raise self._verify_error_here(start, err) from None


def parse_module(ctx: Context, text: str, name: str) -> tuple[ModuleOp, dict[Operation, int]]:
    """Parse `text` into a module; returns it with the text offset of each parsed op.

    Raises xDSL's `ParseError` (with a span) for malformed input.
    """
    parser = LocatingParser(ctx, text, name)
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
