"""The `kernels` fuzz target: generated Python kernels, built from generator units, run on every
selected backend and compared bit for bit with NumPy and with each other.

**Generator units** (docs/reliability.md#the-kernel-generator-units-and-backends-testsfuzzkernelspy). A kernel is `i = get_global_id();
if i < n: a = x[i]; b = y[i]; <statements>; o[i] = <last value>` (or *unguarded*: the loads
and statements on every lane of the launch, only the store under `if i < n`, where the warp
shuffles and votes are drawn: a warp collective needs its whole warp); each statement group comes
from a *unit*: a function that appends source lines to a `KernelDraft` and the NumPy steps that
compute the same thing on lane arrays (one element per active lane). A new language form is
one more unit, registered with `@generator_unit(name, weight, requires=...)`: `requires` says
whether the installed pypto has the form (so a unit can be written before its feature lands
and is drawn once it does), `applies` whether it fits this draft (dtype, what came before).
`FORMS_DRAWN` in test_fuzz.py checks that every available unit is drawn. Deliberately wrong
forms (`BAD_FORMS`) end 10 % of the kernels: they must be a located `CompileError`.

**Backends.** Each case is compiled once and launched on every backend of `backends()`:
`PYPTO_FUZZ_BACKENDS=interpreter,native` (or `--backends` of `python -m tests.fuzz.fuzz`);
the default is the interpreter alone. A backend is a `KernelBackend`: how to launch a compiled
kernel on it, and which exceptions mean "this backend does not compile this kernel" (counted in
`UNSUPPORTED`, never a crash). Every backend's output must equal NumPy's (NaN equals NaN) and
the first backend's output byte for byte (NaN payloads and -0.0 included). `native` is
registered ready for the native backend (`pto.launch(..., backend="native")` raising
`NativeUnsupported` for what it does not compile): selecting it where `pypto.backend.native`
does not exist is an error that says so.
"""

from __future__ import annotations

import ast
import contextlib
import os
import random
import textwrap
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Env = dict[str, Any]
"""Lane arrays by kernel variable name (`a`, `b`, `t0` ...; `lane`: the global ids)."""
Step = Callable[[Env], None]

WARP = 32


# ---------------------------------------------------------------------------------------------
# expressions and their NumPy meaning
# ---------------------------------------------------------------------------------------------


def random_expr(rng: random.Random, names: list[str], is_float: bool, depth: int = 0) -> str:
    if depth > 3 or rng.random() < 0.3:
        if rng.random() < 0.3:
            return rng.choice(["1.5", "0.25", "-3.0", "2.0"] if is_float else
                              ["1", "3", "-7", "100"])
        return rng.choice(names)
    op = rng.choice(["+", "-", "*", "select", "neg"] + (["&", "^", "|"] if not is_float else []))
    a = random_expr(rng, names, is_float, depth + 1)
    b = random_expr(rng, names, is_float, depth + 1)
    if op == "select":
        cmp = rng.choice(["<", ">", "<=", ">=", "==", "!="])
        return f"pto.select({a} {cmp} {b}, {a}, {b})"
    if op == "neg":
        return f"(-{a})"
    return f"({a} {op} {b})"


def np_eval(expr: str, env: Env, dtype: Any) -> Any:
    """Evaluate a generated expression with NumPy: literals are weak (take `dtype`)."""
    tree = ast.parse(expr, mode="eval").body

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return dtype(node.value)
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.UnaryOp):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            return {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
                    ast.BitAnd: np.bitwise_and, ast.BitOr: np.bitwise_or,
                    ast.BitXor: np.bitwise_xor}[type(node.op)](a, b, dtype=dtype)
        if isinstance(node, ast.Compare):
            a, b = ev(node.left), ev(node.comparators[0])
            return {ast.Lt: np.less, ast.Gt: np.greater, ast.LtE: np.less_equal,
                    ast.GtE: np.greater_equal, ast.Eq: np.equal,
                    ast.NotEq: np.not_equal}[type(node.ops[0])](a, b)
        if isinstance(node, ast.Call):
            c, a, b = (ev(arg) for arg in node.args)
            return np.where(c, a, b).astype(dtype)
        raise AssertionError(ast.dump(node))

    return ev(tree)


# ---------------------------------------------------------------------------------------------
# generator units
# ---------------------------------------------------------------------------------------------


