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
    result = draft.names[-1]
    bad = rng.random() < 0.1
    if bad:
        draft.body.append(rng.choice(BAD_FORMS))
        draft.units.append("bad")
    if draft.guarded:
        indented = textwrap.indent("\n".join(draft.body), " " * 8)
        source = textwrap.dedent("""\
            import pypto as pto

            @pto.kernel
            def gen(x, y, o, n):
                i = pto.get_global_id()
                if i < n:
                    a = pto.load(x + i)
                    b = pto.load(y + i)
            {body}
                    pto.store(o + i, {result})
            """).format(body=indented, result=result)
    else:  # every lane of the launch runs the body (the inputs cover the whole launch)
        indented = textwrap.indent("\n".join(draft.body), " " * 4)
        source = textwrap.dedent("""\
            import pypto as pto

            @pto.kernel
            def gen(x, y, o, n):
                i = pto.get_global_id()
                a = pto.load(x + i)
                b = pto.load(y + i)
            {body}
                if i < n:
                    pto.store(o + i, {result})
            """).format(body=indented, result=result)
    dtype, steps, guarded = draft.dtype, list(draft.steps), draft.guarded

    def reference(xs: np.ndarray, ys: np.ndarray, n: int) -> np.ndarray:
        active = n if guarded else lanes
        with np.errstate(all="ignore"):
            env: Env = {"a": xs[:active], "b": ys[:active],
                        "lane": np.arange(active, dtype=dtype)}
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
