"""Fork and signals (docs/reliability.md, "Fork and signals"): a child process may launch even
when the parent forked while another thread was inside `pto.sync()`; a multiprocessing child
(fork, forkserver, spawn) that ends with work never synchronised runs it or reports it, as a main
program does; Ctrl-C during a long launch is reported at the next synchronising call, never
leaves half-written outputs silently.

Every scenario runs in its own process group with a timeout, so a regression (a deadlocked
child) fails the test instead of hanging the suite, and leaves no process behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")

TIMEOUT = 120
"""Seconds a scenario may take (each takes a few: the slack is for 2 shared cores)."""

KERNELS = """\
    import os, signal, sys, threading, time
    import numpy as np
    import pypto as pto

    # A terminal's Ctrl-C reaches a process whose SIGINT is unblocked and handled by Python; a
    # child inherits its parent's signal mask, and the test's parent (a pytest-xdist worker
    # beside other libraries' threads) may have SIGINT blocked: then the scenario never sees it
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)

    @pto.kernel
    def slow(o, n):
        i = pto.get_global_id()
        if i == 0:
            pto.printf("started\\n")
        acc = 0.0
        for j in range(n):
            acc = acc + 1.0
        pto.store(o + i, acc)

    @pto.kernel
    def ones(o):
        pto.store(o + pto.get_global_id(), 1.0)

    @pto.kernel
    def tagged(o, tag):
        i = pto.get_global_id()
        if i == 0:
            pto.printf("kernel ran, tag %d\\n", tag)
        pto.store(o + i, 1.0)

    @pto.kernel
    def out_of_bounds(o):
        pto.store(o + pto.get_global_id() + 100000, 1.0)
    """


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "scenario.py"
    path.write_text(textwrap.dedent(KERNELS) + textwrap.dedent(body))
    return path


def _start(path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-u", str(path), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            cwd=path.parent)


def _finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the scenario and every child it forked
        out, err = proc.communicate()
        pytest.fail(f"the scenario hung (killed after {TIMEOUT} s):\n{out}\n{err}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # children left behind by a failed scenario
        except ProcessLookupError:
            pass


def test_ctrl_c_during_sync_is_reported_at_the_next_sync(tmp_path):
    path = _script(tmp_path, """\
        o = pto.alloc_tensor(1024 * 4)
        pto.memcpy_h2d(o, np.zeros(1024, np.float32))
        pto.compile(slow, args=(o, 10**9), block=256)
        pto.compile(ones, args=(o,), block=256)
        try:
            pto.launch(slow, grid=4, block=256, args=(o, 10**9))
            pto.sync()
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted")
        out = np.empty(1024, np.float32)
        try:
            pto.memcpy_d2h(out, o)
            print("partial results returned silently")
        except pto.KernelInterruptedError as err:
            print("reported", "'slow'" in str(err), "scenario.py" in str(err))
        pto.sync()  # reported once
        pto.launch(ones, grid=4, block=256, args=(o,))
        pto.memcpy_d2h(out, o)
        print("usable" if (out == 1).all() else "WRONG")
        """)
    proc = _start(path)
    assert proc.stdout.readline().endswith("started\n")  # the kernel is running inside sync()
    proc.send_signal(signal.SIGINT)
    out, err = _finish(proc)
    assert out.split("\n")[:3] == ["interrupted", "reported True True", "usable"], (out, err)
    assert proc.returncode == 0 and "Traceback" not in err, err


def test_fork_while_another_thread_is_inside_sync_the_child_can_launch(tmp_path):
    path = _script(tmp_path, """\
        from pypto.runtime import stream
        o = pto.alloc_tensor(1024 * 4)
        pto.compile(slow, args=(o, 10**9), block=256)

        def busy():
            pto.launch(slow, grid=4, block=256, args=(o, 10**9))
            pto.sync()

        threading.Thread(target=busy, daemon=True).start()
        while not stream._IN_FLIGHT:  # until the other thread runs the kernel, holding the lock
            time.sleep(0.01)

        def say(*words):  # straight to the pipe: sys.stdout's buffer may hold the parent's text
            os.write(1, (" ".join(map(str, words)) + "\\n").encode())

        pid = os.fork()
        if pid == 0:
            try:
                try:
                    pto.sync()
                    say("child: the half-run launch was not reported")
                except pto.KernelInterruptedError as err:
                    say("child: reported", "forked" in str(err) and "'slow'" in str(err))
                p = pto.alloc_tensor(256 * 4)
                pto.launch(ones, grid=1, block=256, args=(p,))
                out = np.empty(256, np.float32)
                pto.memcpy_d2h(out, p)
                say("child: launched", bool((out == 1).all()))
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        say("parent: child exit", os.waitstatus_to_exitcode(status))
        os._exit(0)  # the other thread is still in its (endless) kernel
        """)
    out, err = _finish(_start(path))
    lines = [line for line in out.split("\n") if line.startswith(("child:", "parent:"))]
    assert lines == ["child: reported True", "child: launched True", "parent: child exit 0"], \
        (out, err)


def test_multiprocessing_children_run_or_report_work_never_synchronised(tmp_path):
    """fork, forkserver and spawn children end without pto.sync(): a good launch still runs
    (its printf is seen), a failing one is reported on stderr, as in a main program."""
    path = _script(tmp_path, """\
        import multiprocessing as mp

        def child(kind, tag):
            o = pto.alloc_tensor(64 * 4)
            if kind == "good":
                pto.launch(tagged, grid=1, block=64, args=(o, tag))
            else:  # first a launch it synchronises, then a failing one it does not
                pto.launch(tagged, grid=1, block=64, args=(o, 10 + tag))
                out = np.empty(64, np.float32)
                pto.memcpy_d2h(out, o)
                assert (out == 1).all()
                pto.launch(out_of_bounds, grid=1, block=64, args=(o,))

        if __name__ == "__main__":
            pto.compile(tagged, args=(pto.alloc_tensor(256), 1), block=64)
            for tag, method in enumerate(("fork", "forkserver", "spawn"), 1):
                ctx = mp.get_context(method)
                for kind in ("good", "bad"):
                    p = ctx.Process(target=child, args=(kind, tag))
                    p.start()
                    p.join(60)
                    print(f"{method} {kind} exit {p.exitcode}", flush=True)
        """)
    out, err = _finish(_start(path))
    for tag, method in enumerate(("fork", "forkserver", "spawn"), 1):
        assert f"] kernel ran, tag {tag}\n" in out, (method, out, err)
        assert f"] kernel ran, tag {10 + tag}\n" in out, (method, out, err)
        for kind in ("good", "bad"):
            assert f"{method} {kind} exit 0" in out, (method, out, err)
    reports = err.count("never synchronised with pto.sync(); running them raised")
    assert reports == 3 and err.count("MemoryAccessError") == 3, err
    assert "Traceback" not in err, err


def test_ctrl_c_in_sync_then_exit_says_the_launch_was_being_synchronised(tmp_path):
    """The interrupted launch was synchronised (the script called pto.sync()): the report at
    interpreter exit says so, and does not call it "never synchronised"."""
    path = _script(tmp_path, """\
        o = pto.alloc_tensor(1024 * 4)
        pto.compile(slow, args=(o, 10**9), block=256)
        pto.launch(slow, grid=4, block=256, args=(o, 10**9))
        try:
            pto.sync()
        except KeyboardInterrupt:
            print("interrupted")
        """)
    proc = _start(path)
    assert proc.stdout.readline().endswith("started\n")
    proc.send_signal(signal.SIGINT)
    out, err = _finish(proc)
    assert out.startswith("interrupted"), (out, err)
    assert "1 launch(es) interrupted part-way while being synchronised" in err, err
    assert "KeyboardInterrupt arrived during pto.sync()" in err, err
    assert "never synchronised" not in err, err