@dataclass
class KernelDraft:
    """A kernel being generated: its body (lines under `if i < n:`), the names in scope and the
    NumPy steps of its reference."""

    rng: random.Random
    dtype: Any
    names: list[str] = field(default_factory=lambda: ["a", "b"])
    body: list[str] = field(default_factory=list)
    prologue: list[str] = field(default_factory=list)  # block-level lines before `if i < n:`
    steps: list[Step] = field(default_factory=list)
    units: list[str] = field(default_factory=list)  # the units drawn, in order
    counter: int = 0
    # False: the statements run on every lane of the launch (a warp-uniform body, for the
    # shuffles and votes: `if i < n` guards only the store); True: under `if i < n`
    guarded: bool = True

    @property
    def is_float(self) -> bool:
        return self.dtype == np.float32

    def new_name(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def expr(self) -> str:
        return random_expr(self.rng, self.names, self.is_float)

    def assign_step(self, target: str, expr: str, cond: str | None = None) -> None:
        """The reference of `target = expr` (under `if cond:` when given)."""
        dtype = self.dtype

        def step(env: Env) -> None:
            value = np_eval(expr, env, dtype)
            n = env["lane"].size
            if cond is None:
                env[target] = np.broadcast_to(np.asarray(value, dtype), (n,)).copy()
            else:
                mask = np_eval(cond, env, dtype)
                env[target] = np.where(mask, value, env[target]).astype(dtype)

        self.steps.append(step)


@dataclass(frozen=True)
class GeneratorUnit:
    name: str
    weight: float
    emit: Callable[[KernelDraft], None]
    applies: Callable[[KernelDraft], bool]
    requires: Callable[[], bool]

    def available(self) -> bool:
        return self.requires()


UNITS: list[GeneratorUnit] = []
"""Every registered unit, in registration order (the draw is seeded: order matters)."""


def generator_unit(name: str, weight: float = 1.0,
                   applies: Callable[[KernelDraft], bool] | None = None,
                   requires: Callable[[], bool] | None = None
                   ) -> Callable[[Callable[[KernelDraft], None]], Callable[[KernelDraft], None]]:
    """Register `emit` as a unit of the kernel generator (see the module docstring)."""
    def register(emit: Callable[[KernelDraft], None]) -> Callable[[KernelDraft], None]:
        UNITS.append(GeneratorUnit(name, weight, emit, applies or (lambda d: True),
                                   requires or (lambda: True)))
        return emit
    return register


def _has(attribute: str) -> Callable[[], bool]:
    """`requires`: the language has `pto.<attribute>`."""
    def check() -> bool:
        import pypto as pto

        return hasattr(pto, attribute)
    return check


@generator_unit("assign", weight=4)
def _assign(d: KernelDraft) -> None:
    """`t = <expression>`: + - * (and & ^ | on ints), unary -, pto.select on comparisons."""
    target, expr = d.new_name(), d.expr()
    d.body.append(f"{target} = {expr}")
    d.assign_step(target, expr)
    d.names.append(target)


@generator_unit("branch", weight=1.5, applies=lambda d: len(d.names) > 2)
def _branch(d: KernelDraft) -> None:
    """`t = x` then `if <lane condition>: t = <expression>` (divergence, masked lanes)."""
    rng = d.rng
    target = d.new_name()
    cond = f"{rng.choice(d.names)} {rng.choice(['<', '>='])} {rng.choice(d.names)}"
    prev, expr = rng.choice(d.names), d.expr()
    d.body += [f"{target} = {prev}", f"if {cond}:", f"    {target} = {expr}"]
    d.assign_step(target, prev)
    d.assign_step(target, expr, cond)
    d.names.append(target)


@generator_unit("uniform_loop", weight=1)
def _uniform_loop(d: KernelDraft) -> None:
    """`for j in range(K): acc = acc + x` with the same trip count on every lane."""
    trips, x, acc = d.rng.randint(1, 3), d.names[-1], d.new_name("acc")
    d.body += [f"{acc} = a", f"for j in range({trips}):", f"    {acc} = {acc} + {x}"]
    d.assign_step(acc, "a")
    for _ in range(trips):
        d.assign_step(acc, f"{acc} + {x}")
    d.names.append(acc)


@generator_unit("simt_loop", weight=1)
def _simt_loop(d: KernelDraft) -> None:
    """A SIMT loop: lane i runs (m - i % m) iterations, as a `range` or a `while` / `break`."""
    rng = d.rng
    m, x, acc = rng.randint(2, 5), d.names[-1], d.new_name("acc")
    j = d.new_name("j")
    d.body.append(f"{acc} = {x}")
    if rng.random() < 0.5:
        d.body.append(f"for {j} in range(i % {m}, {m}):")
    else:
        d.body += [f"{j} = i % {m}", "while True:", f"    if {j} >= {m}:", "        break",
                   f"    {j} += 1"]
    d.body.append(f"    {acc} = {acc} + {x}")
    d.assign_step(acc, x)
    dtype = d.dtype
    for k in range(m):
        def step(env: Env, k: int = k) -> None:
            runs = (env["lane"] % m) <= k
            env[acc] = np.where(runs, np.add(env[acc], env[x], dtype=dtype), env[acc]).astype(dtype)
        d.steps.append(step)
    d.names.append(acc)


@generator_unit("simt_loop_l1", weight=0.6)
def _simt_loop_l1(d: KernelDraft) -> None:
    """A SIMT loop that stores into L1 on every trip (lane i runs m - i % m trips, each lane on
    its own element: no barrier needed), then reads its last store back: an L1 write in a
    loop whose trip count differs between lanes (docs/native.md#while-loops)."""
    rng = d.rng
    m, x, acc = rng.randint(2, 5), d.names[-1], d.new_name("acc")
    j, buf, target = d.new_name("j"), d.new_name("buf"), d.new_name()
    dtype = "pto.float32" if d.is_float else "pto.int32"
    mine = f"{buf} + pto.get_local_id()"  # (blocks have at most 128 lanes)
    d.body += [f"{buf} = pto.alloc_local(128, dtype={dtype})", f"{acc} = {x}",
               f"for {j} in range(i % {m}, {m}):", f"    {acc} = {acc} + {x}",
               f"    pto.store({mine}, {acc})", f"{target} = pto.load({mine})"]
    d.assign_step(acc, x)
    dtype_np = d.dtype
    for k in range(m):
        def step(env: Env, k: int = k) -> None:
            runs = (env["lane"] % m) <= k
            env[acc] = np.where(runs, np.add(env[acc], env[x], dtype=dtype_np),
                                env[acc]).astype(dtype_np)
        d.steps.append(step)
    d.assign_step(target, acc)
    d.names += [acc, target]


@generator_unit("while_condition_l1", weight=0.0)  # (drawn apart: LATE_UNITS)
def _while_condition_l1(d: KernelDraft) -> None:
    """A SIMT `while` whose condition is an L1 atomic (lane i's own counter: the loop runs
    i % m trips, the condition i % m + 1 times): an L1 write in a loop's condition region
    (docs/native.md#while-loops)."""
    rng = d.rng
    m, x, acc = rng.randint(2, 5), d.names[-1], d.new_name("acc")
    buf, target = d.new_name("cnt"), d.new_name()
    mine = f"{buf} + pto.get_local_id()"  # (blocks have at most 128 lanes)
    d.body += [f"{buf} = pto.alloc_local(128, dtype=pto.int32)", f"pto.store({mine}, 0)",
               f"{acc} = {x}", f"while pto.atomic_add({mine}, 1) < i % {m}:",
               f"    {acc} = {acc} + {x}", f"{target} = {acc}"]
    d.assign_step(acc, x)
    dtype_np = d.dtype
    for k in range(m - 1):
        def step(env: Env, k: int = k) -> None:
            runs = (env["lane"] % m) > k
            env[acc] = np.where(runs, np.add(env[acc], env[x], dtype=dtype_np),
                                env[acc]).astype(dtype_np)
        d.steps.append(step)
    d.assign_step(target, acc)
    d.names += [acc, target]


@generator_unit("shared_store", weight=0.0, applies=lambda d: d.guarded)  # (LATE_UNITS)
def _shared_store(d: KernelDraft) -> None:
    """Lanes 2g and 2g + 1 store into one element `o[g]`, then every lane reads it back: lanes
    sharing HBM elements with no barrier (docs/native.md#shared-hbm-elements). In lockstep the
    last active lane of the pair wins; the kernel's final store overwrites `o`."""
    x, t = d.names[-1], d.new_name()
    d.body += [f"pto.store(o + i // 2, {x})", f"{t} = pto.load(o + i // 2)"]

    dtype = d.dtype

    def step(env: Env) -> None:
        values = env[x]
        n = values.size
        owner = np.minimum(np.arange(n) // 2 * 2 + 1, n - 1)  # the pair's last active lane
        env[t] = values[owner]
        memory = env.setdefault("o memory", np.zeros(n, dtype))  # (the atomic unit's view)
        memory[:(n + 1) // 2] = values[owner[::2]]
    d.steps.append(step)
    d.names.append(t)


def _subscripts_supported() -> bool:
    """Subscripts on pointers (docs/language.md#subscripts) exist in this pypto."""
    import pypto as pto

    return hasattr(pto, "static_range")  # landed together with subscripts (issue 30)


@generator_unit("subscript", weight=1.5, requires=_subscripts_supported,
                applies=lambda d: d.guarded)
def _subscript(d: KernelDraft) -> None:
    """`t = x[i] op y[n - 1 - i]`: subscript loads (`p[i]` is `pto.load(p + i)`), one of them
    reversed, read by every active lane (i < n)."""
    op = d.rng.choice(["+", "-", "*"] + (["^"] if not d.is_float else []))
    t = d.new_name()
    d.body.append(f"{t} = x[i] {op} y[n - 1 - i]")
    ufunc = {"+": np.add, "-": np.subtract, "*": np.multiply, "^": np.bitwise_xor}[op]
    dtype = d.dtype

    def step(env: Env) -> None:
        env[t] = ufunc(env["a"], env["b"][::-1], dtype=dtype)

    d.steps.append(step)
    d.names.append(t)


@generator_unit("static_loop", weight=1, requires=_has("static_range"))
def _static_loop(d: KernelDraft) -> None:
    """A loop the frontend unrolls: `for c in (c0, c1, ...)` or `pto.static_range(a, b, s)`,
    `acc = acc * c + x` with the loop value a compile-time constant."""
    rng, x, acc = d.rng, d.names[-1], d.new_name("acc")
    if rng.random() < 0.5:
        values = [rng.choice([1, 2, 3, -1]) for _ in range(rng.randint(1, 3))]
        header = f"for c in ({', '.join(map(str, values))},):"
    else:
        start, step_ = rng.randint(-2, 1), rng.randint(1, 2)
        stop = start + step_ * rng.randint(1, 3)
        values = list(range(start, stop, step_))
        header = f"for c in pto.static_range({start}, {stop}, {step_}):"
    d.body += [f"{acc} = {x}", header, f"    {acc} = {acc} * c + {x}"]
    d.assign_step(acc, x)
    for c in values:
        d.assign_step(acc, f"{acc} * {c} + {x}")
    d.names.append(acc)


_REDUCTIONS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
               "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


@generator_unit("warp_reduce", weight=0.7, applies=lambda d: not d.is_float,
                requires=_has("reduce"))
def _warp_reduce(d: KernelDraft) -> None:
    """`t = pto.reduce(x, op, scope="warp")` on int32 (exact in any order): every active lane
    of a warp gets the reduction over the warp's active lanes (those with i < n)."""
    from pypto.frontend.collectives import OPS  # the ops this pypto's pto.reduce takes

    op = d.rng.choice([o for o in sorted(_REDUCTIONS) if o in OPS])
    x, target = d.rng.choice(d.names), d.new_name()
    d.body.append(f"{target} = pto.reduce({x}, {op!r}, scope='warp')")
    ufunc, dtype = _REDUCTIONS[op], d.dtype

    def step(env: Env) -> None:
        values = env[x]
        out = np.empty_like(values)
        for start in range(0, values.size, WARP):  # active lanes are 0..n-1: whole warps
            chunk = values[start:start + WARP]
            out[start:start + WARP] = ufunc.reduce(chunk, dtype=dtype)
        env[target] = out

    d.steps.append(step)
    d.names.append(target)


@generator_unit("tile_subscript", weight=0.6, requires=_has("alloc_tile"))
def _tile_subscript(d: KernelDraft) -> None:
    """`t[r, c] = x; t[r, c] += y; s = t[r, c]` on an 8 x 16 tile of pto.alloc_tile (2-D
    subscripts by its static shape), each lane on its own element (r, c from its local id:
    blocks have at most 128 lanes), so no barrier is needed."""
    x, y = d.rng.choice(d.names), d.rng.choice(d.names)
    tile, target = d.new_name("tile"), d.new_name()
    dtype = "pto.float32" if d.is_float else "pto.int32"
    where = "pto.get_local_id() // 16, pto.get_local_id() % 16"
    d.body += [f"{tile} = pto.alloc_tile(8, 16, dtype={dtype})",
               f"{tile}[{where}] = {x}", f"{tile}[{where}] += {y}",
               f"{target} = {tile}[{where}]"]
    d.assign_step(target, f"{x} + {y}")
    d.names.append(target)


def _ieee(pick: Callable[[Any, Any], Any], zero_first: bool) -> Callable[[Any, Any], Any]:
    """IEEE 754 maximum / minimum: NaN propagates, and of two zeros the +0 (max) / -0 (min)."""
    def combine(a: Any, b: Any) -> Any:
        zeros = (a == b) & (a == 0)
        signed = np.signbit(a) == zero_first
        return np.where(zeros, np.where(signed, a, b), pick(a, b))
    return combine


_ATOMICS: dict[str, Callable[[Any, Any], Any]] = {
    "max": _ieee(np.maximum, False), "min": _ieee(np.minimum, True),
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "exch": lambda old, v: v,
}


@generator_unit("atomic", weight=0.8, applies=lambda d: d.guarded,
                requires=_has("atomic_max"))
def _atomic(d: KernelDraft) -> None:
    """`t = pto.atomic_<op>(o + (i - i % 4), x)` (and `atomic_cas(..., c, x)` on int32): lanes
    4g .. 4g+3 (one warp) update element 4g of the output in lane order, each getting the
    value the lower lanes left; the kernel's final store to `o` then overwrites the elements,
    so the old values are what is checked (docs/language.md#atomics)."""
    kinds = ["max", "min", "exch"] + ([] if d.is_float else ["and", "or", "xor", "cas"])
    kind = d.rng.choice(kinds)
    x, c, target = d.rng.choice(d.names), d.rng.choice(d.names), d.new_name()
    if kind == "cas":
        d.body.append(f"{target} = pto.atomic_cas(o + (i - i % 4), {c}, {x})")
    else:
        d.body.append(f"{target} = pto.atomic_{kind}(o + (i - i % 4), {x})")
    dtype = d.dtype

    def step(env: Env) -> None:
        values, compare = env[x], env[c]
        n = values.size
        memory = env.setdefault("o memory", np.zeros(n, dtype))  # the output, zeros at launch
        old = np.zeros(n, dtype)
        for rank in range(4):  # lane order inside each group of four
            lanes = np.arange(rank, n, 4)
            current = memory[lanes - rank].copy()
            old[lanes] = current
            if kind == "cas":
                new = np.where(current == compare[lanes], values[lanes], current)
            else:
                new = _ATOMICS[kind](current, values[lanes])
            memory[lanes - rank] = np.asarray(new, dtype)
        env[target] = old

    d.steps.append(step)
    d.names.append(target)


def fold_halves(x: np.ndarray, axis: int) -> np.ndarray:
    """The tile reductions' documented order (docs/language.md#tile-vector-instructions): the
    first half combined with the second, an odd last element carried; written here element
    list by element list, independently of the interpreter."""
    parts = [np.take(x, [j], axis=axis) for j in range(x.shape[axis])]
    while len(parts) > 1:
        h = len(parts) // 2
        parts = [np.add(parts[j], parts[j + h], dtype=x.dtype) for j in range(h)] + parts[2 * h:]
    return parts[0]


def _relu(a: np.ndarray) -> np.ndarray:
    return np.where(a > 0, a, np.zeros_like(a)).astype(a.dtype)


_TILE_BINARY = {"tadd": np.add, "tsub": np.subtract, "tmul": np.multiply, "tmin": np.minimum,
                "tmax": np.maximum, "tdiv": np.divide, "tand": np.bitwise_and,
                "tor": np.bitwise_or, "txor": np.bitwise_xor}
_TILE_FLOAT_ONLY = {"tdiv", "texp", "tsqrt", "expdif", "div"}
_TILE_INT_ONLY = {"tand", "tor", "txor", "tnot"}
_TILE_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tabs": np.abs, "tneg": np.negative, "trelu": _relu, "tnot": np.invert,
    "texp": lambda a: np.exp(a.astype(np.float64)).astype(a.dtype),  # once, through float64
    "tsqrt": np.sqrt}
_TILE_REDUCE = {"sum": lambda x, axis: fold_halves(x, axis),
                "max": lambda x, axis: np.max(x, axis=axis, keepdims=True),
                "min": lambda x, axis: np.min(x, axis=axis, keepdims=True)}
_TILE_FUSED = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
               "min": np.minimum, "div": np.divide,
               "expdif": lambda a, v: np.exp(np.subtract(a, v).astype(np.float64))}


def _tile_supported() -> bool:
    """The tile vector instructions (docs/language.md#tile-vector-instructions) exist."""
    import pypto as pto

    return all(hasattr(pto, name) for name in ("alloc_tile", "tadd", "trowsum",
                                                "trowexpandsub"))


@generator_unit("tile", weight=1.2, requires=_tile_supported)
def _tile(d: KernelDraft) -> None:
    """Tile vector instructions on a random rows x cols tile (rows * cols <= 256) of the
    kernel's dtype, loaded from the first elements of x and y: an elementwise op (tile-tile or
    unary), a tile ⊕ scalar op, a row or column reduction, or a reduction broadcast back by a
    fused expand op. They run once per block before `if i < n:` (uniform control flow), then
    `pto.barrier_block()` (a tile instruction is not a barrier) and every active lane reads
    element `i % size` of the result tile."""
    rng, is_float = d.rng, d.is_float
    dt = "pto.float32" if is_float else "pto.int32"
    rows = rng.choice([1, 2, 3, 4, 5, 8])
    cols = rng.choice([c for c in (1, 2, 3, 7, 8, 13, 16, 24, 32) if rows * c <= 256])
    k = d.new_name("tile")
    ta, tb, tr = f"{k}a", f"{k}b", f"{k}r"

    def ok(name: str) -> bool:
        return (is_float or name not in _TILE_FLOAT_ONLY) and \
            (not is_float or name not in _TILE_INT_ONLY)

    lines = [f"{ta} = pto.alloc_tile({rows}, {cols}, dtype={dt})",
             f"{tb} = pto.alloc_tile({rows}, {cols}, dtype={dt})",
             f"pto.wait(pto.async_load({ta}, x, {rows * cols * 4}))",
             f"pto.wait(pto.async_load({tb}, y, {rows * cols * 4}))"]
    kind = rng.choice(["binary", "unary", "scalar", "reduce", "expand"])
    scalar = rng.choice(["1.5", "-0.75", "3.0"] if is_float else ["3", "-7", "100"])
    if kind == "binary":
        op = rng.choice([o for o in _TILE_BINARY if ok(o)])
        shape = (rows, cols)
        lines += [f"{tr} = pto.alloc_tile({rows}, {cols}, dtype={dt})",
                  f"pto.{op}({tr}, {ta}, {tb})"]

        def compute(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return _TILE_BINARY[op](a, b).astype(a.dtype)
    elif kind == "unary":
        op = rng.choice([o for o in _TILE_UNARY if ok(o)])
        shape = (rows, cols)
        lines += [f"{tr} = pto.alloc_tile({rows}, {cols}, dtype={dt})", f"pto.{op}({tr}, {ta})"]

        def compute(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return _TILE_UNARY[op](a).astype(a.dtype)
    elif kind == "scalar":
        op = rng.choice([o for o in ("tadd", "tsub", "tmul", "tmin", "tmax", "tdiv") if ok(o)])
        shape = (rows, cols)
        lines += [f"{tr} = pto.alloc_tile({rows}, {cols}, dtype={dt})",
                  f"pto.{op}s({tr}, {ta}, {scalar})"]

        def compute(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return _TILE_BINARY[op](a, a.dtype.type(float(scalar) if is_float
                                                    else int(scalar))).astype(a.dtype)
    else:
        what = rng.choice(sorted(_TILE_REDUCE))
        axis = rng.choice([1, 0])  # 1: along each row (trow...), 0: down each column
        prefix = "row" if axis == 1 else "col"
        vshape = (rows, 1) if axis == 1 else (1, cols)
        tv = f"{k}v"
        lines += [f"{tv} = pto.alloc_tile({vshape[0]}, {vshape[1]}, dtype={dt})",
                  f"pto.t{prefix}{what}({tv}, {tb})"]
        if kind == "reduce":
            shape, tr = vshape, tv

            def compute(a: np.ndarray, b: np.ndarray) -> np.ndarray:
                return _TILE_REDUCE[what](b, axis).astype(b.dtype)
        else:
            fused = rng.choice([f for f in sorted(_TILE_FUSED) if ok(f)])
            shape = (rows, cols)
            lines += [f"{tr} = pto.alloc_tile({rows}, {cols}, dtype={dt})",
                      f"pto.t{prefix}expand{fused}({tr}, {ta}, {tv})"]

            def compute(a: np.ndarray, b: np.ndarray) -> np.ndarray:
                v = _TILE_REDUCE[what](b, axis).astype(b.dtype)
                return _TILE_FUSED[fused](a, v).astype(a.dtype)
    lines.append("pto.barrier_block()")
    d.prologue += lines
    size = shape[0] * shape[1]
    t = d.new_name()
    d.body.append(f"{t} = pto.load({tr} + i % {size})")
    dtype = d.dtype

    def step(env: Env) -> None:
        n = rows * cols
        a = env["x"][:n].reshape(rows, cols)
        b = env["y"][:n].reshape(rows, cols)
        result = np.ascontiguousarray(compute(a, b), dtype=dtype).reshape(-1)
        env[t] = result[np.arange(env["lane"].size) % size]

    d.steps.append(step)
    d.names.append(t)


def _warp_unit_available() -> bool:
    import pypto as pto

    return all(hasattr(pto, f) for f in ("shfl", "shfl_up", "shfl_down", "shfl_xor", "ballot",
                                          "vote_any", "vote_all"))


def _shuffle_reference(mode: str, values: np.ndarray, k: np.ndarray) -> np.ndarray:
    """CUDA's `__shfl*_sync` on whole warps of 32 consecutive lanes: lane l reads lane j of its
    warp (idx k, up l - k, down l + k, xor l ^ k, k's low 5 bits); j outside 0..31 keeps the
    lane's own value."""
    lane = np.arange(values.size) % WARP
    kk = np.broadcast_to(np.asarray(k).astype(np.int64) & 31, lane.shape)
    j = {"idx": kk, "up": lane - kk, "down": lane + kk, "xor": lane ^ kk}[mode]
    valid = (j >= 0) & (j < WARP)
    return np.where(valid, values[np.arange(values.size) - lane + np.clip(j, 0, WARP - 1)],
                    values)


@generator_unit("warp_shuffle_vote", weight=1, applies=lambda d: not d.guarded,
                requires=_warp_unit_available)
def _warp_shuffle_vote(d: KernelDraft) -> None:
    """A shuffle (`pto.shfl`, `shfl_up`, `shfl_down`, `shfl_xor` by a constant or, on ints, by
    a lane's value: any int32, taken modulo 32) or a vote (`pto.ballot`, `vote_any`,
    `vote_all` of a comparison), in a body every lane of the launch runs (a warp collective
    must be reached by the whole warp)."""
    rng, dtype = d.rng, d.dtype
    x, target = rng.choice(d.names), d.new_name()
    if rng.random() < 0.6:
        mode = rng.choice(["idx", "up", "down", "xor"])
        fn = "shfl" if mode == "idx" else f"shfl_{mode}"
        by_lane = not d.is_float and rng.random() < 0.4
        operand = rng.choice(d.names) if by_lane else str(rng.choice([0, 1, 2, 5, 16, 31, 33, -3]))
        d.body.append(f"{target} = pto.{fn}({x}, {operand})")

        def step(env: Env) -> None:
            k = env[operand] if by_lane else int(operand)
            env[target] = _shuffle_reference(mode, env[x], k).astype(dtype)
    else:
        y = rng.choice(d.names)
        vote = rng.choice(["ballot", "vote_any", "vote_all"])
        if vote == "ballot":
            mask = f"pto.ballot({x} > {y})"
            d.body.append(f"{target} = {mask}" if not d.is_float else
                          f"{target} = pto.cast({mask}, pto.float32)")
        else:
            d.body.append(f"{target} = pto.select(pto.{vote}({x} > {y}), {x}, {y})")

        def step(env: Env) -> None:
            p = (env[x] > env[y]).reshape(-1, WARP)
            if vote == "ballot":
                weights = np.left_shift(np.uint64(1), np.arange(WARP, dtype=np.uint64))
                per_warp = (p * weights).sum(axis=1).astype(np.uint32).view(np.int32)
                env[target] = np.repeat(per_warp, WARP).astype(dtype)
            else:
                agree = p.any(axis=1) if vote == "vote_any" else p.all(axis=1)
                env[target] = np.where(np.repeat(agree, WARP), env[x], env[y]).astype(dtype)

    d.steps.append(step)
    d.names.append(target)


BAD_FORMS = ["t99 = undefined_name + 1", "t99 = a + 1.5j", "t99 = pto.load(a)",
             "t99 = a[0]", "while a < b:\n    pass\nelse:\n    pass",
             "t99 = pto.cast(a, 'nope')", "t99 = a @ b", "import os"]
"""Statements outside the language: a kernel ending with one must be a CompileError."""


# ---------------------------------------------------------------------------------------------
# the case: source, reference, launch shape, pipeline
# ---------------------------------------------------------------------------------------------


@dataclass
class KernelCase:
    source: str
    reference: Callable[[np.ndarray, np.ndarray, int], np.ndarray] | None  # None: expect error
    dtype: Any
    n: int
    block: int
    pipeline: str | None
    units: tuple[str, ...] = ()


def available_units() -> list[GeneratorUnit]:
    return [u for u in UNITS if u.available()]


LATE_UNITS: tuple[tuple[str, float], ...] = (("while_condition_l1", 0.12), ("shared_store", 0.12))
"""Units added after the main draw (weight 0 there), each with its chance, from a generator of
their own: a unit added later must not change the kernels earlier seeds drew (the corpus tests
and the regression seeds count on them)."""


def kernel_case(seed: int, index: int) -> KernelCase:
    rng = random.Random(f"kernels:{seed}:{index}")
    is_float = rng.random() < 0.6
    draft = KernelDraft(rng, np.float32 if is_float else np.int32)
    units = available_units()
    if any(u.name == "warp_shuffle_vote" for u in units):
        # a separate draw (the main one's sequence stays as it was for guarded kernels)
        draft.guarded = random.Random(f"kernels-warp:{seed}:{index}").random() >= 0.3
    for _ in range(rng.randint(1, 6)):
        fitting = [u for u in units if u.applies(draft)]
        unit = rng.choices(fitting, [u.weight for u in fitting])[0]
        unit.emit(draft)
        draft.units.append(unit.name)
    late = random.Random(f"kernels-late:{seed}:{index}")  # (the main draw's sequence stays)
    main_rng, draft.rng = draft.rng, late
    for name, chance in LATE_UNITS:
        unit = next((u for u in units if u.name == name), None)
        if unit is not None and unit.applies(draft) and late.random() < chance:
            unit.emit(draft)
            draft.units.append(unit.name)
    draft.rng = main_rng
    result = draft.names[-1]
    bad = rng.random() < 0.1
    if bad:
        draft.body.append(rng.choice(BAD_FORMS))
        draft.units.append("bad")
    prologue = textwrap.indent("".join(line + "\n" for line in draft.prologue), " " * 4)
    if draft.guarded:
        indented = textwrap.indent("\n".join(draft.body), " " * 8)
        source = textwrap.dedent("""\
            import pypto as pto

            @pto.kernel
            def gen(x, y, o, n):
                i = pto.get_global_id()
            {prologue}    if i < n:
                    a = pto.load(x + i)
                    b = pto.load(y + i)
            {body}
                    pto.store(o + i, {result})
            """).format(prologue=prologue, body=indented, result=result)
    else:  # every lane of the launch runs the body (the inputs cover the whole launch)
        indented = textwrap.indent("\n".join(draft.body), " " * 4)
        source = textwrap.dedent("""\
            import pypto as pto

            @pto.kernel
            def gen(x, y, o, n):
                i = pto.get_global_id()
            {prologue}    a = pto.load(x + i)
                b = pto.load(y + i)
            {body}
                if i < n:
                    pto.store(o + i, {result})
            """).format(prologue=prologue, body=indented, result=result)
    dtype, steps, guarded = draft.dtype, list(draft.steps), draft.guarded

    def reference(xs: np.ndarray, ys: np.ndarray, n: int) -> np.ndarray:
        active = n if guarded else lanes
        with np.errstate(all="ignore"):
            env: Env = {"a": xs[:active], "b": ys[:active],
                        "lane": np.arange(active, dtype=dtype), "x": xs, "y": ys}
            for step in steps:
                step(env)
            return env[result][:n]

    from pypto import passes

    pipeline = None
    if rng.random() < 0.5:
        lowering = getattr(passes, "LOWERING_PASSES", ())  # out of pto: not compile() passes
        safe = [p for p in sorted(passes.PASSES) if p not in lowering]
        pipeline = ",".join(rng.choice(safe) for _ in range(rng.randint(1, 3)))
    n_case, block = rng.choice([1, 37, 64, 200]), rng.choice([32, 64, 128])
    lanes = -(-n_case // block) * block  # the launch's lanes (a whole number of blocks)
    return KernelCase(source, None if bad else reference, dtype, n_case, block, pipeline,
                      tuple(draft.units))


# ---------------------------------------------------------------------------------------------
# backends
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelBackend:
    """How the fuzzer runs a compiled kernel on one backend."""

    name: str
    launch: Callable[[Any, int, int, tuple[Any, ...]], None]
    """Enqueue `compiled` on grid x block with the arguments (the fuzzer synchronises)."""
    unsupported: tuple[type[BaseException], ...] = ()
    """Exceptions meaning "this backend does not compile this kernel": counted, not crashes."""


def _interpreter() -> KernelBackend:
    import pypto as pto

    def launch(compiled: Any, grid: int, block: int, args: tuple[Any, ...]) -> None:
        pto.launch(compiled, grid=grid, block=block, args=args)

    return KernelBackend("interpreter", launch)


def _native() -> KernelBackend:
    import pypto as pto

    try:
        from pypto.backend.native.jit import NativeUnsupported  # type: ignore[import-not-found]
    except ImportError as exc:
        raise RuntimeError("fuzz backend 'native' asked for, but this pypto has no native "
                           "backend (pypto.backend.native)") from exc

    def launch(compiled: Any, grid: int, block: int, args: tuple[Any, ...]) -> None:
        pto.launch(compiled, grid=grid, block=block, args=args, backend="native")

    return KernelBackend("native", launch, (NativeUnsupported,))


KERNEL_BACKENDS: dict[str, Callable[[], KernelBackend]] = {"interpreter": _interpreter,
                                                            "native": _native}
"""Backends the fuzzer can run generated kernels on, by name (factories)."""

BACKENDS_ENV = "PYPTO_FUZZ_BACKENDS"
DEFAULT_BACKENDS = ("interpreter",)

UNSUPPORTED: dict[str, int] = {}
"""Per backend: generated kernels it refused as unsupported (this process)."""


def backends(names: str | None = None) -> list[KernelBackend]:
    """The backends named (comma-separated; default PYPTO_FUZZ_BACKENDS, else the
    interpreter alone)."""
    text = names if names is not None else os.environ.get(BACKENDS_ENV, "")
    chosen = [w.strip() for w in text.split(",") if w.strip()] or list(DEFAULT_BACKENDS)
    unknown = [w for w in chosen if w not in KERNEL_BACKENDS]
    if unknown:
        raise ValueError(f"unknown fuzz backend(s) {', '.join(unknown)}; known: "
                         f"{', '.join(KERNEL_BACKENDS)}")
    return [KERNEL_BACKENDS[w]() for w in chosen]


def _inputs(case: KernelCase, index: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(index)
    if case.dtype == np.float32:
        return (rng.uniform(-4, 4, size).astype(np.float32),
                rng.uniform(-4, 4, size).astype(np.float32))
    return (rng.integers(-1000, 1000, size).astype(np.int32),
            rng.integers(-1000, 1000, size).astype(np.int32))


def run_kernel_case(case: KernelCase, workdir: Path, index: int,
                    on: list[KernelBackend] | None = None) -> tuple[str, str] | None:
    """Compile the case once, run it on every backend of `on` (default `backends()`); a crash
    as (kind, detail), or None."""
    import pypto as pto

    from tests.fuzz.fuzz import Hang, TIME_LIMIT, time_limit

    on = backends() if on is None else on
    path = workdir / f"fuzz_kernel_{index}.py"
    path.write_text(case.source)
    size = 256
    xs, ys = _inputs(case, index, size)
    outs: dict[str, np.ndarray] = {}
    try:
        with time_limit(TIME_LIMIT):
            namespace: dict[str, Any] = {}
            exec(compile(case.source, str(path), "exec"), namespace)  # noqa: S102
            kernel = namespace["gen"]
            grid = (case.n + case.block - 1) // case.block
            ck = None
            for backend in on:
                dx, dy, do = (pto.alloc_tensor(size * 4, case.dtype) for _ in range(3))
                try:
                    pto.memcpy_h2d(dx, xs)
                    pto.memcpy_h2d(dy, ys)
                    pto.memcpy_h2d(do, np.zeros(size, case.dtype))
                    if ck is None:
                        ck = pto.compile(kernel, args=(dx, dy, do, case.n), block=case.block,
                                         pipeline=case.pipeline)
                    try:
                        backend.launch(ck, grid, case.block, (dx, dy, do, case.n))
                        out = np.empty(size, case.dtype)
                        pto.memcpy_d2h(out, do)
                    except backend.unsupported:
                        UNSUPPORTED[backend.name] = UNSUPPORTED.get(backend.name, 0) + 1
                        continue
                    outs[backend.name] = out
                finally:
                    for t in (dx, dy, do):
                        with contextlib.suppress(pto.PtoError):  # already reported above
                            t.free()
    except Hang as hang:
        return "hang", str(hang)
    except pto.PtoError as exc:
        if case.reference is None:
            return None
        if isinstance(exc, pto.CompileError) and "cast" in str(exc):
            return None  # e.g. a comparison of mixed types the generator did not foresee
        return "unexpected error", f"{type(exc).__name__}: {exc}"
    except BaseException:  # noqa: BLE001 - the oracle: anything else is a crash
        return "traceback", traceback.format_exc()
    if case.reference is None:
        return "accepted a bad kernel", "a deliberately wrong kernel compiled and ran"
    expected = case.reference(xs, ys, case.n)
    first: tuple[str, np.ndarray] | None = None
    for name, out in outs.items():
        got = out[:case.n]
        same = (got.view(np.uint32) == expected.astype(case.dtype).view(np.uint32)) | (
            np.isnan(got.astype(np.float64)) & np.isnan(expected.astype(np.float64)))
        if not same.all() or not (out[case.n:] == 0).all():
            at = int(np.argmin(same)) if not same.all() else case.n
            return "wrong answer", (f"{name}: element {at}: got "
                                    f"{got[at] if at < case.n else out[at]!r}, NumPy "
                                    f"{expected[at] if at < case.n else 0!r}")
        if first is None:
            first = (name, out)
        elif out.tobytes() != first[1].tobytes():
            at = int(np.argmin(out.view(np.uint8) == first[1].view(np.uint8))) // 4
            return "backends differ", (f"element {at}: {first[0]} {first[1][at]!r} "
                                       f"({first[1][at:at + 1].view(np.uint32)[0]:#010x}), "
                                       f"{name} {out[at]!r} "
                                       f"({out[at:at + 1].view(np.uint32)[0]:#010x})")
    return None
