"""Request decoding by our code, not by grpcio: hostile bytes get INVALID_ARGUMENT, not UNKNOWN.

grpcio's own deserializer runs before any handler and answers a body it cannot parse with
UNKNOWN ("Unexpected <class 'google.protobuf.message.DecodeError'>"), logging a traceback for
each. So every method of every service the server exposes is registered with grpcio's identity
deserializer (``request_deserializer=None``: the handler receives the raw bytes), and decodes
here:

* our services (``rng.v1.*``): :func:`decode_request`, called by the ``rpc`` wrapper
  (``rng_service.rpc.errors``) AFTER the caller's identity, role and rate limit are checked
  (they need no request body) and before the table and profile scope checks (which do);
* the standard health and reflection services: :func:`decoding_handler` wraps their handlers
  when they register (:class:`DecodingRegistrar`); they are open to any caller that passed the
  TLS handshake (docs/security.md), so they decode first.

A body that is not a valid message of the method's request type (malformed protobuf, or a
string field that is not UTF-8) is :class:`~rng_service.errors.InvalidArgument` naming
``request`` and the message type, never an internal class; it is counted per method
(``rng_rpc_undecodable_requests_total``) and logged as one ``undecodable_request`` line at
most every :data:`LOG_INTERVAL_SECONDS` per process, carrying the count since the last line.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Protocol

import grpc
from google.protobuf import message_factory
from google.protobuf.message import Message

from rng_service._proto.rng.v1 import lab_pb2, log_pb2, outcomes_pb2
from rng_service.errors import InvalidArgument

__all__ = [
    "LOG_INTERVAL_SECONDS",
    "REQUEST_TYPES",
    "RESPONSE_TYPES",
    "DecodeObserver",
    "DecodingRegistrar",
    "decode_request",
    "decoding_handler",
    "undecodable",
]

# The logger keeps its name from before the package's rename (the JSON log's "logger" field).
_log = logging.getLogger("rng_service.service.decoding")

#: At most one ``undecodable_request`` log line per this many seconds per process.
LOG_INTERVAL_SECONDS = 10.0

_SERVICES = tuple(
    service
    for module in (outcomes_pb2, log_pb2, lab_pb2)
    for service in module.DESCRIPTOR.services_by_name.values()
)
#: The request message class of every method of our services, by short method name (the
#: names are unique across them, as ``rng_service.security.policy.METHODS`` relies on).
REQUEST_TYPES: Mapping[str, type[Message]] = {
    m.name: message_factory.GetMessageClass(m.input_type) for s in _SERVICES for m in s.methods
}
RESPONSE_TYPES: Mapping[str, type[Message]] = {
    m.name: message_factory.GetMessageClass(m.output_type) for s in _SERVICES for m in s.methods
}


class DecodeObserver(Protocol):
    def undecodable(self, method: str) -> None: ...


class _Throttle:
    """Counts undecodable requests; lets one log line through per interval."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._last = -float("inf")
        self._pending = 0

    def note(self, method: str, type_name: str) -> None:
        with self._lock:
            self._pending += 1
            now = self._clock()
            if now - self._last < self._interval:
                return
            count, self._pending, self._last = self._pending, 0, now
        _log.warning(
            {
                "event": "undecodable_request",
                "method": method,
                "request_type": type_name,
                "count": count,
                "message": f"{count} request(s) with a body that is not a valid protobuf "
                f"message refused with INVALID_ARGUMENT since the last such line (at most one "
                f"line per {self._interval:g} s; rng_rpc_undecodable_requests_total counts each)",
            }
        )


_throttle = _Throttle(LOG_INTERVAL_SECONDS)


def undecodable(method: str, type_name: str, observer: DecodeObserver | None) -> InvalidArgument:
    """Counts and (rate-limited) logs one undecodable request; the error to return."""
    if observer is not None:
        observer.undecodable(method)
    _throttle.note(method, type_name)
    error = InvalidArgument(
        "request",
        f"the body is not a valid {type_name} message (malformed protobuf, or a string field "
        "that is not UTF-8)",
        allowed=f"a serialized {type_name}",
    )
    error.cause = "undecodable"  # its own row of rng_service.rpc.errors.STATUS_CAUSES
    return error


