"""Streams: in-order queues of device work, executed lazily by the CPU.

Execution model (docs/runtime.md): `launch` and `memcpy_h2d` are asynchronous like CUDA — they
validate, append an `Operation` to a stream and return. Nothing runs until a *synchronising call*
(`sync()`, `Stream.synchronize()`, `memcpy_d2h`, `Tensor.free()` / the end of a `with Tensor`
block) drains the queues. Draining is deterministic: operations run one at a time, in the global
order in which they were enqueued (which respects every stream's own order). This laziness is
what makes asynchronous errors real on a CPU: a kernel's failure surfaces at the synchronising
call, exactly where it would on a GPU, unless `PYPTO_LAUNCH_BLOCKING=1` is set.

An operation keeps strong references to every tensor it touches until it has run, so dropping
the user's last reference (`del d_a` right after `launch`) cannot free memory a queued kernel
still needs — the article's segfault pitfall is impossible by construction.
"""

from __future__ import annotations

import atexit
import itertools
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

from pypto.errors import (KernelError, KernelInterruptedError, PtoError, UsageError,
                          hide_internal_frames, public_api)
from pypto.runtime.device import Device, default_device
from pypto.runtime.env import flag as env_flag

if TYPE_CHECKING:
    from pypto.runtime.memory import Tensor

LAUNCH_BLOCKING_ENV = "PYPTO_LAUNCH_BLOCKING"

# One re-entrant lock for all queues: draining may run a kernel whose Python code enqueues or
# synchronises again (e.g. a debugging print that calls sync()); a plain Lock would deadlock.
_LOCK = threading.RLock()
_SEQUENCE = itertools.count()
_STREAM_IDS = itertools.count(1)
# Streams that have queued work, by id. Strong references on purpose: like CUDA, work queued on a
# stream still runs (at the next sync) even if the program drops its last reference to the stream.
_BUSY: dict[int, Stream] = {}


def queue_lock() -> AbstractContextManager[bool]:
    """The lock guarding every queue (re-entrant; hold it to make check-then-act atomic)."""
    return _LOCK


launch_blocking = env_flag(LAUNCH_BLOCKING_ENV, False)
"""`launch_blocking()`: whether `PYPTO_LAUNCH_BLOCKING` asks for synchronous launches (read at
every call, cheaply: pypto.runtime.env)."""


def caller_site(depth: int = 1) -> str | None:
    """`file:line` of the first caller outside pypto: where the user enqueued the work.

    An asynchronous error surfaces far from its cause; naming the launch site in the error is the
    cheap fix for CUDA's most confusing debugging experience.

    The search starts `depth` frames up (1: the caller of `caller_site`). A pypto function that
    calls it directly passes 2, so that its own frame is skipped without being looked at: in
    CPython 3.11 looking at a frame turns it into a frame object, which for the short-lived
    frames of a launch cost ~0.8 us each (creating it, and handing it the frame's data when
    the function returns); only the user's frame is then materialised, in the common case.
    """
    try:
        frame: FrameType | None = sys._getframe(depth)
    except ValueError:  # fewer frames than that: search from the caller
        frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != "pypto" and not module.startswith("pypto."):
            # the site of this instruction of this code, as found before (a line number is
            # worked out from the code's line table: ~0.4 us); the entry holds its code
            # object, so no other code can have its id while the entry exists
            code = frame.f_code
            key = (id(code), frame.f_lasti)
            known = _SITES.get(key)
            if known is not None and known[0] is code:
                return known[1]
            site = f"{code.co_filename}:{frame.f_lineno}"
            if len(_SITES) >= 512:
                _SITES.clear()
            _SITES[key] = (code, site)
            return site
        frame = frame.f_back
    return None


_SITES: dict[tuple[int, int], tuple[Any, str]] = {}
"""`caller_site`'s memo: (id of a code object, instruction offset) -> (the code, its site)."""


_FIND_SITE = "<find the launch site on the stack>"
"""Default of `launch(origin=...)`: look the site up with `caller_site`."""


