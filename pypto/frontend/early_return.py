"""Early `return` in SPMD code, by rewriting the AST before lowering.

A lane that returns inside an `if` stops executing; the other lanes go on. In structured IR the
code after such an `if` must therefore run only on the lanes that did not return:

    if c:                        if c:
        A                            A
        return          ==>      else:
    R                                R

applied recursively (a `return` nested in inner `if`s moves the rest of the block into the
branches that fall through). The rest `R` is copied only into branches that can fall through, so
the common guard pattern costs nothing. A `return` inside a loop first becomes a per-lane flag and
a `break` (`lift_loop_returns`), followed by `if flag: return` after the loop.
"""

from __future__ import annotations

import ast
import copy


Exits = type[ast.stmt] | tuple[type[ast.stmt], ...]


def _returns_always(stmts: list[ast.stmt], exits: Exits = ast.Return) -> bool:
    """Does every path through `stmts` end in a `return` (or another of `exits`)?"""
    for stmt in stmts:
        if isinstance(stmt, exits):
            return True
        if isinstance(stmt, ast.If) and _returns_always(stmt.body, exits) and \
                _returns_always(stmt.orelse, exits):
            return True
    return False


def _contains_return(stmts: list[ast.stmt], exits: Exits = ast.Return) -> bool:
    for stmt in stmts:
        if isinstance(stmt, exits):
            return True
        if isinstance(stmt, ast.If) and (_contains_return(stmt.body, exits) or
                                          _contains_return(stmt.orelse, exits)):
            return True
    return False


def rewrite_returns(stmts: list[ast.stmt], exits: Exits = ast.Return) -> list[ast.stmt]:
    """Return statements equivalent to `stmts` in which every `return` ends its block.

    `exits` names the statements treated as leaving the block: `return` for a kernel body,
    `continue` for a loop body (the loop lowering turns `break` into a flag and a `continue`),
    so the same rewrite masks the rest of an iteration."""
    out: list[ast.stmt] = []
    for index, stmt in enumerate(stmts):
        if isinstance(stmt, exits):
            out.append(stmt)
            return out  # anything after is unreachable; the lowering reports it if present
        if isinstance(stmt, ast.If) and _contains_return([stmt], exits):
            rest = stmts[index + 1:]
            body = list(stmt.body)
            orelse = list(stmt.orelse)
            if rest:
                if not _returns_always(body, exits):
                    body = body + [copy.deepcopy(s) for s in rest]
                if not _returns_always(orelse, exits):
                    orelse = orelse + [copy.deepcopy(s) for s in rest]
            new_if = ast.If(test=stmt.test, body=rewrite_returns(body, exits) or [ast.Pass()],
                            orelse=rewrite_returns(orelse, exits))
            ast.copy_location(new_if, stmt)
            for node in (new_if.body[0],):
                if isinstance(node, ast.Pass):
                    ast.copy_location(node, stmt)
            out.append(new_if)
            return out
        out.append(stmt)
    return out


def drop_trailing_returns(stmts: list[ast.stmt], exits: Exits = ast.Return) -> list[ast.stmt]:
    """Remove `return`s that end a nested block: after the rewrite they only mean 'stop here'."""
    result: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, exits) and getattr(stmt, "value", None) is None:
            continue
        if isinstance(stmt, ast.If):
            stmt.body = drop_trailing_returns(stmt.body, exits) or \
                [ast.copy_location(ast.Pass(), stmt)]
            stmt.orelse = drop_trailing_returns(stmt.orelse, exits)
        result.append(stmt)
    return result


def rewrite_loop_exits(body: list[ast.stmt], break_flag: str) -> tuple[list[ast.stmt], bool]:
    """A loop body with its own `break` / `continue` (those not inside a nested loop) made
    structured: `break` becomes `<break_flag> = True` followed by `continue`, and every
    `continue` ends its block as `return` does (the rest of the iteration moves into the
    branches that fall through, so lanes that continued are masked off for it). Returns the new
    body (a copy) and whether it had a `break`."""
    if not _contains_return(body, (ast.Break, ast.Continue)):
        return body, False
    body = copy.deepcopy(body)
    found = _replace_breaks(body, break_flag)
    body = drop_trailing_returns(rewrite_returns(body, ast.Continue), ast.Continue)
    return body, found


