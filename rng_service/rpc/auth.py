"""Authentication and authorization of every RPC: the peer's certificate identity, its roles.

With mTLS the server has already verified the client certificate against the operator's CA in
the TLS handshake (no certificate, a wrong CA or an expired one never reach a handler: the client
sees UNAVAILABLE). What a handler gets is the verified peer's properties in
``context.auth_context()`` (gRPC authentication guide, https://grpc.io/docs/guides/auth/; the
property names ``x509_common_name`` and ``x509_subject_alternative_name`` are gRPC core's
``GRPC_X509_CN_PROPERTY_NAME`` and ``GRPC_X509_SAN_PROPERTY_NAME``). Python server interceptors
cannot see these, so :func:`rng_service.rpc.errors.rpc` calls :meth:`Authorizer.admit`
(identity, role, outcome kinds, rate limit: no request body needed) BEFORE it decodes the request
body, and :meth:`Authorizer.enter_admitted` (the table and profile the request names) after;
both before the servicer method runs: nothing is drawn or logged for a refused call.

The identity is matched against the configured clients (:mod:`rng_service.security.policy`):
an identity that is not configured gets UNAUTHENTICATED, a configured client outside its role,
tables, kinds or profiles PERMISSION_DENIED, one over its rate limit RESOURCE_EXHAUSTED. Each
refusal is one count of ``rng_auth_denials`` (method, reason, role and, for configured clients
only, the client) and a structured ``denied`` log event, at most one per (reason, client) every
:data:`REFUSAL_LOG_INTERVAL` seconds (:class:`RefusalLog`): a misbehaving client cannot flood the
log, and the refusals held back are counted in one ``denied_suppressed`` line. In plaintext
development mode every caller is the one default client with every role.

The authenticated caller is kept in a context variable for the duration of the call, so a
servicer asks :func:`caller_id` for the idempotency scope instead of trusting the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

from rng_service.clock import Clock
from rng_service.errors import InvalidArgument, Unauthenticated
from rng_service.rpc.origin import ORIGIN_METADATA
from rng_service.security.policy import (
    ALL_ROLES,
    ANY,
    ClientPolicy,
    Denied,
    Policy,
    Principal,
    RateLimit,
    Role,
)

__all__ = [
    "REFUSAL_LOG_INTERVAL",
    "Authorizer",
    "DenialObserver",
    "RefusalLog",
    "caller",
    "caller_id",
    "caller_is_game_server",
    "leave",
]

# The logger keeps its name from before the package's rename (the JSON log's "logger" field).
_log = logging.getLogger("rng_service.service.auth")

#: gRPC core's auth-context property names (grpc_security_constants.h).
CN_PROPERTY = "x509_common_name"
SAN_PROPERTY = "x509_subject_alternative_name"

#: Longest identity text written to a log event (a certificate from the operator's CA may
#: still carry any name; metrics never carry it).
_MAX_LOGGED_IDENTITY = 128

_CALLER: ContextVar[Principal | None] = ContextVar("rng_service_caller", default=None)

#: Seconds between two ``denied`` log lines of one (reason, client).
REFUSAL_LOG_INTERVAL = 10.0

#: ``schedule(delay_seconds, callback)``: runs ``callback`` later (``loop.call_later``).
Schedule = Callable[[float, Callable[[], None]], Any]


@dataclass(slots=True)
class _Window:
    until: float  # monotonic end of the quiet interval that the last line opened
    suppressed: int = 0  # refusals held back in it
    pending: bool = False  # a summary is scheduled for ``until``


class RefusalLog:
    """Writes refusal log lines, at most one per key every ``interval`` seconds.

    The first refusal of a key writes its line and opens a quiet interval; refusals during it
    are only counted, and when it ends one ``denied_suppressed`` line gives their number (and
    opens the next interval, so a steady stream of refusals writes one line per interval). Keys
    are (reason, client) with ``client`` a configured identity or ``unconfigured``, so their set
    is bounded by the configuration, whatever identities callers present. The end of an
    interval is scheduled on the running event loop (``schedule`` replaces it in tests); outside
    a loop the count is written before the key's next line instead. Metrics count every
    refusal; only the log is thinned.
    """

    def __init__(
        self,
        logger: logging.Logger,
        *,
        monotonic: Callable[[], float],
        interval: float = REFUSAL_LOG_INTERVAL,
        schedule: Schedule | None = None,
    ) -> None:
        self._log = logger
        self._monotonic = monotonic
        self._interval = interval
        self._schedule = schedule
        self._windows: dict[tuple[str, str], _Window] = {}

    def refused(self, key: tuple[str, str], event: dict[str, Any]) -> None:
        """Writes ``event`` (a ``denied`` line) unless ``key`` wrote one less than an interval
        ago; then it is counted for the interval's summary."""
        now = self._monotonic()
        window = self._windows.get(key)
        if window is not None and now < window.until:
            window.suppressed += 1
            if not window.pending and self._later(window.until - now, key):
                window.pending = True
            return
        if window is not None and window.suppressed:
            self._summary(key, window.suppressed)  # no loop ran the end of the interval
        self._windows[key] = _Window(until=now + self._interval)
        self._log.warning(event)

    def _later(self, delay: float, key: tuple[str, str]) -> bool:
        schedule = self._schedule
        if schedule is None:
            try:
                schedule = asyncio.get_running_loop().call_later
            except RuntimeError:  # no event loop: the next line carries the count
                return False
        schedule(max(0.0, delay), lambda: self._interval_ended(key))
        return True

    def _interval_ended(self, key: tuple[str, str]) -> None:
        window = self._windows.get(key)
        if window is None or not window.suppressed:
            return
        self._summary(key, window.suppressed)
        window.until = self._monotonic() + self._interval
        window.suppressed = 0
        window.pending = False

    def _summary(self, key: tuple[str, str], count: int) -> None:
        reason, client = key
        self._log.warning(
            {
                "event": "denied_suppressed",
                "reason": reason,
                "client": client,
                "suppressed": count,
                "message": f"{count} more refusal(s) of this reason and client were not "
                f"logged (at most one line per {self._interval:g} s; rng_auth_denials_total "
                "counts them all)",
            }
        )


