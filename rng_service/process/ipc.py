"""The log writer's channel: gRPC front-end processes hand their requests to the writer process.

With ``serve --front-ends N`` (N >= 2) one process, the instance's owner, is the log writer:
it alone holds the store's write path, the outcome generator and the signing keys (the
sequencer of ``rng_service.writer.appender``, unchanged). The N front-end processes serve gRPC
and reach the writer only through this channel. What crosses it:

- front end to writer: validated :class:`~rng_service.writer.appender.DrawRequest` s (their
  ``draw`` is a reference to a pure outcome function and its validated parameters, see
  ``rng_service.rpc.servicers``), and three control calls: the signed checkpoint note of a
  tree size, publishing a checkpoint, nothing else;
- writer to front end: each request's :class:`~rng_service.writer.appender.AppendResult` (the
  logged entry and its receipt) or its domain error, the signed note or checkpoint record of a
  control call, and every 0.2 s the generator's and the store's status snapshots (public:
  state, reason, counters), which the front ends' health follows.

The private keys, the DRBG state and the store connection never cross it: the writer never
sends them and the front ends never hold them.

Transport (measured against ``multiprocessing.connection``: ``bench/bench_ipc.py`` and
docs/performance.md): a ``socketpair`` made by the owner before it starts each front end (the
front end inherits its end; nothing listens on a path, so no other process can connect),
frames of a 4-byte big-endian length and a pickled list of messages. Each side coalesces:
what is sent during one turn of its event loop goes out as one frame, so a commit group of
32 answers costs one frame and one wake-up of the front end. Pickle is safe here only
because both ends are the same program started by the owner over an inherited descriptor.

Errors: a domain error (:class:`rng_service.errors.RngServiceError`) crosses as its class,
message and attributes, so the front end maps it to the same gRPC status as the writer would
have; anything else becomes ``Unavailable``. If the writer goes away, every request waiting
in a front end fails with ``Unavailable`` (nothing not durable was ever acknowledged: an
answer is only sent after its group committed), and the front end stops.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import io
import logging
import operator
import pickle
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from rng_service import errors as _errors
from rng_service.errors import RngServiceError, Unavailable
from rng_service.log.entry import GeneratorRef, LogEntry
from rng_service.log.receipt import Receipt
from rng_service.storage.base import CheckpointRecord
from rng_service.writer.appender import AppendResult, DrawRequest, Waiter
from rng_service.writer.frozen_setters import slot_setters

__all__ = [
    "STATUS_INTERVAL",
    "WriterClient",
    "WriterEndpoint",
    "WriterLike",
]

# The logger keeps its name from before the move into process/ (the JSON log's "logger" field).
_log = logging.getLogger("rng_service.ipc")

_LEN = struct.Struct(">I")
#: Largest frame either side accepts (a DrawBatch answer of 100,000 outcomes is about 1 MB).
MAX_FRAME = 256 * 1024 * 1024
#: Seconds between the writer's status snapshots; a front end that has none for
#: ``STATUS_STALE`` seconds reports the writer unhealthy.
STATUS_INTERVAL = 0.2
STATUS_STALE = 3.0

_DRAW, _NOTE, _PUBLISH, _READY, _METRICS = 0, 1, 2, 3, 4
_STATUS_ID = -1  # unsolicited: (generator status, store status)


class WriterLike(Protocol):
    """What the writer side serves (``rng_service.writer.appender.Appender``)."""

    def submit_waiter(self, request: DrawRequest, waiter: Waiter) -> None: ...
    def checkpoint_note(self, size: int) -> str: ...
    def publish_checkpoint(self) -> CheckpointRecord: ...
    def sync(self) -> int: ...


def _encode_error(e: BaseException) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    if isinstance(e, RngServiceError):
        return type(e).__name__, e.args, dict(vars(e))
    return "Unavailable", (f"internal error in the log writer: {type(e).__name__}",), {}


def _decode_error(encoded: tuple[str, tuple[Any, ...], dict[str, Any]]) -> RngServiceError:
    name, args, attrs = encoded
    cls = getattr(_errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, RngServiceError)):
        return Unavailable(f"the log writer answered an unknown error {name!r}")
    error = cls.__new__(cls)  # not cls(*args): subclasses' __init__ take other arguments
    error.args = args
    vars(error).update(attrs)
    return error


def _rebuild(cls: type, values: tuple[Any, ...]) -> Any:
    """Unpickles a slotted frozen dataclass from its field values (see ``_DISPATCH``): sets
    its slots through their own descriptors (``_SETTERS``), as its pickled state would."""
    obj: Any = object.__new__(cls)
    for put, value in zip(_SETTERS[cls], values, strict=True):
        put(obj, value)
    return obj


def _reducer(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    get = operator.attrgetter(*_FIELDS[cls])
    return lambda obj: (_rebuild, (cls, get(obj)))


#: The slotted frozen dataclasses that cross the channel, pickled as their field values: the
#: dataclasses' own ``__getstate__``/``__setstate__`` call ``dataclasses.fields`` for every
#: object (a few microseconds each, several objects a request, on both sides).
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls))
    for cls in (DrawRequest, AppendResult, LogEntry, GeneratorRef, Receipt, CheckpointRecord)
}
_DISPATCH = {cls: _reducer(cls) for cls in _FIELDS}
#: Each field's slot descriptor ``__set__``, in field order (``object.__setattr__`` would look
#: the name up in the class for every field of every object); the pickled values are set as
#: they were, no ``__post_init__`` runs (``DrawRequest`` carries its digest).
_SETTERS: dict[type, tuple[Callable[[Any, Any], None], ...]] = {
    cls: slot_setters(cls, " ".join(names), post_init=False) for cls, names in _FIELDS.items()
}


def _frame(messages: list[tuple[Any, ...]]) -> memoryview:
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(messages)
    data = buf.getbuffer()
    _LEN.pack_into(data, 0, len(data) - 4)
    return data


class _Framed(asyncio.Protocol):
    """Length-prefixed pickled frames, each a list of messages; sends coalesced per loop turn."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._outbox: list[tuple[Any, ...]] = []
        self.transport: asyncio.Transport | None = None
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if not self.lost.done():
            self.lost.set_result(None)

    def send(self, message: tuple[Any, ...]) -> None:
        if not self._outbox:
            asyncio.get_running_loop().call_soon(self._flush)
        self._outbox.append(message)

    def _flush(self) -> None:
        out, self._outbox = self._outbox, []
        if self.transport is None or not out:
            return
        try:
            data = _frame(out)
        except Exception:  # one message does not pickle: send the others, fail that one
            sendable = []
            for message in out:
                try:
                    _frame([message])
                except Exception as e:
                    _log.error({"event": "ipc_unsendable", "error": f"{type(e).__name__}: {e}"})
                    self.unsendable(message)
                else:
                    sendable.append(message)
            if not sendable:
                return
            data = _frame(sendable)
        self.transport.write(data)

    def unsendable(self, message: tuple[Any, ...]) -> None:
        """``message`` could not be pickled (a programming error, logged): fail it."""

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        start = 0
        while len(buf) - start >= 4:
            (n,) = _LEN.unpack_from(buf, start)
            if n > MAX_FRAME:
                _log.error({"event": "ipc_frame_too_large", "bytes": n})
                if self.transport is not None:
                    self.transport.close()
                return
            if len(buf) - start < 4 + n:
                break
            messages = pickle.loads(memoryview(buf)[start + 4 : start + 4 + n])  # noqa: S301
            start += 4 + n
            self.received(messages)
        if start:
            del buf[:start]

    def received(self, messages: list[tuple[Any, ...]]) -> None:
        raise NotImplementedError


