"""Fuzzers for pypto: `.mlir` through pypto-opt, generated Python kernels, host-API misuse.

A *crash* is what a user must never see: a traceback or an exception that is not a `PtoError`
(pypto-opt: an exit status other than 0 or 1, or "Traceback" on stderr), a hang (more than
`TIME_LIMIT` seconds for one input), or a wrong answer (a generated kernel whose result differs
from NumPy, or a good launch after misuse that computes the wrong thing).

Targets (each input is a pure function of (target, seed, index), so a crash is reproducible):

- `mlir`: mutated seed files (tests/filecheck/**/*.mlir, random barrier kernels, generated
  arith kernels) through `pypto-opt` with a random pipeline drawn from the pass *registry*
  (`pypto.passes.PASSES`: passes added later are fuzzed without editing this file) with random
  option values, and random driver flags;
- `kernels`: generated Python kernels built from *generator units* (tests/fuzz/kernels.py: float32 /
  int32 arithmetic, comparisons, `pto.select`, branches, uniform, SIMT and static loops,
  subscripts, warp reductions; a new language form is one more unit; sometimes deliberately ill-typed) through
  `pto.compile()` with a random registry pipeline, then launched on every selected backend
  (`--backends` / PYPTO_FUZZ_BACKENDS, default the interpreter) and compared bit for bit with
  NumPy and with each other;
- `misuse`: random sequences of host-API calls with bad arguments (sizes, dtypes, grids, freed
  tensors, streams, argument order), each allowed to raise only a `PtoError`, followed by a good
  launch whose result is checked and a check that device memory is all given back;
- `literals`: one builtin call per kernel with extreme literals (2^64, 10^400, 1e39, inf, -0.0,
  None, strings, dtypes ...) in one or two argument positions: a `PtoError` or success only;
- `emit`: `pypto-opt --emit=trace|cost|timeline|l1-map|l1-map-svg` on the mlir seeds with random
  launches; stdout must be the machine output alone (JSON, SVG, no printf lines);
- `debugger`: random REPL commands with hostile words through stdin: no traceback, no
  "internal debugger error";
- `forksignal`: SIGINT at a random moment around a launch + sync (the result is right or the
  interruption is reported, never torn silently), or a fork at a random moment while another
  thread synchronises (the child finishes and can launch).

The CI part is tests/fuzz/test_fuzz.py (fixed seeds, seconds). The long mode:

    python -m tests.fuzz.fuzz --target all --count 10000 --jobs 2 --seed 1
    python -m tests.fuzz.fuzz --target literals,emit --count 2000   # some targets only

prints inputs tried and crashes per target; each crash is minimised (line-wise delta debugging)
and written to --out (default fuzz-crashes/) for turning into a regression test.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import signal
import sys
import textwrap
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TIME_LIMIT = 20.0
"""Seconds one input may take before it counts as a hang (generous: 2 shared cores)."""


class Hang(BaseException):
    """Raised by the alarm when one input runs past TIME_LIMIT."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Any:
    """SIGALRM-based limit (main thread of a worker process); a no-op elsewhere."""
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal,
                                                                                 "setitimer"):
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no result after {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Crash:
    target: str
    seed: int
    index: int
    kind: str           # "traceback", "exit 70", "hang", "wrong answer", "leak", ...
    detail: str
    reproducer: str     # the input (mlir text, kernel source, or misuse script)
    argv: list[str] = field(default_factory=list)

    def signature(self) -> str:
        """What makes two crashes the same bug: the kind and the last traceback line."""
        last = [line for line in self.detail.strip().splitlines() if line.strip()]
        return f"{self.target}:{self.kind}:{last[-1][:120] if last else ''}"


# ---------------------------------------------------------------------------------------------
# target 1: .mlir through pypto-opt
# ---------------------------------------------------------------------------------------------

_TOKENS = ['"', "{", "}", "(", ")", "<", ">", "%", "%0", "^bb0", ":", ",", "=", "loc(", '"k.py"',
           "f32", "i32", "i64", "f16", "bf16", "i1", "index", "!pto.ptr<f32, global>",
           "!pto.l1<64xf32>", "pto.load", "pto.store", "arith.addf", "arith.constant",
           "scf.for", "scf.if", "func.return", "-1", "0", "2147483648", "9" * 40, "1.0e308",
           "0x7fc00000", "nan", "inf", "\\", "\n", "// -----\n", "attributes {pto.kernel}",
           "{offset = 1024 : i64}", "dense<1.0>", "unit", "#pto", "!pto", "@k", "\x00", "é"]


def mlir_seeds() -> list[str]:
    """Seed texts: the FileCheck .mlir files (split into chunks) and generated kernels."""
    from tests.passes.random_kernels import generate

    seeds: list[str] = []
    for path in sorted((ROOT / "tests" / "filecheck").rglob("*.mlir")):
        text = path.read_text()
        lines = [line for line in text.splitlines() if not line.startswith("// RUN")]
        for chunk in "\n".join(lines).split("// -----"):
            if chunk.strip():
                seeds.append(chunk.strip() + "\n")
    for number in range(20):
        seeds.append(generate(number))
    for index in range(20):
        seeds.append(arith_kernel(random.Random(index)))
    return seeds


def arith_kernel(rng: random.Random) -> str:
    """A generated kernel of scalar arith on loaded values (folding and CSE fodder)."""
    ty = rng.choice(["f32", "i32", "f16", "i64"])
    is_float = ty.startswith("f")
    ops = (["addf", "subf", "mulf", "divf", "maximumf", "minimumf"] if is_float else
           ["addi", "subi", "muli", "andi", "ori", "xori", "shli", "maxsi", "minsi"])
    lines = [f"func.func @k(%p: !pto.ptr<{ty}, global>, %n: i32) attributes {{pto.kernel}} {{",
             "  %i = pto.get_global_id 0 : i32",
             f"  %q = pto.addptr %p, %i : !pto.ptr<{ty}, global>, i32 -> !pto.ptr<{ty}, global>",
             f"  %v0 = pto.load %q : !pto.ptr<{ty}, global> -> {ty}"]
    values = ["%v0"]
    for k in range(1, rng.randint(2, 10)):
        if rng.random() < 0.4:
            c = rng.choice(["0.0", "1.0", "-2.5", "3.0e38", "1.0e-45"] if is_float else
                           ["0", "1", "-1", "7", "2147483647", "31"])
            lines.append(f"  %v{k} = arith.constant {c} : {ty}")
        else:
            a, b = rng.choice(values), rng.choice(values)
            lines.append(f"  %v{k} = arith.{rng.choice(ops)} {a}, {b} : {ty}")
        values.append(f"%v{k}")
    lines += [f"  pto.store {values[-1]}, %q : {ty}, !pto.ptr<{ty}, global>", "  func.return",
              "}"]
    return "\n".join(lines) + "\n"


def mutate(text: str, rng: random.Random) -> str:
    """1 to 4 random edits: characters, tokens, lines, numbers, types."""
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(8)
        n = len(text)
        at = rng.randrange(n + 1) if n else 0
        if kind == 0 and n:                                   # delete a span
            text = text[:at] + text[at + rng.randint(1, 12):]
        elif kind == 1:                                       # insert a token
            text = text[:at] + rng.choice(_TOKENS) + text[at:]
        elif kind == 2 and n:                                 # duplicate a span
            span = text[at:at + rng.randint(1, 40)]
            text = text[:at] + span + text[at:]
        else:
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            if kind == 3:
                del lines[i]
            elif kind == 4:
                lines.insert(rng.randrange(len(lines) + 1), lines[i])
            elif kind == 5:
                j = rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
            elif kind == 6:
                for old, new in (("f32", rng.choice(["i32", "f16", "i64", "f64"])),
                                 ("i32", rng.choice(["i64", "f32", "i1", "index"])),
                                 ("global", "local"), ("local", "global")):
                    if old in lines[i] and rng.random() < 0.5:
                        lines[i] = lines[i].replace(old, new, 1)
            else:
                lines[i] = _change_number(lines[i], rng)
            text = "\n".join(lines)
    return text


def _change_number(line: str, rng: random.Random) -> str:
    import re

    numbers = list(re.finditer(r"-?\d+(\.\d+)?(e[+-]?\d+)?", line))
    if not numbers:
        return line
    m = rng.choice(numbers)
    new = rng.choice(["0", "-1", "1", "2147483648", "-9223372036854775809", "65536", "3.0e38",
                      "1.0e309", "4294967296", str(rng.randint(-100, 100))])
    return line[:m.start()] + new + line[m.end():]


def random_option_value(type_name: str, rng: random.Random) -> str:
    lowered = type_name.lower()
    if "bool" in lowered:
        return rng.choice(["true", "false", "1", "maybe"])
    if "tuple" in lowered or "list" in lowered:
        return ",".join(rng.choice(["1", "2", "32", "64", "0", "-1", "1024", "4096"])
                        for _ in range(rng.randint(1, 4)))
    if "int" in lowered:
        if rng.random() < 0.7:  # mostly valid values, so that the pass runs
            return rng.choice(["32", "64", "128", "256"])
        return rng.choice(["0", "1", "-1", "7", "1024", "1025", "65536", "9" * 25, "x"])
    if "float" in lowered:
        return rng.choice(["0.5", "-1", "1e300", "nan"])
    return rng.choice(["a", "", "1", '"quoted"'])


def random_pipeline(rng: random.Random, allow_options: bool = True) -> str:
    """Up to 4 passes drawn from the registry, each maybe with random option values."""
    from pypto.passes import PASSES, pass_options

    names = sorted(PASSES)
    parts = []
    for _ in range(rng.randint(0, 4)):
        name = rng.choice(names)
        options = pass_options(PASSES[name]()) if allow_options else []
        chosen = [o for o in options if rng.random() < 0.1]
        if chosen:
            body = " ".join(f"{o.name}={random_option_value(o.type, rng)}" for o in chosen)
            parts.append(f"{name}{{{body}}}")
        else:
            parts.append(name)
    return ",".join(parts)


def mlir_input(seeds: list[str], seed: int, index: int) -> tuple[str, list[str]]:
    rng = random.Random(f"mlir:{seed}:{index}")
    base = rng.choice(seeds)
    text = mutate(base, rng) if rng.random() < 0.7 else base
    argv = ["-p", random_pipeline(rng)]
    for flag, p in (("--split-input-file", 0.2), ("--print-op-generic", 0.2),
                    ("--mlir-print-debuginfo", 0.2), ("--validate", 0.1),
                    ("--verify-diagnostics", 0.05), ("--print-ir-after-all", 0.05),
                    ("--allow-unregistered-dialect", 0.1)):
        if rng.random() < p:
            argv.append(flag)
    return text, argv


def run_mlir(text: str, argv: list[str], workdir: Path) -> tuple[str, str] | None:
    """Run pypto-opt in-process; (kind, detail) if it crashed."""
    from pypto.tools.opt import main

    path = workdir / "fuzz_input.mlir"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    out, err = io.StringIO(), io.StringIO()
    try:
        with time_limit(TIME_LIMIT), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            code = main([str(path), *argv])
    except Hang as hang:
        return "hang", str(hang)
    except BaseException:  # noqa: BLE001 - main() must not raise at all
        return "traceback", traceback.format_exc()
    if code not in (0, 1):
        return f"exit {code}", err.getvalue()[-4000:]
    if "Traceback (most recent call last)" in err.getvalue():  # (the input may say "Traceback")
        return "traceback", err.getvalue()[-4000:]
    return None


# ---------------------------------------------------------------------------------------------
# target 2: generated Python kernels through compile() and launch
# ---------------------------------------------------------------------------------------------

# generated kernels: tests/fuzz/kernels.py (generator units, backends)
from tests.fuzz.kernels import KernelCase, kernel_case, run_kernel_case  # noqa: E402,F401


# ---------------------------------------------------------------------------------------------
# target 3: host-API misuse, then a good launch
# ---------------------------------------------------------------------------------------------

_VECTOR_ADD = None


def _vector_add() -> Any:
    global _VECTOR_ADD
    if _VECTOR_ADD is None:
        import pypto as pto

        @pto.kernel
        def fuzz_vector_add(a, b, o, n):
            i = pto.get_global_id()
            if i < n:
                pto.store(o + i, pto.load(a + i) + pto.load(b + i))

        _VECTOR_ADD = fuzz_vector_add
    return _VECTOR_ADD


def misuse_script(seed: int, index: int) -> list[str]:
    """A sequence of host-API calls (Python statements) with bad arguments mixed in."""
    rng = random.Random(f"misuse:{seed}:{index}")
    steps = []
    sizes = ["64", "0", "-4", "3", "2**40", "2**70", "'64'", "64.0", "None", "True", "256"]
    dtypes = ["pto.float32", "pto.int32", "np.float64", "np.int8", "'float32'", "'nope'",
              "None", "pto.float16", "object"]
    for _ in range(rng.randint(1, 8)):
        kind = rng.randrange(12)
        t = f"T[{rng.randrange(4)}]"
        if kind == 0:
            steps.append(f"T.append(pto.alloc_tensor({rng.choice(sizes)}, "
                         f"{rng.choice(dtypes)}))")
        elif kind == 1:
            steps.append(f"{t}.free()")
        elif kind == 2:
            steps.append(f"pto.memcpy_h2d({t}, np.zeros({rng.choice(['16', '15', '0', '64'])}, "
                         f"{rng.choice(['np.float32', 'np.int32', 'np.float64'])}))")
        elif kind == 3:
            steps.append(f"pto.memcpy_d2h(np.zeros({rng.choice(['16', '64', '3'])}, "
                         f"np.float32), {t})")
        elif kind == 4:
            steps.append(f"pto.memcpy_h2d(np.zeros(16, np.float32), {t})")  # swapped order
        elif kind == 5:
            grid = rng.choice(["1", "0", "-1", "(1, 2)", "(1, 1, 1, 1)", "2**31", "1.5",
                               "(2**16, 2**16)", "'2'", "None", "[]"])
            block = rng.choice(["16", "0", "2048", "(32, 32, 2)", "7", "(1,)", "None"])
            args = rng.choice([f"({t}, {t}, {t}, 16)", f"({t}, {t}, {t})",
                               f"({t}, {t}, {t}, 16, 1)", "None", f"[{t}, {t}, {t}, 16]",
                               f"({t}, {t}, {t}, np.int8(3))", f"({t}, {t}, {t}, 2**64)",
                               f"({t}, {t}, np.zeros(4), 16)", f"({t}, {t}, {t}, 'x')"])
            stream = rng.choice(["None", "S", "'default'", "1"])
            steps.append(f"pto.launch(K, {grid}, {block}, {args}, stream={stream})")
        elif kind == 6:
            steps.append("pto.sync()")
        elif kind == 7:
            steps.append("S = pto.Stream()")
        elif kind == 8:
            steps.append("S.synchronize()")
        elif kind == 9:
            steps.append(f"pto.compile(K, args=({t}, {t}, {t}, 16), block="
                         f"{rng.choice(['0', '64', '4096', '(1, 1, 1, 1)'])}, pipeline="
                         f"{rng.choice(['None', repr('nope'), '123', repr('cse{x=1}'), repr('')])}"
                         f", target={rng.choice(['None', repr('/nonexistent.toml'), '3'])})")
        elif kind == 10:
            steps.append(f"pto.launch(print, 1, 1, ())")
        else:
            steps.append(f"with {t}: pass")
    return steps


def run_misuse(steps: list[str]) -> tuple[str, str] | None:
    import pypto as pto
    from pypto.runtime.device import default_device

    device = default_device()
    import gc

    with contextlib.suppress(pto.PtoError):
        pto.sync()
    gc.collect()  # tensors of earlier inputs (or tests) dropped but not yet collected
    before = device.used_bytes
    T: list[Any] = [pto.alloc_tensor(64 * 4) for _ in range(4)]
    env = {"pto": pto, "np": np, "T": T, "K": _vector_add(), "S": pto.Stream()}
    try:
        with time_limit(TIME_LIMIT):
            for step in steps:
                try:
                    exec(step, env)  # noqa: S102 - a generated misuse step
                except pto.PtoError:
                    pass
                except IndexError:
                    pass  # T[k] past the list: the script's own bookkeeping, not pypto
            with contextlib.suppress(pto.PtoError):
                pto.sync()
            # a good launch afterwards must still compute the right thing
            n = 200
            a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
            da, db, do = (pto.alloc_tensor(n * 4) for _ in range(3))
            pto.memcpy_h2d(da, a)
            pto.memcpy_h2d(db, b)
            pto.launch(_vector_add(), grid=2, block=128, args=(da, db, do, n))
            out = np.empty(n, np.float32)
            pto.memcpy_d2h(out, do)
            for t in (da, db, do):
                t.free()
    except Hang as hang:
        return "hang", str(hang)
    except BaseException:  # noqa: BLE001
        return "traceback", traceback.format_exc()
    finally:
        for t in T:
            with contextlib.suppress(pto.PtoError):
                t.free()
        env.clear()
        T.clear()
    if not np.array_equal(out, a + b):
        return "wrong answer", "the good launch after misuse computed the wrong result"
    gc.collect()
    if device.used_bytes != before:
        return "leak", f"{device.used_bytes - before} bytes of device memory not given back"
    return None


# ---------------------------------------------------------------------------------------------
# target 4: extreme literal values in every builtin argument position
# ---------------------------------------------------------------------------------------------

EXTREMES = ["0", "-1", "1", "2**31", "2**31 - 1", "-2**31", "-2**31 - 1", "2**63", "2**63 - 1",
            "-2**63", "-2**63 - 1", "2**64", "10**400", "-10**400", "2**1000", "1e39", "-1e39",
            "1e400", "-1e400", "-0.0", "0.0", "5e-324", "1e-320", "65504.0", "65520.0",
            "3.4028235e38", "3.5e38", "1.5", "-0.5", "0.5", "True", "False", "None", "'s'",
            "1j", "(1, 2)", "[1]", "pto.float32", "pto.int64", "n", "i", "x", "0x7fffffff",
            "-(2**31)", "2**-1074", "1e308 * 10"]
"""Literal values put in one argument position at a time (issue 22: `pto.cast(1e39,
pto.int32)` raised OverflowError, `pto.mma(C, A, B, 2**64, 4, 4)` a VerifyException)."""

BUILTIN_CALLS = [
    ("pto.store(oi + i, pto.get_global_id({}))", ["0"]),
    ("pto.store(oi + i, pto.get_local_id({}))", ["0"]),
    ("pto.store(oi + i, pto.get_block_id({}))", ["1"]),
    ("pto.store(oi + i, pto.get_block_dim({}))", ["2"]),
    ("pto.store(oi + i, pto.get_grid_dim({}))", ["0"]),
    ("pto.store(o + i, pto.load(x + {}))", ["i"]),
    ("pto.store(o + {}, {})", ["i", "1.0"]),
    ("pto.store(oi + i, {})", ["7"]),
    ("pto.store(oi + i, pto.cast({}, {}))", ["1.5", "pto.int32"]),
    ("pto.store(o + i, pto.cast({}, pto.float32))", ["3"]),
    ("pto.store(o + i, pto.cast(pto.cast({}, pto.float16), pto.float32))", ["3.0"]),
    ("pto.store(o + i, pto.cast(pto.cast({}, pto.int64), pto.float32))", ["3.0"]),
    ("pto.fma(o + i, {}, {}, {})", ["1.0", "2.0", "3.0"]),
    ("pto.fma(oi + i, {}, {}, {})", ["1", "2", "3"]),
    ("v = pto.atomic_add(o + {}, {})", ["i", "1.0"]),
    ("v = pto.atomic_add(oi + {}, {})", ["0", "1"]),
    ("b = pto.alloc_local({})\npto.store(b + 0, 1.0)", ["64"]),
    ("b = pto.alloc_local(64, {})", ["pto.float32"]),
    ("pto.fill(t, {}, {})", ["1.0", "64"]),
    ("tok = pto.async_load(t, x + {}, {}, rows={}, src_stride={}, dst_stride={})\npto.wait(tok)",
     ["0", "256", "1", "64", "64"]),
    ("tok = pto.async_store(o + {}, t, {})\npto.wait(tok)", ["0", "256"]),
    ("pto.store(o + {}, t, {}, rows={})", ["0", "256", "1"]),
    ("pto.mma(t, t, t, {}, {}, {})", ["4", "4", "4"]),
    ("pto.store(o + i, pto.exp({}))", ["1.0"]),
    ("pto.store(o + i, pto.log({}))", ["1.0"]),
    ("pto.store(o + i, pto.sqrt({}))", ["1.0"]),
    ("pto.store(o + i, pto.rsqrt({}))", ["1.0"]),
    ("pto.store(o + i, pto.tanh({}))", ["1.0"]),
    ("pto.store(o + i, pto.select({}, {}, {}))", ["i < 3", "1.0", "2.0"]),
    ("pto.printf('%d %f\\n', {}, {})", ["i", "1.5"]),
    ("pto.store(o + i, pto.load(x + i) + {})", ["1.0"]),
    ("pto.store(o + i, pto.load(x + i) * {})", ["1.0"]),
    ("pto.store(o + i, pto.load(x + i) / {})", ["2.0"]),
    ("pto.store(o + i, pto.load(x + i) ** {})", ["2.0"]),
    ("pto.store(o + i, pto.load(x + i) // {})", ["2.0"]),
    ("pto.store(o + i, pto.load(x + i) % {})", ["2.0"]),
    ("pto.store(oi + i, pto.load(xi + i) // {})", ["3"]),
    ("pto.store(oi + i, pto.load(xi + i) % {})", ["3"]),
    ("pto.store(oi + i, pto.load(xi + i) << {})", ["3"]),
    ("pto.store(oi + i, pto.load(xi + i) >> {})", ["3"]),
    ("pto.store(oi + i, pto.load(xi + i) ** {})", ["3"]),
    ("pto.store(oi + i, pto.load(xi + i) & {})", ["3"]),
    ("pto.store(oi + i, pto.load(xi + i) * {})", ["3"]),
    ("pto.store(oi + i, {} - pto.load(xi + i))", ["3"]),
    ("pto.store(o + i, pto.load(x + i) if pto.load(x + i) < {} else {})", ["0.0", "1.0"]),
    ("if i < {}:\n    pto.store(o + i, 1.0)", ["n"]),
    ("for j in range(0, 2, {}):\n    pto.store(o + i, 1.0)", ["1"]),
    ("pto.store(o + i, pto.load(x + i) + pto.constexpr({}))", ["1"]),
    ("pto.store(o + i, float({}))", ["1"]),
    ("pto.store(oi + i, abs({}))", ["-3"]),
    ("pto.store(oi + i, min({}, {}))", ["3", "i"]),
    ("pto.store(o + i, max({}, pto.load(x + i)))", ["1.0"]),
]


def literal_case(seed: int, index: int) -> str:
    """A kernel whose one builtin call has extreme literals in 1-2 argument positions."""
    rng = random.Random(f"literals:{seed}:{index}")
    template, defaults = rng.choice(BUILTIN_CALLS)
    values = list(defaults)
    for _ in range(1 if len(values) == 1 or rng.random() < 0.7 else 2):
        values[rng.randrange(len(values))] = rng.choice(EXTREMES)
    body = textwrap.indent(template.format(*values), " " * 4)
    return ("import pypto as pto\n\n@pto.kernel\ndef lit(x, xi, o, oi, n):\n"
            "    i = pto.get_global_id()\n    t = pto.alloc_local(64)\n" + body + "\n")


def run_literal_case(source: str, workdir: Path, index: int) -> tuple[str, str] | None:
    """Compile and launch; anything but a PtoError (or success) is a crash."""
    import pypto as pto

    path = workdir / f"fuzz_literal_{index}.py"
    path.write_text(source)
    tensors: list[Any] = []
    try:
        with time_limit(TIME_LIMIT), contextlib.redirect_stdout(io.StringIO()):
            namespace: dict[str, Any] = {}
            exec(compile(source, str(path), "exec"), namespace)  # noqa: S102
            tensors = [pto.alloc_tensor(256 * 4, dt) for dt in (pto.float32, pto.int32,
                                                                 pto.float32, pto.int32)]
            try:
                pto.launch(namespace["lit"], grid=2, block=32, args=(*tensors, 64))
                pto.sync()
            except pto.PtoError:
                pass
    except Hang as hang:
        return "hang", str(hang)
    except BaseException:  # noqa: BLE001
        return "traceback", traceback.format_exc()
    finally:
        for t in tensors:
            with contextlib.suppress(pto.PtoError):
                t.free()
    return None


# ---------------------------------------------------------------------------------------------
# target 5: pypto-opt --emit outputs, checked as JSON / SVG
# ---------------------------------------------------------------------------------------------

_DIMS = ["1", "2", "4", "32", "64", "0", "-1", "2147483648", "65536,32769", "16,16",
         "2048", "x", "1,1,1,1", "99999999999999999999", "3x2"]
"""Grids / blocks: small ones, and ones the launch check must refuse (beyond 2^31 lanes, a
block beyond max_block_lanes, malformed). Valid launches stay small: a legal launch of
millions of lanes takes as long to simulate as it takes, which is no hang."""


def emit_input(seeds: list[str], seed: int, index: int) -> tuple[str, list[str]]:
    rng = random.Random(f"emit:{seed}:{index}")
    base = rng.choice(seeds)
    text = mutate(base, rng) if rng.random() < 0.4 else base
    kind = rng.choice(["trace", "cost", "timeline", "l1-map", "l1-map-svg", "trace",
                       "l1-map-svg"])
    argv = [f"--emit={kind}"]
    if rng.random() < 0.5:
        argv += ["-p", random_pipeline(rng, allow_options=rng.random() < 0.3)]
    if rng.random() < 0.6:
        argv += ["--grid", rng.choice(_DIMS[:5] if rng.random() < 0.7 else _DIMS)]
    if rng.random() < 0.6:
        argv += ["--block", rng.choice(_DIMS[:6] if rng.random() < 0.7 else _DIMS)]
    if rng.random() < 0.2:
        argv += ["--model", rng.choice(["table", "fused"])]
    if rng.random() < 0.3:
        argv += ["--arg", rng.choice(["n=4", "n=0", "n=-1", "n=99999999999999999999",
                                      "p=0", "p=1", "nope=1", "n=x", "=3", "n"])]
    if rng.random() < 0.15:
        argv.append("--split-input-file")
    return text, argv


def check_emit_output(kind: str, out: str) -> str | None:
    """Why stdout is not the machine output `kind` promises (None when it is)."""
    import json
    import xml.etree.ElementTree as ET

    chunks = [c for c in out.split("// -----\n") if c.strip()]
    for chunk in chunks:
        if kind == "trace":
            try:
                json.loads(chunk)
            except ValueError as err:
                return f"--emit=trace output is not JSON ({err}): {chunk[:200]!r}"
        elif kind == "l1-map-svg":
            pictures = chunk.split("</svg>")
            if pictures[-1].strip():
                return f"text after the last </svg>: {pictures[-1][:200]!r}"
            for picture in pictures[:-1]:
                try:
                    ET.fromstring(picture + "</svg>")
                except ET.ParseError as err:
                    return f"--emit=l1-map-svg output is not SVG ({err}): {picture[:200]!r}"
        elif kind in ("cost", "timeline") and "] " in chunk and "[block " in chunk:
            return f"printf output on stdout: {chunk[:200]!r}"
    return None


def run_emit(text: str, argv: list[str], workdir: Path) -> tuple[str, str] | None:
    from pypto.tools.opt import main

    path = workdir / "fuzz_emit.mlir"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    out, err = io.StringIO(), io.StringIO()
    try:
        with time_limit(TIME_LIMIT), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            code = main([str(path), *argv])
    except Hang as hang:
        return "hang", str(hang)
    except BaseException:  # noqa: BLE001
        return "traceback", traceback.format_exc()
    if code not in (0, 1):
        return f"exit {code}", err.getvalue()[-4000:]
    if "Traceback (most recent call last)" in err.getvalue() or \
            "internal interpreter error" in err.getvalue():
        return "traceback", err.getvalue()[-4000:]
    if code == 0:
        kind = next(a.split("=", 1)[1] for a in argv if a.startswith("--emit="))
        bad = check_emit_output(kind, out.getvalue())
        if bad is not None:
            return "bad machine output", bad
    return None


# ---------------------------------------------------------------------------------------------
# target 6: debugger commands through stdin
# ---------------------------------------------------------------------------------------------

DEBUG_KERNEL = """\
import pypto as pto


@pto.kernel
def dbg_target(x, o, n, BLOCK: pto.constexpr):
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local(BLOCK)
    v = 0.0
    if i < n:
        v = pto.load(x + i) * 2.0
    pto.store(buf + tid, v)
    pto.barrier_block()
    acc = 0.0
    for j in range(3):
        acc = acc + pto.load(buf + (tid + j) % BLOCK)
    if i < n:
        pto.store(o + i, acc)
"""

_DBG_WORDS = ["0", "1", "-1", "3", "7", "12", "2**31", "99999999999999999999999", "1e9", "0.5",
              "nan", "\x00", "é", "x" * 300, "", "0-1000000000", "1,2,3", ":5", "5:", "-", ",",
              "0--1", "0-" + "9" * 30, "1,,2", "load", "store", "LOAD", "barrier", "all",
              "float16", "int64", "nope", "(1, 0, 0)", "1,0,0", "\t", "%", "{}", "\\",
              "i", "v", "acc", "buf", "tid", "x", "o", "n", "j"]
_DBG_COMMANDS = ["step", "s", "stepi", "si", "next", "n", "continue", "c", "break", "b",
                 "delete", "d", "print", "p", "l1", "timeline", "where", "list", "block", "warp",
                 "restart", "r", "help", "frobnicate", ""]


def debugger_script(seed: int, index: int) -> tuple[list[str], dict[str, Any]]:
    rng = random.Random(f"debugger:{seed}:{index}")
    commands = []
    for _ in range(rng.randint(1, 12)):
        words = [rng.choice(_DBG_COMMANDS)]
        words += [rng.choice(_DBG_WORDS) for _ in range(rng.choice([0, 0, 1, 1, 2, 3]))]
        commands.append(" ".join(words))
    commands.append("quit")
    block = rng.choice([32, 64])
    options = {"grid": rng.choice([1, 2, 3]), "block": block,
               "pipeline": rng.choice([None, "pto-verify-barriers"]),
               "block_id": rng.choice([0, 0, 1]),
               "warp": rng.choice([None, None, *range(block // 32)])}
    return commands, options


def run_debugger(commands: list[str], options: dict[str, Any], workdir: Path
                 ) -> tuple[str, str] | None:
    import pypto as pto
    import pypto.debug as dbg
    from pypto.debug.repl import run_repl

    path = workdir / "fuzz_dbg_kernel.py"
    if not path.exists():
        path.write_text(DEBUG_KERNEL)
    out = io.StringIO()
    tensors: list[Any] = []
    try:
        with time_limit(TIME_LIMIT):
            namespace: dict[str, Any] = {}
            exec(compile(DEBUG_KERNEL, str(path), "exec"), namespace)  # noqa: S102
            n = 100
            tensors = [pto.alloc_tensor(256 * 4) for _ in range(2)]
            block = options["block"]
            try:
                session = dbg.debug_kernel(
                    namespace["dbg_target"], args=(*tensors, n, block),
                    grid=options["grid"], block=block, pipeline=options["pipeline"],
                    block_id=options["block_id"] % options["grid"], warp=options["warp"],
                    out=out)
            except pto.PtoError as err:
                return "unexpected error", f"debug_kernel: {type(err).__name__}: {err}"
            run_repl(session, "fuzz", stdin=io.StringIO("\n".join(commands) + "\n"), stdout=out)
    except Hang as hang:
        return "hang", str(hang)
    except BaseException:  # noqa: BLE001
        return "traceback", traceback.format_exc()
    finally:
        for t in tensors:
            with contextlib.suppress(pto.PtoError):
                t.free()
    if "internal debugger error" in out.getvalue():
        line = next(ln for ln in out.getvalue().splitlines() if "internal debugger error" in ln)
        return "internal debugger error", line
    return None


# ---------------------------------------------------------------------------------------------
# target 7: fork and SIGINT at random moments around a launch
# ---------------------------------------------------------------------------------------------

_SLOW = None
OUTCOMES: dict[str, int] = {}
"""How the fork/signal inputs went (interrupt reported, completed, landed outside the
launch, child saw a half-run launch ...): evidence that the random timing hits every case."""


def _outcome(what: str) -> None:
    OUTCOMES[what] = OUTCOMES.get(what, 0) + 1


def _slow_kernels() -> tuple[Any, Any]:
    """`spin(o, reps)`: o[i] = i * 3 + reps after `reps` loop trips; `ones(o)`."""
    global _SLOW
    if _SLOW is None:
        import pypto as pto

        @pto.kernel
        def fuzz_spin(o, reps):
            i = pto.get_global_id()
            acc = 0
            for _ in range(reps):
                acc = acc + 1
            pto.store(o + i, i * 3 + acc)

        @pto.kernel
        def fuzz_ones(o):
            pto.store(o + pto.get_global_id(), 1)

        _SLOW = (fuzz_spin, fuzz_ones)
    return _SLOW


def fork_signal_case(seed: int, index: int) -> dict[str, Any]:
    rng = random.Random(f"forksignal:{seed}:{index}")
    reps = rng.choice([1, 3000, 20000, 60000])
    # a launch takes ~1-2 us per loop trip: the moment falls before, inside or after it
    return {"kind": rng.choice(["sigint", "sigint", "fork"]), "reps": reps,
            "delay": round(rng.uniform(0.0, 1.3) * max(reps, 500) * 2e-6, 6),
            "blocks": rng.choice([1, 2, 4])}


def _spin_expected(n: int, reps: int) -> np.ndarray:
    return (np.arange(n, dtype=np.int64) * 3 + reps).astype(np.int32)


def run_fork_signal(case: dict[str, Any]) -> tuple[str, str] | None:
    """SIGINT: after the interrupt, the next synchronising call either completes with the
    right result or raises KernelInterruptedError — never a torn result silently — and the
    runtime stays usable. Fork (while another thread syncs): the child finishes (no deadlock)
    and can launch; the parent's result is right."""
    import threading

    import pypto as pto

    spin, ones = _slow_kernels()
    n = 32 * case["blocks"]
    expected = _spin_expected(n, case["reps"])
    o = pto.alloc_tensor(n * 4, pto.int32)
    try:
        with time_limit(TIME_LIMIT):
            pto.memcpy_h2d(o, np.zeros(n, np.int32))
            pto.compile(spin, args=(o, case["reps"]), block=32)
            pto.compile(ones, args=(o,), block=32)
            if case["kind"] == "sigint":
                found = _sigint_case(pto, spin, ones, o, n, case, expected)
            else:
                found = _fork_case(pto, spin, ones, o, n, case, expected, threading)
    except Hang as hang:
        return "hang", str(hang)
    except BaseException:  # noqa: BLE001
        return "traceback", traceback.format_exc()
    finally:
        with contextlib.suppress(pto.PtoError):
            o.free()
    return found


def _sigint_case(pto: Any, spin: Any, ones: Any, o: Any, n: int, case: dict[str, Any],
                 expected: np.ndarray) -> tuple[str, str] | None:
    import threading

    armed = [True]

    def on_sigint(signum: int, frame: Any) -> None:
        if armed[0]:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    timer = threading.Timer(case["delay"], os.kill, (os.getpid(), signal.SIGINT))
    launched = interrupted = False
    try:
        try:
            try:
                timer.start()
                pto.launch(spin, grid=case["blocks"], block=32, args=(o, case["reps"]))
                launched = True
                pto.sync()
                time.sleep(case["delay"] * 2)  # let a late signal land here, not later
            finally:
                armed[0] = False
        except KeyboardInterrupt:
            interrupted = True
        timer.cancel()
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    out = np.empty(n, np.int32)
    try:
        pto.memcpy_d2h(out, o)
        clean = True
        _outcome("sigint: interrupt, then a clean sync" if interrupted else
                 "sigint: no interrupt in time")
    except pto.KernelInterruptedError:
        clean = False
        _outcome("sigint: interrupted launch reported")
        if not interrupted:
            return "false report", "KernelInterruptedError without an interrupt"
    if clean and not np.array_equal(out, expected) and not (
            not launched and not out.any()):
        return "torn", (f"after {'an' if interrupted else 'no'} interrupt the sync was clean "
                        f"but the output is neither the result nor untouched: {out[:8]}")
    with contextlib.suppress(pto.KernelInterruptedError):
        pto.sync()
    pto.launch(ones, grid=case["blocks"], block=32, args=(o,))
    pto.memcpy_d2h(out, o)
    if not (out == 1).all():
        return "wrong answer", "a launch after the interrupt computed the wrong result"
    return None


def _fork_case(pto: Any, spin: Any, ones: Any, o: Any, n: int, case: dict[str, Any],
               expected: np.ndarray, threading: Any) -> tuple[str, str] | None:
    errors: list[BaseException] = []

    def busy() -> None:
        try:
            pto.launch(spin, grid=case["blocks"], block=32, args=(o, case["reps"]))
            pto.sync()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=busy)
    thread.start()
    time.sleep(case["delay"])
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: must not deadlock, must be able to launch
        code = 3
        try:
            try:
                pto.sync()
            except pto.KernelInterruptedError:
                os.write(report_w, b"r")
            p = pto.alloc_tensor(32 * 4, pto.int32)
            pto.launch(ones, grid=1, block=32, args=(p,))
            got = np.empty(32, np.int32)
            pto.memcpy_d2h(got, p)
            code = 0 if (got == 1).all() else 4
        finally:
            os._exit(code)
    deadline = time.monotonic() + TIME_LIMIT / 2
    status = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.005)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        thread.join()
        os.close(report_r)
        os.close(report_w)
        return "hang", "the forked child did not finish (deadlock)"
    thread.join()
    os.close(report_w)
    reported = os.read(report_r, 1)
    os.close(report_r)
    _outcome("fork: the child saw a half-run launch" if reported else
             "fork: nothing running at the fork")
    if errors:
        return "unexpected error", f"{type(errors[0]).__name__}: {errors[0]}"
    if os.waitstatus_to_exitcode(status) != 0:
        return "child failed", f"exit status {os.waitstatus_to_exitcode(status)}"
    out = np.empty(n, np.int32)
    pto.memcpy_d2h(out, o)
    if not np.array_equal(out, expected):
        return "wrong answer", "the parent's launch computed the wrong result"
    return None


# ---------------------------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------------------------

TARGETS = ("mlir", "kernels", "misuse", "literals", "emit", "debugger", "forksignal")


HANG_CONFIRM_FACTOR = 5
"""A hang is confirmed by running the input again with this many times `TIME_LIMIT`: on 2 shared
cores under a nice'd long run, one slow LLVM compile can pass 20 s without hanging."""


def run_one(target: str, seed: int, index: int, workdir: Path,
            seeds: list[str] | None = None) -> Crash | None:
    """Run one input; a crash, or None. A hang counts only if a second, longer try hangs too."""
    crash = _run_one(target, seed, index, workdir, seeds)
    if crash is None or crash.kind != "hang":
        return crash
    # this module may run as __main__ beside the tests.fuzz.fuzz that kernels.py imports
    import tests.fuzz.fuzz as imported

    modules = {id(m): m for m in (sys.modules[__name__], imported)}.values()
    limit = TIME_LIMIT
    for module in modules:
        module.TIME_LIMIT = limit * HANG_CONFIRM_FACTOR
    try:
        return _run_one(target, seed, index, workdir, seeds)
    finally:
        for module in modules:
            module.TIME_LIMIT = limit


def _run_one(target: str, seed: int, index: int, workdir: Path,
             seeds: list[str] | None = None) -> Crash | None:
    if target == "mlir":
        text, argv = mlir_input(seeds if seeds is not None else mlir_seeds(), seed, index)
        found = run_mlir(text, argv, workdir)
        reproducer = text
    elif target == "kernels":
        case = kernel_case(seed, index)
        found = run_kernel_case(case, workdir, index)
        reproducer, argv = case.source, [f"pipeline={case.pipeline!r}", f"n={case.n}",
                                         f"block={case.block}"]
    elif target == "misuse":
        steps = misuse_script(seed, index)
        found = run_misuse(steps)
        reproducer, argv = "\n".join(steps), []
    elif target == "literals":
        reproducer, argv = literal_case(seed, index), []
        found = run_literal_case(reproducer, workdir, index)
    elif target == "emit":
        reproducer, argv = emit_input(seeds if seeds is not None else mlir_seeds(), seed, index)
        found = run_emit(reproducer, argv, workdir)
    elif target == "debugger":
        commands, options = debugger_script(seed, index)
        found = run_debugger(commands, options, workdir)
        reproducer, argv = "\n".join(commands), [repr(options)]
    else:
        case = fork_signal_case(seed, index)
        found = run_fork_signal(case)
        reproducer, argv = repr(case), []
    if found is None:
        return None
    return Crash(target, seed, index, found[0], found[1], reproducer, argv)


def minimise_mlir(crash: Crash, workdir: Path) -> str:
    """Line-wise then character-chunk delta debugging, keeping the same crash signature."""
    def still(text: str) -> bool:
        found = run_mlir(text, crash.argv, workdir)
        return found is not None and Crash(crash.target, 0, 0, found[0], found[1],
                                           text).signature() == crash.signature()

    lines = crash.reproducer.split("\n")
    chunk = max(1, len(lines) // 2)
    while chunk >= 1:
        i = 0
        while i < len(lines):
            candidate = lines[:i] + lines[i + chunk:]
            if candidate and still("\n".join(candidate)):
                lines = candidate
            else:
                i += chunk
        chunk //= 2
    return "\n".join(lines)


def _worker(job: tuple[str, int, int, int, str]) -> tuple[str, int, list[Crash]]:
    target, seed, start, count, workdir = job
    path = Path(workdir) / f"{target}-{start}"
    path.mkdir(parents=True, exist_ok=True)
    seeds = mlir_seeds() if target in ("mlir", "emit") else None
    crashes = []
    for index in range(start, start + count):
        crash = run_one(target, seed, index, path, seeds)
        if crash is not None:
            crashes.append(crash)
    return target, count, crashes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="all",
                        help=f"one of {', '.join(TARGETS)}, several separated by commas, or all")
    parser.add_argument("--count", type=int, default=1000, help="inputs per target")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="fuzz-crashes")
    parser.add_argument("--backends", default=None,
                        help="backends the kernels target runs every kernel on, compared bit "
                             "for bit (e.g. interpreter,native; default: "
                             "$PYPTO_FUZZ_BACKENDS, else interpreter)")
    args = parser.parse_args(argv)
    if args.backends is not None:
        from tests.fuzz.kernels import BACKENDS_ENV, backends

        backends(args.backends)  # an unknown or unavailable backend fails here, not per input
        os.environ[BACKENDS_ENV] = args.backends
    targets = TARGETS if args.target == "all" else tuple(args.target.split(","))
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; targets: {', '.join(TARGETS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    workdir = out / "work"
    per_job = 250
    # interleaved (every target's first chunk, then every target's second, ...): a run stopped
    # early has tried every target about as much
    jobs = [(t, args.seed, start, min(per_job, args.count - start), str(workdir))
            for start in range(0, args.count, per_job) for t in targets]
    tried = dict.fromkeys(targets, 0)
    crashes: dict[str, Crash] = {}
    started = time.time()
    os.environ.setdefault("PYPTO_RACE_CHECK", "1")
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=1) as pool:
        for target, count, found in pool.imap_unordered(_worker, jobs):
            tried[target] += count
            for crash in found:
                if crash.signature() not in crashes:
                    print(f"new crash: {crash.kind} ({crash.target} seed {crash.seed} input "
                          f"{crash.index}): {crash.signature()}", flush=True)
                crashes.setdefault(crash.signature(), crash)
            print(f"[{time.time() - started:7.0f} s] {target}: {tried[target]} inputs, "
                  f"{sum(c.target == target for c in crashes.values())} distinct crash(es)",
                  flush=True)
    for number, crash in enumerate(crashes.values()):
        text = crash.reproducer
        if crash.target == "mlir":
            text = minimise_mlir(crash, workdir)
        (out / f"crash-{number}-{crash.target}.txt").write_text(
            f"# {crash.kind} (seed {crash.seed}, input {crash.index}) {crash.argv}\n"
            f"# {crash.detail.strip().splitlines()[-1] if crash.detail.strip() else ''}\n"
            f"{text}\n")
    for target in targets:
        distinct = sum(c.target == target for c in crashes.values())
        print(f"fuzz {target}: {tried[target]} inputs, {distinct} distinct crash(es)")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
