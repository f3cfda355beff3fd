"""`@pto.kernel`: wraps a Python function so that it can be compiled and launched."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pypto.errors import PtoError, public_api
from pypto.frontend.python_ast import parse_python


@dataclass
class KernelSource:
    """The parsed source of a kernel and where it lives, for locations and error carets."""

    filename: str
    first_line: int  # 1-based line of the `def` in the file
    col_offset: int  # indentation removed by dedent
    lines: list[str]  # the file's lines (for carets), 1-based via lines[n - 1]
    tree: ast.FunctionDef
    # `tree` after the early-return rewrite (pypto.frontend.lowering), made on first lowering
    rewritten: ast.FunctionDef | None = None


class Kernel:
    """A Python function marked with `@pto.kernel`.

    It is not callable from Python: launch it with `pto.launch(k, grid, block, args)` or compile
    it with `pto.compile(k, args=...)`. Compiled variants are cached per specialisation
    (argument types, block shape, pipeline, target) on the kernel object.
    """

    def __init__(self, fn: Callable[..., Any]):
        if not inspect.isfunction(fn):
            raise TypeError(f"@pto.kernel expects a Python function, got {fn!r}")
        self.fn = fn
        self.name = fn.__name__
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        sig = inspect.signature(fn)
        self.params = list(sig.parameters)
        self.signature = sig
        self._source: KernelSource | None = None
        self.cache: dict[Any, Any] = {}
        # The same compiled variants under a key of plain Python values, so that a cached
        # launch does not rebuild xDSL type attributes (pypto.compiler._fast_key).
        self.fast_cache: dict[Any, Any] = {}
        # Integer parameters the frontend found used as sizes (alloc_local counts, mma shapes):
        # specialised on their launch value from then on, like annotated pto.constexpr ones.
        self.auto_constexpr: set[str] = set()

    def clear_cache(self) -> None:
        """Forget every compiled variant (the next launch compiles afresh)."""
        self.cache.clear()
        self.fast_cache.clear()
        self.__dict__.pop("_launch_plans", None)  # pto.launch's plans (pypto.compiler)
        self.__dict__.pop("_last_launch", None)  # and the last one it used

    def outer_values(self) -> dict[str, Any]:
        """The module globals and closed-over values the kernel body can name, as of now."""
        values = dict(self.fn.__globals__)
        closure = self.fn.__closure__ or ()
        for name, cell in zip(self.fn.__code__.co_freevars, closure):
            try:
                values[name] = cell.cell_contents
            except ValueError:  # pragma: no cover - empty cell
                pass
        return values

    def outer_values_unchanged(self, folded: dict[str, Any]) -> bool:
        """Do the constants folded into a compilation still have the values they had then?"""
        if not folded:
            return True
        now = self.outer_values()
        missing = object()
        for name, value in folded.items():
            current = now.get(name, missing)
            if type(current) is not type(value) or not _same_value(current, value):
                return False
        return True

    @property
    def uses_shapes(self) -> bool:
        """Whether the kernel indexes with several subscripts (`t[r, c]`): then the shapes of
        its tensor arguments are part of each specialisation (docs/language.md#subscripts)."""
        found = self.__dict__.get("_uses_shapes")
        if found is None:
            found = any(isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple)
                        for node in ast.walk(self.source.tree))
            self.__dict__["_uses_shapes"] = found
        return found

    @property
    def num_params(self) -> int:
        return len(self.params)

    @property
    def source(self) -> KernelSource:
        if self._source is None:
            self._source = _read_source(self.fn)
        return self._source

    @public_api
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise PtoError(
            f"kernel '{self.name}' cannot be called like a Python function; launch it with "
            f"{self.name}[grid, block](...) or "
            f"pto.launch({self.name}, grid=..., block=..., args=(...)), or compile it with "
            f"pto.compile({self.name}, args=(...))")

    def __getitem__(self, config: Any) -> Any:
        """`kernel[grid, block](*args)` launches like `pto.launch(kernel, grid, block, args)`
        (Triton / Numba style); `kernel[grid, block, stream]` on a stream. `grid` may be a
        callable taking the arguments by parameter name (a dict, Triton's `meta`) and returning
        the grid."""
        if Kernel.configure is None:  # pragma: no cover - set when pypto.compiler is imported
            raise PtoError("kernel[grid, block] needs pypto.compiler; import pypto first")
        return Kernel.configure(self, config)

    configure: Callable[[Any, Any], Any] | None = None
    """Makes the launcher of `kernel[...]`; set by `pypto.compiler` (which sits above the
    frontend and owns launching)."""

    def __repr__(self) -> str:
        return f"<pto.kernel {self.name}({', '.join(self.params)})>"


def _read_source(fn: Callable[..., Any]) -> KernelSource:
    filename = inspect.getsourcefile(fn) or "<unknown>"
    try:
        src_lines, first_line = inspect.getsourcelines(fn)
    except OSError as exc:
        raise PtoError(f"cannot read the source of kernel '{fn.__name__}' ({exc}); kernels must "
                       f"be defined in a file, not typed at an interactive prompt") from exc
    text = "".join(src_lines)
    dedented = textwrap.dedent(text)
    first = src_lines[0]
    col_offset = len(first) - len(first.lstrip()) if dedented != text else 0
    tree = parse_python(dedented)
    fdef = tree.body[0]
    assert isinstance(fdef, ast.FunctionDef | ast.AsyncFunctionDef)
    try:
        import linecache

        all_lines = linecache.getlines(filename) or src_lines
    except Exception:  # pragma: no cover - linecache is best effort
        all_lines = src_lines
    if not all_lines or len(all_lines) < first_line:
        # No full file available (exec'd string): keep line numbers relative to the snippet.
        all_lines = [""] * (first_line - 1) + src_lines
    ast.increment_lineno(fdef, first_line - 1)
    return KernelSource(filename=filename, first_line=first_line, col_offset=col_offset,
                        lines=all_lines, tree=fdef)  # type: ignore[arg-type]


def kernel(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Decorator: mark a Python function as a PTO kernel (`@pto.kernel`)."""
    if fn is None:
        return lambda f: kernel(f, **options)
    if options:
        raise TypeError(f"@pto.kernel got unknown options: {', '.join(options)}")
    return Kernel(fn)



def _same_value(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        equal = bool(a == b)
    except (TypeError, ValueError):  # pragma: no cover - exotic values: recompile
        return False
    return equal or (a != a and b != b)  # NaN is the same constant as NaN
