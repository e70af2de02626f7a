"""The one table from domain errors to gRPC status codes, the table that classes every status
an RPC ends with as a refusal or a failure, and the wrapper every RPC uses.

``rpc`` wraps a servicer coroutine: when the servicer has an ``authorizer``
(:class:`rng_service.rpc.auth.Authorizer`) it authenticates and authorizes the caller first
(Python server interceptors cannot see the peer's TLS identity; the handler's context can), so a
refused call runs nothing; it decodes the request body itself (the server registers every
method with grpcio's identity deserializer, ``rng_service.rpc.decoding``) after the identity,
role, kind and rate-limit checks and before the table and profile checks, so that a body that
does not parse is INVALID_ARGUMENT (cause ``undecodable``) rather than grpcio's UNKNOWN; it
translates :class:`rng_service.errors.RngServiceError` subclasses to their status code (the
first matching class in :data:`STATUS_TABLE`, most specific first), turns anything unexpected
into INTERNAL without leaking details, and records the call's latency by method, status code,
cause and class (:data:`STATUS_CAUSES`).

Refusal or failure (:data:`STATUS_CAUSES`): every (status code, cause) pair a call can end with
is classed once, here. A **refusal** is the caller's side: its request, identity, role, scope or
rate, or it went away; the service works as designed, and the fix (if any) is with the client.
A **failure** is the service's side: a correct call could not be served (generator, storage,
capacity, a bug), and the operator acts. One status code can be either (RESOURCE_EXHAUSTED is a
client's rate limit or the service's full queue), so the cause decides. The metric labels, the
alert rules (``deploy/prometheus/alerts.yml`` select ``class="failure"`` and
``class="refusal"``), the Grafana dashboard and the table in ``docs/operations/monitoring.md``
(rendered by :func:`status_causes_markdown`; a test compares) all follow this one table. A new
refusal or failure adds a row here (a test fails for an error class whose cause has none).
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

import grpc
from grpc import aio
from grpc._cython import cygrpc  # type: ignore[attr-defined]  # its ExecuteBatchError

from rng_service import errors
from rng_service.rpc.auth import Authorizer, leave
from rng_service.rpc.decoding import decode_request

__all__ = [
    "CALL_ENDED",
    "DEADLINE_SLACK_SECONDS",
    "STATUS_CAUSES",
    "STATUS_TABLE",
    "CallClass",
    "RpcObserver",
    "StatusCause",
    "cancelled_status",
    "classify",
    "interrupted_by_stop",
    "mark_interrupted",
    "rpc",
    "status_causes_markdown",
    "status_for",
]

# The logger keeps its name from before the package's rename (the JSON log's "logger" field).
_log = logging.getLogger("rng_service.service.errors")

#: What a write raises when the call ended under it (the client cancelled or went away while
#: a stream was being sent): grpc's own handler ignores it for a closed call, so it is passed
#: on as it is, not turned into INTERNAL and a logged traceback.
CALL_ENDED: tuple[type[BaseException], ...] = (cygrpc.ExecuteBatchError,)

#: Handler tasks a graceful stop interrupted (``rng_service.rpc.drain``): counted as
#: UNAVAILABLE ``shutting_down``, not as a caller that went away.
_interrupted: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()


def mark_interrupted(task: asyncio.Task[Any]) -> None:
    """Marks a handler task that a graceful stop is about to cancel."""
    _interrupted.add(task)


def interrupted_by_stop(task: asyncio.Task[Any] | None) -> bool:
    """Whether a graceful stop cancelled ``task`` (else gRPC did: the caller went away)."""
    return task is not None and task in _interrupted


STATUS_TABLE: tuple[tuple[type[errors.RngServiceError], grpc.StatusCode], ...] = (
    (errors.InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.OutOfRange, grpc.StatusCode.OUT_OF_RANGE),
    (errors.NotFound, grpc.StatusCode.NOT_FOUND),
    (errors.AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    # Round integrity (docs/outcomes-api.md, "Rounds and slots"): the caller's refusals.
    (errors.SlotFilled, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.RoundVoided, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.RoundOrderViolation, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (errors.Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (errors.Overloaded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.Unavailable, grpc.StatusCode.UNAVAILABLE),
    (errors.IntegrityError, grpc.StatusCode.DATA_LOSS),
    (errors.DeadlineExceeded, grpc.StatusCode.DEADLINE_EXCEEDED),
)


def status_for(error: errors.RngServiceError) -> grpc.StatusCode:
    for cls, code in STATUS_TABLE:
        if isinstance(error, cls):
            return code
    return grpc.StatusCode.INTERNAL


class CallClass(enum.Enum):
    """The ``class`` label of the RPC metric."""

    OK = "ok"
    REFUSAL = "refusal"  # the caller's side; the service works as designed
    FAILURE = "failure"  # the service's side; the operator acts


@dataclass(frozen=True, slots=True, eq=False)
class StatusCause:
    """One row: a status code, a cause (a fixed word, the ``cause`` label), its class, and
    what it means for an operator. Rows are singletons (compared and hashed by identity, which
    keeps the per-call metric lookup cheap)."""

    code: grpc.StatusCode
    cause: str
    call_class: CallClass
    meaning: str

    @property
    def labels(self) -> tuple[str, str, str]:
        """The metric's ``code``, ``cause`` and ``class`` label values."""
        return (self.code.name, self.cause, self.call_class.value)