@dataclass(eq=False)
class Operation:
    """One queued unit of device work (a kernel launch or a host-to-device copy)."""

    seq: int
    label: str                      # e.g. "launch of kernel 'vector_add' grid=(4, 1, 1) ..."
    run: Callable[[], None]
    tensors: tuple[Tensor, ...]     # strong references: the lifetime guarantee
    origin: str | None              # user file:line that enqueued it

    def uses(self, tensor: Tensor) -> bool:
        """Does this work touch `tensor`'s memory (itself, or a `reshape` view of it)?"""
        storage = tensor.storage
        return any(t.storage is storage for t in self.tensors)


class Stream:
    """An in-order queue of device work (like `cudaStream_t`).

    Operations on one stream run in the order they were enqueued. Different streams are
    independent queues; when several are drained together, operations run in global enqueue order.
    """

    def __init__(self, device: Device | None = None, *, name: str | None = None) -> None:
        self.device: Device = device if device is not None else default_device()
        self.name: str = name if name is not None else f"stream{next(_STREAM_IDS)}"
        self._queue: deque[Operation] = deque()

    @property
    def pending(self) -> int:
        """Number of operations enqueued and not yet executed."""
        return len(self._queue)

    def query(self) -> bool:
        """True when all work on this stream has completed (like `cudaStreamQuery`); never runs work."""
        return not self._queue

    @public_api
    def synchronize(self) -> None:
        """Run everything queued on this stream; raise the first error of its work, if any."""
        drain({self: None}, surfaced_at="Stream.synchronize()")

    def enqueue(self, label: str, run: Callable[[], None], tensors: Iterable[Tensor],
                origin: str | None, *, api: str) -> None:
        """Append work; with `PYPTO_LAUNCH_BLOCKING=1` run it (and what precedes it) right away."""
        blocking = launch_blocking()  # (first: a bad value raises before anything is queued)
        op = Operation(next(_SEQUENCE), label, run, tuple(tensors), origin)
        with _LOCK:
            self._queue.append(op)
            _BUSY[id(self)] = self
        if blocking:
            drain({self: None}, surfaced_at=f"{api} (PYPTO_LAUNCH_BLOCKING=1)", asynchronous=False)

    def __repr__(self) -> str:
        return f"<pto.Stream '{self.name}' on '{self.device.name}', {len(self._queue)} pending>"


def default_stream(device: Device | None = None) -> Stream:
    """The default stream of `device` (of the default device when None)."""
    return (device if device is not None else default_device()).default_stream


def drain(limits: dict[Stream, int | None], *, surfaced_at: str, asynchronous: bool = True) -> None:
    """Run queued operations: from each stream in `limits`, its first `n` (all when None).

    Operations run one at a time in global enqueue order. If one raises, the rest of *its*
    stream's queue is discarded (later work may depend on the failed result), the error is
    annotated with where the work came from and how much was discarded, the other streams still
    run to their limit, and the first error is raised at the end. Every exception type is
    propagated, not only `KernelError`: an interpreter bug must not be swallowed.
    """
    with _LOCK:
        remaining = _with_dependencies(limits)
        errors: list[Exception] = []
        while True:
            stream = _next_stream(remaining)
            if stream is None:
                break
            budget = remaining[stream]
            if budget is not None:
                remaining[stream] = budget - 1
            error = _run_head(stream, surfaced_at, asynchronous)
            if error is not None:
                remaining[stream] = 0
                errors.append(error)
        if errors:
            first = errors[0]
            for other in errors[1:]:
                first.add_note(f"pypto: another error also surfaced at {surfaced_at}: "
                               f"{type(other).__name__}: {other}")
            raise first