# --- the writer's side ------------------------------------------------------------------------


class WriterEndpoint(_Framed):
    """The writer process's end of one front end's channel (an asyncio protocol)."""

    def __init__(
        self, writer: WriterLike, status: Callable[[], tuple[object, object]] | None = None
    ) -> None:
        super().__init__()
        self._writer = writer
        self._status = status
        self._status_task: asyncio.Task[None] | None = None
        #: The front end's gRPC port, once it listens (its first message).
        self.ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        # A front end that goes away before it listened while nobody waits (a restart racing a
        # stop): its exception is read here, never "Future exception was never retrieved" from
        # the garbage collector at some later moment.
        self.ready.add_done_callback(lambda f: None if f.cancelled() else f.exception())
        #: The front end's latest metric families (``prometheus_client`` ``Metric`` s).
        self.metric_families: list[Any] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if self._status is not None:
            self._status_task = asyncio.get_running_loop().create_task(self._push_status())

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._status_task is not None:
            self._status_task.cancel()
        if not self.ready.done():
            self.ready.set_exception(Unavailable("the front end went away before it listened"))

    async def _push_status(self) -> None:
        status = self._status
        if status is None:
            raise RuntimeError("status pushed by an endpoint without a status source")
        while self.transport is not None:
            self.send((_STATUS_ID, True, status()))
            await asyncio.sleep(STATUS_INTERVAL)

    def received(self, messages: list[tuple[Any, ...]]) -> None:
        loop = asyncio.get_running_loop()
        for rid, op, arg in messages:
            if op == _DRAW:
                try:
                    self._writer.submit_waiter(arg, _Answer(self, rid, loop))
                except RngServiceError as e:  # overloaded, shutting down: nothing queued
                    self.send((rid, False, _encode_error(e)))
            elif op == _NOTE:
                loop.run_in_executor(None, self._writer.checkpoint_note, arg).add_done_callback(
                    self._answerer(rid)
                )
            elif op == _PUBLISH:
                loop.run_in_executor(None, self._writer.publish_checkpoint).add_done_callback(
                    self._answerer(rid)
                )
            elif op == _READY:
                if not self.ready.done():
                    self.ready.set_result(arg)
            elif op == _METRICS:
                self.metric_families = arg
            else:
                self.send((rid, False, _encode_error(Unavailable(f"unknown operation {op!r}"))))

    def unsendable(self, message: tuple[Any, ...]) -> None:
        rid = message[0]
        if rid != _STATUS_ID:
            self.send((rid, False, _encode_error(Unavailable("the answer could not be sent"))))

    def _answerer(self, rid: int) -> Callable[[asyncio.Future[Any]], None]:
        def answer(fut: asyncio.Future[Any]) -> None:
            if fut.cancelled():
                self.send((rid, False, _encode_error(Unavailable("cancelled in the writer"))))
                return
            error = fut.exception()
            if error is not None:
                self.send((rid, False, _encode_error(error)))
            else:
                self.send((rid, True, fut.result()))

        return answer


