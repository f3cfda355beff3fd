"""Early `return` in SPMD code, by rewriting the AST before lowering.

A lane that returns inside an `if` stops executing; the other lanes go on. In structured IR the
code after such an `if` must therefore run only on the lanes that did not return:

    if c:                        if c:
        A                            A
        return          ==>      else:
    R                                R

applied recursively (a `return` nested in inner `if`s moves the rest of the block into the
branches that fall through). The rest `R` is copied only into branches that can fall through, so
the common guard pattern costs nothing. A `return` inside a loop is rejected by the lowering.
"""

from __future__ import annotations

import ast
import copy


def _returns_always(stmts: list[ast.stmt]) -> bool:
    """Does every path through `stmts` end in a `return`?"""
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            return True
        if isinstance(stmt, ast.If) and _returns_always(stmt.body) and \
                _returns_always(stmt.orelse):
            return True
    return False


def _contains_return(stmts: list[ast.stmt]) -> bool:
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            return True
        if isinstance(stmt, ast.If) and (_contains_return(stmt.body) or
                                          _contains_return(stmt.orelse)):
            return True
    return False


def rewrite_returns(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Return statements equivalent to `stmts` in which every `return` ends its block."""
    out: list[ast.stmt] = []
    for index, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Return):
            out.append(stmt)
            return out  # anything after is unreachable; the lowering reports it if present
        if isinstance(stmt, ast.If) and _contains_return([stmt]):
            rest = stmts[index + 1:]
            body = list(stmt.body)
            orelse = list(stmt.orelse)
            if rest:
                if not _returns_always(body):
                    body = body + [copy.deepcopy(s) for s in rest]
                if not _returns_always(orelse):
                    orelse = orelse + [copy.deepcopy(s) for s in rest]
            new_if = ast.If(test=stmt.test, body=rewrite_returns(body) or [ast.Pass()],
                            orelse=rewrite_returns(orelse))
            ast.copy_location(new_if, stmt)
            for node in (new_if.body[0],):
                if isinstance(node, ast.Pass):
                    ast.copy_location(node, stmt)
            out.append(new_if)
            return out
        out.append(stmt)
    return out


def drop_trailing_returns(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Remove `return`s that end a nested block: after the rewrite they only mean 'stop here'."""
    result: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Return) and stmt.value is None:
            continue
        if isinstance(stmt, ast.If):
            stmt.body = drop_trailing_returns(stmt.body) or [ast.copy_location(ast.Pass(), stmt)]
            stmt.orelse = drop_trailing_returns(stmt.orelse)
        result.append(stmt)
    return result