_C = grpc.StatusCode
_R = CallClass.REFUSAL
_F = CallClass.FAILURE

#: Every (status code, cause) an RPC ends with, other than OK. The FIRST row of a code is its
#: default: it classes a cause this table does not know (an error class added without a row,
#: or a status set by a handler's own ``abort``), so the label set stays bounded and nothing
#: goes unclassed. Domain errors take their class's cause unless the raise site names one.
STATUS_CAUSES: tuple[StatusCause, ...] = (
    StatusCause(_C.INVALID_ARGUMENT, "invalid_argument", _R,
        "a request field holds a value outside what is allowed; the message names the field "
        "and the allowed values"),
    StatusCause(_C.INVALID_ARGUMENT, "undecodable", _R,
        "the body is not a valid protobuf message of the method's request type (corrupt "
        "bytes, a string field that is not UTF-8); also counted in "
        "rng_rpc_undecodable_requests_total"),
    StatusCause(_C.OUT_OF_RANGE, "out_of_range", _R,
        "an index or tree size beyond the current log"),
    StatusCause(_C.NOT_FOUND, "not_found", _R,
        "the named entry does not exist (a leaf hash not in the log)"),
    StatusCause(_C.ALREADY_EXISTS, "request_id_reused", _R,
        "a request id reused with other parameters, or a raw output session already streamed: "
        "the first outcome stands"),
    StatusCause(_C.FAILED_PRECONDITION, "precondition", _R,
        "the request depends on state the caller has not set up; every FailedPrecondition "
        "without a cause of its own is classed here"),
    StatusCause(_C.FAILED_PRECONDITION, "slot_filled", _R,
        "the round's slot already holds an outcome drawn under another request id: a game "
        "event is drawn once (docs/outcomes-api.md, \"Rounds and slots\")"),
    StatusCause(_C.FAILED_PRECONDITION, "round_order", _R,
        "the request comes out of the order of its game's rules (for example a bonus game "
        "without a spin on a Fire Number of the round)"),
    StatusCause(_C.FAILED_PRECONDITION, "round_voided", _R,
        "the round was voided (VoidRound): nothing more is drawn in it"),
    StatusCause(_C.FAILED_PRECONDITION, "disabled", _R,
        "the RPC is switched off in this deployment (StreamRawOutput without "
        "certification.raw_stream_enabled)"),
    StatusCause(_C.UNAUTHENTICATED, "unconfigured_identity", _R,
        "a valid client certificate whose identity has no [[clients]] entry"),
    StatusCause(_C.UNAUTHENTICATED, "ambiguous_identity", _R,
        "the certificate's names match more than one [[clients]] entry"),
    StatusCause(_C.UNAUTHENTICATED, "no_identity", _R,
        "a TLS peer whose certificate carries no name"),
    StatusCause(_C.PERMISSION_DENIED, "role", _R, "the method is outside the client's roles"),
    StatusCause(_C.PERMISSION_DENIED, "table", _R, "a game server outside its tables"),
    StatusCause(_C.PERMISSION_DENIED, "kind", _R, "a game server outside its outcome kinds"),
    StatusCause(_C.PERMISSION_DENIED, "profile", _R, "a game server outside its game profiles"),
    StatusCause(_C.PERMISSION_DENIED, "client", _R,
        "a game server asking for another client's table history (GetTableHistory): that needs "
        "the auditor role"),
    StatusCause(_C.RESOURCE_EXHAUSTED, "queue_full", _F,
        "more requests wait for the log than log.max_queue: the service is behind (slow "
        "storage, too little capacity)"),
    StatusCause(_C.RESOURCE_EXHAUSTED, "rate_limit", _R,
        "the client is over its own rate limit (token bucket)"),
    StatusCause(_C.RESOURCE_EXHAUSTED, "grpc_limit", _R,
        "refused by gRPC core itself, before the service reads the request: a request message "
        "over 4 MiB (the server's grpc.max_receive_message_length) or request metadata over "
        "gRPC's header size limit (16 KiB); no RPC of the API needs either. Nothing is drawn "
        "or logged, and rng_rpc_duration_seconds does not count it: no hook of the service "
        "sees such a call end (the handler never runs; tests/integration/test_grpc_limits.py)"),
    StatusCause(_C.DEADLINE_EXCEEDED, "client_deadline", _F,
        "the caller's deadline passed before the service answered (slow storage, an "
        "overloaded service)"),
    StatusCause(_C.DEADLINE_EXCEEDED, "session_time_limit", _R,
        "a raw output session ran past certification.raw_stream_max_seconds (a lab reading "
        "too slowly or asking for too much)"),
    StatusCause(_C.CANCELLED, "client_cancelled", _R,
        "the caller cancelled the call or closed its connection before the answer"),
    StatusCause(_C.UNAVAILABLE, "unavailable", _F,
        "any other reason the service cannot serve the call now (an internal error of the log "
        "writer: the service log says which)"),
    StatusCause(_C.UNAVAILABLE, "generator", _F,
        "the generator latched its error state: fail closed (RngGeneratorDown)"),
    StatusCause(_C.UNAVAILABLE, "storage", _F,
        "the log store cannot commit or read, or the log writer is recovering from a lost "
        "store connection (a failover; RngLogStorageUnavailable, RngLogStoreDown); callers "
        "retry with the same request id (a logged outcome is returned, never drawn again)"),
    StatusCause(_C.UNAVAILABLE, "shutting_down", _F,
        "the service is stopping (restart, upgrade); callers retry with the same request id"),
    StatusCause(_C.DATA_LOSS, "integrity", _F,
        "stored data failed verification (every IntegrityError; a log read whose entries fail "
        "their checks, or an outcome request the sequencer refused for an edited row, is also "
        "counted in rng_log_integrity_errors_total and alerts as RngLogIntegrityError): stop "
        "and investigate"),
    StatusCause(_C.INTERNAL, "unexpected", _F,
        "an unexpected exception; the service log has the traceback"),
    StatusCause(_C.UNKNOWN, "unknown", _F, "a handler ended the call without a status code"),
)  # fmt: skip

