"""The log writer's queue: requests waiting for the writer thread, commit groups, and the
hand-off of each group's outcomes back to the callers' event loops.

Owns the bound on waiting requests (``Overloaded`` beyond it), the refusal of submissions
while the writer stops or recovers, :func:`gather_group` (how a commit group forms) and the
waiters: each request's outcome is settled once on the writer thread and handed to its event
loop with one wake-up per loop per group. Decides nothing about a request's content.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from rng_service.errors import Overloaded, ShuttingDown, StorageUnavailable
from rng_service.writer.values import AppendResult, DrawRequest

__all__ = [
    "STOP",
    "Pending",
    "Waiter",
    "WriterQueue",
    "gather_group",
    "refused",
    "wake_waiters",
]


class Waiter(Protocol):
    """What the writer settles a request's outcome into, on the waiter's event loop (an
    ``asyncio.Future`` is one): ``done()`` once settled or cancelled."""

    def get_loop(self) -> asyncio.AbstractEventLoop: ...
    def done(self) -> bool: ...
    def set_result(self, result: AppendResult, /) -> None: ...
    def set_exception(self, error: BaseException, /) -> None: ...


class Pending:
    """One submitted request and the slots its outcome goes into.

    The writer settles it exactly once (:meth:`set_result` or :meth:`set_exception`; a second
    attempt raises ``InvalidStateError``, as a ``concurrent.futures.Future`` would). Only the
    synchronous ``Appender.submit`` has a ``concurrent.futures.Future`` (``future``), which
    is settled along with the slots; ``Appender.submit_async`` has only the event loop's
    ``waiter``, which ``_settle`` settles from the slots once per group: a lock-based future per
    call would cost the event loop a few microseconds for nothing.
    """

    __slots__ = ("done", "error", "future", "request", "result", "waiter")

    def __init__(
        self,
        request: DrawRequest,
        waiter: Waiter | None,
        future: concurrent.futures.Future[AppendResult] | None,
    ) -> None:
        self.request = request
        self.waiter = waiter
        """The event loop's future of ``Appender.submit_async``, settled once per group."""
        self.future = future
        self.result: AppendResult | None = None
        self.error: BaseException | None = None
        self.done = False

    def set_result(self, result: AppendResult) -> None:
        if self.done:
            raise concurrent.futures.InvalidStateError(f"request {self.request.request_id!r}")
        self.done = True
        self.result = result
        if self.future is not None:
            self.future.set_result(result)

    def set_exception(self, error: BaseException) -> None:
        if self.done:
            raise concurrent.futures.InvalidStateError(f"request {self.request.request_id!r}")
        self.done = True
        self.error = error
        if self.future is not None:
            self.future.set_exception(error)


STOP = object()
"""The stop marker: the writer finishes what is queued before it, then stops."""


class _Takes(Protocol):
    def get(self, block: bool = True, timeout: float | None = None) -> object: ...
    def get_nowait(self) -> object: ...


def gather_group(
    first: Pending,
    waiting: _Takes,
    *,
    max_group: int,
    last: int,
    wait: float,
    lull: float,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[Pending], bool]:
    """A commit group: ``first`` and the requests after it on ``waiting``, and whether the
    stop marker was taken. ``last`` is the size of the previous group.

    As in a database's group commit, the group is first what queued while the previous group
    was committed: it joins at once, and after a lone group the writer adds no wait. Every
    group costs one transaction, one fsync and one signature, and each of those hands the GIL
    back and forth with the event loop, so under concurrent load a few bigger groups beat many
    small ones: after a group with company the writer waits, ``wait`` seconds at most from
    the start, for as many requests as that group held (its callers, on their way back with
    their next requests), then goes on taking arrivals until ``lull`` seconds pass with none;
    ``max_group`` ends the group too. So a few callers in a loop are all in and committed one
    lull later, where a fixed wait (``lull >= wait``) made each of their spins wait it out,
    and the groups of many callers do not shrink while they trickle in (docs/performance.md,
    "The log writer's group rule")."""
    group = [first]
    deadline = clock() + wait if last > 1 else 0.0
    while len(group) < max_group:
        try:
            nxt = waiting.get_nowait()
        except queue.Empty:
            remaining = deadline - clock()
            timeout = remaining if len(group) < last else min(lull, remaining)
            if timeout <= 0:
                break
            try:
                nxt = waiting.get(timeout=timeout)
            except queue.Empty:
                break
        if nxt is STOP:
            return group, True
        group.append(nxt)  # type: ignore[arg-type]
    return group, False