def _with_dependencies(limits: dict[Stream, int | None]) -> dict[Stream, int | None]:
    """`limits` grown so that no operation runs before an earlier-enqueued operation of another
    stream that uses one of the same tensors (transitively).

    Without it, `s.synchronize()` ran a launch on `s` before the `memcpy_h2d` into its tensor
    queued earlier on the default stream, and that copy later overwrote the launch's result (a
    lost launch). CUDA orders these through the legacy default stream; pypto orders exactly the
    operations that share a tensor, in enqueue order, and leaves independent work queued."""
    counts: dict[Stream, int] = {}
    for stream, limit in limits.items():
        counts[stream] = len(stream._queue) if limit is None else min(limit, len(stream._queue))
    busy = [stream for stream in _BUSY.values() if stream._queue]
    for stream in limits:
        if stream._queue and all(stream is not b for b in busy):
            busy.append(stream)
    if len(busy) < 2:
        return dict(limits)
    users: dict[int, list[tuple[int, Stream, int]]] = {}  # tensor id -> (seq, stream, index)
    for stream in busy:
        for index, op in enumerate(stream._queue):
            for tensor in op.tensors:
                users.setdefault(id(tensor.storage), []).append((op.seq, stream, index))
    work = [(stream, index) for stream, count in counts.items() for index in range(count)]
    while work:
        stream, index = work.pop()
        op = stream._queue[index]
        for tensor in op.tensors:
            for seq, other, other_index in users.get(id(tensor.storage), ()):
                if seq < op.seq and other_index >= counts.get(other, 0):
                    start = counts.get(other, 0)
                    counts[other] = other_index + 1
                    work.extend((other, k) for k in range(start, other_index + 1))
    grown: dict[Stream, int | None] = dict(limits)
    for stream, count in counts.items():
        if stream not in limits or (limits[stream] is not None and count > limits[stream]):
            grown[stream] = count
    return grown


def _next_stream(remaining: dict[Stream, int | None]) -> Stream | None:
    best: Stream | None = None
    for stream, budget in remaining.items():
        if not stream._queue or budget == 0:
            continue
        if best is None or stream._queue[0].seq < best._queue[0].seq:
            best = stream
    return best


_IN_FLIGHT: list[tuple[Operation, Stream]] = []
"""The operations running now (under `_LOCK`, so from one thread; more than one only when a
kernel's Python code synchronises again): what a fork from another thread leaves half-done."""


def _run_head(stream: Stream, surfaced_at: str, asynchronous: bool) -> Exception | None:
    """Run the first operation of `stream`; on failure discard the rest and return the error.

    A `BaseException` that is not an `Exception` (`KeyboardInterrupt` from Ctrl-C, `SystemExit`)
    stops the operation part-way: it propagates at once, and a `KernelInterruptedError` naming
    the operation takes its place at the head of the queue, so that the next synchronising call
    reports it (and discards what was queued after it, as after any kernel error) instead of
    letting the half-written outputs pass silently."""
    queue = stream._queue
    op = queue[0]  # popped once it has run: an interrupt before that cannot lose it silently
    if _IN_FLIGHT and any(running is op for running, _ in _IN_FLIGHT):
        raise UsageError(f"{surfaced_at} was called from inside the {op.label} while it runs "
                         f"(e.g. by a stream its pto.printf output goes to): it would wait for "
                         f"itself; synchronise after the launch instead")
    _IN_FLIGHT.append((op, stream))
    ran = False
    try:
        op.run()
        ran = True
        queue.popleft()
        return None
    except BaseException as exc:
        if queue and queue[0] is op:
            if ran:
                queue.popleft()  # it completed; interrupted while being taken off the queue
            elif not isinstance(exc, Exception):
                _replace_interrupted(op, stream, f"{type(exc).__name__} arrived during "
                                                 f"{surfaced_at} while it ran")
                raise
            else:
                queue.popleft()
        if not isinstance(exc, Exception):
            raise
        error = _failed(exc, op, stream, surfaced_at, asynchronous)
        del op, exc  # the traceback keeps this frame alive: it must not pin the op's tensors
        return error
    finally:
        _IN_FLIGHT.pop()
        if not queue:
            _BUSY.pop(id(stream), None)