def decode_request(method: str, body: Any, observer: DecodeObserver | None = None) -> Any:
    """``body`` decoded as ``method``'s request type; a message passes through unchanged (the
    servicers' unit tests call them with messages), and so does the body of a method that is
    not one of our services' (it is handed over as it is)."""
    cls = REQUEST_TYPES.get(method)
    if cls is None or not isinstance(body, bytes):
        return body  # a message already, or a method of no service of ours (tests' own)
    try:
        return cls.FromString(body)
    except Exception:  # DecodeError, or anything a hostile body provokes in the parser
        raise undecodable(method, cls.DESCRIPTOR.full_name, observer) from None


# --- handlers of services we do not own (health, reflection) ------------------------------------


def decoding_handler(
    handler: grpc.RpcMethodHandler[Any, Any], method: str, observer: DecodeObserver | None
) -> grpc.RpcMethodHandler[Any, Any]:
    """The same handler with grpcio's identity deserializer and our decoding in front."""
    deserialize = handler.request_deserializer
    if deserialize is None:
        return handler
    type_name = getattr(getattr(deserialize, "__self__", None), "DESCRIPTOR", None)
    name = type_name.full_name if type_name is not None else "request"

    async def decode(body: bytes, context: Any) -> Any:
        try:
            return deserialize(body)
        except Exception:
            error = undecodable(method, name, observer)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))

    def unary(inner: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.isasyncgenfunction(inner):

            async def stream_out(body: bytes, context: Any) -> AsyncIterator[Any]:
                request = await decode(body, context)
                async for response in inner(request, context):
                    yield response

            return stream_out

        async def call(body: bytes, context: Any) -> Any:
            return await inner(await decode(body, context), context)

        return call

    def streaming(inner: Callable[..., Any]) -> Callable[..., Any]:
        async def requests(bodies: Any, context: Any) -> AsyncIterator[Any]:
            async for body in bodies:
                yield await decode(body, context)

        if inspect.isasyncgenfunction(inner):

            async def stream_out(bodies: Any, context: Any) -> AsyncIterator[Any]:
                async for response in inner(requests(bodies, context), context):
                    yield response

            return stream_out

        async def call(bodies: Any, context: Any) -> Any:
            return await inner(requests(bodies, context), context)

        return call

    wrapped = {
        "unary_unary": handler.unary_unary and unary(handler.unary_unary),
        "unary_stream": handler.unary_stream and unary(handler.unary_stream),
        "stream_unary": handler.stream_unary and streaming(handler.stream_unary),
        "stream_stream": handler.stream_stream and streaming(handler.stream_stream),
    }
    return handler._replace(request_deserializer=None, **wrapped)  # type: ignore[attr-defined,no-any-return]


class _DecodingGeneric(grpc.GenericRpcHandler):  # type: ignore[type-arg]
    def __init__(
        self, inner: grpc.GenericRpcHandler[Any, Any], observer: DecodeObserver | None
    ) -> None:
        self._inner = inner
        self._observer = observer

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        handler = self._inner.service(handler_call_details)
        if handler is None:
            return None
        return decoding_handler(handler, handler_call_details.method, self._observer)


class DecodingRegistrar:
    """Stands in for the server while a service we do not own registers its handlers (the
    generated ``add_..._to_server`` functions call these two methods): each handler is
    registered with our decoding in front."""

    def __init__(self, server: Any, observer: DecodeObserver | None) -> None:
        self._server = server
        self._observer = observer

    def add_generic_rpc_handlers(
        self, handlers: Iterable[grpc.GenericRpcHandler[Any, Any]]
    ) -> None:
        self._server.add_generic_rpc_handlers(
            tuple(_DecodingGeneric(h, self._observer) for h in handlers)
        )

    def add_registered_method_handlers(
        self, service: str, handlers: Mapping[str, grpc.RpcMethodHandler[Any, Any]]
    ) -> None:
        self._server.add_registered_method_handlers(
            service,
            {
                name: decoding_handler(h, f"/{service}/{name}", self._observer)
                for name, h in handlers.items()
            },
        )