class _Answer:
    """A request's waiter in the writer (``Appender.submit_waiter``): settled on the event
    loop once its group is durable (or failed), it queues the answer on the channel at once,
    with no asyncio future and done-callback per request."""

    __slots__ = ("_endpoint", "_loop", "_rid", "_settled")

    def __init__(self, endpoint: WriterEndpoint, rid: int, loop: asyncio.AbstractEventLoop) -> None:
        self._endpoint = endpoint
        self._rid = rid
        self._loop = loop
        self._settled = False

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def done(self) -> bool:
        return self._settled

    def set_result(self, result: AppendResult, /) -> None:
        self._settled = True
        self._endpoint.send((self._rid, True, result))

    def set_exception(self, error: BaseException, /) -> None:
        self._settled = True
        self._endpoint.send((self._rid, False, _encode_error(error)))


async def serve_front_end(
    sock: socket.socket,
    writer: WriterLike,
    status: Callable[[], tuple[object, object]] | None = None,
) -> WriterEndpoint:
    """Serves one front end's channel on the running loop; returns its protocol (``lost``
    resolves when the front end goes away)."""
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_unix_connection(
        lambda: WriterEndpoint(writer, status), sock=sock
    )
    return protocol


# --- the front end's side ---------------------------------------------------------------------


class _RemoteStatus:
    """A status snapshot's fields, as the health monitor reads them (duck-typed)."""

    def __init__(self, state: str, reason: str, **fields: int) -> None:
        self.state = state
        self.reason = reason
        self.health_test_failures = fields.get("health_test_failures", 0)
        self.entropy_read_timeouts = fields.get("entropy_read_timeouts", 0)