_BY_KEY: dict[tuple[grpc.StatusCode, str], StatusCause] = {
    (row.code, row.cause): row for row in STATUS_CAUSES
}
_DEFAULT: dict[grpc.StatusCode, StatusCause] = {}
for _row in STATUS_CAUSES:
    _DEFAULT.setdefault(_row.code, _row)
del _row

#: The row of a successful call (not a refusal or a failure, so not in the table).
OK_STATUS = StatusCause(_C.OK, "ok", CallClass.OK, "the call succeeded")


def classify(code: grpc.StatusCode, cause: str = "") -> StatusCause:
    """The row of ``(code, cause)``; for a cause the table lacks, the code's default row; for a
    code it lacks altogether, a failure with cause ``unclassified`` (bounded: one per code)."""
    if code is _C.OK:
        return OK_STATUS
    row = _BY_KEY.get((code, cause))
    if row is not None:
        return row
    default = _DEFAULT.get(code)
    if default is None:
        default = _DEFAULT[code] = StatusCause(
            code, "unclassified", _F, "a status code this table does not class"
        )
    return default


def status_causes_markdown() -> str:
    """:data:`STATUS_CAUSES` as the Markdown table of docs/operations/monitoring.md."""
    lines = [
        "| Status code | `cause` | `class` | Meaning |",
        "|---|---|---|---|",
    ]
    for row in STATUS_CAUSES:
        default = " (default)" if _DEFAULT[row.code] is row else ""
        lines.append(
            f"| {row.code.name} | `{row.cause}`{default} | {row.call_class.value} | {row.meaning} |"
        )
    return "\n".join(lines) + "\n"


