"""The debugger's command loop (`python -m pypto.debug script.py:kernel`), pdb-style.

Built on `cmd.Cmd`, so an empty line repeats the last command, and on `readline` when it is
available: line editing, and a history kept across sessions in `~/.pypto_debug_history`
(`PYPTO_DEBUG_HISTORY` names another file; an empty value turns the file off). Every command
is a call on the `Session`; errors are printed as one line, never as a traceback.
"""

from __future__ import annotations

import cmd
import os
import sys
from typing import Any, TextIO

import numpy as np

from pypto.debug.session import DebugError, Pointer, Session
from pypto.debug.view import lane_values_text
from pypto.errors import PtoError
from pypto.settings import read

HISTORY_ENV = "PYPTO_DEBUG_HISTORY"
HISTORY_LENGTH = 1000

HELP = """\
commands (abbreviations in brackets; an empty line repeats the last command):
  step [N]         [s]   execute N PTO instructions (default 1) and show their trace lines
  stepi [N]        [si]  execute N ops of any kind (ids, address arithmetic, branches too)
  next             [n]   execute up to the first instruction of another source line
  continue         [c]   run to the next breakpoint or the end of the kernel
  break [WHERE]    [b]   breakpoint on a line (19, file.py:19) or a kind (LOAD); no WHERE: list
  delete [N]       [d]   delete breakpoint N (all when no N)
  print NAME [LANES] [p] a kernel variable per lane; LANES: 5, 0-15, 0:16 or 1,3,8
  l1 OFFSET COUNT [DTYPE]  COUNT elements of the block's L1 from element OFFSET (float32)
  l1 NAME                  the L1 buffer NAME (a tile as its rows x cols matrix)
  timeline [all]         which instruction issued on which cycle (focus block)
  where            [w]   the current instruction and source line
  list             [l]   more source around the current line
  block N [warp W]       focus block N (linear id), optionally warp W: restarts the kernel
  warp W|all             focus warp W (or every warp): restarts the kernel
  restart          [r]   run the kernel again from the start (breakpoints stay)
  quit             [q]   leave the debugger"""


def parse_lanes(text: str) -> Any:
    """`5`, `0-15`, `0:16` or `1,3,8` -> an int, a range or a list of lane ids."""
    text = text.strip()
    try:
        if "," in text:
            return [int(t) for t in text.split(",")]
        if "-" in text[1:]:
            a, b = text.split("-", 1)
            return range(int(a), int(b) + 1)
        if ":" in text:
            a, b = text.split(":", 1)
            return range(int(a or 0), int(b))
        return int(text)
    except ValueError:
        raise DebugError(f"bad lanes {text!r}: write 5, 0-15, 0:16 or 1,3,8") from None


