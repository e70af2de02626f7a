"""The one table from domain errors to gRPC status codes, and the wrapper every RPC uses.

``rpc`` wraps a servicer coroutine: when the servicer has an ``authorizer``
(:class:`rng_service.service.auth.Authorizer`) it authenticates and authorizes the caller first
(Python server interceptors cannot see the peer's TLS identity; the handler's context can), so a
refused call runs nothing; it translates :class:`rng_service.errors.RngServiceError` subclasses
to their status code (the first matching class in :data:`STATUS_TABLE`, most specific first),
turns anything unexpected into INTERNAL without leaking details, and records the call's latency
by method and status code.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, cast

import grpc
from grpc import aio

from rng_service import errors
from rng_service.service.auth import Authorizer, leave

__all__ = ["STATUS_TABLE", "RpcObserver", "rpc", "status_for"]

_log = logging.getLogger(__name__)

STATUS_TABLE: tuple[tuple[type[errors.RngServiceError], grpc.StatusCode], ...] = (
    (errors.InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.OutOfRange, grpc.StatusCode.OUT_OF_RANGE),
    (errors.NotFound, grpc.StatusCode.NOT_FOUND),
    (errors.AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    (errors.FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (errors.Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (errors.Overloaded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.Unavailable, grpc.StatusCode.UNAVAILABLE),
    (errors.IntegrityError, grpc.StatusCode.DATA_LOSS),
)


def status_for(error: errors.RngServiceError) -> grpc.StatusCode:
    for cls, code in STATUS_TABLE:
        if isinstance(error, cls):
            return code
    return grpc.StatusCode.INTERNAL


class RpcObserver(Protocol):
    def rpc_finished(self, method: str, code: grpc.StatusCode, seconds: float) -> None: ...


Req = TypeVar("Req")
Resp = TypeVar("Resp")
Handler = Callable[[Any, Req, aio.ServicerContext[Req, Resp]], Awaitable[Resp]]


def rpc(method: str) -> Callable[[Handler[Req, Resp]], Handler[Req, Resp]]:
    """Decorates a servicer method: authorization, error translation and per-call metrics."""

    def wrap(fn: Handler[Req, Resp]) -> Handler[Req, Resp]:
        @functools.wraps(fn)
        async def handler(self: Any, request: Req, context: aio.ServicerContext[Req, Resp]) -> Resp:
            observer: RpcObserver | None = getattr(self, "rpc_observer", None)
            authorizer: Authorizer | None = getattr(self, "authorizer", None)
            started = time.perf_counter()
            code = grpc.StatusCode.OK
            try:
                # Authorizer.authorized, without a generator context manager on every call.
                if authorizer is None:
                    return await fn(self, request, context)
                token = authorizer.enter(method, request, context)
                try:
                    return await fn(self, request, context)
                finally:
                    leave(token)
            except errors.RngServiceError as e:
                code = status_for(e)
                await context.abort(code, str(e))
                raise  # unreachable: abort raises
            except aio.AbortError:
                # aio contexts answer None until a code is set
                code = cast("grpc.StatusCode | None", context.code()) or grpc.StatusCode.UNKNOWN
                raise
            except Exception:
                code = grpc.StatusCode.INTERNAL
                _log.exception("unexpected error in %s", method)
                await context.abort(code, "internal error; see the service log")
                raise
            finally:
                if observer is not None:
                    observer.rpc_finished(method, code, time.perf_counter() - started)

        return handler

    return wrap