def _replace_interrupted(op: Operation, stream: Stream, why: str) -> None:
    """Replace `op` (which stopped part-way) at the head of `stream` by an operation that
    raises `KernelInterruptedError` for it: the next synchronising call reports it."""
    def report() -> None:
        site = f" enqueued at {op.origin}" if op.origin else ""
        raise KernelInterruptedError(
            f"the {op.label}{site} was interrupted ({why}); its output tensors may hold partial "
            f"results: launch it again (and re-initialise outputs it accumulates into)")

    stream._queue[0] = Operation(op.seq, f"interrupted {op.label}", report, op.tensors,
                                 op.origin)
    _BUSY[id(stream)] = stream


def _failed(exc: Exception, op: Operation, stream: Stream, surfaced_at: str,
            asynchronous: bool) -> Exception:
    """Discard the rest of `stream` after `op` raised `exc`; the annotated error."""
    discarded = len(stream._queue)
    stream._queue.clear()
    _annotate(exc, op, stream, discarded, surfaced_at, asynchronous)
    del op  # the traceback keeps this frame alive; do not let it pin the op's tensors too
    # nor the frames below it (the launch closure's arguments, the interpreter's arrays):
    # a user holding on to the exception must not keep the launch's tensors charged
    # against device memory. The message and the notes already say everything.
    import traceback  # only on errors: not part of `import pypto`

    traceback.clear_frames(exc.__traceback__)
    return exc


def _annotate(exc: Exception, op: Operation, stream: Stream, discarded: int, surfaced_at: str,
              asynchronous: bool) -> None:
    site = f" enqueued at {op.origin}" if op.origin else ""
    exc.add_note(f"pypto: raised by the {op.label}{site} on stream '{stream.name}'; "
                 f"surfaced at {surfaced_at}")
    if discarded:
        exc.add_note(f"pypto: {discarded} later operation(s) queued on stream '{stream.name}' were "
                     f"discarded because of this error; the stream remains usable")
    if asynchronous and isinstance(exc, KernelError) and \
            not isinstance(exc, KernelInterruptedError):
        exc.add_note(f"pypto: launches are asynchronous; set {LAUNCH_BLOCKING_ENV}=1 to raise "
                     f"kernel errors at the launch that causes them")
    try:
        exc.discarded_ops = discarded  # type: ignore[attr-defined]
    except AttributeError:  # exceptions with __slots__; the note already says it
        pass


def sync(timeout: float | None = None) -> None:
    """Wait for every stream of every device (like `cudaDeviceSynchronize`).

    Raises the first error of the drained work, after every stream has run as far as it can.
    `timeout`: seconds after which a `while` loop of the drained work still running is stopped
    with a `KernelError` at its line (docs/runtime.md#the-watchdog).
    """
    if timeout is not None:
        from pypto.backend.interpreter.watchdog import time_limit

        with time_limit(timeout):
            sync()
        return
    try:  # (`drain_all` inline, and `public_api`'s hiding of frames: the common sync)
        with _LOCK:
            if not _BUSY:
                return
            if len(_BUSY) == 1:
                stream = next(iter(_BUSY.values()))
                while stream._queue:  # _drain_one, inline
                    error = _run_head(stream, "pto.sync()", True)
                    if error is not None:
                        raise error
                return
        drain_all(surfaced_at="pto.sync()")
    except PtoError as exc:
        hide_internal_frames(exc)
        raise


def drain_all(*, surfaced_at: str) -> None:
    """Run all queued work of all streams in enqueue order (the body of every full sync)."""
    with _LOCK:
        if len(_BUSY) == 1:
            _drain_one(next(iter(_BUSY.values())), surfaced_at)
            return
        busy = list(_BUSY.values())
    drain({stream: None for stream in busy}, surfaced_at=surfaced_at)


def _drain_one(stream: Stream, surfaced_at: str) -> None:
    """`drain({stream: None})` when `stream` is the only busy one (the common `pto.sync()`):
    no other queue can hold a dependency, so its operations simply run in order until the
    queue is empty or one fails (the rest of the queue is then discarded by `_run_head`).
    Same semantics as the general loop, without its per-operation bookkeeping."""
    while stream._queue:
        error = _run_head(stream, surfaced_at, True)
        if error is not None:
            raise error