class RpcObserver(Protocol):
    def rpc_finished(self, method: str, status: StatusCause, seconds: float) -> None: ...

    def undecodable(self, method: str) -> None: ...


Req = TypeVar("Req")
Resp = TypeVar("Resp")
Handler = Callable[[Any, Req, aio.ServicerContext[Req, Resp]], Awaitable[Resp]]


#: Seconds before the service's copy of the caller's deadline within which a cancellation
#: counts as that deadline. The copy is later than the caller's own by the request's transit
#: (the grpc-timeout header is relative), so a caller whose deadline passed cancels while the
#: service still sees a little time left; a caller that really cancels this close to its
#: deadline cannot be told apart and is counted as the deadline.
DEADLINE_SLACK_SECONDS = 0.1


def cancelled_status(time_remaining: float | None) -> StatusCause:
    """The row of a handler gRPC cancelled with ``time_remaining`` seconds (None: no deadline)
    left of the call: the caller's deadline passed, or it went away."""
    if time_remaining is not None and time_remaining <= DEADLINE_SLACK_SECONDS:
        return _BY_KEY[(_C.DEADLINE_EXCEEDED, "client_deadline")]
    return _BY_KEY[(_C.CANCELLED, "client_cancelled")]


def rpc(method: str) -> Callable[[Handler[Req, Resp]], Handler[Req, Resp]]:
    """Decorates a servicer method: authorization, error translation and per-call metrics."""

    def wrap(fn: Handler[Req, Resp]) -> Handler[Req, Resp]:
        @functools.wraps(fn)
        async def handler(self: Any, request: Req, context: aio.ServicerContext[Req, Resp]) -> Resp:
            observer: RpcObserver | None = getattr(self, "rpc_observer", None)
            authorizer: Authorizer | None = getattr(self, "authorizer", None)
            started = time.perf_counter()
            status = OK_STATUS
            try:
                # Authorizer.authorized, without a generator context manager on every call,
                # split around decoding: nothing the body says is trusted before the caller
                # is known, allowed this method and within its rate limit.
                if authorizer is None:
                    request = decode_request(method, request, observer)
                    return await fn(self, request, context)
                principal = authorizer.admit(method, context)
                request = decode_request(method, request, observer)
                token = authorizer.enter_admitted(principal, method, request)
                try:
                    return await fn(self, request, context)
                finally:
                    leave(token)
            except errors.RngServiceError as e:
                code = status_for(e)
                status = classify(code, e.cause)
                await context.abort(code, str(e))
                raise  # unreachable: abort raises
            except aio.AbortError:
                # aio contexts answer None until a code is set; the code's default cause
                code = cast("grpc.StatusCode | None", context.code()) or grpc.StatusCode.UNKNOWN
                status = classify(code)
                raise
            except asyncio.CancelledError:
                status = (
                    _BY_KEY[(_C.UNAVAILABLE, "shutting_down")]
                    if interrupted_by_stop(asyncio.current_task())
                    else cancelled_status(context.time_remaining())
                )
                raise
            except CALL_ENDED:
                status = _BY_KEY[(_C.CANCELLED, "client_cancelled")]
                raise
            except Exception:
                status = classify(grpc.StatusCode.INTERNAL)
                _log.exception("unexpected error in %s", method)
                await context.abort(status.code, "internal error; see the service log")
                raise
            finally:
                if observer is not None:
                    observer.rpc_finished(method, status, time.perf_counter() - started)

        return handler

    return wrap
