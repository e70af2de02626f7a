"""Graceful stop: the drain window before the gRPC server itself stops.

grpc.aio's ``server.stop(grace)`` refuses new calls at the transport and cancels what is still
running when the grace ends, so callers see CANCELLED, a code the API does not promise. Instead,
for ``server.shutdown_grace_seconds`` (the drain window) the server keeps accepting calls and
:class:`Drain` answers every NEW call at once with UNAVAILABLE "the service is shutting down"
(nothing drawn or logged: retry on another instance, with the same request id), while the calls
already accepted run to their end. The window closes, and the server stops, once they have all
finished AND no new call has arrived for :data:`QUIET_SECONDS` (callers have moved to other
instances: grpc core answers calls still queued inside it when the server stops with CANCELLED),
or when ``server.shutdown_grace_seconds`` have passed. A call still running then (a long
stream, a commit stuck on a slow store) is interrupted with UNAVAILABLE too: an outcome it had
already submitted to the log is still logged, and a retry with the same request id returns it.

Every servicer method is wrapped by :meth:`Drain.guard` when the server registers it
(``rng_service.rpc.server``), so the servicers know nothing of this. Both kinds of answer
are counted in the RPC metric as UNAVAILABLE with cause ``shutting_down`` (a refusal here, an
interrupted call by the ``rpc`` wrapper, to which it is marked as such).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from rng_service.rpc.errors import RpcObserver, classify, mark_interrupted

__all__ = ["INTERRUPTED", "QUIET_SECONDS", "SHUTTING_DOWN", "Drain"]

SHUTTING_DOWN = (
    "the service is shutting down: nothing was drawn or logged for this call; retry on "
    "another instance (with the same request id)"
)
INTERRUPTED = (
    "the service is shutting down and this call did not finish within the drain window "
    "(server.shutdown_grace_seconds); an outcome already submitted is logged: retry with the "
    "same request id to get it"
)
#: The window closes early only after this long without a new call (see the module doc).
QUIET_SECONDS = 0.25
#: After the window, how long interrupted calls get to send their UNAVAILABLE.
_INTERRUPT_SECONDS = 1.0
_POLL_SECONDS = 0.01


class Drain:
    """Tracks the calls in progress; :meth:`close` runs the drain window. Event loop only."""

    def __init__(self, *, observer: RpcObserver | None = None) -> None:
        self._observer = observer
        self._closing = False
        self._expired = False
        self._calls: set[asyncio.Task[Any]] = set()
        self._last_refused = 0.0  # loop time of the latest call refused in the window

    @property
    def closing(self) -> bool:
        return self._closing

    @property
    def in_progress(self) -> int:
        return len(self._calls)

    def guard(
        self, handler: Callable[[Any, Any], Awaitable[Any]], method: str
    ) -> Callable[[Any, Any], Awaitable[Any]]:
        """``handler`` (the servicer method ``method``: ``(request, context)``), refusing new
        calls once the window is open and interrupting with UNAVAILABLE what outlives it."""

        @functools.wraps(handler)
        async def guarded(request: Any, context: Any) -> Any:
            if self._closing:
                self._last_refused = asyncio.get_running_loop().time()
                if self._observer is not None:
                    status = classify(grpc.StatusCode.UNAVAILABLE, "shutting_down")
                    self._observer.rpc_finished(method, status, 0.0)
                await context.abort(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
            task = asyncio.current_task()
            if task is None:  # not reached: grpc.aio runs each call in a task
                raise RuntimeError("a gRPC call outside an asyncio task")
            self._calls.add(task)
            try:
                return await handler(request, context)
            except asyncio.CancelledError:
                if not self._expired:
                    raise  # the client went away: nothing to answer
                await context.abort(grpc.StatusCode.UNAVAILABLE, INTERRUPTED)
            finally:
                self._calls.discard(task)

        return guarded

    async def close(self, grace: float) -> int:
        """Opens the drain window: from now on new calls are refused; returns once every
        accepted call has finished and no call has come for ``QUIET_SECONDS``, or after
        ``grace`` seconds, having interrupted the calls still running (returns how many)."""
        self._closing = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        self._last_refused = loop.time()
        while loop.time() < deadline and (
            self._calls or loop.time() - self._last_refused < QUIET_SECONDS
        ):
            await asyncio.sleep(_POLL_SECONDS)
        left = list(self._calls)
        if not left:
            return 0
        self._expired = True
        for task in left:
            mark_interrupted(task)
            task.cancel()
        deadline = loop.time() + _INTERRUPT_SECONDS
        while self._calls and loop.time() < deadline:
            await asyncio.sleep(_POLL_SECONDS)
        return len(left)