class WriterClient(_Framed):
    """A front end's end of the channel: what its servicers call instead of the appender.

    :meth:`submit_async` and :meth:`submit` on the event loop; :meth:`checkpoint_note`,
    :meth:`publish_checkpoint` block (call them from worker threads, as ``LogServicer``
    does). :meth:`generator_status` and :meth:`store_status` return the writer's latest
    snapshots without waiting.
    """

    def __init__(self) -> None:
        super().__init__()
        self._loop = asyncio.get_running_loop()
        self._next = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._status: tuple[Any, Any] | None = None
        self._status_at = 0.0

    @classmethod
    async def connect(cls, sock: socket.socket) -> WriterClient:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_unix_connection(cls, sock=sock)
        return protocol

    def received(self, messages: list[tuple[Any, ...]]) -> None:
        for rid, ok, value in messages:
            if rid == _STATUS_ID:
                self._status = value
                self._status_at = time.monotonic()
                continue
            fut = self._waiting.pop(rid, None)
            if fut is None or fut.done():
                continue
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(_decode_error(value))

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        waiting, self._waiting = self._waiting, {}
        for fut in waiting.values():
            if not fut.done():
                fut.set_exception(Unavailable("the log writer process is gone; retry"))

    def unsendable(self, message: tuple[Any, ...]) -> None:
        fut = self._waiting.pop(message[0], None)
        if fut is not None and not fut.done():
            fut.set_exception(Unavailable("the request could not be handed to the log writer"))

    def _call(self, op: int, arg: object) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = self._loop.create_future()
        if self.transport is None:
            fut.set_exception(Unavailable("the log writer process is gone; retry"))
            return fut
        rid = self._next
        self._next = rid + 1
        self._waiting[rid] = fut
        self.send((rid, op, arg))
        return fut

    def submit_async(self, request: DrawRequest) -> asyncio.Future[AppendResult]:
        """Hands the request to the writer; resolves once it is durable (or failed)."""
        return self._call(_DRAW, request)

    def submit(self, request: DrawRequest) -> concurrent.futures.Future[AppendResult]:
        """:meth:`submit_async` as a ``concurrent.futures.Future`` (call it on the loop)."""
        out: concurrent.futures.Future[AppendResult] = concurrent.futures.Future()
        out.set_running_or_notify_cancel()
        waiter = self.submit_async(request)

        def copy(fut: asyncio.Future[AppendResult]) -> None:
            error = None if fut.cancelled() else fut.exception()
            if fut.cancelled() or error is not None:
                out.set_exception(error or Unavailable("cancelled"))
            else:
                out.set_result(fut.result())

        waiter.add_done_callback(copy)
        return out

    def _blocking(self, op: int, arg: object, timeout: float = 30.0) -> Any:
        if threading.current_thread() is threading.main_thread():
            raise RuntimeError("blocking writer calls belong in worker threads")

        async def call() -> Any:
            return await self._call(op, arg)

        future = asyncio.run_coroutine_threadsafe(call(), self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise Unavailable("the log writer did not answer in time") from None

    def ready(self, port: int) -> None:
        """Tells the writer this front end listens on ``port``."""
        self.send((_STATUS_ID, _READY, port))

    def push_metrics(self, families: list[Any]) -> None:
        """Hands the writer this process's metric families (it serves them all, summed)."""
        self.send((_STATUS_ID, _METRICS, families))

    def checkpoint_note(self, size: int) -> str:
        note: str = self._blocking(_NOTE, size)
        return note

    def publish_checkpoint(self) -> CheckpointRecord:
        record: CheckpointRecord = self._blocking(_PUBLISH, None)
        return record

    def _snapshot(self) -> tuple[Any, Any] | None:
        if self._status is None or time.monotonic() - self._status_at > STATUS_STALE:
            return None
        return self._status

    def generator_status(self) -> Any:
        """The writer's generator status, or an error state when the writer is silent."""
        if self.transport is None:  # at once: a shared front end serves the other logs on
            return _RemoteStatus("error", "the log writer process is gone")
        snap = self._snapshot()
        if snap is None:
            return _RemoteStatus("error", "no status from the log writer process")
        return snap[0]

    def store_status(self) -> Any:
        snap = self._snapshot()
        if snap is None or snap[1] is None:
            if snap is None:
                return _RemoteStatus("down", "no status from the log writer process")
            return _RemoteStatus("up", "")
        return snap[1]

    async def closed(self) -> None:
        """Returns once the writer's side of the channel is gone."""
        await self.lost

    def close(self) -> None:
        if self.transport is not None:
            with contextlib.suppress(Exception):
                self.transport.close()


class RemoteStoreHealth:
    """``StoreHealthLike`` for a front end's health monitor: the writer runs the probes."""

    def __init__(self, client: WriterClient) -> None:
        self._client = client

    def status(self) -> Any:
        return self._client.store_status()

    def probe_due(self) -> bool:
        return False

    def probe(self) -> bool:
        return bool(self._client.store_status().state == "up")
