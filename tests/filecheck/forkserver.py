"""A fork server for the lit suite: RUN lines without a fresh pypto import per command.

Every `pypto-opt`, `filecheck` and `%python` in a RUN line used to start a Python interpreter
and import xdsl and pypto (most of a second each, several per RUN line). lit.cfg.py starts one
server, which imports them once; each command is then this file run as a *client* (a bare
Python, standard library only), which hands its arguments, working directory, environment and
its stdin / stdout / stderr file descriptors to the server over a Unix socket. The server forks;
the child takes over those descriptors, runs the tool as its console script would, and reports
the exit status, which the client exits with. A fork is a fresh copy of the warm process, so
commands cannot affect each other, as with separate processes.

    python forkserver.py serve SOCKET            the server (prints "ready" once listening)
    python forkserver.py run SOCKET TOOL ARGS    a client: TOOL is pypto-opt, filecheck or python

If the server cannot be reached, the client runs the tool itself (`python -m ...`), so a RUN
line never depends on the server for its result.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys

TOOLS = {"pypto-opt": "pypto.tools.opt", "filecheck": "filecheck"}
"""Tool name -> the module `python -m` runs (the client's fallback)."""


# -- client -----------------------------------------------------------------------------------


def run_client(path: str, tool: str, args: list[str]) -> int:
    request = json.dumps({"tool": tool, "args": args, "cwd": os.getcwd(),
                          "env": dict(os.environ)}).encode()
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:
        return _run_locally(tool, args)
    with conn:
        socket.send_fds(conn, [struct.pack("!I", len(request)) + request], [0, 1, 2])
        reply = b""
        while len(reply) < 4:
            chunk = conn.recv(4 - len(reply))
            if not chunk:  # the server died mid-command: say so, as a crashed tool would
                sys.stderr.write(f"forkserver: {tool} ended without an exit status\n")
                return 70
            reply += chunk
    return struct.unpack("!i", reply)[0]


def _run_locally(tool: str, args: list[str]) -> int:
    command = [sys.executable, *args] if tool == "python" else \
        [sys.executable, "-m", TOOLS[tool], *args]
    os.execv(sys.executable, command)
    return 70  # pragma: no cover - execv does not return


# -- server -----------------------------------------------------------------------------------


def serve(path: str) -> None:
    import runpy  # noqa: F401 - imported once here, not per command
    import signal

    import filecheck.main  # noqa: F401 - the warm imports every command shares
    import numpy  # noqa: F401
    import pypto  # noqa: F401
    import pypto.tools.opt  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    parent = os.getppid()
    if os.path.exists(path):
        os.unlink(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    server.settimeout(1.0)
    print("ready", flush=True)
    try:
        while os.getppid() == parent:  # lit (which started us) is still running
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                server.close()
                _child(conn)  # never returns
            conn.close()
    finally:
        server.close()
        if os.path.exists(path):
            os.unlink(path)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    size = struct.unpack("!I", data[:4])[0]
    body = data[4:]
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            break
        body += chunk
    return json.loads(body), fds


def _child(conn: socket.socket) -> None:
    status = 70
    try:
        request, fds = _receive(conn)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # new text streams on the new descriptors: the server's were made for its own (a
        # seekable log file, say), and would misbehave on a pipe
        encoding = os.environ.get("PYTHONIOENCODING", "").split(":")[0] or "utf-8"
        sys.stdin = sys.__stdin__ = open(0, encoding=encoding, closefd=False)
        sys.stdout = sys.__stdout__ = open(1, "w", encoding=encoding, closefd=False)
        sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, encoding=encoding,
                                           errors="backslashreplace", closefd=False)
        status = _run_tool(request["tool"], request["args"])
    except BaseException:  # noqa: BLE001 - report any failure as the tool's own would be
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - a closed pipe: nothing more to say
            pass
        try:
            conn.sendall(struct.pack("!i", status))
        finally:
            os._exit(status)


def _run_tool(tool: str, args: list[str]) -> int:
    import atexit
    import runpy

    try:
        if tool == "python":
            sys.argv = list(args)
            sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
            try:
                runpy.run_path(args[0], run_name="__main__")
                code: object = 0
            except Exception:  # as `python script.py`: the traceback, status 1
                sys.excepthook(*sys.exc_info())
                code = 1
        elif tool == "pypto-opt":
            from pypto.tools.opt import main

            sys.argv = ["pypto-opt", *args]
            code = main(args)
        else:
            from filecheck.main import main as filecheck_main

            sys.argv = ["filecheck", *args]
            code = filecheck_main()
    except SystemExit as exit_:
        code = exit_.code
    atexit._run_exitfuncs()  # what the tool's interpreter would run when it ends
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(run_client(sys.argv[2], sys.argv[3], sys.argv[4:]))