def wait_for_tensor(tensor: Tensor, *, surfaced_at: str) -> None:
    """Run queued work up to the last operation that uses `tensor`, on every stream.

    Later work that does not touch `tensor` stays queued: freeing one tensor should not force the
    whole program to synchronise.
    """
    with _LOCK:
        limits: dict[Stream, int | None] = {}
        for stream in list(_BUSY.values()):
            last = -1
            for index, op in enumerate(stream._queue):
                if op.uses(tensor):
                    last = index
            if last >= 0:
                limits[stream] = last + 1
        if limits:
            drain(limits, surfaced_at=surfaced_at)


def pending_uses(tensor: Tensor) -> int:
    """How many queued operations still use `tensor` (shown by `repr(tensor)`)."""
    with _LOCK:
        return sum(op.uses(tensor) for stream in _BUSY.values() for op in stream._queue)


def _run_pending_at_exit() -> None:
    """At interpreter exit, run work nobody synchronised (as CUDA does when a process ends) and
    report its errors on stderr: a launch must never be silently dropped."""
    with _LOCK:
        if not _BUSY:
            return
        ops = [op for s in _BUSY.values() for op in s._queue]
    # an interrupted launch *was* being synchronised (Ctrl-C arrived during pto.sync() or
    # another synchronising call): say so, and count only the rest as never synchronised
    interrupted = sum(op.label.startswith("interrupted ") for op in ops)
    never = len(ops) - interrupted
    parts = []
    if interrupted:
        parts.append(f"{interrupted} launch(es) interrupted part-way while being synchronised")
    if never:
        parts.append(f"{never} operation(s) never synchronised with pto.sync()")
    what = " and ".join(parts)
    try:
        drain_all(surfaced_at=f"interpreter exit ({what})")
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the program is ending
        sys.stderr.write(f"pypto: at interpreter exit the queues held {what}; running them "
                         f"raised:\n")
        import traceback

        sys.stderr.write("".join(traceback.format_exception_only(exc)))
        sys.stderr.flush()


atexit.register(_run_pending_at_exit)


# -- fork -----------------------------------------------------------------------------------------
# A fork copies one thread: the one that called fork(). Locks held by other threads stay held
# forever in the child and the operation another thread was running is half-done there. So in
# the child: fresh locks, the half-done operation reported (KernelInterruptedError at the next
# synchronising call), and work never synchronised still run (or reported) when a
# multiprocessing child ends, although it ends with os._exit, which skips atexit.
# docs/reliability.md, "Fork and signals".


def _after_fork_in_child() -> None:
    global _LOCK
    if not _LOCK._is_owned():  # type: ignore[attr-defined]  # held (if at all) by a dead thread
        _LOCK = threading.RLock()
        for op, stream in _IN_FLIGHT:
            if stream._queue and stream._queue[0] is op:
                _replace_interrupted(op, stream, "this process was forked while another "
                                                 "thread of the parent ran it")
        _IN_FLIGHT.clear()
    from pypto.runtime import device

    device.after_fork_in_child()
    if "multiprocessing" in sys.modules:
        _hook_multiprocessing()


_MP_HOOKED = False


def _hook_multiprocessing() -> None:
    """Make a multiprocessing child (fork / forkserver: it ends with os._exit, skipping atexit)
    run its unsynchronised work at its end, as `atexit` does for a main program.

    `BaseProcess._bootstrap` clears the finalizers it inherits and then runs the after-fork
    callbacks: one of those registers the finalizer, in every child."""
    global _MP_HOOKED
    if _MP_HOOKED:
        return
    _MP_HOOKED = True
    from multiprocessing import util

    def register(_: object) -> None:
        util.Finalize(None, _run_pending_at_exit, exitpriority=1)

    util.register_after_fork(_run_pending_at_exit, register)
    register(None)


os.register_at_fork(after_in_child=_after_fork_in_child)
if "multiprocessing" in sys.modules:
    _hook_multiprocessing()