def wake_waiters(group: Sequence[Pending]) -> None:
    """Hands the group's settled futures to their event loops: one call per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Pending]] = {}
    for p in group:
        if p.waiter is not None:
            by_loop.setdefault(p.waiter.get_loop(), []).append(p)
    for loop, pendings in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(_settle, pendings)


def _settle(pendings: Sequence[Pending]) -> None:
    """On the event loop: copies each request's outcome to its loop future."""
    for p in pendings:
        waiter = p.waiter
        if waiter is None or waiter.done():  # cancelled: the caller went away
            continue
        error = p.error
        if error is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(p.result)  # type: ignore[arg-type]  # settled before the wake-up


def refused(reason: str) -> StorageUnavailable:
    return StorageUnavailable(
        f"{reason}; nothing was drawn or logged: retry with the same request id"
    )


class WriterQueue:
    """The requests waiting for the writer, bounded, and the writer's run state that decides
    whether a submission is taken: stopped (``stop()`` was called), stopping (the writer took
    the stop marker) and why it takes no groups while it recovers (``down``)."""

    def __init__(self, max_queue: int) -> None:
        # A C queue without a bound of its own (cheaper by a few microseconds a call than
        # ``queue.Queue``); ``put`` enforces ``max_queue`` under ``_put_lock``.
        self.items: queue.SimpleQueue[Pending | object] = queue.SimpleQueue()
        self._max_queue = max_queue if max_queue > 0 else sys.maxsize
        self._put_lock = threading.Lock()
        self.stopped = False
        self.stopping = False  # the writer has taken the stop marker off the queue
        # Non-empty while the writer recovers from a lost or diverged store: why. Submissions
        # are refused meanwhile (read without a lock: a str reference is replaced atomically).
        self.down = ""
        self.wake = threading.Event()  # set by stop(): ends a recovery's waits

    def put(self, pending: Pending) -> None:
        if self.stopped:
            raise ShuttingDown("the log writer has stopped")
        down = self.down
        if down:
            raise refused(down)
        with self._put_lock:  # the bound is exact with submitters on several threads too
            if self.items.qsize() >= self._max_queue:
                raise Overloaded("too many requests waiting for the log; retry later")
            self.items.put(pending)

    def top_up(self, group: list[Pending], max_group: int) -> None:
        """Adds the requests that queued meanwhile (while this writer waited for the store's
        lock, which other replicas hold) to ``group``: they cost no extra transaction."""
        while not self.stopping and len(group) < max_group:
            try:
                nxt = self.items.get_nowait()
            except queue.Empty:
                return
            if nxt is STOP:
                self.stopping = True
                return
            group.append(nxt)  # type: ignore[arg-type]

    def fail_queued(self) -> None:
        """Fails every request waiting (nothing drawn): the writer takes no groups while it
        recovers. A stop marker found on the way is kept as a stop."""
        error = refused(self.down or "the log store is unavailable")
        waiting: list[Pending] = []
        while True:
            try:
                item = self.items.get_nowait()
            except queue.Empty:
                break
            if item is STOP:
                self.stopping = True
                self.stopped = True
                continue
            p: Pending = item  # type: ignore[assignment]
            p.set_exception(error)
            waiting.append(p)
        wake_waiters(waiting)