class DebuggerShell(cmd.Cmd):
    prompt = "(pto-dbg) "

    def __init__(self, session: Session, stdin: TextIO | None = None,
                 stdout: TextIO | None = None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.session = session
        self.use_rawinput = stdin is None or stdin is sys.stdin
        self._readline: Any = None
        self._history_file: str | None = None

    # plumbing ---------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        print(text, file=self.stdout)

    def onecmd(self, line: str) -> bool:
        if "\0" in line:  # a NUL byte: no command has one (and readline's history rejects it)
            self.say("error: the command holds a NUL byte (\\x00); type 'help' for the commands")
            return False
        try:
            return super().onecmd(line)
        except (DebugError, PtoError, ValueError, TypeError) as exc:
            self.say(f"error: {exc}")
            return False
        except (MemoryError, RecursionError, ArithmeticError, LookupError,
                AttributeError) as exc:  # a debugger bug: say so, keep the session
            self.say(f"error: internal debugger error, please report it with the command "
                     f"{line.strip()[:200]!r}: {type(exc).__name__}: {exc}")
            return False

    def default(self, line: str) -> None:
        self.say(f"unknown command {line.split()[0]!r}; type 'help' for the commands")

    def emptyline(self) -> bool:
        if self.lastcmd:
            return self.onecmd(self.lastcmd)
        return False

    def precmd(self, line: str) -> str:
        rl = self._readline
        if rl is not None and line.strip() and "\0" not in line and not self._interactive():
            rl.add_history(line.strip())  # a tty's input() adds lines itself
        return line

    def _interactive(self) -> bool:
        return self.use_rawinput and sys.stdin.isatty()

    def start_history(self) -> None:
        """Load the history file into readline (when readline exists and a file is set)."""
        given = os.environ.get(HISTORY_ENV)
        if given is not None and not given.strip():
            return  # set but empty: no history (docs/debugging.md)
        path = str(read(HISTORY_ENV, os.path.expanduser("~/.pypto_debug_history")))
        try:
            import readline
        except ImportError:  # pragma: no cover - platforms without readline
            return
        self._readline = readline
        self._history_file = path
        readline.clear_history()
        if os.path.exists(path):
            try:
                readline.read_history_file(path)
            except OSError:
                pass
        readline.set_history_length(HISTORY_LENGTH)

    def save_history(self) -> None:
        if self._readline is not None and self._history_file:
            try:
                self._readline.write_history_file(self._history_file)
            except OSError as exc:
                self.say(f"warning: could not save the history to {self._history_file}: {exc}")

    # commands ---------------------------------------------------------------------------------

    def do_help(self, arg: str) -> None:
        self.say(HELP)

    def _count(self, arg: str) -> int:
        arg = arg.strip()
        if not arg:
            return 1
        if not arg.isdigit() or int(arg) < 1:
            raise DebugError(f"expected a positive count, got {arg!r}")
        return int(arg)

    def do_step(self, arg: str) -> None:
        self.session.step(self._count(arg))
        self._show_next()

    do_s = do_step

    def do_stepi(self, arg: str) -> None:
        self.session.stepi(self._count(arg))
        self._show_next()

    do_si = do_stepi

    def do_next(self, arg: str) -> None:
        self.session.next()
        self._show_next()

    do_n = do_next

    def _show_next(self) -> None:
        s = self.session
        loc = s.location
        if loc is None or s.error is not None:
            return
        file, line, kind = loc
        import linecache

        text = linecache.getline(file, line or 0).strip()
        self.say(f"-> {os.path.basename(file)}:{line} {kind}: {text}")

    def do_continue(self, arg: str) -> None:
        self.session.continue_()

    do_c = do_cont = do_continue

    def do_break(self, arg: str) -> None:
        arg = arg.strip()
        if not arg:
            bps = self.session.breakpoints
            self.say("\n".join(str(b) for b in bps) if bps else "no breakpoints")
            return
        number = self.session.break_at(arg)
        self.say(f"{next(b for b in self.session.breakpoints if b.number == number)}")

    do_b = do_break

    def do_delete(self, arg: str) -> None:
        arg = arg.strip()
        self.session.delete(int(arg) if arg else None)

    do_d = do_delete

    def do_print(self, arg: str) -> None:
        parts = arg.split(None, 1)
        if not parts:
            raise DebugError("print NAME [LANES]")
        name = parts[0]
        lanes = parse_lanes(parts[1]) if len(parts) > 1 else None
        s = self.session
        got = s.value(name, lanes=lanes)
        if isinstance(got, Pointer):
            where = "HBM" if got.space == "global" else "L1"
            ids = _ids(lanes, s, got.offsets.size)
            self.say(f"{name} = {where} '{got.buffer}' + offsets: "
                     f"{lane_values_text(got.offsets, ids, None)}")
            return
        arr = np.atleast_1d(got)
        if s._is_tile(name):
            self.say(f"{name} (L1 buffer, {arr.size} x {arr.dtype}) = "
                     f"{np.array2string(arr, threshold=16, edgeitems=4)}")
            return
        ids = _ids(lanes, s, arr.size)
        active = s.active_lanes()
        is_active = np.isin(np.asarray(ids), active.ids)
        self.say(f"{name} = {lane_values_text(arr, ids, is_active)}")

    do_p = do_print

    def do_l1(self, arg: str) -> None:
        parts = arg.split()
        if len(parts) == 1 and not parts[0].lstrip("-").isdigit():  # l1 NAME: a whole buffer
            values = self.session.inspect_tile(parts[0])
            shape = " x ".join(str(n) for n in values.shape)
            self.say(f"'{parts[0]}' ({shape} {values.dtype}):")
            self.say(np.array2string(values, threshold=256, max_line_width=100))
            return
        if len(parts) not in (2, 3):
            raise DebugError("l1 OFFSET COUNT [DTYPE]  (element offset and count; DTYPE "
                             "defaults to float32), or l1 NAME (a buffer; a tile as rows x "
                             "cols)")
        dtype = parts[2] if len(parts) == 3 else "float32"
        try:
            offset, count = int(parts[0]), int(parts[1])
        except ValueError:
            raise DebugError(f"l1 OFFSET COUNT [DTYPE]: OFFSET and COUNT are whole numbers of "
                             f"elements, got {parts[0]!r} {parts[1]!r}") from None
        values = self.session.inspect_l1(offset, count, dtype=dtype)
        self.say(np.array2string(values, threshold=64, max_line_width=100))
        itemsize = values.dtype.itemsize
        lo, hi = offset * itemsize, (offset + count) * itemsize
        covering = [(off, n, nm) for off, n, nm, _ in self.session.l1_map()
                    if off < hi and off + n > lo]
        if covering:
            self.say("  in " + ", ".join(f"'{nm}' (bytes {off}..{off + n - 1})"
                                         for off, n, nm in covering))
        else:
            self.say(f"  no L1 buffer of this kernel covers bytes {lo}..{hi - 1}: nothing "
                     f"the kernel wrote is there (fresh L1 reads as poison)")

    def do_timeline(self, arg: str) -> None:
        every = arg.strip() == "all"
        if arg.strip() and not every:
            raise DebugError("timeline [all]  ('all' adds ids and address arithmetic)")
        entries = self.session.get_instruction_timeline(every_op=every)
        if not entries:
            self.say("no instruction issued")
            return
        self.say(f"(cost model '{entries[0].model}': the cycle each instruction starts on "
                 f"its pipe, and its cycles)")
        for e in entries:
            self.say(f"{str(e):<30} {e.pipe:<8} {e.end - e.cycle:>4} cycles  "
                     f"{os.path.basename(e.source)}")

    def do_where(self, arg: str) -> None:
        self.session.where()

    do_w = do_bt = do_where

    def do_list(self, arg: str) -> None:
        self.session.where(context=5)

    do_l = do_list

    def do_block(self, arg: str) -> None:
        parts = arg.split()
        if len(parts) not in (1, 3) or len(parts) == 3 and parts[1] != "warp":
            raise DebugError("block N [warp W]")
        warp: Any = ... if len(parts) == 1 else int(parts[2])
        self.session.restart(block_id=int(parts[0]), warp=warp)
        self.session.where()

    def do_warp(self, arg: str) -> None:
        arg = arg.strip()
        if not arg:
            raise DebugError("warp W|all")
        self.session.restart(warp=None if arg == "all" else int(arg))
        self.session.where()

    def do_restart(self, arg: str) -> None:
        self.session.restart()
        self.session.where()

    do_r = do_restart

    def do_quit(self, arg: str) -> bool:
        return True

    do_q = do_exit = do_quit

    def do_EOF(self, arg: str) -> bool:
        self.say("")
        return True


def _ids(lanes: Any, session: Session, n: int) -> list[int]:
    if lanes is None:
        ctx = session._ctx()
        base = ctx.local_base if ctx is not None else 0
        if session.warp is not None:
            base = session.warp * session.exe.target.warp_size
        return list(range(base, base + n))
    if isinstance(lanes, int):
        return [lanes]
    return list(lanes)


def run_repl(session: Session, banner: str, stdin: TextIO | None = None,
             stdout: TextIO | None = None) -> None:
    shell = DebuggerShell(session, stdin, stdout)
    shell.start_history()
    try:
        shell.say(banner)
        session.where()
        while True:
            try:
                shell.cmdloop()
                break
            except KeyboardInterrupt:  # Ctrl-C at the prompt: a new prompt, as in pdb
                shell.say("\n(interrupted: 'quit' leaves the debugger)")
    finally:
        shell.save_history()
        session.close()


__all__ = ["DebuggerShell", "HELP", "parse_lanes", "run_repl"]
