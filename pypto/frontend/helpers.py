"""Helper functions called from kernels: plain Python functions and `@pto.func`, inlined.

A kernel may call a Python function written in the same language (CUDA's `__device__`
functions, Triton's `@jit` functions calling each other). The call is inlined at the AST level:
the arguments are evaluated in the caller, bound to the helper's parameters (defaults and
keywords as Python binds them), and the helper's body is lowered in its own scope, with its own
module globals and closure, and its own source file for locations, so the IR and every error
point at the helper's lines. A `CompileError` raised inside a helper gets the call site as a
note. `return` works as in the kernel body (an early `return` under a lane-dependent `if` masks
the rest of the helper for those lanes); the returned value is the call's value. Recursion is
a `CompileError` (there is no call stack on the device).
"""

from __future__ import annotations

import ast
import copy
import inspect
import weakref
from collections.abc import Callable
from typing import Any

from pypto.errors import CompileError, PtoError
from pypto.frontend.early_return import rewrite_returns
from pypto.frontend.kernel import KernelSource, _read_source
from pypto.frontend.structured import _Undefined

RETURN_VALUE = "return.value"
"""The synthetic variable a helper's `return x` assigns (no Python code can spell it)."""


class DeviceFunction:
    """A function marked `@pto.func`: callable from kernels (inlined), not from Python."""

    def __init__(self, fn: Callable[..., Any]):
        if not inspect.isfunction(fn):
            raise TypeError(f"@pto.func expects a Python function, got {fn!r}")
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise PtoError(f"'{self.__name__}' is a @pto.func device function: call it from a "
                       f"@pto.kernel (where it is inlined), not from Python")

    def __repr__(self) -> str:
        return f"<pto.func {self.__qualname__}>"


def func(fn: Callable[..., Any]) -> DeviceFunction:
    """Decorator: a device function, callable from `@pto.kernel`s and other device functions.

    Plain (undecorated) Python functions can be called from kernels too; `@pto.func` documents
    the intent and makes a call from ordinary Python a clear error."""
    return DeviceFunction(fn)


_SOURCES: weakref.WeakKeyDictionary[Any, tuple[KernelSource, list[ast.stmt]]] = \
    weakref.WeakKeyDictionary()


def _helper_source(fn: Callable[..., Any]) -> tuple[KernelSource, list[ast.stmt]]:
    """The helper's parsed source and its body with returns made structured (cached)."""
    known = _SOURCES.get(fn)
    if known is None:
        src = _read_source(fn)
        body = rewrite_returns(copy.deepcopy(src.tree.body))
        body = _returns_to_assignments(body)
        known = _SOURCES[fn] = (src, body)
    return known