def leave(token: Token[Principal | None]) -> None:
    """Ends what :meth:`Authorizer.enter` began."""
    _CALLER.reset(token)


def caller_id(default: str) -> str:
    """The authenticated caller of the current RPC, or ``default`` outside an authorized call
    (servicers built without an authorizer, as in unit tests)."""
    principal = _CALLER.get()
    return default if principal is None else principal.identity


def caller_is_game_server() -> bool:
    """Whether the current RPC's caller draws under the round rules for game servers only
    (``rng_service.log.rounds``: the Blazing 7's bonus round after a spin on 7, 17 or 27): it
    holds the ``game_server`` role and not ``lab`` (a lab draws the balls alone to measure
    them; the plaintext development caller holds every role, so it is a lab here). False
    outside an authorized call."""
    principal = _CALLER.get()
    if principal is None:
        return False
    roles = principal.client.roles
    return Role.GAME_SERVER in roles and Role.LAB not in roles


def caller() -> Principal | None:
    """The authenticated caller of the current RPC (None outside an authorized call)."""
    return _CALLER.get()


class DenialObserver(Protocol):
    def denied(self, *, method: str, reason: str, role: str, client: str) -> None: ...


class _Context(Protocol):
    def auth_context(self) -> Any: ...


def _names(context: _Context) -> list[str]:
    """The verified peer's subjectAltNames and subject CN, SANs first."""
    properties: dict[str, list[bytes]] = context.auth_context() or {}
    raw = [*properties.get(SAN_PROPERTY, []), *properties.get(CN_PROPERTY, [])]
    return list(dict.fromkeys(v.decode("utf-8", "replace") for v in raw))


def _requested_origin(context: Any) -> str:
    """The log a call names in its :data:`ORIGIN_METADATA` ("" when it names none)."""
    metadata = getattr(context, "invocation_metadata", None)
    for key, value in (metadata() if metadata is not None else None) or ():
        if key == ORIGIN_METADATA:
            return value if isinstance(value, str) else value.decode("utf-8", "replace")
    return ""


