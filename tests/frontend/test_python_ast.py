"""`parse_python` (pypto/frontend/python_ast.py): CPython 3.11 keeps the depth of the AST that
`ast.parse` is building in one counter per interpreter (CPython issue gh-106905); a second
thread parsing while the first one's tree is being built (the garbage collector ran a
finaliser that let it in) made the first fail with `SystemError: AST constructor recursion
depth mismatch`. The stress test (tests/test_thread_safety.py) hit it while compiling fresh
kernels in 8 threads; here it is made to happen on purpose, every time."""

from __future__ import annotations

import ast
import gc
import sys
import threading
from collections.abc import Callable
from typing import Any

from pypto.frontend.python_ast import parse_python

SOURCE = "\n".join(f"def f{i}(a):\n    return [a + {i} for _ in range(2)]" for i in range(30))


def parse_with_a_second_thread_inside(parse: Callable[[str], Any]) -> tuple[bool, Any, list]:
    """Parse SOURCE in this thread; when the garbage collector runs in the middle of building
    its tree, start a second thread that parses too and wait (at most 0.5 s) for it.
    Returns (did the trap fire inside the parse, this thread's error, the other's errors)."""
    main = threading.current_thread()
    fired: list[bool] = []
    other_errors: list[BaseException] = []
    done = threading.Event()

    def other() -> None:
        try:
            tree = parse(SOURCE)
            assert len(tree.body) == 30
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            other_errors.append(exc)
        done.set()

    class Trap:
        """Cyclic garbage whose finaliser fires at a collection inside `ast.parse`."""

        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            if fired:
                return
            if sys._getframe(1).f_code is ast.parse.__code__ and \
                    threading.current_thread() is main:
                fired.append(True)
                threading.Thread(target=other).start()
                done.wait(0.5)  # with the lock, the other thread waits for this parse
            else:
                Trap()  # collected before the parse began: arm again

    before = gc.get_threshold()
    gc.set_threshold(1)  # a collection at nearly every allocation of the tree's nodes
    error = None
    try:
        Trap()
        try:
            tree = parse(SOURCE)
            assert len(tree.body) == 30
        except SystemError as exc:
            error = exc
    finally:
        fired.append(True)  # disarm
        gc.set_threshold(*before)
    assert done.wait(10)
    return len(fired) > 1, error, other_errors


def test_the_race_is_real_without_the_lock() -> None:
    """What `ast.parse` itself does on this interpreter; the fix holds for as long as this
    does (a CPython with gh-106905 fixed passes here too)."""
    fired, error, _ = parse_with_a_second_thread_inside(ast.parse)
    assert fired
    if sys.version_info < (3, 12):
        assert error is not None and "recursion depth mismatch" in str(error)


def test_parse_python_serialises_parses() -> None:
    fired, error, other_errors = parse_with_a_second_thread_inside(parse_python)
    assert fired
    assert error is None and other_errors == []


def test_a_finaliser_parsing_in_the_same_thread_does_not_deadlock() -> None:
    """The lock is re-entrant: a finaliser that parses, on the thread holding the lock, runs
    instead of waiting for itself for ever (a plain Lock hangs here: the daemon thread below
    never ends)."""
    parsed: list[Any] = []
    outcome: list[BaseException | None] = []

    class Parses:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            if parsed:
                return
            if sys._getframe(1).f_code is ast.parse.__code__:
                parsed.append(parse_python("x = 1"))  # inside parse_python's own parse
            else:
                Parses()  # collected before the parse began: arm again

    def body() -> None:
        before = gc.get_threshold()
        gc.set_threshold(1)
        try:
            Parses()
            parse_python(SOURCE)
            outcome.append(None)
            parsed.append(None)  # disarm
        except BaseException as exc:  # noqa: BLE001 - checked below
            outcome.append(exc)
        finally:
            gc.set_threshold(*before)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "parse_python deadlocked on itself"
    gc.collect()
    assert isinstance(parsed[0], ast.Module)
    # the nested parse may upset the outer one's count: CPython's own same-thread behaviour
    assert outcome[0] is None or "recursion depth mismatch" in str(outcome[0]), outcome