def _returns_to_assignments(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """After `rewrite_returns` every `return` ends its block: `return x` becomes an assignment
    of the synthetic return variable, a bare `return` disappears. Returns inside loops stay
    (the lowering reports them)."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            if stmt.value is not None:
                target = ast.copy_location(ast.Name(id=RETURN_VALUE, ctx=ast.Store()), stmt)
                out.append(ast.copy_location(ast.Assign(targets=[target], value=stmt.value),
                                             stmt))
            continue
        if isinstance(stmt, ast.If):
            stmt.body = _returns_to_assignments(stmt.body) or \
                [ast.copy_location(ast.Pass(), stmt)]
            stmt.orelse = _returns_to_assignments(stmt.orelse)
        out.append(stmt)
    return out


def helper_function(callee: Any) -> Callable[..., Any] | None:
    """The Python function behind `callee` if a kernel may inline it, else None."""
    if isinstance(callee, DeviceFunction):
        return callee.fn
    if inspect.isfunction(callee) and \
            not (callee.__module__ or "").split(".")[0] in _LIBRARY_MODULES:
        return callee
    return None


_LIBRARY_MODULES = frozenset({"pypto", "numpy", "ml_dtypes", "math", "functools", "builtins"})
"""Python functions of these packages are not kernel code: calling one stays an error that names
the replacement (for NumPy, the pto instruction)."""


def _outer_values(fn: Callable[..., Any]) -> dict[str, Any]:
    values = dict(fn.__globals__)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # pragma: no cover - empty cell
            pass
    return values


class HelperLowering:
    """`inline_call`: a mixin of `KernelLowering` (see the module docstring)."""

    inline_stack: list[Callable[..., Any]]

    def inline_call(self: Any, fn: Callable[..., Any], node: ast.Call) -> Any:
        stack = getattr(self, "inline_stack", None)
        if stack is None:
            stack = self.inline_stack = []
        name = fn.__qualname__
        if fn in stack or fn is getattr(self.kernel, "fn", None):
            chain = " -> ".join(f.__qualname__ for f in stack + [fn])
            raise self.error(f"recursive call to '{name}' ({chain}): helper functions are "
                             f"inlined into the kernel, so they cannot call themselves; write "
                             f"the recursion as a loop", node)
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.error("*args are not supported in kernels", arg)
            args.append(self.expr(arg))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error("**kwargs are not supported in kernels", kw)
            kwargs[kw.arg] = self.expr(kw.value)
        self.node = node
        if fn.__name__ == "<lambda>":
            raise self.error(f"'{ast.unparse(node.func)}' is a lambda; kernels can call functions "
                             f"defined with 'def' (they are inlined)", node)
        try:
            src, body = _helper_source(fn)
        except (PtoError, SyntaxError) as exc:
            raise self.error(f"cannot inline '{name}': {exc}", node) from None
        fdef = src.tree
        if isinstance(fdef, ast.AsyncFunctionDef):
            raise self.error(f"'{name}' is an async function; kernels can call plain "
                             f"functions only", node)
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(f"call to '{name}': {exc}", node) from None
        bound.apply_defaults()
        call_site = self.error("", node)  # where the call is, for the note
        call_loc = self.loc(node)  # and for the IR: the helper's ops are located "at" it
        saved = (self.src, self.globals, self.env, self.node, self.statement, self.loop_depth,
                 self.region_depth, self.block_saved_folding(), getattr(self, "call_loc", None))
        self.call_loc = call_loc
        self.src = src
        self.globals = _outer_values(fn)
        self.env = dict(bound.arguments)
        self.loop_depth = 0
        stack.append(fn)
        try:
            self.lower_body(body)
            result = self.env.get(RETURN_VALUE)
        except CompileError as exc:
            _add_call_site(exc, call_site)
            raise
        finally:
            stack.pop()
            (self.src, self.globals, self.env, self.node, self.statement, self.loop_depth,
             self.region_depth, folding, self.call_loc) = saved
            self.restore_folding(folding)
        if isinstance(result, _Undefined):
            raise self.error(f"'{name}' returns a value on some paths only (at line "
                             f"{result.line}); return a value on every path", node)
        return result

    def block_saved_folding(self: Any) -> Any:
        """Module constants a helper folds belong to the helper's module, not the kernel's:
        they are not recorded for the kernel's cache check (pypto.compiler)."""
        saved = self.folded
        self.folded = {}
        return saved

    def restore_folding(self: Any, saved: Any) -> None:
        self.folded = saved


def _add_call_site(exc: CompileError, call_site: CompileError) -> None:
    """Append "note: called from file:line:col" (with the call's source line) to `exc`."""
    where = f"{call_site.filename}:{call_site.line}:{(call_site.col or 0) + 1}"
    note = f"\n{where}: note: called from here"
    text = str(call_site)
    lines = text.splitlines()
    if len(lines) >= 3:
        note += "\n" + "\n".join(lines[1:3])
    exc.args = (str(exc) + note,)
    exc.call_sites = getattr(exc, "call_sites", []) + [where]  # type: ignore[attr-defined]
