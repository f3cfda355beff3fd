"""`parse_python`: `ast.parse`, one thread at a time.

CPython 3.11 counts the depth of the AST it builds for `ast.parse` in one counter per
interpreter, not per thread (CPython issue gh-106905). When the garbage collector runs Python
code (a finaliser) in the middle of building a tree, another thread may parse meanwhile, and
then one of them fails with `SystemError: AST constructor recursion depth mismatch`. pypto
parses kernel sources while compiling; two threads compiling fresh kernels hit this within a
few hundred compilations (tests/test_thread_safety.py). Every parse pypto does on a compile,
launch or autotune path goes through this lock (docs/reliability.md#threads); parses outside
pypto, in the user's own threads, are not covered. The lock is re-entrant: a finaliser that
parses on the thread holding it must not wait for itself.
"""

from __future__ import annotations

import ast
import os
import threading

_PARSE_LOCK = threading.RLock()


def parse_python(source: str, mode: str = "exec") -> ast.AST:
    """`ast.parse(source, mode=mode)`, serialised with every other parse pypto does."""
    with _PARSE_LOCK:
        return ast.parse(source, mode=mode)


def _after_fork_in_child() -> None:
    """A fork while another thread was parsing leaves the lock held in the child: a new one."""
    global _PARSE_LOCK
    _PARSE_LOCK = threading.RLock()


os.register_at_fork(after_in_child=_after_fork_in_child)