def _replace_breaks(stmts: list[ast.stmt], flag: str) -> bool:
    found = False
    index = 0
    while index < len(stmts):
        stmt = stmts[index]
        if isinstance(stmt, ast.Break):
            store = ast.copy_location(ast.Name(id=flag, ctx=ast.Store()), stmt)
            value = ast.copy_location(ast.Constant(value=True), stmt)
            assign = ast.copy_location(ast.Assign(targets=[store], value=value), stmt)
            stmts[index:index + 1] = [assign, ast.copy_location(ast.Continue(), stmt)]
            found = True
            index += 2
            continue
        if isinstance(stmt, ast.If):
            found = _replace_breaks(stmt.body, flag) | found
            found = _replace_breaks(stmt.orelse, flag) | found
        index += 1
    return found


def lift_loop_returns(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """`return` inside loops (a kernel's, no value): each loop that holds one gets a per-lane
    flag, set with `break` where the `return` was, and is followed by `if flag: return`, which
    `rewrite_returns` then handles like any early return. Nested loops pass it outwards: after
    an inner loop, `if flag: break`."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.For | ast.While) and _loop_returns(stmt.body):
            flag = f"returned.{stmt.lineno}.{stmt.col_offset}"
            stmt.body = _returns_to_breaks(stmt.body, flag)
            out.append(_assign(flag, False, stmt))
            out.append(stmt)
            out.append(ast.copy_location(ast.If(
                test=ast.copy_location(ast.Name(id=flag, ctx=ast.Load()), stmt),
                body=[ast.copy_location(ast.Return(value=None), stmt)], orelse=[]), stmt))
            continue
        if isinstance(stmt, ast.If):
            stmt.body = lift_loop_returns(stmt.body) or [ast.copy_location(ast.Pass(), stmt)]
            stmt.orelse = lift_loop_returns(stmt.orelse)
        out.append(stmt)
    return out


def _loop_returns(stmts: list[ast.stmt]) -> bool:
    """Is there a `return` in `stmts` (a loop body), under `if`s or in nested loops?"""
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            return True
        if isinstance(stmt, ast.If) and (_loop_returns(stmt.body) or _loop_returns(stmt.orelse)):
            return True
        if isinstance(stmt, ast.For | ast.While) and _loop_returns(stmt.body):
            return True
    return False


def _assign(name: str, value: bool, where: ast.AST) -> ast.stmt:
    target = ast.copy_location(ast.Name(id=name, ctx=ast.Store()), where)
    return ast.copy_location(ast.Assign(targets=[target],
                                        value=ast.copy_location(ast.Constant(value), where)),
                             where)


def _returns_to_breaks(stmts: list[ast.stmt], flag: str) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Return) and stmt.value is None:
            out.append(_assign(flag, True, stmt))
            out.append(ast.copy_location(ast.Break(), stmt))
            continue
        if isinstance(stmt, ast.If):
            stmt.body = _returns_to_breaks(stmt.body, flag) or \
                [ast.copy_location(ast.Pass(), stmt)]
            stmt.orelse = _returns_to_breaks(stmt.orelse, flag)
        elif isinstance(stmt, ast.For | ast.While) and _loop_returns(stmt.body):
            stmt.body = _returns_to_breaks(stmt.body, flag)
            out.append(stmt)
            out.append(ast.copy_location(ast.If(
                test=ast.copy_location(ast.Name(id=flag, ctx=ast.Load()), stmt),
                body=[ast.copy_location(ast.Break(), stmt)], orelse=[]), stmt))
            continue
        out.append(stmt)
    return out