#: Per request message class: whether it has a ``context``, a ``profile``, a top-level
#: ``table_id`` and a ``client`` field.
_SCOPE_FIELDS: dict[type, tuple[bool, bool, bool, bool]] = {}


def _scope(request: Any) -> tuple[str | None, str | None, str | None]:
    """The table id, game profile and client a request names, where its message has those
    fields (the table id in its ``context``, or at the top for log reads by table)."""
    has = _SCOPE_FIELDS.get(type(request))
    if has is None:
        fields = request.DESCRIPTOR.fields_by_name
        has = _SCOPE_FIELDS[type(request)] = (
            "context" in fields, "profile" in fields, "table_id" in fields, "client" in fields,
        )  # fmt: skip
    table_id = request.context.table_id if has[0] else request.table_id if has[2] else None
    profile = request.profile if has[1] else None
    client = request.client if has[3] else None
    return table_id, profile, client


class Authorizer:
    """Decides every call. Build it with :meth:`mtls` or :meth:`development`."""

    def __init__(
        self,
        *,
        policy: Policy,
        fixed: Principal | None,
        observer: DenialObserver | None = None,
        origin: str = "",
    ) -> None:
        self._policy = policy
        self._fixed = fixed
        self._observer = observer
        #: The origin of the log served here ("" = no log check: servicers built alone).
        self._origin = origin
        self.refusal_log = RefusalLog(_log, monotonic=policy.clock.monotonic)

    @classmethod
    def mtls(
        cls,
        clients: list[ClientPolicy],
        *,
        clock: Clock,
        observer: DenialObserver | None = None,
        origin: str = "",
    ) -> Authorizer:
        """Callers are identified by their verified client certificate; with ``origin``, each
        call names its log (:data:`ORIGIN_METADATA`, default: this one) and must be bound to
        it."""
        return cls(policy=Policy(clients, clock), fixed=None, observer=observer, origin=origin)

    @classmethod
    def development(
        cls,
        client_id: str,
        *,
        rate_limit: RateLimit | None,
        clock: Clock,
        observer: DenialObserver | None = None,
        origin: str = "",
    ) -> Authorizer:
        """Plaintext on loopback: every caller is ``client_id`` with every role, on the log
        served here (a call naming another log is refused as in mTLS)."""
        client = ClientPolicy(identity=client_id, roles=ALL_ROLES, rate_limit=rate_limit)
        return cls(
            policy=Policy([client], clock), fixed=Principal(client), observer=observer,
            origin=origin,
        )  # fmt: skip

    def for_log(self, origin: str, observer: DenialObserver | None) -> Authorizer:
        """This authorizer for the log ``origin`` of a shared port (``rng_service.rpc.router``):
        the same clients, rate-limit buckets and refusal log, its own denial counter."""
        other = Authorizer(policy=self._policy, fixed=self._fixed, observer=observer,
                           origin=origin)  # fmt: skip
        other.refusal_log = self.refusal_log
        return other

    def _identify(self, method: str, context: _Context) -> Principal:
        """The caller's configured client, or the refusal (counted and logged)."""
        if self._fixed is not None:
            return self._fixed
        names = _names(context)
        found = (
            self._policy.identify(names)
            if names
            else Denied(Unauthenticated("no client certificate", cause="no_identity"))
        )
        if isinstance(found, Denied):
            self._refuse(method, found, None, names[:1])
        return found

    def route(self, method: str, context: _Context, served: tuple[str, ...]) -> str:
        """The log a call on a shared port goes to (docs/security.md, "Logs"): the one its
        :data:`ORIGIN_METADATA` names, if ``served`` here (its own authorizer then checks the
        binding); a log not served here gets the refusal of a log the caller is not bound to,
        word for word. A call that names none goes to the one served log its caller is bound
        to (a game server is bound to exactly one); a caller bound to several gets
        INVALID_ARGUMENT naming them, its own logs only."""
        principal = self._identify(method, context)
        asked = _requested_origin(context)
        if asked in served:
            return asked
        logs = principal.client.logs
        bound = tuple(o for o in served if ANY in logs or o in logs)
        if not asked and len(bound) == 1:
            return bound[0]
        if not asked and bound:
            error = InvalidArgument(
                ORIGIN_METADATA,
                "this port serves several logs and the call names none; name its log in the "
                f"{ORIGIN_METADATA} request metadata (rng-service call --origin, "
                "RngClient(origin=...))",
                allowed=", ".join(repr(o) for o in bound),
            )
            raise error
        # A log not served here, or no served log bound: the refusal of a log not bound.
        denied = self._policy.check_log(principal, asked or "\n", "")
        if denied is None:  # not reached: "" is never a served origin
            raise RuntimeError("a log not served here was admitted")
        self._refuse(method, denied, principal, [principal.identity])

    def may_see_log(self, context: _Context, origin: str) -> bool:
        """Whether the caller may learn the health of the log ``origin`` (bound to it); no
        refusal is counted or logged (health checks are frequent)."""
        if self._fixed is not None:
            principal: Principal | Denied = self._fixed
        else:
            names = _names(context)
            principal = (
                self._policy.identify(names)
                if names
                else Denied(Unauthenticated("no client certificate", cause="no_identity"))
            )
        if isinstance(principal, Denied):
            return False
        return self._policy.check_log(principal, origin, origin) is None

    def admit(self, method: str, context: _Context) -> Principal:
        """The caller, if it may call ``method`` at all now: identity, role, outcome kinds and
        rate limit, none of which needs the request body (the ``rpc`` wrapper runs this
        before it decodes the request). Otherwise the domain error, after counting and
        logging the refusal."""
        principal = self._identify(method, context)
        if self._origin:
            asked = _requested_origin(context) or self._origin
            denied = self._policy.check_log(principal, asked, self._origin)
            if denied is not None:
                self._refuse(method, denied, principal, [principal.identity])
        denied = self._policy.check_method(principal, method)
        if denied is not None:
            self._refuse(method, denied, principal, [principal.identity])
        return principal

    def check_request(self, principal: Principal, method: str, request: Any) -> None:
        """The scope a decoded request names (a game server's tables and profiles)."""
        table_id, profile, client = _scope(request)
        denied = self._policy.check_scope(
            principal, method, table_id=table_id, profile=profile, client=client
        )
        if denied is not None:
            self._refuse(method, denied, principal, [principal.identity])

    def authorize(self, method: str, request: Any, context: _Context) -> Principal:
        """The caller, if it may call ``method`` with ``request`` now (:meth:`admit`, then
        :meth:`check_request`); otherwise the domain error (after counting and logging the
        refusal)."""
        principal = self.admit(method, context)
        self.check_request(principal, method, request)
        return principal

    @contextlib.contextmanager
    def authorized(self, method: str, request: Any, context: _Context) -> Iterator[Principal]:
        """Authorizes the call and makes its caller :func:`caller_id` while the block runs."""
        principal = self.authorize(method, request, context)
        token = _CALLER.set(principal)
        try:
            yield principal
        finally:
            _CALLER.reset(token)

    def enter(self, method: str, request: Any, context: _Context) -> Token[Principal | None]:
        """:meth:`authorized` without a context manager: authorizes the call and makes its
        caller :func:`caller_id` until :func:`leave`."""
        return _CALLER.set(self.authorize(method, request, context))

    def enter_admitted(
        self, principal: Principal, method: str, request: Any
    ) -> Token[Principal | None]:
        """The second half of the per-call path of ``rpc``: after :meth:`admit` and decoding,
        checks the request's scope and makes the caller :func:`caller_id` until
        :func:`leave`."""
        self.check_request(principal, method, request)
        return _CALLER.set(principal)

    def _refuse(
        self, method: str, denied: Denied, principal: Principal | None, names: list[str]
    ) -> NoReturn:
        role = principal.role_label if principal is not None else "none"
        client = principal.identity if principal is not None else "unconfigured"
        if self._observer is not None:
            self._observer.denied(method=method, reason=denied.reason, role=role, client=client)
        self.refusal_log.refused(
            (denied.reason, client),
            {
                "event": "denied",
                "method": method,
                "reason": denied.reason,
                "role": role,
                "identity": names[0][:_MAX_LOGGED_IDENTITY] if names else None,
                "configured": principal is not None,
                "message": str(denied.error),
            },
        )
        raise denied.error
